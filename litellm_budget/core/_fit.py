"""The request path of the core: resolve the window, count, gate, apply the policy, report."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from litellm_budget.core._checks import positive_int
from litellm_budget.core._errors import context_window_exceeded
from litellm_budget.core._fit_input import DEFAULT_SETTINGS, FitRequest, Fitted
from litellm_budget.core._sending import fitted_of
from litellm_budget.core._shortcuts import Shortcuts
from litellm_budget.core._untouched import as_it_came, malformed, window_source
from litellm_budget.core.budget import BudgetSettings, limits_for, resolve_window
from litellm_budget.core.counting._size_gate import GateContext
from litellm_budget.core.counting._tokens import counter_for, counts_exactly
from litellm_budget.core.formats import format_named, joined, lead_of
from litellm_budget.core.policies._ledger import NO_SUMMARIES, Derived, Draft, Ledger
from litellm_budget.core.policies._registry import POLICIES
from litellm_budget.core.state import continues
from litellm_budget.typing import Message, Tools


def fit(  # noqa: PLR0913 - the public signature: one keyword per documented argument
    messages: Sequence[Message] | str,
    *,
    model: str,
    window: int | None = None,
    tools: Tools | None = None,
    max_tokens: int | None = None,
    settings: BudgetSettings | None = None,
    format: str = "chat",
    system: object = None,
) -> Fitted:
    """
    Fit a request into ``model``'s context window.

    Args:
        messages: The request's messages in ``format``; never mutated: OpenAI chat messages,
            Anthropic Messages' ``messages``, or Responses ``input`` items (or its string).
        format: ``chat``, ``anthropic`` or ``responses``.
        system: Anthropic's top-level ``system``, or Responses' ``instructions``: counted,
            never changed, and not part of the returned messages. Chat keeps it in ``messages``.
        model: The model as LiteLLM names it (``openai/gpt-4o`` and ``gpt-4o`` both work).
        window: The context window; default: ``max_input_tokens`` from LiteLLM's model map, then ``default_window``.
        tools: The request's ``tools`` schema, counted but never trimmed.
        max_tokens: The client's ``max_tokens`` / ``max_completion_tokens``.
        settings: The knobs; default ``BudgetSettings()``.

    Returns:
        A ``Fitted`` with the messages and ``max_tokens`` to send and a ``BudgetReport``. Malformed requests
        come back untouched with action ``unsupported`` and a reason; unknown models with action ``unknown_window``.

    Raises:
        litellm_budget.exceptions.BudgetExceededError: When nothing sensible fits, a
            ``litellm.ContextWindowExceededError`` whose ``.report`` says why; the report is also
            in ``provider_specific_fields["litellm_budget"]``.
        ValueError: When ``window`` is not a positive int.
    """
    listed, unjoin = joined(format, system, messages)
    settings = settings or DEFAULT_SETTINGS
    request = FitRequest(listed, model=model, window=window, tools=tools, max_tokens=max_tokens, settings=settings)
    fitted = fit_request(dataclasses.replace(request, fmt=format_named(format)))
    if fitted.report.action == "rejected":
        raise context_window_exceeded(fitted.report)
    return dataclasses.replace(fitted, messages=unjoin(fitted.messages), report=fitted.report.for_caller())


def fit_request(request: FitRequest) -> Fitted:
    """
    Fit a request, never raising for what is in it: a rejection is a report with action ``rejected``, so ``fit()``
    and the plugin each decide how to raise. A request the size gate (``gate``) passes uncounted reports its bound
    (``tokens_exact`` false) until ``size_gate.counted`` counts it. The report is over the core's list (``lead``).
    """
    started = time.perf_counter()
    base = _report_base(request)
    shortcuts = Shortcuts(request)
    messages, tools, max_tokens = request.messages, request.tools, request.max_tokens
    fmt, settings = request.fmt, request.settings
    verdict = fmt.check(messages, tools, max_tokens, shortcuts.resume)
    if verdict.reason is not None:
        return malformed(request, verdict.reason, started, base)
    found, base["reason"] = resolve_window(request.model, request.window, settings.default_window, request.lookup)
    base["window_source"] = window_source(request, found, defaulted=base["reason"] is not None)
    counter = counter_for(request.model, image_tokens=settings.image_tokens)
    if found is None:
        # Sent as it came, but counted: the report says how big what went out unfitted was.
        tokens = counter.count_tools(tools) + sum(counter.count_messages(fmt, list(messages), shortcuts.reading.keys()))
        counted = {"tokens_before": tokens, "tokens_after": tokens, "counter": counter.name}
        return as_it_came(messages, max_tokens, started, action="unknown_window", **counted, **base)
    policy = POLICIES[settings.policy]
    ratio = settings.ratio_for(request.model) if request.ratio is None else request.ratio
    exact = counts_exactly(request.model)
    limits = limits_for(found, max_tokens, settings, ratio, holds_reserve=policy.holds_reserve, exact=exact)
    context = GateContext(
        counter=counter,
        format=fmt,
        limits=limits,
        image_tokens=settings.image_tokens,
        previous=request.previous,
        reading=shortcuts.reading,
    )

    once: dict[str, Any] = {}  # the same for every ledger of the request: read once

    def ledger_of(listed: Sequence[Message], counts: Sequence[int], derived: Derived) -> Ledger:
        if not once:
            once.update(kinds=fmt.kinds(listed), tools_and_priming=counter.count_tools(tools))
        return Ledger(
            messages=listed,
            **once,
            limits=limits,
            settings=settings,
            counter=counter,
            format=fmt,
            previous=request.previous,
            summaries=request.summaries or NO_SUMMARIES,
            recall=request.recall,
            counts=counts,
            derived=derived,
        )

    known = shortcuts.taken(request, context, verdict, ledger_of, started, base)
    if isinstance(known, Fitted):
        return known
    counts = known.counts if known.counts is not None else counter.count_messages(fmt, known.messages, known.keys)
    if known.start is not None:
        # A compacted history is read from its newest compaction on: what is before it goes as it came, uncounted.
        apart = lead_of(known.messages)
        counts = [0 if apart <= index < known.start else count for index, count in enumerate(counts)]
    ledger = ledger_of(known.messages, counts, known.derived)
    # A conversation whose last request was edited keeps its edits even when this one fits.
    untouched = ledger.total <= limits.budget and not continues(ledger)
    draft = Draft.of(ledger) if untouched else policy.apply(ledger)
    return fitted_of(ledger, draft, max_tokens, started, **base)


def _report_base(request: FitRequest) -> dict[str, Any]:
    """What every report of the request says, whatever the fit does."""
    max_tokens, messages = request.max_tokens, request.messages
    requested = max_tokens if positive_int(max_tokens) is not None or max_tokens == 0 else None
    base = {
        "model": request.model,
        "policy": request.settings.policy,
        "format": request.fmt.name,
        "max_tokens_requested": requested,
    }
    if isinstance(messages, list) and (lead := lead_of(messages)):
        base["lead"] = lead
    return base
