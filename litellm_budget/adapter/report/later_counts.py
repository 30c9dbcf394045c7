"""
Counted after the request left: a request the size gate passed goes with a report that holds its size bound, and is
counted on the event loop's next turn, while the provider works; then its report is published as every other is, with
exact counts. Past the queue's bounds a request is counted on its path, so a burst never piles up uncounted work.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import threading
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

from litellm_budget.adapter.failopen import Guard
from litellm_budget.adapter.records.calls import Calls
from litellm_budget.adapter.request.shapes import Parts
from litellm_budget.core.api import BudgetReport, BudgetSettings, GateRead, MessageFormat, counted
from litellm_budget.logs import get_logger

from .publish import publish, record_in_metadata

log = get_logger()

#: Requests waiting for their count, at most; more are counted on their path.
MAX_QUEUED = 1024
#: The most bytes of requests (their size bounds) waiting for their count.
MAX_QUEUED_BYTES = 64 * 2**20


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ReportTo:
    """Where a report goes: the request's metadata, the hook that fitted it, its model group and call id."""

    metadata: MutableMapping[str, Any] | None
    hook: str
    model_group: str
    call_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class PendingCount:
    """What a count needs: the request as the gate read it, its format, the settings it was fitted with."""

    parts: Parts
    format: MessageFormat
    settings: BudgetSettings
    #: The messages' content keys where the fit read them all (``Fitted.keys``).
    keys: Sequence[int] | None = None

    def count(self, report: BudgetReport) -> BudgetReport:
        """The report with the request's exact counts."""
        read = GateRead(self.parts.messages, self.parts.tools, self.keys)
        return counted(report, read, self.format, self.settings.image_tokens)


class LaterCounts:
    """The requests waiting for their count, oldest first, and the loop turns that count them."""

    def __init__(self, calls: Calls, max_queued: int = MAX_QUEUED, max_bytes: int = MAX_QUEUED_BYTES) -> None:
        self._calls = calls
        self._queue: collections.deque[tuple[Callable[[], None], int]] = collections.deque()
        self._bytes = 0
        self._max_queued, self._max_bytes = max_queued, max_bytes
        self._lock = threading.Lock()

    def publish(self, report: BudgetReport, to: ReportTo, pending: PendingCount) -> None:
        """Publish ``report``; one that holds the gate's bound goes to the metadata now, and whole once counted."""
        if report.tokens_exact:
            _publish(report, to)
            return
        if to.metadata is not None:
            record_in_metadata(to.metadata, report)  # the bound, until the count replaces it
        # A list of its own: the caller's may be rewritten once the request is on its way.
        parts = pending.parts
        own = dataclasses.replace(pending, parts=Parts(list(parts.messages), parts.tools, parts.max_tokens))
        job = functools.partial(self._counted, report, to, own)
        if not self._queued(job, report.tokens_bound or 0):
            job()  # the queue is full: counted on the path, as without the gate

    def settle(self) -> None:
        """Count everything waiting now (a success's calibration wants its exact count)."""
        while self._count_next():
            pass

    def __len__(self) -> int:
        return len(self._queue)

    def _queued(self, job: Callable[[], None], size: int) -> bool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False  # no loop to count on later (a sync caller): now
        with self._lock:
            if len(self._queue) >= self._max_queued or self._bytes + size > self._max_bytes:
                return False
            self._queue.append((job, size))
            self._bytes += size
        loop.call_soon(self._count_next)
        return True

    def _count_next(self) -> bool:
        """Count the oldest request waiting; ``False`` when none was."""
        with self._lock:
            if not self._queue:
                return False
            job, size = self._queue.popleft()
            self._bytes -= size
        job()
        return True

    def _counted(self, bound: BudgetReport, to: ReportTo, pending: PendingCount) -> None:
        # After the request left: a failure is logged (``hook_failed``, step ``count``) and changes nothing sent.
        with Guard(to.hook).step("count"):
            exact = pending.count(bound)
            if exact.tokens_after > (bound.tokens_bound or 0):  # the bound is proven; this would be a bug
                log.warning("size_bound_exceeded", litellm_call_id=to.call_id or None, hook=to.hook)
            _publish(exact, to)
            if to.call_id:
                self._calls.counted(to.call_id, bound, exact)


def _publish(report: BudgetReport, to: ReportTo) -> None:
    publish(report, to.metadata, hook=to.hook, model_group=to.model_group, litellm_call_id=to.call_id or None)
