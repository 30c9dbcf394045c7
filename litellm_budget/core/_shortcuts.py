"""
What an earlier request of the same conversation lets a fit skip, all behind ``Shortcuts.taken``:
checks of a prefix that passed before, counting under the size gate, counting the kept edits. Each
gives exactly what the full way would; ``tests/adapter/report/test_later_counts.py`` compares both.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from litellm_budget.core._fit_input import FitRequest, Fitted
from litellm_budget.core._sending import fitted_of
from litellm_budget.core.counting._size_gate import GateContext, bounded_counts, passed_untouched
from litellm_budget.core.formats._message_keys import Reading
from litellm_budget.core.policies._ledger import Derived, Ledger
from litellm_budget.core.policies._summary import summaries_wanted
from litellm_budget.core.state import kept_edits
from litellm_budget.core.validity._verdicts import Resume, Verdict, remember_passed, resume_from
from litellm_budget.typing import Message

#: The ledger of the request's messages at ``counts``, with what was derived of them so far.
LedgerOf = Callable[[Sequence[Message], Sequence[int], Derived], Ledger]


class Known(NamedTuple):
    """What the shortcuts leave the fit; ``start``: where a compacted history starts (``history_start``)."""

    messages: list[Message]
    keys: Sequence[int]
    counts: Sequence[int] | None
    derived: Derived
    start: int | None


class Shortcuts:
    """What earlier requests let one fit skip; read once, before its checks."""

    __slots__ = ("reading", "resume")

    def __init__(self, request: FitRequest) -> None:
        messages, name = request.messages, request.fmt.name
        #: The request read against its conversation's last read: each message's key, and which are known.
        self.reading = Reading(messages if isinstance(messages, list) else [], name)
        #: Where the format's checks may start.
        self.resume: Resume = resume_from(name, self.reading.known_keys())

    def taken(
        self,
        request: FitRequest,
        context: GateContext,
        verdict: Verdict,
        ledger_of: LedgerOf,
        started: float,
        base: Any,
    ) -> Fitted | Known:
        """The fit, where the size gate or the kept edits answer the request; else what is left to count."""
        messages, tools, max_tokens = request.messages, request.tools, request.max_tokens
        gate = request.gate
        if gate and (report := passed_untouched(messages, tools, max_tokens, context, started, **base)) is not None:
            return Fitted(messages=list(messages), max_tokens=max_tokens, report=report)
        listed = list(messages)
        # A compacted history is read from its newest compaction on (``fit_request``): no bound for it.
        start = request.fmt.history_start(listed)
        gate = gate and start is None
        keys = self.reading.keys()
        remember_passed(request.fmt.name, keys, verdict)
        derived = Derived(keys=keys)
        if not gate or (bounded := bounded_counts(listed, keys, context)) is None:
            return Known(listed, keys, None, derived, start)
        ledger = ledger_of(listed, bounded.counts, derived)
        if kept := _kept_uncounted(ledger, max_tokens, started, base):
            return kept
        # Counted after all: only the new messages; what was read of the messages stays read.
        new = context.counter.count_messages(request.fmt, listed[bounded.since :], keys[bounded.since :])
        counts = [*bounded.counts[: bounded.since], *new]
        return Known(listed, keys, counts, derived.recounted(counts, bounded.since), start)


def _kept_uncounted(ledger: Ledger, max_tokens: int | None, started: float, base: dict[str, Any]) -> Fitted | None:
    """
    The kept edits with the new messages at their bound, when that fits and sends them as they came
    (``size_gate.py`` says why a fit would send the same); ``None``: count them and fit.
    """
    if summaries_wanted(ledger) or (draft := kept_edits(ledger)).total > ledger.limits.budget:
        return None
    fitted = fitted_of(ledger, draft, max_tokens, started, **base)
    new = ledger.messages[ledger.previous.messages :] if ledger.previous is not None else ()
    sent = fitted.messages[len(fitted.messages) - len(new) :]
    if fitted.max_tokens != max_tokens or len(sent) != len(new) or not all(map(operator.is_, sent, new)):
        return None
    bound = fitted.report.tokens_after
    report = dataclasses.replace(fitted.report, size_gate=True, tokens_exact=False, tokens_bound=bound)
    return dataclasses.replace(fitted, report=report, keys=ledger.keys)
