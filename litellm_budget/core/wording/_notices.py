"""The words the model reads where something was taken out: information, never a task."""

from __future__ import annotations

import re
from collections.abc import Sequence

from litellm_budget.core.formats import ASSISTANT

#: How every placeholder of an elided tool output begins, whatever it says of the output.
TOOL_ELIDED = "[litellm_budget: this tool output was elided by the gateway to fit the context window"
#: ... and of an elided assistant text.
TEXT_ELIDED = (
    "[litellm_budget: the text of this earlier assistant message was elided by the gateway to fit the context window"
)
#: The placeholders that say only that (``digest_chars: 0``).
TOOL_PLACEHOLDER = f"{TOOL_ELIDED}. Call the tool again if you need its content.]"
ASSISTANT_PLACEHOLDER = f"{TEXT_ELIDED}.]"
NOTICE_PREFIX = "[litellm_budget:"
#: How every marker ends.
CONTINUES = " The conversation continues below.]"
#: ... and every summary in a marker's place.
MARKER_END = CONTINUES.lstrip()
#: How a marker or a summary in its place begins (``marker_start``): what tells it from other notices merged in.
_MARKER_START = re.compile(r"(?:\A|\n\n)\[litellm_budget: (?:the )?\d+ earlier ")


def marker_start(text: str) -> int | None:
    """
    Where in ``text`` a marker begins (at its start, or at the blank line that joins it to the user text
    before it, as ``user_note`` places it), or ``None``: so the text before it can be told apart.
    """
    found = _MARKER_START.search(text)
    return None if found is None else found.start()


def placeholder_for(kind: str, identified: str | None = None) -> str:
    """The placeholder for an elided message of ``kind``; with ``identified`` (``outcome_of``), what the text was."""
    if identified is None:
        return ASSISTANT_PLACEHOLDER if kind == ASSISTANT else TOOL_PLACEHOLDER
    if kind == ASSISTANT:
        return f"{TEXT_ELIDED}; it was {identified}.]"
    return f"{TOOL_ELIDED}; it was {identified}. Call the tool again if you need its content.]"


def omitted_note(
    messages: int, units: int, digest: Sequence[str] = (), unlisted: int = 0, stored: str | None = None
) -> str:
    """
    The marker's words: how much was dropped and, with a ``digest`` (a line per action, oldest first), what
    it did, counting ``unlisted`` older actions; with recall, the handle their text is ``stored`` under.
    """
    noun = "message was" if messages == 1 else "messages were"
    exchanges = "exchange" if units == 1 else "exchanges"
    where = "" if stored is None else f" Their text is stored as recall {stored}."
    head = (
        f"[litellm_budget: {messages} earlier {noun} omitted from this conversation "
        f"({units} {exchanges}) by the gateway to fit the context window.{where}"
    )
    if not digest:
        return f"{head}{CONTINUES}"
    older = f" ({unlisted} older not listed)" if unlisted else ""
    lines = "\n".join(digest)
    return f"{head} What was done in them, oldest first{older}:\n{lines}\n{MARKER_END}"


def summary_note(summary: str, messages: int, units: int) -> str:
    """Stands where the marker would, holding a summary: a record of the past, so the model reads no task in it."""
    noun, verb = ("message", "was") if messages == 1 else ("messages", "were")
    exchanges = "exchange" if units == 1 else "exchanges"
    return (
        f"[litellm_budget: the {messages} earlier {noun} of this conversation ({units} {exchanges}) "
        f"{verb} omitted by the gateway to fit the context window, summarized:]\n"
        f"{summary}\n"
        f"[litellm_budget: end of the summary. {MARKER_END}"
    )


def cut_note(shown_head: int, shown_tail: int, total_chars: int) -> str:
    """Stands between the head and the tail of a message that was cut to fit."""
    omitted = total_chars - shown_head - shown_tail
    return (
        f"[litellm_budget: the gateway cut this message to fit the context window: it shows "
        f"the first {shown_head} and the last {shown_tail} of {total_chars} characters; "
        f"{omitted} characters in between were omitted.]"
    )
