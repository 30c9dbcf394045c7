"""
Concurrent requests' Redis reads and writes, sent together (under load, one round trip and one redis-py call for
many, whose CPU outweighs the network): at most one pipeline in flight per client, the rest in the next. Writes are
queued, not waited for, and go before the next pipeline's reads, so a replica always reads what it wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

#: A failed pipeline is reported here (``shared.py`` warns and rests the Redis layer).
OnFailure = Callable[[BaseException], None]
#: So is one that was answered (the rest starts over).
OnSuccess = Callable[[], None]
#: Bounds one pipeline's round trip (``shared.py``'s timeout).
Bound = Callable[[Awaitable[Any]], Awaitable[Any]]


class Pipe:
    """The reads waiting and the writes queued for one Redis client, sent in one pipeline at a time."""

    def __init__(self, client: Any, *, bound: Bound, on_failure: OnFailure, on_success: OnSuccess) -> None:
        self._client = client
        self._bound = bound
        self._on_failure = on_failure
        self._on_success = on_success
        self._reads: dict[str, list[asyncio.Future[Any]]] = {}
        self._writes: dict[str, tuple[str, int]] = {}
        self._running: asyncio.Task[None] | None = None

    def read(self, key: str) -> asyncio.Future[Any]:
        """The raw value of ``key`` (``None`` when absent or when the pipeline failed), once sent."""
        waiting: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._reads.setdefault(key, []).append(waiting)
        self._start()
        return waiting

    def write(self, key: str, text: str, seconds: int) -> None:
        """Set ``key`` to ``text`` for ``seconds`` with the next pipeline (a later write of a key replaces it)."""
        self._writes[key] = (text, seconds)
        self._start()

    def _start(self) -> None:
        if self._running is None or self._running.done():
            self._running = asyncio.get_running_loop().create_task(self._send_all())

    async def _send(self, writes: dict[str, tuple[str, int]], reads: dict[str, Any]) -> list[Any]:
        """
        One pipeline, tried again on fresh connections when the first fails other than by a timeout: after Redis
        restarts, every idle connection in the pool is stale, and each would fail once (resting the layer again).
        """
        for attempt in range(2):
            try:
                pipeline = self._client.pipeline(transaction=False)
                for key, (text, seconds) in writes.items():
                    pipeline.set(key, text, ex=seconds)
                for key in reads:
                    pipeline.get(key)
                # A command that fails alone (a key of another type) is a miss, not an outage.
                return list(await self._bound(pipeline.execute(raise_on_error=False)))
            except asyncio.TimeoutError:
                raise
            except Exception:
                if attempt:
                    raise
                await self._drop_idle_connections()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _drop_idle_connections(self) -> None:
        disconnect = getattr(getattr(self._client, "connection_pool", None), "disconnect", None)
        if callable(disconnect):
            with contextlib.suppress(Exception):  # the retry reports what matters
                await disconnect(inuse_connections=False)

    async def _send_all(self) -> None:
        while self._reads or self._writes:
            reads, self._reads = self._reads, {}
            writes, self._writes = self._writes, {}
            try:
                results = await self._send(writes, reads)
                self._on_success()
            # Whatever the operator's Redis does (down, timeout, a cluster moving slots), waiting requests get a miss.
            except Exception as exc:  # noqa: BLE001
                self._on_failure(exc)
                results = [None] * (len(writes) + len(reads))
            for waiting, value in zip(reads.values(), results[len(writes) :], strict=True):
                for future in waiting:
                    if not future.done():  # a reader that timed out has gone
                        future.set_result(None if isinstance(value, Exception) else value)
