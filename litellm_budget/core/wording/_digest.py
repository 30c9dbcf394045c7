"""
Digests: what dropped steps did and what an elided output held, in a few words and no model call, as the paths, names
and ids an agent uses next lived there. Each is a pure function of its messages and the settings, so the cached prefix
stays put; quotes are JSON-escaped on one line and cut, so no digest can close its notice or read as a new turn or role.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence

from litellm_budget.core._canonical import text_key
from litellm_budget.core._memo import MEMOS
from litellm_budget.core.formats import ASSISTANT, SYSTEM, USER, MessageFormat
from litellm_budget.core.formats._tool_calls import decoded_arguments
from litellm_budget.typing import Message

#: Lines that report a failure or sum a run up: worth quoting when an output has one after its first line.
_NOTABLE_LINE = re.compile(
    r"error|exception|traceback|fail|denied|invalid|not found|passed|\bok\b|success|warning|exit (code|status)",
    re.IGNORECASE,
)
#: Lines that are only markup and numbers (``<returncode>0</returncode>``): they identify nothing.
_MARKUP_ONLY = re.compile(r"\s*(?:</?[\w.-]+(?:\s[^<>]*)?>\s*[\d.]*\s*)+")
#: A line that defines something (a function, a class, a type), after any line number (``cat -n``): an
#: elided file view keeps these, a table of contents the model can read again by line number.
_DEFINITION = re.compile(
    r"\s*(?:\d+\s+)?(?:(?:pub|export|public|private|protected|static|async|abstract|final|default)\s+)*"
    r"(?:(?:def|class)\s+[A-Za-z_]\w*\s*[(:]"  # Python
    r"|(?:class|function|func|fn|struct|interface|trait|enum)\s+(?:\([^)]*\)\s*)?[A-Za-z_]\w*"
    r"(?:\s*[(<{;]|\s+(?:extends|implements)\b|\s*$))"
)
#: The line number a numbered listing puts before a line: not part of its indentation.
_NUMBERED = re.compile(r"\s*\d+[\t ]")
#: Sequences chat templates give a meaning to; quoted content never carries them as they are.
_TEMPLATE_TOKENS = re.compile(r"<\|")
#: Runs of spaces and tabs, and blanks beside a line break: they identify nothing and cost tokens in a quote.
_BLANKS = re.compile(r"[ \t]+")
_BLANKS_AT_BREAKS = re.compile(r" ?\n ?")
#: How a cut quote ends.
_CUT = "…"
#: A dropped call's line quotes its arguments at this multiple of ``digest_chars`` and what came of it
#: at the next: per token, arguments hold more of the strings later answers name than outputs do.
ARGUMENTS_SHARE = 1.5
OUTCOME_SHARE = 0.5
#: With ``outline_chars: None``, an outline takes at most this multiple of ``digest_chars``, enough for most file views.
OUTLINE_SHARE = 4.0
#: Names a digest line's handle: the line, the texts it stands for, how many characters of them it quotes.
LineNamer = Callable[[str, Sequence[str], int], str]


def _squeezed(text: str) -> str:
    return _BLANKS_AT_BREAKS.sub("\n", _BLANKS.sub(" ", text))


def quoted(text: str, limit: int) -> str:
    """``text`` squeezed and cut to ``limit``, JSON-escaped on one line: no chat template token can form in it."""
    return _quoted_squeezed(_squeezed(text), limit)


def _quoted_squeezed(text: str, limit: int) -> str:
    shown = text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + _CUT
    return json.dumps(_TEMPLATE_TOKENS.sub("<\\|", shown), ensure_ascii=False)


def outcome_of(texts: Sequence[str], limit: int) -> str:
    """What an output said (size, first meaningful line, last error or summary line); memoized, as notices repeat it."""
    found: str = MEMOS.outcomes.recall(lambda: _outcome(texts, limit), "outcome", limit, tuple(map(text_key, texts)))
    return found


def _outcome(texts: Sequence[str], limit: int) -> str:
    listed = _json_list(texts)
    if listed is not None:
        return _items_outcome(listed, limit)
    lines = [line for text in texts for line in text.splitlines()]
    meaningful = [line.strip() for line in lines if line.strip() and not _MARKUP_ONLY.fullmatch(line)]
    if not meaningful:
        return "no output"
    size = f"{len(lines)} lines" if len(lines) != 1 else "1 line"
    first = meaningful[0]
    notable = next((line for line in reversed(meaningful[1:]) if _NOTABLE_LINE.search(line)), None)
    if notable is None or notable == first:
        return f"{size}: {quoted(first, limit)}"
    half = max(1, limit // 2)
    return f"{size}: {quoted(first, half)} ... {quoted(notable, half)}"


def outline_of(texts: Sequence[str], limit: int) -> str | None:
    """The definitions an output showed, outermost first within ``limit``, in order: later answers name them most."""
    if limit <= 0:
        return None
    found = MEMOS.outcomes.recall(lambda: _outline(texts, limit) or "", "outline", limit, tuple(map(text_key, texts)))
    return found or None


def _outline(texts: Sequence[str], limit: int) -> str | None:
    lines = (line for text in texts for line in text.splitlines())
    found = [(_depth(line), _squeezed(line).strip()) for line in lines if _DEFINITION.match(line)]
    if not found:
        return None
    chosen: set[int] = set()
    left = limit
    for place in sorted(range(len(found)), key=lambda i: found[i][0]):
        cost = len(found[place][1]) + 3
        if cost <= left:
            chosen.add(place)
            left -= cost
    rest = len(found) - len(chosen)
    if not chosen:
        return f"{rest} definition" if rest == 1 else f"{rest} definitions"
    shown = " | ".join(line for place, (_, line) in enumerate(found) if place in chosen)
    return quoted(shown, limit) + (f" and {rest} more" if rest else "")


def _depth(line: str) -> int:
    code = _NUMBERED.sub("", line, count=1)
    return len(code) - len(code.lstrip(" \t"))


def _json_list(texts: Sequence[str]) -> list[object] | None:
    """The output as a JSON array, when it is one (a search's results): ``None`` for any other text."""
    text = "".join(texts).strip()
    if not text.startswith("[") or not text.endswith("]"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) else None


def _items_outcome(items: Sequence[object], limit: int) -> str:
    """What a list of results held: how many, and within ``limit`` what identifies each (not only the first)."""
    if not items:
        return "0 items"
    size = f"{len(items)} items" if len(items) != 1 else "1 item"
    shown: list[str] = []
    left = limit
    for item in items:
        if left <= 0:
            shown.append(_CUT)
            break
        name = _identity(item)
        shown.append(quoted(name, left))
        left -= min(len(name), left) + 2
    return f"{size}: {', '.join(shown)}"


def _identity(item: object) -> str:
    """An item's first field's value (an object's), its parts' joined by ``+`` (a list's), or the item itself."""
    if isinstance(item, dict):
        return _as_text(next(iter(item.values()), ""))
    if isinstance(item, list):
        return "+".join(_identity(part) for part in item)
    return _as_text(item)


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def call_text(name: object, arguments: object, limit: int) -> str:
    """A call as ``name(key="value", ...)``, its arguments decoded where JSON, within ``limit`` quoted characters."""
    decoded = decoded_arguments(arguments)
    if isinstance(decoded, dict):
        parts, left = [], limit
        for key, value in decoded.items():
            if left <= 0:
                parts.append(_CUT)
                break
            text = _squeezed(_as_text(value))  # squeezed once: the limit counts what is shown
            parts.append(f"{key}={_quoted_squeezed(text, left)}")
            left -= min(len(text), left) + len(str(key))
        rendered = ", ".join(parts)
    else:
        rendered = quoted(decoded if isinstance(decoded, str) else json.dumps(decoded, default=str), limit)
    return f"{name if isinstance(name, str) else 'tool'}({rendered})"


def step_entries(
    fmt: MessageFormat, messages: Sequence[Message], kinds: Sequence[str], limit: int, namer: LineNamer | None = None
) -> list[str]:
    """One line per action of the dropped ``messages``, the same however they were grouped; ``namer`` adds handles."""
    outputs = outputs_of(fmt, messages)
    entries: list[str] = []
    for group in steps_of(kinds):
        step = [messages[i] for i in group]
        calls = [call for message in step for call in fmt.calls(message)]
        for call_id, name, arguments in calls:
            result, shown = outputs.get(call_id), int(limit * OUTCOME_SHARE)
            came = outcome_of(result, shown) if result is not None else "no result"
            line = f"- called {call_text(name, arguments, int(limit * ARGUMENTS_SHARE))} -> {came}"
            entries.append(line if namer is None else namer(line, result or (), shown))
        if calls:
            continue
        texts = [t for message in step for t in fmt.texts(message)]
        text = " ".join(texts).strip()
        if text:
            who = "the user wrote" if kinds[group[0]] == USER else "the assistant replied"
            line = f"- {who} {quoted(text, limit)}"
            entries.append(line if namer is None else namer(line, texts, limit))
    return entries


def outputs_of(fmt: MessageFormat, messages: Sequence[Message]) -> dict[str, list[str]]:
    """The texts answering each call of ``messages``, by the call's id."""
    outputs: dict[str, list[str]] = {}
    for message in messages:
        for answered in fmt.answered_ids(message):
            outputs.setdefault(answered, []).extend(fmt.texts(message))
    return outputs


def steps_of(kinds: Sequence[str]) -> Iterator[list[int]]:
    """Indices grouped as units open: at each user message or assistant step."""
    group: list[int] = []
    for index, kind in enumerate(kinds):
        if group and kind in (USER, ASSISTANT, SYSTEM):
            yield group
            group = []
        group.append(index)
    if group:
        yield group
