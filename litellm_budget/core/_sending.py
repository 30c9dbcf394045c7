"""What a fit sends: the draft's messages as the API takes them, counted as they go, and the report of them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from litellm_budget.core._fit_input import Fitted
from litellm_budget.core._report import BudgetReport, elapsed_ms, format_ranges, unsent
from litellm_budget.core.budget import max_tokens_to_send
from litellm_budget.core.policies._ledger import Draft, Ledger
from litellm_budget.core.policies._registry import POLICIES
from litellm_budget.core.policies._stored import stored_items
from litellm_budget.core.policies._summary import summary_fields
from litellm_budget.core.state import kept_as_sent, rereads
from litellm_budget.core.wording._recall import NOTHING_STORED
from litellm_budget.typing import Message


def fitted_of(ledger: Ledger, draft: Draft, max_tokens: int | None, started: float, **base: Any) -> Fitted:
    """What ``draft`` sends of ``ledger``, and its report; over the budget, the messages as they came, rejected."""
    limits = ledger.limits
    tokens_before = ledger.total
    fits = draft.total <= limits.budget
    out = [entry.message for entry in draft.entries] if fits else list(ledger.messages)
    tokens_after = draft.total
    if _first_changed(ledger.messages, out) is not None:
        # Only edits go back into the API's shape, and a placed notice merges with its neighbours: count what is sent.
        out = ledger.format.finish(out)
        tokens_after = ledger.tools_and_priming + sum(_sent_counts(ledger, draft, out))
    changed = _first_changed(ledger.messages, out)
    sent = max_tokens_to_send(limits, max_tokens, tokens_after if fits else tokens_before)
    rejection = None if fits else POLICIES[ledger.settings.policy].explain_rejection(ledger)
    report = BudgetReport(
        **base,
        action="passthrough" if changed is None else "trimmed",
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
    if rejection is not None:
        report = unsent(report, "rejected", rejection)
    stored = stored_items(ledger, draft, out) if fits else NOTHING_STORED
    return Fitted(messages=out, max_tokens=sent, report=report, stored=stored)


def _sent_counts(ledger: Ledger, draft: Draft, out: Sequence[Message]) -> Iterator[int]:
    """
    Each sent message's tokens: its draft entry's where ``finish`` left the same object, counted where
    a notice was placed. The draft holds its messages, so no id is reused while this runs.
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
