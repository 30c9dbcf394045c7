"""Names for the shapes the core passes around: messages, counters and window lookups."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, TypeAlias

#: One OpenAI-format chat message, as LiteLLM hands it over: a plain dict.
Message: TypeAlias = Mapping[str, Any]

#: The request's ``tools`` schema (OpenAI function tools), counted but never trimmed.
Tools: TypeAlias = Sequence[Mapping[str, Any]]

PolicyName: TypeAlias = Literal["auto", "elide", "plan"]

Action: TypeAlias = Literal["passthrough", "trimmed", "rejected", "unknown_window", "unsupported"]


class TokenCounter(Protocol):
    """Counts tokens the way the model will; the default wraps tiktoken."""

    @property
    def name(self) -> str:
        """What counted, e.g. ``tiktoken:o200k_base`` or ``estimate``."""

    def count_text(self, text: str) -> int:
        """Tokens of a bare string."""

    def count_message(self, message: Message) -> int:
        """Tokens of one message, its per-message overhead included."""

    def count_tools(self, tools: Tools | None) -> int:
        """Tokens of the ``tools`` schema, plus the reply priming every request pays."""


class WindowLookup(Protocol):
    """Finds a model's ``max_input_tokens``; ``None`` when the model is unknown."""

    def __call__(self, model: str) -> int | None:
        """Look the window up."""
