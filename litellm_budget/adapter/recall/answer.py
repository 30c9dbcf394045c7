"""A recall's answer, worded as information for the model: the text asked for, cut to a byte cap, or why none."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

#: The most bytes one answer holds (about 4,000 tokens), and the fewest it is cut to where the
#: request's room is short: the follow-up is fitted again, so a long answer costs older context.
ANSWER_BYTES = 16_000
MIN_ANSWER_BYTES = 1_000
#: A conservative bytes-per-token, to turn the room left in the window into bytes.
BYTES_PER_TOKEN = 3
_LINES = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")

GONE = "[litellm_budget: {handle} is no longer available: call the original tool again.]"
LIMIT = (
    "[litellm_budget: not served: this request reached its limit of {limit} recalls. Answer with what you "
    "have, or call the original tool again.]"
)
LAST = "[litellm_budget: that was the last recall this request allows.]"


class Asked(NamedTuple):
    """A recall call's arguments: the handle, and what part of the text it asks for."""

    handle: str
    lines: str | None
    pattern: str | None

    @classmethod
    def of(cls, arguments: object) -> Asked:
        """The arguments as the model gave them; anything that is no string reads as not given."""
        given = arguments if isinstance(arguments, Mapping) else {}
        handle, lines, pattern = (given.get(key) for key in ("handle", "lines", "pattern"))
        return cls(
            handle.strip() if isinstance(handle, str) else "",
            lines if isinstance(lines, str) and lines.strip() else None,
            pattern if isinstance(pattern, str) and pattern else None,
        )


def cap_for(room_tokens: int | None) -> int:
    """The byte cap of an answer, within the room the fitted request left in its window (when known)."""
    if room_tokens is None:
        return ANSWER_BYTES
    return max(MIN_ANSWER_BYTES, min(ANSWER_BYTES, room_tokens * BYTES_PER_TOKEN))


def answer(asked: Asked, text: str, chars: int, cap: int) -> str:
    """The answer to ``asked`` from the stored ``text`` (``chars`` long before it was stored), within ``cap`` bytes."""
    lines = text.splitlines()
    head = f"[litellm_budget: {asked.handle}, {len(lines)} lines"
    if chars > len(text):
        head += f" (only its first {len(text)} of {chars} characters were stored)"
    shown, what = _picked(lines, asked)
    body = text if shown is None else "\n".join(shown)
    return _capped(f"{head}{what}]\n{body}", cap)


def _picked(lines: list[str], asked: Asked) -> tuple[list[str] | None, str]:
    """The numbered lines asked for (``None``: the whole text), and how the header says which."""
    numbered = [f"{number}: {line}" for number, line in enumerate(lines, start=1)]
    if asked.lines is not None:
        found = _LINES.fullmatch(asked.lines)
        if found is None:
            return None, f"; lines {asked.lines!r} is no range like 120-180, so all of it"
        first = int(found.group(1))
        last = int(found.group(2) or first)
        return numbered[max(first, 1) - 1 : last], f"; lines {first}-{last}"
    if asked.pattern is not None:
        needle = asked.pattern.lower()
        matching = [line for line, raw in zip(numbered, lines, strict=True) if needle in raw.lower()]
        return matching, f"; the {len(matching)} lines holding {asked.pattern[:80]!r}"
    return None, ""


def _capped(text: str, cap: int) -> str:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= cap:
        return text
    note = f"\n[litellm_budget: cut at {cap} of {len(data)} bytes; ask for lines or a pattern to see the rest.]"
    return data[: max(0, cap - len(note))].decode("utf-8", "ignore") + note
