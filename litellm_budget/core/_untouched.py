"""What goes as it came: a request this plugin will not fit (forwarded, or refused over its window)."""

from __future__ import annotations

import time
from typing import Any

from litellm_budget.core._canonical import as_json
from litellm_budget.core._fit_input import FitRequest, Fitted
from litellm_budget.core._report import BudgetReport, elapsed_ms
from litellm_budget.core.budget import BudgetSettings, resolve_window
from litellm_budget.core.counting._tokens import counter_for
from litellm_budget.core.formats import MessageFormat


def passed_through(
    messages: Any, *, model: str, settings: BudgetSettings, fmt: MessageFormat, max_tokens: Any, reason: str
) -> Fitted:
    """A request this plugin will not fit, forwarded untouched with a report saying why (``unsupported``)."""
    fields = {"model": model, "policy": settings.policy, "format": fmt.name, "reason": reason}
    return as_it_came(messages, max_tokens, time.perf_counter(), action="unsupported", **fields)


def window_source(request: FitRequest, window: int | None, *, defaulted: bool) -> str | None:
    """Where the window came from: the caller's (``request.window_source`` names it), the model map, the default."""
    if request.window is not None:
        return request.window_source or "given"
    if window is None:
        return None
    return "default_window" if defaulted else "model_map"


def malformed(request: FitRequest, reason: str, started: float, base: dict[str, Any]) -> Fitted:
    """
    A request this plugin cannot trim safely (a malformed message, an orphan tool result) goes as it came, so the
    provider gives its own error, unless its JSON text's tokens (an upper bound) are over its window: it is refused.
    """
    messages, settings = request.messages, request.settings
    window, defaulted = resolve_window(request.model, request.window, settings.default_window, request.lookup)
    base = {**base, "window_source": window_source(request, window, defaulted=defaulted is not None)}
    if window is None:
        return as_it_came(messages, request.max_tokens, started, action="unsupported", reason=reason, **base)
    counter = counter_for(request.model, image_tokens=settings.image_tokens)
    ratio = settings.ratio_for(request.model) if request.ratio is None else request.ratio
    tokens = counter.count_text(as_json(messages)) + counter.count_tools(request.tools)
    counted = {"tokens_before": tokens, "tokens_after": tokens, "counter": counter.name, "token_ratio": ratio}
    fields: dict[str, Any] = {"action": "unsupported", "reason": reason, "window": window}
    if tokens * ratio > window:
        why = f"{reason}: it cannot be trimmed safely, and its {tokens} tokens are over the {window}-token window"
        fields = {"action": "rejected", "reason": why, "window": window, "budget": window}
    return as_it_came(messages, request.max_tokens, started, **fields, **counted, **base)


def as_it_came(messages: Any, max_tokens: Any, started: float, **fields: Any) -> Fitted:
    """Forward exactly what came in: a non-list stays the very same object."""
    count = len(messages) if isinstance(messages, list) else 0
    report = BudgetReport(**fields, messages_before=count, messages_after=count, duration_ms=elapsed_ms(started))
    same = list(messages) if isinstance(messages, list) else messages
    return Fitted(messages=same, max_tokens=max_tokens, report=report)
