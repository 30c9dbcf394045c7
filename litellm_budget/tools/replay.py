"""Replay recorded sessions request by request and measure what each strategy would have sent."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterable, Sequence
from typing import Any

from litellm_budget.core._fit import fit_request
from litellm_budget.core._fit_input import FitRequest
from litellm_budget.core.budget._settings import BudgetSettings
from litellm_budget.core.counting._tokens import counter_for
from litellm_budget.core.formats import MessageFormat
from litellm_budget.core.formats._chat import CHAT
from litellm_budget.core.policies._registry import POLICIES
from litellm_budget.core.wording._recall import RecallScope
from litellm_budget.typing import Message

from . import table
from .baselines import BASELINES
from .cache_model import CacheModel, CacheSetup, cache_cost
from .compress_peer import COMPRESS_PEERS, compress_peer
from .evidence import NO_RECALL, Evidence, Recall, ratio, recall_of, retrievable_summary
from .outcome import Outcome, Strategy, baseline_outcome, newest_dropped, overflows
from .prefix import anthropic_blocks, shared_prefix, text_heads
from .pricing import Prices
from .remembered import Remembered
from .replay_summaries import summarizing_strategy

#: Columns of the per-request table shared by the demo and ``replay --rows``.
ROW_HEADERS = ["request", "messages", "tokens before", "tokens after", "action", "elided", "dropped", "ms"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One replayed request."""

    session: str
    request: int
    messages: int
    tokens_before: int
    tokens_after: int
    action: str
    elided: int
    dropped: int
    shared: int
    new: int
    overflow: bool
    invalid: bool
    ms: float
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

    requests: int = 0
    fitted: int = 0
    rejected: int = 0
    overflow: int = 0
    invalid: int = 0
    newest_dropped: int = 0
    rereads: int = 0
    sent_tokens: int = 0
    shared_tokens: int = 0
    new_tokens: int = 0
    previous_tokens: int = 0
    #: Re-prefilled tokens that were not new: per request ``max(0, sent - reused - new)``.
    needless_tokens: int = 0
    #: Tokens of new messages in every request but a session's first, and what was needlessly
    #: re-prefilled in those requests.
    later_new_tokens: int = 0
    later_needless_tokens: int = 0
    cache_read: int = 0
    cache_written: int = 0
    fill: float = 0.0
    ms: float = 0.0
    #: Evidence of every request; a rejected one sent none of its own.
    evidence: Recall = NO_RECALL
    #: ... and with what the sent requests name in storage (``None``: the strategy stores nothing).
    retrievable: Recall | None = None

    def add(self, row: Row, window: int, previous: int, *, first: bool = False) -> None:
        """
        Count one request; ``previous`` is the size of the prompt sent before it (0 if none),
        ``first`` whether it opens its session (all of it is new).
        """
        self.requests += 1
        self.ms += row.ms
        # A rejected request sends nothing: none of its evidence reaches the model.
        self.evidence = self.evidence.plus(row.evidence)
        if row.retrievable is not None:
            self.retrievable = (self.retrievable or NO_RECALL).plus(row.retrievable)
        if row.action == "rejected":
            self.rejected += 1
            return
        self.fitted += 1
        self.overflow += row.overflow
        self.invalid += row.invalid
        self.newest_dropped += row.newest_dropped
        self.rereads += row.rereads
        self.cache_read += row.cache_read
        self.cache_written += row.cache_written
        self.sent_tokens += row.tokens_after
        self.shared_tokens += row.shared
        self.new_tokens += min(row.new, row.tokens_after)
        self.previous_tokens += previous
        needless = max(0, row.tokens_after - row.shared - row.new)
        self.needless_tokens += needless
        if not first:
            self.later_new_tokens += row.new
            self.later_needless_tokens += needless
        self.fill += row.tokens_after / window

    def add_session(self, rows: Iterable[Row], window: int) -> None:
        """Count one session's requests in order, each against the last prompt sent before it."""
        previous = 0
        for index, row in enumerate(rows):
            self.add(row, window, previous, first=index == 0)
            previous = row.tokens_after if row.action != "rejected" else previous

    def summary(
        self, prices: Prices | None = None, *, price: float | None = None, cached_share: float | None = None
    ) -> dict[str, Any]:
        """
        Plain numbers for tables and JSON: ratios, re-prefill and its needless part, the input
        cost at ``prices`` (or, the older flat form, fresh ``price`` per token with reused tokens
        at ``cached_share`` of it), evidence recall (``None``: nothing learned, or no answers).
        """
        reprefill = self.sent_tokens - self.shared_tokens
        if prices is None:
            fresh = price or 0.0
            share = 1.0 if cached_share is None else cached_share
            prices = Prices(input=fresh, reused=fresh * share, reprefilled=fresh, source="flat")
        return {
            "requests": self.requests,
            "fitted": self.fitted,
            "rejected": self.rejected,
            "overflow": self.overflow,
            "invalid_pairs": self.invalid,
            "newest_dropped": self.newest_dropped,
            "rereads": self.rereads,
            "reuse": _ratio(self.shared_tokens, self.sent_tokens),
            "prefix_kept": _ratio(self.shared_tokens, self.previous_tokens),
            "reuse_ceiling": round(1 - self.new_tokens / self.sent_tokens, 4) if self.sent_tokens else 0.0,
            "reprefilled_tokens": reprefill,
            "needless_reprefill": self.needless_tokens,
            "needless_per_new": _ratio(self.later_needless_tokens, self.later_new_tokens),
            "mean_fill": round(self.fill / self.fitted, 4) if self.fitted else 0.0,
            "evidence_recall": ratio(self.evidence.kept, self.evidence.learned),
            "old_evidence_recall": ratio(self.evidence.old_kept, self.evidence.old_learned),
            "line_recall": ratio(self.evidence.old_lines_kept, self.evidence.old_learned),
            **retrievable_summary(self.retrievable),
            "evidence_learned": self.evidence.learned,
            "old_evidence_learned": self.evidence.old_learned,
            "input_cost": round(prices.cost(reused=self.shared_tokens, reprefilled=reprefill), 4),
            "cache_hit_ratio": _ratio(self.cache_read, self.sent_tokens),
            "cache_cost": round(
                cache_cost(prices, sent=self.sent_tokens, read=self.cache_read, written=self.cache_written), 4
            ),
            "ms_per_request": round(self.ms / self.requests, 3) if self.requests else 0.0,
        }


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


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
        options = (settings or BudgetSettings()).updated({"policy": name})
        remembered = Remembered(options)
        scope = RecallScope(b"replay") if options.recall_tool else None

        def policy(messages: list[Message]) -> Outcome:
            previous = remembered.previous
            request = FitRequest(messages, model=model, window=window, settings=options, fmt=fmt, previous=previous)
            fitted = fit_request(dataclasses.replace(request, recall=scope))
            remembered.sent(messages, fitted)
            report = fitted.report
            sent = None if report.action == "rejected" else fitted.messages
            stored = dict(fitted.stored) if scope is not None else None
            return Outcome(sent, report.action, report.elided, report.dropped_messages, report.rereads, stored)

        return policy
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
    Run ``strategy`` on each request of ``session`` in order, measuring the prefix shared with
    the last one sent, what the session's provider cache would read of it, and how much of each
    request's evidence was sent.
    """
    name, requests, evidence = session.name, session.requests, session.evidence
    counter = counter_for(model)
    count = functools.partial(fmt.count_message, counter)
    blocks = anthropic_blocks(count) if fmt.name == "anthropic" else text_heads(counter.count_text, fmt.texts)
    rows: list[Row] = []
    previous: list[Message] = []
    seen = 0
    learned = iter(evidence or [])
    provider = CacheModel(session.cache, fmt) if session.cache is not None else None
    for number, request in enumerate(requests, start=1):
        started = time.perf_counter()
        outcome = strategy(request)
        ms = (time.perf_counter() - started) * 1000
        sent = outcome.messages or []
        sizes = [count(m) for m in sent]
        after = sum(sizes) + counter.count_tools(None) if outcome.messages is not None else 0
        before = sum(map(count, request)) + counter.count_tools(None)
        read, written = provider.serve(sent, sizes) if provider and outcome.messages is not None else (0, 0)
        rows.append(
            Row(
                session=name,
                request=number,
                messages=len(request),
                tokens_before=before,
                tokens_after=after,
                action=outcome.action,
                elided=outcome.elided,
                dropped=outcome.dropped,
                shared=shared_prefix(previous, sent, sizes, blocks),
                new=before - seen,
                overflow=outcome.messages is not None and overflows(sent, after, model, window, fmt),
                invalid=outcome.messages is not None and fmt.unsupported_reason(sent, None, None) is not None,
                ms=ms,
                newest_dropped=outcome.messages is not None and newest_dropped(request, sent),
                rereads=outcome.rereads,
                evidence=recall_of(found := next(learned, Evidence()), outcome.messages),
                retrievable=None if outcome.stored is None else recall_of(found, outcome.with_stored()),
                cache_read=read,
                cache_written=written,
            )
        )
        seen = before
        if outcome.messages is not None:
            previous = sent
    return rows


def format_rows(rows: Sequence[Row], *, reused: bool = False, why: Sequence[str] | None = None) -> str:
    """
    The per-request table shared by the demo and ``replay --rows`` (which knows what was
    reused); ``why``, one text per row, adds a last column.
    """
    headers = [*ROW_HEADERS[:4], *(["reused"] if reused else []), *ROW_HEADERS[4:], *(["why"] if why else [])]
    cells = []
    reasons: Sequence[str | None] = why or [None] * len(rows)
    for r, reason in zip(rows, reasons, strict=True):
        sizes = [r.request, r.messages, r.tokens_before, r.tokens_after, *([r.shared] if reused else [])]
        cells.append([*sizes, r.action, r.elided, r.dropped, r.ms, *([reason] if why else [])])
    return table.render(headers, cells)
