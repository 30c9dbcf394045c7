"""Recorded chat sessions in another API's shape, for replays: the lists the core fits in each format."""

from __future__ import annotations

from collections.abc import Sequence

from litellm_budget.core.api import anthropic_from_chat, join_system, responses_from_chat
from litellm_budget.typing import Message

#: The formats a session can be replayed in.
FORMATS = ("chat", "anthropic", "responses")


def converted(messages: Sequence[Message], format_name: str) -> list[Message]:
    """``messages`` (OpenAI chat) as the list the core fits in ``format_name``: Anthropic's with its system first."""
    if format_name == "anthropic":
        return join_system(*anthropic_from_chat(messages))
    if format_name == "responses":
        return list(responses_from_chat(messages))
    if format_name == "chat":
        return list(messages)
    msg = f"unknown format {format_name!r}; choose from {list(FORMATS)}"
    raise ValueError(msg)
