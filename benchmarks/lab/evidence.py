"""
Evidence recall: does what a strategy sent still hold what the agent used in its next answer?

The answer an agent gave after a request names things it learned from the conversation: paths,
functions, error names, ids. If those are gone from what was sent, it could not have written
that answer without asking again. No model is called: it is string matching on a recorded session.

A *salient string* is a token of a text (a run of word characters, ``.``, ``/`` and ``-``, with
leading and trailing ``.``, ``/`` and ``-`` stripped) that is at least 5 characters long, has a
letter, and has a ``/``, ``.``, ``_``, a digit, or a capital after its first character in a word
that also has small letters: ``django/db/models/sql/query.py``, ``query.py``, ``HAT045``,
``mia_li_3668``, ``add_ordering``, ``QuerySet``, ``sys.modules``. Numbers, plain words (``error``,
``ERROR``, ``Hello``) and punctuation are not salient.

An answer *names* the salient strings of its text and of its tool calls' arguments (JSON decoded,
every string value; text when not JSON), not its tool-call ids or names. Of those, it *learned*
the ones that occur in its request but not in what the agent was given (the system and developer
messages and the first user message); *old* ones occur nowhere in the request's last
:data:`RECENT` messages. A strategy *kept* those that occur in any string of what it sent,
markers, placeholders and notes included.

*Line recall* is stricter, and a list of names cannot raise it: an old string counts only when
one of the lines it stood on in the request (stripped, at least :data:`LINE_MARGIN` characters
longer than the string) reaches the model verbatim; a string that stood on no such line counts
as itself. It measures whether the context around a name is still there.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from litellm_budget.core.validity._chat_checks import SYSTEM_ROLES
from litellm_budget.typing import Message

#: Fewer characters than this is too likely to occur by chance.
MIN_LENGTH = 5
#: The tail no policy touches (DESIGN: the protected last 8 messages); evidence only older ones held is old.
RECENT = 8
#: Joins the strings of messages: no salient string holds a newline or a NUL, so none matches across two.
SEPARATOR = "\n\x00\n"
#: A line counts for line recall when it is at least this many characters longer than its string.
LINE_MARGIN = 10
_TOKEN = re.compile(r"[\w./-]+")
_EDGES = "./-"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """What one answer learned from its request, and the part of it only messages before the last 8 held."""

    learned: frozenset[str] = frozenset()
    old: frozenset[str] = frozenset()
    #: Each old string's lines in the request, for line recall (empty: it stood on no long line).
    lines: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Recall:
    """How much of one request's evidence a strategy sent: all of it, and the old part."""

    learned: int = 0
    kept: int = 0
    old_learned: int = 0
    old_kept: int = 0
    #: Old strings one of whose lines was sent verbatim (or, standing on none, the string itself).
    old_lines_kept: int = 0

    def plus(self, other: Recall) -> Recall:
        """Both requests' counts summed (totals are micro averages: every string weighs the same)."""
        return Recall(
            learned=self.learned + other.learned,
            kept=self.kept + other.kept,
            old_learned=self.old_learned + other.old_learned,
            old_kept=self.old_kept + other.old_kept,
            old_lines_kept=self.old_lines_kept + other.old_lines_kept,
        )

    def as_dict(self) -> dict[str, int]:
        """Plain numbers for JSON."""
        return dataclasses.asdict(self)


#: No evidence: a request whose answer learned nothing, or a replay without answers.
NO_RECALL = Recall()


def salient_strings(text: str) -> frozenset[str]:
    """The salient strings of ``text`` (see the module's docstring)."""
    tokens = (match.group().strip(_EDGES) for match in _TOKEN.finditer(text))
    return frozenset(token for token in tokens if _is_salient(token))


def _is_salient(token: str) -> bool:
    if len(token) < MIN_LENGTH or not any(c.isalpha() for c in token):
        return False
    if "/" in token or "." in token or "_" in token or any(c.isdigit() for c in token):
        return True
    return any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)


def answer_strings(answer: Message) -> list[str]:
    """The texts an answer names things in: its text content and its tool calls' arguments."""
    texts = list(_content_texts(answer.get("content")))
    calls = answer.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            texts += argument_strings(function.get("arguments"))
    return texts


def _content_texts(content: object) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                yield part
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                yield part["text"]


def argument_strings(arguments: object) -> list[str]:
    """Every string value of tool-call arguments: a JSON string decoded (text when it is not JSON), or an object."""
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except ValueError:
            return [arguments]
        return list(strings_in(decoded))
    return list(strings_in(arguments))


def strings_in(value: object) -> Iterator[str]:
    """Every string in a message or item of any format, recursively; ``arguments`` strings decoded."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key == "arguments" and isinstance(item, str):
                yield from argument_strings(item)
            else:
                yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def message_text(message: Any) -> str:
    """All strings of one message joined by :data:`SEPARATOR`: what ``in`` checks search."""
    return SEPARATOR.join(strings_in(message))


def evidence_of(request: Sequence[Message], answer: Message, texts: Sequence[str] | None = None) -> Evidence:
    """
    What ``answer`` learned from the chat ``request`` before it; ``texts`` are the request's
    :func:`message_text` when the caller has them (a session's requests share their messages).
    """
    named = salient_strings(SEPARATOR.join(answer_strings(answer)))
    if not named:
        return Evidence()
    texts = [message_text(m) for m in request] if texts is None else texts
    haystack = SEPARATOR.join(texts)
    given = SEPARATOR.join(texts[index] for index in _given(request))
    learned = frozenset(s for s in named if s in haystack and s not in given)
    recent = SEPARATOR.join(texts[-RECENT:])
    old = frozenset(s for s in learned if s not in recent)
    return Evidence(learned=learned, old=old, lines={s: lines_of(s, texts) for s in old})


def lines_of(string: str, texts: Sequence[str]) -> frozenset[str]:
    """The lines ``string`` stands on in ``texts``, stripped, at least ``LINE_MARGIN`` characters longer than it."""
    least = len(string) + LINE_MARGIN
    return frozenset(
        stripped
        for text in texts
        if string in text
        for line in text.split("\n")
        if string in line and len(stripped := line.strip()) >= least
    )


def _given(request: Sequence[Message]) -> list[int]:
    """The system and developer messages and the first user message: what the agent was given, not learned."""
    given = [index for index, m in enumerate(request) if m.get("role") in SYSTEM_ROLES]
    first_user = next((index for index, m in enumerate(request) if m.get("role") == "user"), None)
    return given if first_user is None else [*given, first_user]


def session_evidence(messages: Sequence[Message]) -> list[Evidence]:
    """
    The evidence of every request of a chat session, in the order of ``sessions.requests_of``:
    the history before each assistant message, answered by that message.
    """
    texts = [message_text(m) for m in messages]
    return [
        evidence_of(messages[:index], message, texts[:index])
        for index, message in enumerate(messages)
        if message.get("role") == "assistant" and index > 0
    ]


def recall_of(evidence: Evidence, sent: Sequence[Any] | None) -> Recall:
    """How much of ``evidence`` is in ``sent`` (messages or items of any format; ``None``: nothing was sent)."""
    if not evidence.learned:
        return Recall()
    haystack = SEPARATOR.join(map(message_text, sent or []))
    kept = {s for s in evidence.learned if s in haystack}
    lines = evidence.lines
    return Recall(
        learned=len(evidence.learned),
        kept=len(kept),
        old_learned=len(evidence.old),
        old_kept=len(evidence.old & kept),
        old_lines_kept=sum(
            any(line in haystack for line in lines[s]) if lines.get(s) else s in kept for s in evidence.old
        ),
    )


def ratio(part: int, whole: int) -> float | None:
    """A recall rounded like the replay's other ratios; ``None`` when there was nothing to recall."""
    return round(part / whole, 4) if whole else None


#: Said wherever the retrievable figures are: they are a ceiling, not a measure of recalls.
RETRIEVABLE_NOTE = (
    "retrievable recall counts evidence sent, or stored under a recall handle (or compress() key) the request "
    "names: what a model could have had back by asking; without a model the replay cannot say how often one would."
)


def retrievable_summary(found: Recall | None) -> dict[str, float | None]:
    """
    Evidence recall counting what is stored under a handle or key the request names, as well as what
    was sent: what a model could have had back, had it asked (without a model, no replay says it would).
    """
    if found is None:
        return {}
    return {
        "retrievable_recall": ratio(found.kept, found.learned),
        "old_retrievable_recall": ratio(found.old_kept, found.old_learned),
    }
