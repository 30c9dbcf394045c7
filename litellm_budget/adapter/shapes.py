"""Where each LiteLLM call type keeps its messages: read them into one list for the core, write the fit back."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from litellm_budget.core.checks import is_int, is_mapping
from litellm_budget.core.fit import Fitted
from litellm_budget.core.formats import MessageFormat
from litellm_budget.core.formats.anthropic import ANTHROPIC, join_system, split_system
from litellm_budget.core.formats.chat import CHAT
from litellm_budget.core.formats.responses import RESPONSES, as_items, join_instructions, split_instructions

from . import request as req

#: Anthropic requires thinking.budget_tokens >= 1024 and below max_tokens.
MIN_THINKING_BUDGET = 1024


@dataclasses.dataclass(frozen=True, slots=True)
class Parts:
    """
    What the core fits: the messages as one list, the tools schema, and the answer's length;
    or why this request is forwarded untouched (``unsupported``).
    """

    messages: list[Any]
    tools: Any
    max_tokens: Any
    unsupported: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Shape:
    """How one API's request holds its messages, in the message format the core reads them in."""

    format: MessageFormat
    read: Callable[[Mapping[str, Any]], Parts]
    write: Callable[[MutableMapping[str, Any], Fitted], None]
    #: Where LiteLLM's own metadata lives; ``None``: found per request. On Anthropic's route
    #: ``metadata`` is the client's and goes to the provider, so the report never goes there.
    metadata_key: str | None = None


def _read_chat(request: Mapping[str, Any]) -> Parts:
    return Parts(req.chat_messages(request["messages"]), request.get("tools"), req.max_tokens_of(request)[1])


def _read_anthropic(request: Mapping[str, Any]) -> Parts:
    """The top-level ``system`` becomes the list's first entry; it comes back as the very same value."""
    return Parts(
        join_system(request.get("system"), request["messages"]), request.get("tools"), request.get("max_tokens")
    )


def _write_anthropic(request: MutableMapping[str, Any], fitted: Fitted) -> None:
    if fitted.report.action != "trimmed" and fitted.max_tokens == request.get("max_tokens"):
        return
    _, request["messages"] = split_system(fitted.messages)
    if fitted.max_tokens is not None:
        request["max_tokens"] = fitted.max_tokens
        _lower_thinking_budget(request, fitted.max_tokens)


def _lower_thinking_budget(request: MutableMapping[str, Any], max_tokens: int) -> None:
    """Keep ``thinking.budget_tokens`` below a lowered ``max_tokens``, as the API requires."""
    thinking = request.get("thinking")
    if not is_mapping(thinking):
        return
    budget = thinking.get("budget_tokens")
    if is_int(budget) and budget >= max_tokens:
        # Under 1025 tokens of room there is no valid budget; the provider then says so itself.
        request["thinking"] = {**thinking, "budget_tokens": max(MIN_THINKING_BUDGET, max_tokens - 1)}


def _read_responses(request: Mapping[str, Any]) -> Parts:
    """``input`` as items, ``instructions`` (counted, never dropped) as a developer item before them."""
    value, tools, max_tokens = request.get("input"), request.get("tools"), request.get("max_output_tokens")
    why = _why_not_fitted(request)
    if why is not None or not isinstance(value, str | list):
        return Parts([], tools, max_tokens, why or "input is neither a string nor a list of items")
    return Parts(join_instructions(request.get("instructions"), as_items(value)), tools, max_tokens)


def _why_not_fitted(request: Mapping[str, Any]) -> str | None:
    """Requests whose history is out of reach, or whose client asked the provider to cut it."""
    if request.get("previous_response_id"):
        return "previous_response_id: the history is held by the provider, out of reach"
    if request.get("truncation") == "auto":
        return "truncation: auto: the client asked the provider to truncate"
    if request.get("context_management"):
        return "context_management: the client asked the provider to manage the context"
    return None


def _write_responses(request: MutableMapping[str, Any], fitted: Fitted) -> None:
    if fitted.report.action != "trimmed" and fitted.max_tokens == request.get("max_output_tokens"):
        return
    request["input"] = split_instructions(fitted.messages)
    if fitted.max_tokens is not None:
        request["max_output_tokens"] = fitted.max_tokens


CHAT_SHAPE = Shape(CHAT, _read_chat, req.apply)
RESPONSES_SHAPE = Shape(RESPONSES, _read_responses, _write_responses, "litellm_metadata")
ANTHROPIC_SHAPE = Shape(ANTHROPIC, _read_anthropic, _write_anthropic, "litellm_metadata")


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
