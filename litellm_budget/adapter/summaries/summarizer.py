"""
Summaries of dropped blocks, made once each and cached by digest here and in Redis, so replicas send the same bytes
and keep the prompt prefix, and the hook's step that asks for one (``summary_ahead``). A request waits at most
``summary_timeout``, and no failure here reaches it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

from litellm_budget.adapter.replicas.shared import shared_get_many, shared_set
from litellm_budget.bounded import BoundedDict, BoundedLRU
from litellm_budget.core.api import (
    BudgetReport,
    BudgetSettings,
    Fitted,
    MessageFormat,
    SummaryJob,
    block_digest,
    parse_ranges,
    summary_job,
)
from litellm_budget.logs import get_logger
from litellm_budget.typing import Message

from .prompt import bounded_summary, reply_cost, reply_text, summary_prompt, usage_tokens

log = get_logger()

#: Key prefix of a summary in the shared cache; the block's digest follows.
CACHE_PREFIX = "litellm_budget:summary:"
#: The tag of every summary call, in its ``metadata.tags`` (spend logs, tag routing, budgets).
SUMMARY_TAG = "litellm_budget:summary"
#: A summary stays valid as long as its block exists; a week covers any live conversation.
SHARED_TTL = 7 * 24 * 3600
#: After a failed call, the block is not tried again for this long: a summarizer that is down must not hold requests.
RETRY_SECONDS = 60.0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SummaryOutcome:
    """The summary ``text`` or why not (``failed``), and the ``calls`` started for it, their ``tokens`` and ``cost``."""

    text: str | None = None
    failed: str | None = None
    tokens: int = 0
    cost: float | None = None
    calls: int = 0

    def charged(self, report: BudgetReport) -> BudgetReport:
        """``report`` saying what the summary calls made for its request cost, and why a summary is missing."""
        failed = self.failed or report.summary_failed
        return dataclasses.replace(report, summary_calls=self.calls, summary_cost=self.cost, summary_failed=failed)


@dataclasses.dataclass(frozen=True, slots=True)
class SummarySource:
    """
    Where summaries come from: ``router``, anything with LiteLLM's ``acompletion`` (the proxy's ``llm_router``, a
    ``Router``, or for SDK users ``litellm``: ``summary_model`` is then a model name); with no ``cache``, memory only.
    """

    router: Any
    cache: Any
    settings: BudgetSettings

    @classmethod
    def through(cls, router: Any, cache: Any, settings: BudgetSettings) -> SummarySource:
        if router is None:
            import litellm

            router = litellm
        return cls(router, cache, settings)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """A block to summarize: the digest that names it, its messages in format ``fmt``, the summary it extends."""

    digest: str
    messages: Sequence[Message]
    fmt: str
    previous: str | None = None


def is_summary_call(data: Mapping[str, Any]) -> bool:
    """Whether a request is one of our summary calls, which is never fitted or summarized itself."""
    for key in ("metadata", "litellm_metadata"):
        metadata = data.get(key)
        ours = metadata.get("litellm_budget") if isinstance(metadata, Mapping) else None
        if isinstance(ours, Mapping) and ours.get("summary_call") is True:
            return True
    return False


class Summarizer:
    """Summaries by block digest: memory, then the shared cache, then one call per block at a time."""

    def __init__(self, max_summaries: int = 4096) -> None:
        self._memory: BoundedLRU[str] = BoundedLRU(max_summaries)
        self._failures: BoundedDict[tuple[float, str]] = BoundedDict(max_summaries)
        self._inflight: dict[str, asyncio.Task[SummaryOutcome]] = {}
        # When each call in flight started: requests wait at most summary_timeout from then, so while a hanging
        # summary model holds one call, only its first request waits; the others go on with the marker at once.
        self._since: dict[str, float] = {}

    async def summary_for(self, source: SummarySource, job: SummaryJob, fmt_name: str) -> SummaryOutcome:
        """``job``'s summary: known, else the longest known leading summary extended by the rest, else a new one."""
        text = await self.cached(source.cache, job.digest)
        if text is not None:
            return SummaryOutcome(text=text)
        count, previous = await self.previous(source.cache, job.leading) or (0, None)
        block = Block(digest=job.digest, messages=job.messages[count:], fmt=fmt_name, previous=previous)
        return await self._made(source, block)

    async def summary(self, source: SummarySource, block: Block) -> SummaryOutcome:
        text = await self.cached(source.cache, block.digest)
        if text is not None:
            return SummaryOutcome(text=text)
        return await self._made(source, block)

    async def cached(self, cache: Any, digest: str) -> str | None:
        """A known summary: memory first, then the shared cache (any cache error is a miss)."""
        text = self._memory.get(digest)
        if text is None and cache is not None:
            text = (await _read(cache, [CACHE_PREFIX + digest]))[0]
            if text is not None:
                self._memory.put(digest, text)
        return text

    async def previous(self, cache: Any, leading: Sequence[tuple[int, str]]) -> tuple[int, str] | None:
        """The longest leading sub-block with a known summary, as (message count, summary): memory, then the cache."""
        for count, digest in leading:
            text = self._memory.get(digest)
            if text is not None:
                return count, text
        if cache is None or not leading:
            return None
        found = await _read(cache, [CACHE_PREFIX + digest for _, digest in leading])
        for (count, digest), text in zip(leading, found, strict=True):
            if text is not None:
                self._memory.put(digest, text)
                return count, text
        return None

    async def _made(self, source: SummarySource, block: Block) -> SummaryOutcome:
        """Join the call in flight for the block or start one; wait for it at most ``summary_timeout``."""
        settings, digest = source.settings, block.digest
        if settings.summary_model is None:
            return SummaryOutcome(failed="summary_model not configured")
        failure = self._failures.get(digest)
        if failure is not None and time.monotonic() - failure[0] < RETRY_SECONDS:
            return SummaryOutcome(failed=failure[1])
        task, started = self._task_for(source, block)
        left = settings.summary_timeout - (time.monotonic() - self._since.get(digest, time.monotonic()))
        try:
            outcome = await asyncio.wait_for(asyncio.shield(task), timeout=max(0.0, left))
        except asyncio.TimeoutError:
            log.info("summary_late", digest=digest, timeout_s=settings.summary_timeout)
            return SummaryOutcome(failed=f"timeout after {settings.summary_timeout}s", calls=int(started))
        except Exception as exc:  # noqa: BLE001 - _call returns its failures; this is the last guard
            return SummaryOutcome(failed=f"error: {type(exc).__name__}", calls=int(started))
        # The request that started the call pays for it; those that joined it spent nothing.
        return outcome if started else dataclasses.replace(outcome, tokens=0, cost=None, calls=0)

    def _task_for(self, source: SummarySource, block: Block) -> tuple[asyncio.Task[SummaryOutcome], bool]:
        """The call in flight for ``block``, or a new one (then ``True``): one call per block at a time."""
        task = self._inflight.get(block.digest)
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            return task, False
        task = asyncio.create_task(self._call(source, block))
        self._inflight[block.digest], self._since[block.digest] = task, time.monotonic()
        task.add_done_callback(lambda done: self._forget(block.digest, done))
        return task, True

    def _failed(self, digest: str, reason: str, size: int, started: float) -> SummaryOutcome:
        """A failed call: say why, and do not try this block again for a while."""
        self._failures.put(digest, (time.monotonic(), reason))
        log.warning("summary_failed", digest=digest, reason=reason, messages=size, duration_ms=_ms(started))
        return SummaryOutcome(failed=reason, calls=1)

    def _forget(self, digest: str, done: asyncio.Task[SummaryOutcome]) -> None:
        if self._inflight.get(digest) is done:
            del self._inflight[digest]
            self._since.pop(digest, None)

    async def _call(self, source: SummarySource, block: Block) -> SummaryOutcome:
        """One summary call; stores what it made, and returns a failure instead of raising."""
        started = time.perf_counter()
        settings, digest, size = source.settings, block.digest, len(block.messages)
        try:
            prompt = summary_prompt(block.messages, block.fmt, settings.summary_max_tokens, block.previous)
            response = await source.router.acompletion(
                model=settings.summary_model,
                messages=prompt,
                max_tokens=settings.summary_max_tokens,
                metadata={"litellm_budget": {"summary_call": True}, "tags": [SUMMARY_TAG]},
            )
            text = bounded_summary(reply_text(response), settings.summary_max_tokens)
        except Exception as exc:  # noqa: BLE001 - someone else's service: whatever it does, the request goes on
            return self._failed(digest, f"error: {type(exc).__name__}", size, started)
        if not text:
            return self._failed(digest, "error: empty reply", size, started)
        self._memory.put(digest, text)
        await shared_set(source.cache, CACHE_PREFIX + digest, text, SHARED_TTL)  # for the other replicas
        outcome = SummaryOutcome(text=text, tokens=usage_tokens(response), cost=reply_cost(response), calls=1)
        log.info("summary_made", digest=digest, messages=size, tokens=outcome.tokens, duration_ms=_ms(started))
        return outcome


async def _read(cache: Any, keys: list[str]) -> list[str | None]:
    """The shared values for ``keys`` (one batch read, Redis only: ``shared.py``); junk reads as a miss."""
    found = await shared_get_many(cache, keys)
    return [value if isinstance(value, str) and value else None for value in found]


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


async def summary_ahead(
    summarizer: Summarizer, source: SummarySource, trial: Fitted | None, messages: Sequence[Message], fmt: MessageFormat
) -> tuple[Mapping[str, str] | None, SummaryOutcome | None]:
    """
    ``trial`` is a silent fit of the request: when it dropped a block with no known summary, get one. Returns the
    summaries the fit that is sent should know, and the outcome for its report; ``(None, None)``: none wanted.
    """
    if trial is None or source.settings.summary_model is None:
        return None, None
    needed = trial.report.summary_needed
    if needed is None:
        return await _known_only(summarizer, source, trial, messages), None
    job = summary_job(messages, fmt, parse_ranges(trial.report.dropped_at))
    if job.digest != needed:
        log.warning("summary_block_mismatch", needed=needed, digest=job.digest)
        return None, None
    outcome = await summarizer.summary_for(source, job, fmt.name)
    return ({job.digest: outcome.text} if outcome.text else None), outcome


async def _known_only(
    summarizer: Summarizer, source: SummarySource, trial: Fitted, messages: Sequence[Message]
) -> Mapping[str, str] | None:
    """
    A block dropped where a new summary of the most allowed size has no room (a heavy last step) may have a smaller
    known summary: offer it, with no call. The fit sends it if it fits (else the marker), as the neighbours send it.
    """
    if not trial.report.dropped_at:
        return None
    digest = block_digest(messages[index] for index in sorted(parse_ranges(trial.report.dropped_at)))
    text = await summarizer.cached(source.cache, digest)
    return {digest: text} if text else None
