"""The request path of the core: resolve the window, count, gate, apply the policy, report."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from ._draft import Draft, Request
from ._limits import Limits, limits_for, max_tokens_to_send
from ._policies import POLICIES
from ._report import BudgetReport, format_ranges
from ._settings import BudgetSettings
from ._shape import SYSTEM_ROLES, unsupported_reason
from ._tokens import counter_for
from ._types import Action, Message, TokenCounter, Tools, WindowLookup
from ._units import layout_of
from ._window import model_map_window, positive_int

DEFAULT_SETTINGS = BudgetSettings()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Fitted:
    """
    The request to send: ``messages`` (a new list; unchanged dicts are shared with the
    caller's), ``max_tokens`` (unchanged, or lowered to the room left) and the ``report``.
    """

    messages: list[Message]
    max_tokens: int | None
    report: BudgetReport


def fit_request(  # noqa: PLR0913 - one keyword per thing a request has
    messages: Sequence[Message],
    *,
    model: str,
    window: int | None = None,
    tools: Tools | None = None,
    max_tokens: int | None = None,
    settings: BudgetSettings = DEFAULT_SETTINGS,
    ratio: float = 1.0,
    lookup: WindowLookup = model_map_window,
) -> Fitted:
    """
    Fit a request, never raising for what is in it: a rejection is a report with
    action ``rejected``, so both public entry points decide how to raise.
    """
    started = time.perf_counter()
    requested = max_tokens if positive_int(max_tokens) is not None or max_tokens == 0 else None
    base = {"model": model, "policy": settings.policy, "max_tokens_requested": requested}
    reason = unsupported_reason(messages, tools, max_tokens)
    if reason is not None:
        return _untouched(messages, max_tokens, started, action="unsupported", reason=reason, **base)
    found, reason = _resolve_window(model, window, settings, lookup)
    if found is None:
        return _untouched(messages, max_tokens, started, action="unknown_window", reason=reason, **base)
    counter = counter_for(model, image_tokens=settings.image_tokens)
    limits = limits_for(found, max_tokens, settings, ratio * settings.ratio_for(model))
    request = _request(list(messages), tools, limits, settings, counter)
    if request.fixed + sum(request.counts) <= limits.budget:
        draft = Draft.of(request)
    else:
        draft = POLICIES[settings.policy](request)
    return _fitted(request, draft, max_tokens, started, reason=reason, **base)


def _resolve_window(
    model: str, window: int | None, settings: BudgetSettings, lookup: WindowLookup
) -> tuple[int | None, str | None]:
    if window is not None:
        if positive_int(window) is None:
            msg = f"window must be a positive int, got {window!r}"
            raise ValueError(msg)
        return window, None
    try:
        found = positive_int(lookup(model))
    # The model map is LiteLLM's and may fail in ways we cannot list; a failed lookup must
    # degrade to the configured default (or a pass-through), never fail the request.
    except Exception as exc:  # noqa: BLE001
        reason = f"window lookup failed: {type(exc).__name__}"
    else:
        if found is not None:
            return found, None
        reason = "model has no max_input_tokens in LiteLLM's model map"
    return settings.default_window, reason


def _request(
    messages: list[Message], tools: Tools | None, limits: Limits, settings: BudgetSettings, counter: TokenCounter
) -> Request:
    return Request(
        messages=messages,
        counts=[counter.count_message(message) for message in messages],
        fixed=counter.count_tools(tools),
        layout=layout_of(messages),
        limits=limits,
        settings=settings,
        counter=counter,
    )


def _fitted(request: Request, draft: Draft, max_tokens: int | None, started: float, **base: Any) -> Fitted:
    limits = request.limits
    tokens_before = request.fixed + sum(request.counts)
    fits = draft.total <= limits.budget
    out = [entry.message for entry in draft.entries] if fits else list(request.messages)
    changed = _first_changed(request.messages, out)
    action: Action = "rejected" if not fits else ("passthrough" if changed is None else "trimmed")
    sent = max_tokens_to_send(limits, max_tokens, draft.total if fits else tokens_before)
    if not fits:
        base["reason"] = _rejection_reason(request)
    report = BudgetReport(
        **base,
        action=action,
        window=limits.window,
        budget=limits.budget,
        reserve=limits.reserve,
        margin=limits.margin,
        watermark=limits.watermark,
        quantum=limits.quantum,
        tokens_before=tokens_before,
        tokens_after=draft.total if fits else min(draft.total, tokens_before),
        messages_before=len(request.messages),
        messages_after=len(draft.entries),
        elided=len(draft.elided),
        dropped_units=draft.dropped_units,
        dropped_messages=len(draft.dropped),
        cut=len(draft.cut),
        elided_at=format_ranges(draft.elided),
        dropped_at=format_ranges(draft.dropped),
        cut_at=format_ranges(draft.cut),
        marker=draft.marker,
        first_changed_index=changed,
        max_tokens_sent=sent,
        counter=request.counter.name,
        token_ratio=limits.ratio,
        duration_ms=_elapsed_ms(started),
    )
    return Fitted(messages=out, max_tokens=sent, report=report)


def _rejection_reason(request: Request) -> str:
    if request.settings.policy == "elide":
        return "elide: nothing else may be elided (system, user and the last messages stay)"
    kept = [i for i in sorted(request.layout.pinned) if request.messages[i]["role"] in SYSTEM_ROLES]
    need = request.fixed + sum(request.counts[i] for i in kept)
    return (
        f"{request.settings.policy}: the system messages alone need {need} tokens"
        if need > request.limits.budget
        else f"{request.settings.policy}: what may not be dropped (system, question, final step) "
        "still overflows after cutting"
    )


def _untouched(messages: Any, max_tokens: Any, started: float, **fields: Any) -> Fitted:
    """Forward exactly what came in: a non-list stays the very same object."""
    count = len(messages) if isinstance(messages, list) else 0
    report = BudgetReport(**fields, messages_before=count, messages_after=count, duration_ms=_elapsed_ms(started))
    same = list(messages) if isinstance(messages, list) else messages
    return Fitted(messages=same, max_tokens=max_tokens, report=report)


def _first_changed(before: Sequence[Message], after: Sequence[Message]) -> int | None:
    for index, message in enumerate(after):
        if index >= len(before) or message is not before[index]:
            return index
    return None if len(after) == len(before) else len(after)


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
