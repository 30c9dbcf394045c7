"""Where each LiteLLM call type keeps its messages: read them into one list for the core, write the fit back."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from litellm_budget.adapter.settings.config import REASON, compression_registered
from litellm_budget.core.api import (
    ANTHROPIC,
    CHAT,
    RESPONSES,
    Fitted,
    MessageFormat,
    is_int,
    is_mapping,
    joined,
    unjoin_for,
)

from . import kwargs as req

#: Anthropic requires thinking.budget_tokens >= 1024 and below max_tokens.
MIN_THINKING_BUDGET = 1024


@dataclasses.dataclass(frozen=True, slots=True)
class Parts:
    """What the core fits: the messages as one list, the tools, the answer's length; or why it goes untouched."""

    messages: list[Any]
    tools: Any
    max_tokens: Any
    unsupported: str | None = None


def _fitted_as_asked(_request: Mapping[str, Any]) -> str | None:
    """Chat requests are always this plugin's to fit."""
    return None


def _why_not_fitted_messages(request: Mapping[str, Any]) -> str | None:
    if request.get("thread"):
        return "thread: the history is held by the provider, out of reach"
    return REASON if compression_registered() else None


def _why_not_fitted(request: Mapping[str, Any]) -> str | None:
    """Responses whose history is out of reach, or whose client asked the provider to cut it."""
    if request.get("previous_response_id"):
        return "previous_response_id: the history is held by the provider, out of reach"
    if request.get("conversation"):
        return "conversation: the history is held by the provider, out of reach"
    if request.get("truncation") == "auto":
        return "truncation: auto: the client asked the provider to truncate"
    if request.get("context_management"):
        return "context_management: the client asked the provider to manage the context"
    if not isinstance(request.get("input"), str | list):
        return "input is neither a string nor a list of items"
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Shape:
    """How one API's request holds its messages, system part and answer's length, in the format the core reads."""

    format: MessageFormat
    messages_key: str
    system_key: str | None
    #: The keys a client may ask the answer's length with, the default last.
    max_tokens_keys: tuple[str, ...]
    #: Where LiteLLM's own metadata lives; ``None``: found per request (Anthropic's ``metadata`` goes to the provider).
    metadata_key: str | None = None
    #: Why a request of this shape is forwarded untouched, if it is.
    unsupported: Callable[[Mapping[str, Any]], str | None] = _fitted_as_asked
    #: Anthropic's ``thinking.budget_tokens`` must stay below ``max_tokens``.
    keeps_thinking_below_max_tokens: bool = False

    def read(self, request: Mapping[str, Any]) -> Parts:
        """The list the core fits (the system part as its first entry), the tools, the answer's length."""
        tools, max_tokens = request.get("tools"), request.get(self.max_tokens_key(request))
        why = self.unsupported(request)
        if why is not None:
            return Parts([], tools, max_tokens, why)
        value = request[self.messages_key]
        messages = req.chat_messages(value) if isinstance(value, list) else value
        system = request.get(self.system_key) if self.system_key else None
        return Parts(joined(self.format.name, system, messages)[0], tools, max_tokens)

    def write(self, request: MutableMapping[str, Any], fitted: Fitted) -> None:
        """Put the fitted messages and ``max_tokens`` back, under the keys the client used."""
        key = self.max_tokens_key(request)
        if fitted.report.action != "trimmed" and fitted.max_tokens == request.get(key):
            return
        request[self.messages_key] = unjoin_for(self.format.name)(fitted.messages)
        if fitted.max_tokens is not None:
            request[key] = fitted.max_tokens
            if self.keeps_thinking_below_max_tokens:
                _lower_thinking_budget(request, fitted.max_tokens)

    def max_tokens_key(self, request: Mapping[str, Any]) -> str:
        """The key the client asked the answer's length with (the default when none)."""
        return next((key for key in self.max_tokens_keys if request.get(key) is not None), self.max_tokens_keys[-1])


def _lower_thinking_budget(request: MutableMapping[str, Any], max_tokens: int) -> None:
    thinking = request.get("thinking")
    if not is_mapping(thinking):
        return
    budget = thinking.get("budget_tokens")
    if is_int(budget) and budget >= max_tokens:
        # Under 1025 tokens of room there is no valid budget; the provider then says so itself.
        request["thinking"] = {**thinking, "budget_tokens": max(MIN_THINKING_BUDGET, max_tokens - 1)}


CHAT_SHAPE = Shape(CHAT, "messages", None, req.MAX_TOKENS_KEYS)
ANTHROPIC_SHAPE = Shape(
    ANTHROPIC,
    "messages",
    "system",
    ("max_tokens",),
    "litellm_metadata",
    _why_not_fitted_messages,
    keeps_thinking_below_max_tokens=True,
)
RESPONSES_SHAPE = Shape(RESPONSES, "input", "instructions", ("max_output_tokens",), "litellm_metadata", _why_not_fitted)


def shape_for(call_type: object, request: Mapping[str, Any]) -> Shape | None:
    """The shape of a call type this plugin fits; ``None`` for every other (passed through untouched)."""
    found = format_of_call(call_type)
    if found == CHAT.name and isinstance(request.get("messages"), list):
        return CHAT_SHAPE
    if found == ANTHROPIC.name and isinstance(request.get("messages"), list):
        return ANTHROPIC_SHAPE
    if found == RESPONSES.name and "input" in request:
        return RESPONSES_SHAPE
    return None


def format_of_call(call_type: object) -> str | None:
    """The message format a call type's request is in, for the ones this plugin fits."""
    name = getattr(call_type, "value", call_type)
    if req.is_chat(name):
        return CHAT.name
    return {"anthropic_messages": ANTHROPIC.name, "responses": RESPONSES.name, "aresponses": RESPONSES.name}.get(
        str(name)
    )
