"""Fit a request once per window and report each new outcome once, whatever number of hooks see it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, MutableMapping
from typing import Any

import structlog

from litellm_budget.core.conversation import edits_sent
from litellm_budget.core.fit import Fitted, fit_request, passed_through
from litellm_budget.core.report import BudgetReport, unsent

from .conversations import Conversations, KnownKey, conversation_key
from .once import DoneFits, FitRecord, record_of
from .publish import DEFERRED_KEY, publish, record_in_metadata
from .shapes import CHAT_SHAPE, Shape
from .summarizer import SummaryOutcome
from .targets import Target

log = structlog.get_logger("litellm_budget")


def fit_once(  # noqa: PLR0913 - keyword-only switches, one per hook that differs
    request: Mapping[str, Any],
    target: Target,
    done: DoneFits,
    *,
    ratio: float | None,
    hook: str,
    metadata: MutableMapping[str, Any] | None,
    defer: bool = False,
    bigger_window: int | None = None,
    silent: bool = False,
    shape: Shape = CHAT_SHAPE,
    conversations: Conversations | None = None,
    summaries: Mapping[str, str] | None = None,
    summary: SummaryOutcome | None = None,
    conversation: KnownKey | None = None,
) -> Fitted | None:
    """
    Fit unless these messages are already this request's fitted output; publish every
    new outcome once.

    With ``defer``, a rejection is left to a later hook (the chosen deployment may be
    bigger, or a fallback may take it): it is logged as deferred, and ``None`` returned.
    With ``bigger_window`` (a router fallback's), a request that does not fit untrimmed is not
    trimmed: its report says ``deferred``, for the caller to raise so the router falls back.
    With ``silent``, nothing is reported or remembered here: the caller hands the outcome to
    a later hook that knows more. With ``conversations``, the conversation's last edits are
    kept while they fit, and what is sent becomes its state. ``summaries`` are the summaries of
    dropped blocks known (``summarizing.py``), ``summary`` what getting them cost and why it failed;
    ``conversation`` the conversation key the hook read before the fit, if it did.
    """
    parts = shape.read(request)
    messages, max_tokens = parts.messages, parts.max_tokens
    call_id = str(request.get("litellm_call_id") or "")
    if parts.unsupported is not None:
        untouched = passed_through(
            messages,
            model=target.model,
            settings=target.settings,
            fmt=shape.format,
            max_tokens=max_tokens,
            reason=parts.unsupported,
        )
        if not silent and not done.served(call_id):
            publish(untouched.report, metadata, hook=hook, model_group=target.group, litellm_call_id=call_id or None)
            done.serve(call_id, untouched.report)  # what is sent: the request as it came
        return None
    policy = target.settings.policy
    wanted = record_of(target.window, policy, messages, max_tokens)
    if done.already_fitted(call_id, wanted):
        return None
    key = _key_of(conversations, target, shape, messages, conversation)
    fitted = fit_request(
        messages,
        model=target.model,
        window=target.window,
        tools=parts.tools,
        max_tokens=max_tokens,
        settings=target.settings,
        ratio=ratio,
        fmt=shape.format,
        previous=conversations.recall(key, messages) if conversations is not None and key else None,
        summaries=summaries,
    )
    if summary is not None:
        fitted = _with_summary_costs(fitted, summary)
    report = fitted.report
    if silent:
        return fitted  # not sent (yet): whoever sends it keeps the state (``keep_state``)
    if bigger_window is not None and report.action in {"trimmed", "rejected"} and (report.window or 0) < bigger_window:
        report = unsent(report, "deferred", f"a router fallback has a {bigger_window}-token window")
        fitted = Fitted(messages=list(messages), max_tokens=max_tokens, report=report)
    if target.refused:
        log.warning("request_override_refused", keys=list(target.refused), model_group=target.group, hook=hook)
    if defer and report.action == "rejected":
        log.info("rejection_deferred", hook=hook, model_group=target.group, window=report.window)
        return None
    if key:
        keep_state(conversations, target, shape, messages, report, key=key)
    fitted_input = wanted._replace(window=report.window or 0)
    if done.already_reported(call_id, fitted_input):
        if metadata is not None:
            record_in_metadata(metadata, report)  # a retry's fresh metadata still carries it
    else:
        publish(report, metadata, hook=hook, model_group=target.group, litellm_call_id=call_id or None)
    _remember(done, call_id, fitted, fitted_input, metadata)
    return fitted


def _with_summary_costs(fitted: Fitted, summary: SummaryOutcome) -> Fitted:
    """The report says what the summary calls made for this request cost, and why a summary is missing."""
    report = dataclasses.replace(
        fitted.report,
        summary_calls=summary.calls,
        summary_cost=summary.cost,
        summary_failed=summary.failed or fitted.report.summary_failed,
    )
    return dataclasses.replace(fitted, report=report)


def _key_of(
    conversations: Conversations | None, target: Target, shape: Shape, messages: Any, known: KnownKey | None
) -> str | None:
    """The conversation key of a stateful fit: the one the hook read for these messages, else read now."""
    if not _stateful(conversations, target):
        return None
    return (known.of(messages, target.model) if known is not None else None) or conversation_key(
        target.model, shape.format, messages
    )


def _stateful(conversations: Conversations | None, target: Target) -> bool:
    return conversations is not None and target.settings.conversation_state


def keep_state(  # noqa: PLR0913 - what a conversation's state is made of
    conversations: Conversations | None,
    target: Target,
    shape: Shape,
    messages: Any,
    report: BudgetReport,
    *,
    key: str | None = None,
) -> None:
    """A trimmed request that is sent (``messages``: what it was fitted from) becomes its conversation's state."""
    if not _stateful(conversations, target) or report.action != "trimmed" or not isinstance(messages, list):
        return
    key = key or conversation_key(target.model, shape.format, messages)
    edits = edits_sent(messages, report)
    if conversations is not None and key and edits is not None:
        conversations.remember(key, edits, target.settings.lifetime_for(target.model))


def _remember(
    done: DoneFits, call_id: str, fitted: Fitted, fitted_input: FitRecord, metadata: MutableMapping[str, Any] | None
) -> None:
    """What later hooks and attempts of this request must know: what was sent, or handed over."""
    report = fitted.report
    if report.action == "deferred":
        done.serve_deferred(call_id, report)
    elif report.action != "rejected":
        done.remember(
            call_id, fitted_input, record_of(report.window, report.policy, fitted.messages, fitted.max_tokens)
        )
        done.serve(call_id, report)
        deferred = done.deferred(call_id)
        if deferred is not None and metadata is not None:
            # The attempt a fallback now serves: its payload tells both outcomes.
            record_in_metadata(metadata, deferred, key=DEFERRED_KEY)
