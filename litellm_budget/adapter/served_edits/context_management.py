"""
A client's Anthropic ``context_management``, served here where the upstream would not serve it,
and what the response says of it (``applied_edits``, as Anthropic's own responses do).

Its edits (``clear_tool_uses``, ``clear_thinking``) are applied for upstreams other than
Anthropic (which applies them itself: never twice), by ``apply_client_edits``.

Its ``compact_20260112``, asked on the proxy's ``/v1/messages``, is served for every upstream with
the summary model (``summary_model``), by ``serve_compaction``.

Past the edit's trigger (input tokens, counted here), the conversation is summarized once and the
response starts with a ``compaction`` block holding the summary, as the API returns it. The request
that triggered it is sent as the fit would send it anyway; the client appends the response, and
from its next request on everything before the block is dropped and the summary stands in its
place. The edit is taken out of the request here, so no upstream applies it again. Without a
summary model an Anthropic upstream compacts natively (the edit is left to it); for any other the
edit is taken out, and past the trigger ``applied_edits`` says that it was skipped and why.
"""

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
    Serve the request's compaction edit, if it asks for one: take the edit out, read earlier
    ``compaction`` blocks as the API does, and past the trigger summarize. Returns what the
    response carries (the ``compaction`` block, then the applied edit as ``applied_edits``
    reports it); ``None`` when nothing is to be said. Never raises for a summarizer's failure.
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


def read_compacted(request: MutableMapping[str, Any], model: str) -> bool:
    """
    For an upstream other than Anthropic, a history holding a ``compaction`` is sent as Anthropic
    reads it (``after_compaction``): LiteLLM's bridge drops the block and would send the history
    it stands for, which the fit did not count. ``True`` when the messages changed.
    """
    messages = request.get("messages")
    if provider_of(model) == "anthropic" or not isinstance(messages, list) or ANTHROPIC.history_start(messages) is None:
        return False
    request["messages"], _ = after_compaction(messages)
    log.info("compaction_read", model=model, messages_before=len(messages), messages_after=len(request["messages"]))
    return True


def respond_with_edits(response: Any, applied: list[dict[str, Any]] | None) -> Any:
    """
    A response to a request whose ``context_management`` was served here says so, as Anthropic's
    does: ``context_management.applied_edits``, and a ``compaction`` block first in its content.
    """
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
