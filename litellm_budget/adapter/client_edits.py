"""A client's Anthropic ``context_management``, applied here for upstreams that do not apply it themselves."""

from __future__ import annotations

import functools
from collections.abc import MutableMapping
from typing import Any

import structlog

from litellm_budget.core.context_edits import apply_context_edits
from litellm_budget.core.errors import provider_of
from litellm_budget.core.formats.anthropic import ANTHROPIC
from litellm_budget.core.tokens import counter_for

log = structlog.get_logger("litellm_budget")


def apply_client_edits(request: MutableMapping[str, Any], model: str) -> list[dict[str, Any]] | None:
    """
    Apply the request's ``context_management`` edits to its messages when ``model``'s provider is
    not Anthropic (which applies them itself: never twice), and take the field out once every
    edit in it was applied. Returns the applied edits as the API reports them; ``None`` when
    nothing was asked or it is the provider's to do.
    """
    asked = request.get("context_management")
    if not asked or provider_of(model) == "anthropic":
        return None
    count = functools.partial(ANTHROPIC.count_message, counter_for(model))
    edited = apply_context_edits(request["messages"], asked, count)
    request["messages"] = edited.messages
    if not edited.unknown:
        request.pop("context_management", None)
    log.info(
        "context_edits_applied",
        model=model,
        applied=[edit["type"] for edit in edited.applied],
        unknown=edited.unknown,
        cleared_input_tokens=sum(edit["cleared_input_tokens"] for edit in edited.applied),
    )
    return edited.applied
