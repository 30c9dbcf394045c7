"""The words the model reads where something was taken out: information, never a task."""

from __future__ import annotations

from .formats import ASSISTANT

TOOL_PLACEHOLDER = (
    "[litellm_budget: this tool output was elided by the gateway to fit the context window. "
    "Call the tool again if you need its content.]"
)
ASSISTANT_PLACEHOLDER = (
    "[litellm_budget: the text of this earlier assistant message was elided by the gateway to fit the context window.]"
)
NOTICE_PREFIX = "[litellm_budget:"


def placeholder_for(kind: str) -> str:
    """The fixed placeholder for an elided message of ``kind`` (an assistant's, or a tool result)."""
    return ASSISTANT_PLACEHOLDER if kind == ASSISTANT else TOOL_PLACEHOLDER


def omitted_note(messages: int, units: int) -> str:
    """The marker's words: how much earlier conversation was dropped."""
    noun = "message was" if messages == 1 else "messages were"
    exchanges = "exchange" if units == 1 else "exchanges"
    return (
        f"[litellm_budget: {messages} earlier {noun} omitted from this conversation "
        f"({units} {exchanges}) by the gateway to fit the context window. "
        "The conversation continues below.]"
    )


def summary_note(summary: str, messages: int, units: int) -> str:
    """
    Stands where the marker would, holding a summary of what was dropped: it says which
    range it covers and that it is a record of the past, so the model reads no task in it.
    """
    noun, verb = ("message", "was") if messages == 1 else ("messages", "were")
    exchanges = "exchange" if units == 1 else "exchanges"
    return (
        f"[litellm_budget: the {messages} earlier {noun} of this conversation ({units} {exchanges}) "
        f"{verb} omitted by the gateway to fit the context window, summarized:]\n"
        f"{summary}\n"
        "[litellm_budget: end of the summary. The conversation continues below.]"
    )


def cut_note(shown_head: int, shown_tail: int, total_chars: int) -> str:
    """Stands between the head and the tail of a message that was cut to fit."""
    omitted = total_chars - shown_head - shown_tail
    return (
        f"[litellm_budget: the gateway cut this message to fit the context window: it shows "
        f"the first {shown_head} and the last {shown_tail} of {total_chars} characters; "
        f"{omitted} characters in between were omitted.]"
    )
