"""Public type names for callers and type checkers, like ``structlog.typing``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

__all__ = ("Action", "Message", "PolicyName", "Tools")

#: One OpenAI-format chat message, as LiteLLM hands it over (a plain dict): what ``fit()`` takes and returns.
Message: TypeAlias = Mapping[str, Any]
#: The request's ``tools`` schema (OpenAI function tools), counted but never trimmed.
Tools: TypeAlias = Sequence[Mapping[str, Any]]
#: The policies a request may be fitted with; ``auto`` is the default.
PolicyName: TypeAlias = Literal["auto", "elide", "plan", "summarize"]
#: What was done to a request, as ``BudgetReport.action`` says.
Action: TypeAlias = Literal["passthrough", "trimmed", "rejected", "deferred", "unknown_window", "unsupported"]
