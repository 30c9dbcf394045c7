"""The request path of the core: resolve the window, count, gate, apply the policy, report."""

from __future__ import annotations

import dataclasses
import functools
import operator
import time
from collections.abc import Iterator, Sequence
from typing import Any

from litellm_budget.core._checks import positive_int
from litellm_budget.core._errors import context_window_exceeded
from litellm_budget.core._fit_input import DEFAULT_SETTINGS, FitRequest, Fitted
from litellm_budget.core._report import BudgetReport, elapsed_ms, format_ranges, unsent
from litellm_budget.core._untouched import as_it_came, malformed, window_source
from litellm_budget.core.budget._limits import limits_for, max_tokens_to_send
from litellm_budget.core.budget._settings import BudgetSettings
from litellm_budget.core.budget._window import resolve_window
from litellm_budget.core.counting._size_gate import GateContext, bounded_counts, passed_untouched
from litellm_budget.core.counting._tokens import counter_for, counts_exactly
from litellm_budget.core.formats import format_named, joined, lead_of
from litellm_budget.core.formats._message_keys import Reading
from litellm_budget.core.policies._ledger import NO_SUMMARIES, Derived, Draft, Ledger
from litellm_budget.core.policies._registry import POLICIES
from litellm_budget.core.policies._stored import stored_items
from litellm_budget.core.policies._summary import summaries_wanted, summary_fields
from litellm_budget.core.state._conversation import continues, kept_as_sent, kept_edits
from litellm_budget.core.state._rereads import rereads
from litellm_budget.core.validity._verdicts import remember_passed, resume_from
from litellm_budget.core.wording._recall import NOTHING_STORED
from litellm_budget.typing import Action, Message, Tools


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
        window: The context window in tokens; default: ``max_input_tokens`` from
            LiteLLM's model map, then ``settings.default_window``.
        tools: The request's ``tools`` schema, counted but never trimmed.
        max_tokens: The client's ``max_tokens`` / ``max_completion_tokens``.
        settings: The knobs; default ``BudgetSettings()``.

    Returns:
        A ``Fitted`` with the messages and ``max_tokens`` to send and a ``BudgetReport``.
        Malformed requests come back untouched with action ``unsupported`` and a reason;
        unknown models with action ``unknown_window``.

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
    Fit a request, never raising for what is in it: a rejection is a report with
    action ``rejected``, so ``fit()`` and the plugin each decide how to raise. ``ratio`` is the
    provider's tokens per counted token as learned from its usage; ``None``: the configured
    ``token_ratios``, else the prior of the model's family. With ``gate``, a request whose size
    bound is under the budget passes untouched uncounted: its report holds the bound
    (``tokens_exact`` false) until ``size_gate.counted`` counts it.

    The report is over ``messages``, the core's list; its ``lead`` says how many of its first
    entries are a system part given apart (``formats.joined``), for ``BudgetReport.for_caller``.
    """
    started = time.perf_counter()
    messages, model, tools, max_tokens, fmt = (
        request.messages,
        request.model,
        request.tools,
        request.max_tokens,
        request.fmt,
    )
    settings, ratio, previous, gate = request.settings, request.ratio, request.previous, request.gate
    requested = max_tokens if positive_int(max_tokens) is not None or max_tokens == 0 else None
    base = {"model": model, "policy": settings.policy, "format": fmt.name, "max_tokens_requested": requested}
    if isinstance(messages, list) and (lead := lead_of(messages)):
        base["lead"] = lead
    reading = Reading(messages if isinstance(messages, list) else [], fmt.name)
    resume = resume_from(fmt.name, reading.known_keys())
    verdict = fmt.check(messages, tools, max_tokens, resume)
    if verdict.reason is not None:
        return malformed(request, verdict.reason, started, base)
    found, base["reason"] = resolve_window(model, request.window, settings.default_window, request.lookup)
    base["window_source"] = window_source(request, found, defaulted=base["reason"] is not None)
    if found is None:
        # Sent as it came, but counted: the report says how big what went out unfitted was.
        counter = counter_for(model, image_tokens=settings.image_tokens)
        listed = list(messages)
        tokens = counter.count_tools(tools) + sum(counter.count_messages(fmt, listed, reading.keys()))
        counted = {"tokens_before": tokens, "tokens_after": tokens, "counter": counter.name}
        return as_it_came(messages, max_tokens, started, action="unknown_window", **counted, **base)
    policy, counter = POLICIES[settings.policy], counter_for(model, image_tokens=settings.image_tokens)
    ratio = settings.ratio_for(model) if ratio is None else ratio
    exact = counts_exactly(model)
    limits = limits_for(found, max_tokens, settings, ratio, holds_reserve=policy.holds_reserve, exact=exact)
    context = GateContext(
        counter=counter,
        format=fmt,
        limits=limits,
        image_tokens=settings.image_tokens,
        previous=previous,
        reading=reading,
    )
    if gate and (report := passed_untouched(messages, tools, max_tokens, context, started, **base)) is not None:
        return Fitted(messages=list(messages), max_tokens=max_tokens, report=report)
    listed = list(messages)
    # A compacted history is read from its newest compaction on: what is before it goes as it came, uncounted.
    start = fmt.history_start(listed)
    gate = gate and start is None
    keys = reading.keys()
    remember_passed(fmt.name, keys, verdict)
    ledger_of = functools.partial(
        Ledger,
        messages=listed,
        kinds=fmt.kinds(listed),
        tools_and_priming=counter.count_tools(tools),
        limits=limits,
        settings=settings,
        counter=counter,
        format=fmt,
        previous=previous,
        summaries=request.summaries or NO_SUMMARIES,
        recall=request.recall,
    )
    counts, derived = None, Derived(keys=keys)
    if gate and (bounded := bounded_counts(listed, keys, context)) is not None:
        if kept := _kept_uncounted(ledger_of(counts=bounded.counts, derived=derived), max_tokens, started, base):
            return kept
        # Counted after all: only the new messages; what was read of the messages stays read.
        new = counter.count_messages(fmt, listed[bounded.since :], keys[bounded.since :])
        counts = [*bounded.counts[: bounded.since], *new]
        derived = derived.recounted(counts, bounded.since)
    if counts is None:
        counts = counter.count_messages(fmt, listed, keys)
    if start is not None:
        apart = lead_of(listed)
        counts = [0 if apart <= index < start else count for index, count in enumerate(counts)]
    ledger = ledger_of(counts=counts, derived=derived)
    # A conversation whose last request was edited keeps its edits even when this one fits.
    untouched = ledger.total <= limits.budget and not continues(ledger)
    draft = Draft.of(ledger) if untouched else policy.apply(ledger)
    return _fitted(ledger, draft, max_tokens, started, **base)


def _kept_uncounted(ledger: Ledger, max_tokens: int | None, started: float, base: dict[str, Any]) -> Fitted | None:
    """
    The kept edits with the new messages at their bound, when that fits and sends them as they came
    (``size_gate.py`` says why the fit would send the same); ``None``: count them and fit.
    """
    if summaries_wanted(ledger) or (draft := kept_edits(ledger)).total > ledger.limits.budget:
        return None
    fitted = _fitted(ledger, draft, max_tokens, started, **base)
    new = ledger.messages[ledger.previous.messages :] if ledger.previous is not None else ()
    sent = fitted.messages[len(fitted.messages) - len(new) :]
    if fitted.max_tokens != max_tokens or len(sent) != len(new) or not all(map(operator.is_, sent, new)):
        return None
    bound = fitted.report.tokens_after
    report = dataclasses.replace(fitted.report, size_gate=True, tokens_exact=False, tokens_bound=bound)
    return dataclasses.replace(fitted, report=report, keys=ledger.keys)


def _fitted(ledger: Ledger, draft: Draft, max_tokens: int | None, started: float, **base: Any) -> Fitted:
    limits = ledger.limits
    tokens_before = ledger.total
    fits = draft.total <= limits.budget
    out = [entry.message for entry in draft.entries] if fits else list(ledger.messages)
    tokens_after = draft.total
    if _first_changed(ledger.messages, out) is not None:
        # Only edits are written back in the API's shape; what the client sent as it is stays so.
        # Placing a notice merges it with its neighbours: what is sent is counted as it is sent.
        out = ledger.format.finish(out)
        tokens_after = ledger.tools_and_priming + sum(_sent_counts(ledger, draft, out))
    changed = _first_changed(ledger.messages, out)
    action: Action = "rejected" if not fits else ("passthrough" if changed is None else "trimmed")
    sent = max_tokens_to_send(limits, max_tokens, tokens_after if fits else tokens_before)
    if not fits:
        base["reason"] = POLICIES[ledger.settings.policy].explain_rejection(ledger)
    report = BudgetReport(
        **base,
        action="trimmed" if action == "rejected" else action,
        **limits.report_fields(),
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        messages_before=len(ledger.messages),
        messages_after=len(out),
        elided=len(draft.elided),
        dropped_units=draft.dropped_units,
        dropped_messages=len(draft.dropped),
        cut=len(draft.cut),
        elided_at=format_ranges(draft.elided),
        dropped_at=format_ranges(draft.dropped),
        cut_at=format_ranges(draft.cut),
        marker=draft.marker,
        edits_kept=kept_as_sent(ledger, draft),
        rereads=rereads(ledger),
        **summary_fields(ledger, draft),
        first_changed_index=changed,
        max_tokens_sent=sent,
        counter=ledger.counter.name,
        duration_ms=elapsed_ms(started),
    )
    if not fits:
        report = unsent(report, "rejected", base["reason"])
    stored = stored_items(ledger, draft, out) if fits else NOTHING_STORED
    return Fitted(messages=out, max_tokens=sent, report=report, stored=stored)


def _sent_counts(ledger: Ledger, draft: Draft, out: Sequence[Message]) -> Iterator[int]:
    """
    Each sent message's tokens: a draft entry's own where ``finish`` left its message the same
    object (every entry's tokens are its message's count), counted where a notice was placed.
    The draft holds its messages, so no id is reused while this runs.
    """
    known = {id(entry.message): entry.tokens for entry in draft.entries}
    for message in out:
        tokens = known.get(id(message))
        yield ledger.count(message) if tokens is None else tokens


def _first_changed(before: Sequence[Message], after: Sequence[Message]) -> int | None:
    for index, message in enumerate(after):
        if index >= len(before) or message is not before[index]:
            return index
    return None if len(after) == len(before) else len(after)
