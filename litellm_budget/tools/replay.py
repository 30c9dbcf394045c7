"""The one replay loop (``litellm-budget replay``'s and ``benchmarks/lab``'s): what a strategy sent per request."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from litellm_budget.core.api import (
    CHAT,
    BudgetSettings,
    FitRequest,
    Fitted,
    MessageFormat,
    RecallScope,
    SentEdits,
    counter_for,
    edits_sent,
    fit_request,
)
from litellm_budget.typing import Message

from . import table
from .prefix import anthropic_blocks, shared_prefix, text_heads

#: Columns of the per-request table shared by the demo and ``replay --rows``.
ROW_HEADERS = ("request", "messages", "tokens before", "tokens after", "action", "elided", "dropped", "ms")


@dataclasses.dataclass(frozen=True, slots=True)
class Outcome:
    """What a strategy would send for one request (``None``: it refused), and how it called it."""

    messages: list[Message] | None
    action: str
    elided: int = 0
    dropped: int = 0
    #: Calls of this request repeating one whose output the last request hid (ours only: the report's).
    rereads: int = 0
    #: Handles or keys the sent request names for a tool to serve back (recall, ``compress()``); ``None``: none.
    stored: Mapping[str, str] | None = None


#: A policy of ours, a baseline or a peer, as the replay runs it: a request in, its outcome out.
Strategy = Callable[[list[Message]], Outcome]


def policy_strategy(
    name: str, model: str, window: int, settings: BudgetSettings | None = None, fmt: MessageFormat = CHAT
) -> Strategy:
    """A policy of the plugin, fitting each request as the plugin does: the conversation's last edits remembered."""
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


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Replayed:
    """One request as a strategy replayed it: what it sent, and in tokens, each sent message and the whole."""

    number: int
    request: list[Message]
    outcome: Outcome
    #: What was sent (empty when refused), and each of its messages' tokens.
    sent: list[Message]
    sizes: list[int]
    tokens_before: int
    tokens_after: int
    #: Tokens of the leading messages the last prompt sent had too: what a prompt cache reads again.
    shared: int
    #: Tokens of the messages the last request did not have.
    new: int
    #: The strategy's own time on it, nothing the replay measures after.
    ms: float


def replayed(
    requests: Iterable[list[Message]], strategy: Strategy, *, model: str, fmt: MessageFormat = CHAT
) -> Iterator[Replayed]:
    """Run ``strategy`` on each request of one session in order, measuring the prefix shared with the last one sent."""
    counter = counter_for(model)
    count = functools.partial(fmt.count_message, counter)
    blocks = anthropic_blocks(count) if fmt.name == "anthropic" else text_heads(counter.count_text, fmt.texts)
    previous: list[Message] = []
    seen = 0
    for number, request in enumerate(requests, start=1):
        started = time.perf_counter()
        outcome = strategy(request)
        ms = (time.perf_counter() - started) * 1000
        sent = outcome.messages or []
        sizes = [count(m) for m in sent]
        after = sum(sizes) + counter.count_tools(None) if outcome.messages is not None else 0
        before = sum(map(count, request)) + counter.count_tools(None)
        shared = shared_prefix(previous, sent, sizes, blocks)
        yield Replayed(
            number=number,
            request=request,
            outcome=outcome,
            sent=sent,
            sizes=sizes,
            tokens_before=before,
            tokens_after=after,
            shared=shared,
            new=before - seen,
            ms=ms,
        )
        seen = before
        if outcome.messages is not None:
            previous = sent


_Row = TypeVar("_Row", bound="Row")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One replayed request of a session, as the tables print it."""

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
    ms: float

    @classmethod
    def of(cls: type[_Row], session: str, step: Replayed, **measures: Any) -> _Row:
        """The row of ``step``; ``measures``: the fields a subclass adds (the research replay's)."""
        outcome = step.outcome
        return cls(
            session=session,
            request=step.number,
            messages=len(step.request),
            tokens_before=step.tokens_before,
            tokens_after=step.tokens_after,
            action=outcome.action,
            elided=outcome.elided,
            dropped=outcome.dropped,
            shared=step.shared,
            new=step.new,
            ms=step.ms,
            **measures,
        )


def in_order(rows: Iterable[_Row]) -> Iterator[tuple[_Row, int, bool]]:
    """Each row of one session with the size of the last prompt sent before it (0 if none), and whether it opens it."""
    previous = 0
    for index, row in enumerate(rows):
        yield row, previous, index == 0
        previous = row.tokens_after if row.action != "rejected" else previous


@dataclasses.dataclass(slots=True)
class Totals:
    """What one policy sent at one window, summed over every replayed request."""

    requests: int = 0
    fitted: int = 0
    rejected: int = 0
    sent_tokens: int = 0
    shared_tokens: int = 0
    new_tokens: int = 0
    previous_tokens: int = 0
    #: Re-prefilled tokens that were not new: per request ``max(0, sent - reused - new)``.
    needless_tokens: int = 0
    #: New tokens in every request but a session's first, and what was needlessly re-prefilled in those.
    later_new_tokens: int = 0
    later_needless_tokens: int = 0
    fill: float = 0.0
    ms: float = 0.0

    def add(self, row: Row, window: int, previous: int, *, first: bool = False) -> bool:
        """
        Count one request; ``previous`` is the size of the prompt sent before it (0 if none),
        ``first`` whether it opens its session (all of it is new). Returns whether it was sent.
        """
        self.requests += 1
        self.ms += row.ms
        if row.action == "rejected":
            self.rejected += 1
            return False
        self.fitted += 1
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
        return True

    def add_session(self, rows: Iterable[Row], window: int) -> None:
        """Count one session's requests in order, each against the last prompt sent before it."""
        for row, previous, first in in_order(rows):
            self.add(row, window, previous, first=first)

    def summary(self) -> dict[str, Any]:
        """Plain numbers for tables and JSON."""
        return {
            "requests": self.requests,
            "fitted": self.fitted,
            "rejected": self.rejected,
            "sent_tokens": self.sent_tokens,
            "reuse": share(self.shared_tokens, self.sent_tokens),
            "prefix_kept": share(self.shared_tokens, self.previous_tokens),
            "reuse_ceiling": round(1 - self.new_tokens / self.sent_tokens, 4) if self.sent_tokens else 0.0,
            "reprefilled_tokens": self.sent_tokens - self.shared_tokens,
            "needless_reprefill": self.needless_tokens,
            "needless_per_new": share(self.later_needless_tokens, self.later_new_tokens),
            "mean_fill": round(self.fill / self.fitted, 4) if self.fitted else 0.0,
            "ms_per_request": round(self.ms / self.requests, 3) if self.requests else 0.0,
        }


def share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def format_rows(rows: Sequence[Row], *, reused: bool = False, why: Sequence[str] | None = None) -> str:
    """The per-request table of the demo and ``replay --rows``; ``why``, one text per row, adds a last column."""
    headers = [*ROW_HEADERS[:4], *(["reused"] if reused else []), *ROW_HEADERS[4:], *(["why"] if why else [])]
    cells = []
    reasons: Sequence[str | None] = why or [None] * len(rows)
    for r, reason in zip(rows, reasons, strict=True):
        sizes = [r.request, r.messages, r.tokens_before, r.tokens_after, *([r.shared] if reused else [])]
        cells.append([*sizes, r.action, r.elided, r.dropped, r.ms, *([reason] if why else [])])
    return table.render(headers, cells)


class Remembered:
    """
    The edits sent last, as the plugin remembers them per conversation (``conversation_state``; every replayed request
    comes within the cache lifetime). A session's first request continues no earlier one, so it is fitted afresh.
    """

    def __init__(self, settings: BudgetSettings) -> None:
        self.enabled = settings.conversation_state
        self.previous: SentEdits | None = None

    def sent(self, messages: list[Message], fitted: Fitted) -> None:
        """``fitted`` was sent for ``messages``: a trim becomes the conversation's state."""
        if self.enabled and fitted.report.action == "trimmed":
            self.previous = edits_sent(messages, fitted.report)
