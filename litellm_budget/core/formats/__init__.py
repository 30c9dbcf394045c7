"""The format seam: the policies read and write a message only through its API's ``MessageFormat``."""

from __future__ import annotations

from collections.abc import Sequence

from litellm_budget.core.formats import _anthropic as anthropic
from litellm_budget.core.formats import _responses as responses
from litellm_budget.core.formats._anthropic import ANTHROPIC, JOINED_KEY, join_system, split_system
from litellm_budget.core.formats._anthropic_convert import from_chat as anthropic_from_chat
from litellm_budget.core.formats._chat import CHAT
from litellm_budget.core.formats._message_keys import Reading, message_keys
from litellm_budget.core.formats._parts import map_texts, texts_of
from litellm_budget.core.formats._placement import NOTICE_KEY, plain
from litellm_budget.core.formats._protocol import ASSISTANT, SYSTEM, TOOL, USER, MessageFormat, Unjoin
from litellm_budget.core.formats._responses import RESPONSES, as_items
from litellm_budget.core.formats._responses import from_chat as responses_from_chat
from litellm_budget.core.formats._tool_calls import call_key, read_path
from litellm_budget.typing import Message

__all__ = (
    "ANTHROPIC",
    "ASSISTANT",
    "CHAT",
    "JOINED_KEY",
    "NOTICE_KEY",
    "RESPONSES",
    "SYSTEM",
    "TOOL",
    "USER",
    "MessageFormat",
    "Reading",
    "Unjoin",
    "anthropic_from_chat",
    "as_items",
    "call_key",
    "format_named",
    "join_system",
    "joined",
    "lead_of",
    "map_texts",
    "message_keys",
    "plain",
    "read_path",
    "responses_from_chat",
    "split_system",
    "texts_of",
    "unjoin_for",
)


def joined(name: str, system: object, messages: Sequence[Message] | str) -> tuple[list[Message], Unjoin]:
    """
    The list the core fits in format ``name``, the request's system part (Anthropic's ``system``, Responses'
    ``instructions``) first, and the ``Unjoin`` that takes it out again. Chat takes its system as messages.
    """
    if name == "anthropic" and not isinstance(messages, str):
        return anthropic.join_system(system, messages), unjoin_for(name)
    if name == "responses":
        items = responses.as_items(messages) if isinstance(messages, str) else messages
        return responses.join_instructions(system, items), unjoin_for(name)
    if name == "chat" and system is None and not isinstance(messages, str):
        # Not a list at all: handed on as it is, for the checks to name what it is.
        return (list(messages) if isinstance(messages, list) else messages), _same  # type: ignore[return-value]
    msg = f"format {name!r} takes {'no system= (put it in messages)' if name == 'chat' else 'a list of messages'}"
    raise ValueError(msg)


def unjoin_for(name: str) -> Unjoin:
    """What takes format ``name``'s system part back out of a list ``joined`` made."""
    if name == "anthropic":
        return lambda fitted: anthropic.split_system(fitted)[1]
    return responses.split_instructions if name == "responses" else _same


def lead_of(messages: Sequence[Message]) -> int:
    """How many entries ``joined`` put before the caller's messages: 1 for a system part given apart, else 0."""
    first = messages[0] if messages else None
    return int(
        isinstance(first, dict) and bool(first.get(anthropic.JOINED_KEY) or first.get(responses.INSTRUCTIONS_KEY))
    )


def _same(messages: list[Message]) -> list[Message]:
    return messages


def format_named(name: str) -> MessageFormat:
    """The format called ``name``: ``chat``, ``anthropic`` or ``responses``."""
    formats: dict[str, MessageFormat] = {"chat": CHAT, "anthropic": ANTHROPIC, "responses": RESPONSES}
    if name not in formats:
        msg = f"unknown message format {name!r}; known: {sorted(formats)}"
        raise ValueError(msg)
    return formats[name]
