"""
What replicas share: the Redis layer of the DualCache LiteLLM hands the pre-call hook, used directly. Through the
DualCache, its memory layer would answer first with a value up to a minute old (a replica's own), and inside a proxy
request writes go on the request's Redis batch, already flushed when a success callback writes (both pinned in
tests/e2e/test_redis_proxy.py). Its client is used, not the RedisCache's methods: those walk the call stack and start a
logging task per call. A Redis that is down is the operator's outage, not our bug: a warning a minute, and Redis left
alone after each failure, twice as long each time (``REST``), so a hung one costs a request ``TIMEOUT`` now and then.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable
from typing import Any, TypeVar, cast

from litellm_budget.logs import get_logger
from litellm_budget.process import PROCESS

from .redis_pipe import Pipe

log = get_logger()

_T = TypeVar("_T")

#: The longest wait for Redis on a request's path: a hung Redis costs this, not LiteLLM's own 5 s socket timeout a
#: second time. Under load a proxy's event loop can take a second to return to a request, so this is not much less.
TIMEOUT = 2.0
#: After a failure, Redis is left alone for this many seconds (every call is then a miss),
#: doubled after each failure that follows, up to ``MAX_REST``; a success starts over.
REST = 1.0
MAX_REST = 8.0
#: At most one ``shared_cache_unavailable`` warning per this many seconds.
WARN_EVERY = 60.0


def shared_store(cache: Any) -> Any:
    """The Redis layer of LiteLLM's DualCache, when the proxy has one; else ``None``."""
    return getattr(cache, "redis_cache", None)


async def shared_get(cache: Any, key: str) -> object:
    """The shared value of ``key``; ``None`` when absent, when there is no Redis, or when it fails."""
    redis = _available(cache)
    if redis is None:
        return None
    try:
        pipe = _pipe(redis)
        if pipe is None:
            found = await _bounded(redis.async_get_cache(key))
            _answered(redis)
            return found
        waiting = pipe.read(redis.check_and_fix_namespace(key))
    # Any failure of the operator's Redis (down, circuit open, timeout) is a miss, never an error.
    except Exception as exc:  # noqa: BLE001
        _failed(redis, exc)
        return None
    try:
        raw = await _bounded(waiting)
        return None if raw is None else json.loads(raw)
    except (asyncio.TimeoutError, ValueError):  # late (the pipeline reports a failed Redis), or not JSON: a miss
        return None


async def shared_get_many(cache: Any, keys: list[str]) -> list[object]:
    """The shared values of ``keys`` in one round trip, in order; misses (and failures) are ``None``."""
    redis = _available(cache)
    if redis is None or not keys:
        return [None] * len(keys)
    try:
        # LiteLLM's own batch read: it knows how to spread keys over a cluster's slots.
        found = await _bounded(redis.async_batch_get_cache(keys))
    except Exception as exc:  # noqa: BLE001 - as in shared_get
        _failed(redis, exc)
        return [None] * len(keys)
    return [found.get(key) for key in keys] if isinstance(found, dict) else [None] * len(keys)


async def shared_set(cache: Any, key: str, value: object, ttl: float) -> None:
    """Write ``value`` for ``ttl`` seconds (queued, where Redis is LiteLLM's); a failing Redis is warned about."""
    redis = _available(cache)
    if redis is None:
        return
    seconds = max(1, round(ttl))
    try:
        pipe = _pipe(redis)
        if pipe is None:
            await _bounded(redis.async_set_cache(key, value, ttl=seconds))
        else:
            pipe.write(redis.check_and_fix_namespace(key), json.dumps(value), seconds)
    except Exception as exc:  # noqa: BLE001 - as in shared_get
        _failed(redis, exc)


def _available(cache: Any) -> Any:
    redis = shared_store(cache)
    if redis is None:
        return None
    resting = PROCESS.redis_resting.get(redis)
    return None if resting is not None and time.monotonic() < resting[0] else redis


def _pipe(redis: Any) -> Pipe | None:
    """The pipe to LiteLLM's RedisCache's asyncio client (one per event loop); ``None`` for another Redis layer."""
    if not all(callable(getattr(redis, name, None)) for name in ("init_async_client", "check_and_fix_namespace")):
        return None
    client, loop = redis.init_async_client(), asyncio.get_running_loop()
    known = PROCESS.redis_pipes.get((id(client), id(loop)))
    if known is not None and known[0] is client and known[1] is loop:
        return cast(Pipe, known[2])
    pipe = Pipe(client, bound=_bounded, on_failure=lambda exc: _failed(redis, exc), on_success=lambda: _answered(redis))
    PROCESS.redis_pipes.put((id(client), id(loop)), (client, loop, pipe))
    return pipe


async def _bounded(call: Awaitable[_T]) -> _T:
    """``call``, given up after ``TIMEOUT`` (``asyncio.timeout`` where there is one: ``wait_for`` starts a task)."""
    if _TIMEOUT_SCOPE is None:  # Python 3.10
        return await asyncio.wait_for(call, TIMEOUT)
    async with _TIMEOUT_SCOPE(TIMEOUT):
        return await call


_TIMEOUT_SCOPE: Any = getattr(asyncio, "timeout", None)


def _failed(redis: Any, exc: BaseException) -> None:
    now = time.monotonic()
    last = PROCESS.redis_resting.get(redis)
    rest = REST if last is None else min(MAX_REST, 2 * last[1])
    with contextlib.suppress(TypeError):  # a layer that cannot be weakly referenced is never rested
        PROCESS.redis_resting[redis] = (now + rest, rest)
    if now - PROCESS.redis_warned_at >= WARN_EVERY:
        PROCESS.redis_warned_at = now
        log.warning(
            "shared_cache_unavailable",
            error_type=type(exc).__name__,
            retry_in_s=rest,
            effect="calibration and conversation state stay local to this replica until Redis answers",
        )


def _answered(redis: Any) -> None:
    """Redis answered: the next failure rests it for ``REST`` again."""
    if PROCESS.redis_resting:
        with contextlib.suppress(TypeError):
            PROCESS.redis_resting.pop(redis, None)
