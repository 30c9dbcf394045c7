"""The ``clear_tool_uses``, ``clear_thinking`` and ``compact_20260112`` edits, served where the upstream would not."""

from __future__ import annotations

import functools
from collections.abc import MutableMapping
from typing import Any

from litellm_budget.adapter.request.shapes import ANTHROPIC_SHAPE
from litellm_budget.adapter.request.targets import Target
from litellm_budget.adapter.summaries.summarizer import Summarizer, SummarySource
from litellm_budget.core.api import (
    ANTHROPIC,
    COMPACT,
    COMPACTION_BLOCK,
    SYSTEM,
    after_compaction,
    apply_context_edits,
    compact_edit,
    compact_trigger,
    compaction_note,
    counter_for,
    provider_of,
    split_applied,
    summary_job,
    without_compact_edit,
)
from litellm_budget.logs import get_logger

log = get_logger()
#: The proxy's mark on the requests it serves: only there does the response get the block back.
PROXY_MARK = "proxy_server_request"


async def serve_compaction(
    summarizer: Summarizer, request: MutableMapping[str, Any], target: Target, *, router: Any, cache: Any
) -> list[dict[str, Any]] | None:
    """
    Serve the compaction edit with the summary model, for any upstream: take it out (no upstream applies it again), read
    earlier ``compaction`` blocks as the API does, and past the trigger summarize the conversation once, sending the
    request as the fit would. The response starts with a ``compaction`` block, which the client appends, so its later
    requests drop all before it. A summarizer's failure is reported in what this returns, never raised.
    """
    asked = request.get("context_management")
    edit = compact_edit(asked)
    settings = target.settings
    if edit is None or PROXY_MARK not in request:
        return None  # SDK calls: no response hook would hand the block back
    if settings.summary_model is None and provider_of(target.model) == "anthropic":
        return None  # the provider compacts natively: never twice
    rest = without_compact_edit(asked)  # type: ignore[arg-type]  # compact_edit found a mapping
    if rest is None:
        request.pop("context_management", None)
    else:
        request["context_management"] = rest
    request["messages"], _ = after_compaction(request["messages"])
    count = functools.partial(ANTHROPIC.count_message, counter_for(target.model))
    messages = ANTHROPIC_SHAPE.read(request).messages
    tokens, trigger = sum(map(count, messages)), compact_trigger(edit)
    if tokens <= trigger:
        return None
    if settings.summary_model is None:
        return [_skipped(target, "summary_model not configured", tokens, trigger)]
    indices = [index for index, kind in enumerate(ANTHROPIC.kinds(messages)) if kind != SYSTEM]
    job = summary_job(messages, ANTHROPIC, indices)
    outcome = await summarizer.summary_for(SummarySource.through(router, cache, settings), job, ANTHROPIC.name)
    if not outcome.text:
        return [_skipped(target, outcome.failed or "no summary", tokens, trigger)]
    note = {"role": "user", "content": [{"type": "text", "text": compaction_note(outcome.text)}]}
    cleared = max(0, sum(count(messages[index]) for index in indices) - count(note))
    log.info(
        "compaction_served", model=target.model, input_tokens=tokens, trigger=trigger, cleared_input_tokens=cleared
    )
    return [{"type": COMPACTION_BLOCK, "content": outcome.text}, {"type": COMPACT, "cleared_input_tokens": cleared}]


def apply_client_edits(request: MutableMapping[str, Any], model: str) -> list[dict[str, Any]] | None:
    """
    Apply the request's ``context_management`` edits where ``model``'s provider is not Anthropic (which applies them
    itself: never twice), taking the field out once all were applied. Returns them as the API reports applied edits.
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


def read_compacted(request: MutableMapping[str, Any], model: str) -> bool:
    """
    For an upstream other than Anthropic, send a history holding a ``compaction`` as Anthropic reads it: LiteLLM's
    bridge drops the block and would send the history it stands for, which the fit did not count. ``True``: changed.
    """
    messages = request.get("messages")
    if provider_of(model) == "anthropic" or not isinstance(messages, list) or ANTHROPIC.history_start(messages) is None:
        return False
    request["messages"], _ = after_compaction(messages)
    log.info("compaction_read", model=model, messages_before=len(messages), messages_after=len(request["messages"]))
    return True


def respond_with_edits(response: Any, applied: list[dict[str, Any]] | None) -> Any:
    """The response says what was served here, as Anthropic's does: ``applied_edits``, ``compaction`` blocks first."""
    if applied is None or not isinstance(response, dict):
        return response
    blocks, edits = split_applied(applied)
    if blocks and isinstance(response.get("content"), list):
        response["content"] = [*blocks, *response["content"]]
    response["context_management"] = {"applied_edits": edits}
    return response


def _skipped(target: Target, reason: str, tokens: int, trigger: int) -> dict[str, Any]:
    """The edit past its trigger that could not be served: the request goes on to the normal fit."""
    log.warning("compaction_skipped", model=target.model, reason=reason, input_tokens=tokens, trigger=trigger)
    return {"type": COMPACT, "cleared_input_tokens": 0, "skipped": reason}
