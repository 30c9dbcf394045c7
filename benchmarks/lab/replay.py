"""
The research replay's measures of each strategy, on the wheel's replay loop
(``litellm_budget.tools.replay.replayed``): overflow, orphan pairs, evidence recall, the provider's
cache and the input cost, beside what the operator's replay counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from litellm_budget.core.budget._settings import BudgetSettings
from litellm_budget.core.formats import MessageFormat
from litellm_budget.core.formats._chat import CHAT
from litellm_budget.core.policies._registry import POLICIES
from litellm_budget.tools import replay
from litellm_budget.tools.replay import Strategy, in_order, policy_strategy, replayed, share
from litellm_budget.typing import Message

from .baselines import BASELINES
from .cache_model import CacheModel, CacheSetup, cache_cost
from .compress_peer import COMPRESS_PEERS, compress_peer
from .evidence import NO_RECALL, Evidence, Recall, ratio, recall_of, retrievable_summary
from .outcome import baseline_outcome, newest_dropped, overflows, with_stored
from .pricing import Prices
from .replay_summaries import summarizing_strategy


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Row(replay.Row):
    """One replayed request, with what the research replay measures of it."""

    overflow: bool = False
    invalid: bool = False
    #: The request's newest message (the tool result or question to answer) is not in what was sent.
    newest_dropped: bool = False
    #: How much of what the next answer learned from the request was sent (all 0 without answers).
    evidence: Recall = NO_RECALL
    #: Its calls that repeat one whose output the last request hid (our policies' report says).
    rereads: int = 0
    #: What a provider's cache (``cache_model.py``) would read of it and write, in counted tokens.
    cache_read: int = 0
    cache_written: int = 0
    #: The same as ``evidence``, counting what is stored under a handle or key the request names.
    retrievable: Recall | None = None


@dataclasses.dataclass(slots=True)
class Totals:
    """The measures of one strategy at one window, summed over every replayed request."""

    #: What the operator's replay counts of the same requests: sent, reused, re-prefilled, fill.
    counts: replay.Totals = dataclasses.field(default_factory=replay.Totals)
    overflow: int = 0
    invalid: int = 0
    newest_dropped: int = 0
    rereads: int = 0
    cache_read: int = 0
    cache_written: int = 0
    #: Evidence of every request; a rejected one sent none of its own.
    evidence: Recall = NO_RECALL
    #: ... and with what the sent requests name in storage (``None``: the strategy stores nothing).
    retrievable: Recall | None = None

    def add(self, row: Row, window: int, previous: int, *, first: bool = False) -> None:
        """
        Count one request; ``previous`` is the size of the prompt sent before it (0 if none),
        ``first`` whether it opens its session (all of it is new).
        """
        # A rejected request sends nothing: none of its evidence reaches the model.
        self.evidence = self.evidence.plus(row.evidence)
        if row.retrievable is not None:
            self.retrievable = (self.retrievable or NO_RECALL).plus(row.retrievable)
        if not self.counts.add(row, window, previous, first=first):
            return
        self.overflow += row.overflow
        self.invalid += row.invalid
        self.newest_dropped += row.newest_dropped
        self.rereads += row.rereads
        self.cache_read += row.cache_read
        self.cache_written += row.cache_written

    def add_session(self, rows: Iterable[Row], window: int) -> None:
        """Count one session's requests in order, each against the last prompt sent before it."""
        for row, previous, first in in_order(rows):
            self.add(row, window, previous, first=first)

    def summary(
        self, prices: Prices | None = None, *, price: float | None = None, cached_share: float | None = None
    ) -> dict[str, Any]:
        """
        Plain numbers for tables and JSON: ratios, re-prefill and its needless part, the input
        cost at ``prices`` (or, the older flat form, fresh ``price`` per token with reused tokens
        at ``cached_share`` of it), evidence recall (``None``: nothing learned, or no answers).
        """
        counts = self.counts.summary()
        sent, reprefill = self.counts.sent_tokens, counts["reprefilled_tokens"]
        if prices is None:
            fresh = price or 0.0
            share_of_fresh = 1.0 if cached_share is None else cached_share
            prices = Prices(input=fresh, reused=fresh * share_of_fresh, reprefilled=fresh, source="flat")
        return {
            **{key: counts[key] for key in ("requests", "fitted", "rejected")},
            "overflow": self.overflow,
            "invalid_pairs": self.invalid,
            "newest_dropped": self.newest_dropped,
            "rereads": self.rereads,
            **{key: counts[key] for key in _REUSE_AND_FILL},
            "evidence_recall": ratio(self.evidence.kept, self.evidence.learned),
            "old_evidence_recall": ratio(self.evidence.old_kept, self.evidence.old_learned),
            "line_recall": ratio(self.evidence.old_lines_kept, self.evidence.old_learned),
            **retrievable_summary(self.retrievable),
            "evidence_learned": self.evidence.learned,
            "old_evidence_learned": self.evidence.old_learned,
            "input_cost": round(prices.cost(reused=self.counts.shared_tokens, reprefilled=reprefill), 4),
            "cache_hit_ratio": share(self.cache_read, sent),
            "cache_cost": round(cache_cost(prices, sent=sent, read=self.cache_read, written=self.cache_written), 4),
            "ms_per_request": counts["ms_per_request"],
        }


#: The operator's figures the research table has, in its order.
_REUSE_AND_FILL = (
    "reuse",
    "prefix_kept",
    "reuse_ceiling",
    "reprefilled_tokens",
    "needless_reprefill",
    "needless_per_new",
    "mean_fill",
)


def strategy_for(
    name: str, model: str, window: int, settings: BudgetSettings | None = None, fmt: MessageFormat = CHAT
) -> Strategy:
    """A policy of ours (``auto``, ``plan``, ``elide``) or a baseline or peer of ``BASELINES`` (chat only)."""
    summarizing = summarizing_strategy(name, model, window, settings, fmt)  # summarize, auto+summaries, ...
    if summarizing is not None:
        return summarizing
    if name in COMPRESS_PEERS:
        return compress_peer(name, model, window)
    if name in POLICIES:
        return policy_strategy(name, model, window, settings, fmt)
    if name in BASELINES:
        if fmt is not CHAT:
            msg = f"the baseline {name!r} takes chat messages only; replay it with --format chat"
            raise ValueError(msg)
        baseline = BASELINES[name](model, window)
        return lambda messages: baseline_outcome(messages, baseline(messages))
    msg = f"unknown policy or baseline {name!r}; choose from {sorted([*POLICIES, *BASELINES])}"
    raise ValueError(msg)


@dataclasses.dataclass(frozen=True, slots=True)
class Session:
    """A recorded session as a replay takes it: its name, its requests in order, what each answer learned."""

    name: str
    requests: Iterable[list[Message]]
    #: Per request (``evidence.session_evidence``); ``None``: no answers to learn from.
    evidence: Iterable[Evidence] | None = None
    #: The prompt cache of the provider its prompts go to; ``None``: none modelled.
    cache: CacheSetup | None = None


def replay_session(
    session: Session, strategy: Strategy, *, model: str, window: int, fmt: MessageFormat = CHAT
) -> list[Row]:
    """
    Run ``strategy`` on each request of ``session`` in order through the wheel's loop, measuring
    what the session's provider cache would read of each prompt, and how much of each request's
    evidence was sent.
    """
    learned = iter(session.evidence or [])
    provider = CacheModel(session.cache, fmt) if session.cache is not None else None
    rows: list[Row] = []
    for step in replayed(session.requests, strategy, model=model, fmt=fmt):
        outcome, sent = step.outcome, step.sent
        was_sent = outcome.messages is not None
        read, written = provider.serve(sent, step.sizes) if provider and was_sent else (0, 0)
        found = next(learned, Evidence())
        rows.append(
            Row.of(
                session.name,
                step,
                overflow=was_sent and overflows(sent, step.tokens_after, model, window, fmt),
                invalid=was_sent and fmt.unsupported_reason(sent, None, None) is not None,
                newest_dropped=was_sent and newest_dropped(step.request, sent),
                rereads=outcome.rereads,
                evidence=recall_of(found, outcome.messages),
                retrievable=None if outcome.stored is None else recall_of(found, with_stored(outcome)),
                cache_read=read,
                cache_written=written,
            )
        )
    return rows
