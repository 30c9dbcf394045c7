"""
What replicas share: the Redis layer of the DualCache LiteLLM hands the pre-call hook.

Read and written directly, not through the DualCache: its memory layer answers first and
keeps a value for up to a minute (or for the TTL the writer set), so a replica would read its
own old value instead of another's newer one; and inside a proxy request its writes are queued
on the request's Redis batch, which was flushed when the response went out, so a write from a
success callback never reaches Redis (both pinned in tests/test_redis_proxy.py). A Redis that
is down is an operator's outage, not a bug of ours: one warning a minute, and the replica goes
on with what it knows locally.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

log = structlog.get_logger("litellm_budget")

#: The longest the plugin waits for Redis on a request's path: a hung Redis costs this, not
#: LiteLLM's own 5 s socket timeout a second time.
TIMEOUT = 0.5
#: At most one ``shared_cache_unavailable`` warning per this many seconds.
WARN_EVERY = 60.0
_last_warning = [0.0]


def shared_store(cache: Any) -> Any:
    """The Redis layer of LiteLLM's DualCache, when the proxy has one; else ``None``."""
    return getattr(cache, "redis_cache", None)


async def shared_get(cache: Any, key: str) -> object:
    """The shared value of ``key``; ``None`` when absent, when there is no Redis, or when it fails."""
    redis = shared_store(cache)
    if redis is None:
        return None
    try:
        return await asyncio.wait_for(redis.async_get_cache(key), TIMEOUT)
    # Any failure of the operator's Redis (down, circuit open, timeout) is a miss, never an error.
    except Exception as exc:  # noqa: BLE001
        _warn(exc)
        return None


async def shared_get_many(cache: Any, keys: list[str]) -> list[object]:
    """The shared values of ``keys`` in one round trip, in order; misses (and failures) are ``None``."""
    redis = shared_store(cache)
    if redis is None or not keys:
        return [None] * len(keys)
    try:
        found = await asyncio.wait_for(redis.async_batch_get_cache(keys), TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - as in shared_get
        _warn(exc)
        return [None] * len(keys)
    return [found.get(key) for key in keys] if isinstance(found, dict) else [None] * len(keys)


async def shared_set(cache: Any, key: str, value: object, ttl: float) -> None:
    """Write ``value`` for ``ttl`` seconds; a failing Redis is warned about and skipped."""
    redis = shared_store(cache)
    if redis is None:
        return
    try:
        await asyncio.wait_for(redis.async_set_cache(key, value, ttl=max(1, round(ttl))), TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - as in shared_get
        _warn(exc)


def _warn(exc: BaseException) -> None:
    now = time.monotonic()
    if now - _last_warning[0] >= WARN_EVERY:
        _last_warning[0] = now
        log.warning(
            "shared_cache_unavailable",
            error_type=type(exc).__name__,
            effect="calibration and conversation state stay local to this replica until Redis answers",
        )
