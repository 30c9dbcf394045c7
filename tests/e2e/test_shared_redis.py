"""
The shared layer (``adapter/replicas/shared.py``, ``adapter/replicas/redis_pipe.py``) on a real redis-server, with
the RedisCache LiteLLM builds: values it reads and writes are LiteLLM's (namespace, JSON);
concurrent requests share pipelines; a write is queued, and read back by the next read; a
stopped Redis is a miss, and the layer rests a second before it tries again.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from litellm.caching.dual_cache import DualCache
from litellm.caching.redis_cache import RedisCache

from litellm_budget.adapter.replicas import shared
from tests.support.redis_process import RedisServer
from tests.support.shifted_clock import shift_module_clock

pytestmark = pytest.mark.redis


def dual_cache(server: RedisServer, **redis: Any) -> DualCache:
    """What a proxy with Redis hands the pre-call hook."""
    cache = DualCache()
    cache.redis_cache = RedisCache(host=server.host, port=server.port, **redis)
    return cache


class CountingPipelines:
    """Counts the pipelines sent through the client LiteLLM's RedisCache holds."""

    def __init__(self, redis: RedisCache) -> None:
        self.sent = 0
        client = redis.init_async_client()
        original = client.pipeline

        def pipeline(*args: Any, **kwargs: Any) -> Any:
            self.sent += 1
            return original(*args, **kwargs)

        client.pipeline = pipeline  # type: ignore[method-assign]


def test_what_it_writes_litellm_reads_and_the_other_way_round(redis_server: RedisServer) -> None:
    async def scenario() -> tuple[object, object, object]:
        cache = dual_cache(redis_server, namespace="team-a")
        redis = cache.redis_cache
        assert redis is not None
        await shared.shared_set(cache, "litellm_budget:k1", {"dropped": [1, 2], "digest": "9:ab"}, 60)
        ours = await shared.shared_get(cache, "litellm_budget:k1")  # queued write, then this read
        theirs = await redis.async_get_cache("litellm_budget:k1")
        await redis.async_set_cache("litellm_budget:k2", 1.25, ttl=60)
        return ours, theirs, await shared.shared_get(cache, "litellm_budget:k2")

    ours, theirs, back = asyncio.run(scenario())
    assert ours == theirs == {"dropped": [1, 2], "digest": "9:ab"}
    assert back == 1.25
    assert redis_server.command("KEYS", "team-a:litellm_budget:*")  # LiteLLM's namespace, as its own calls use it


def test_concurrent_requests_share_pipelines(redis_server: RedisServer) -> None:
    requests = 40

    async def scenario() -> tuple[list[object], int]:
        cache = dual_cache(redis_server)
        redis = cache.redis_cache
        assert redis is not None
        for number in range(requests):
            await redis.async_set_cache(f"litellm_budget:c{number}", number, ttl=60)
        counting = CountingPipelines(redis)

        async def one_request(number: int) -> object:
            found = await shared.shared_get(cache, f"litellm_budget:c{number}")
            await shared.shared_set(cache, f"litellm_budget:c{number}", number + 1000, 60)
            return found

        found = await asyncio.gather(*(one_request(n) for n in range(requests)))
        assert await shared.shared_get(cache, "litellm_budget:c0") == 1000  # every write went out
        return found, counting.sent

    found, sent = asyncio.run(scenario())
    assert found == list(range(requests))
    assert sent < requests / 4  # 81 commands, in a few round trips


def test_junk_under_a_key_is_a_miss_not_an_outage(redis_server: RedisServer) -> None:
    async def scenario() -> tuple[object, ...]:
        cache = dual_cache(redis_server)
        redis_server.command("SET", "litellm_budget:junk", "{not json")
        redis_server.command("SADD", "litellm_budget:a-set", "x")  # GET on it is an error of that command alone
        await shared.shared_set(cache, "litellm_budget:fine", 7, 60)
        found = await asyncio.gather(
            *(shared.shared_get(cache, key) for key in ("litellm_budget:junk", "litellm_budget:a-set", "absent"))
        )
        return (*found, await shared.shared_get(cache, "litellm_budget:fine"), shared._available(cache) is not None)

    assert asyncio.run(scenario()) == (None, None, None, 7, True)


@pytest.fixture(name="failures")
def fixture_failures(monkeypatch: pytest.MonkeyPatch) -> list[BaseException]:
    """What the shared layer caught, in order: each failure it turned into a miss (and a rest)."""
    caught: list[BaseException] = []
    failed = shared._failed

    def recording(redis: Any, exc: BaseException) -> None:
        caught.append(exc)
        failed(redis, exc)

    monkeypatch.setattr(shared, "_failed", recording)
    return caught


def test_a_stopped_redis_is_a_miss_and_rests_the_layer(
    redis_server: RedisServer, failures: list[BaseException], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> tuple[object, bool, object]:
        cache = dual_cache(redis_server)
        await shared.shared_set(cache, "litellm_budget:r", 1, 60)
        assert await shared.shared_get(cache, "litellm_budget:r") == 1
        redis_server.stop()
        missed = await shared.shared_get(cache, "litellm_budget:r")
        resting = shared._available(cache) is None
        redis_server.restart()
        shift_module_clock(monkeypatch, shared, shared.REST + 0.2)  # the rest went by
        await shared.shared_set(cache, "litellm_budget:r", 2, 60)
        return missed, resting, await shared.shared_get(cache, "litellm_budget:r")

    missed, resting, back = asyncio.run(scenario())
    assert missed is None
    # The read failed once, and the layer caught it: a refused connection, or its own timeout (shared.TIMEOUT).
    assert [type(exc).__name__ for exc in failures] in (["ConnectionError"], ["TimeoutError"])
    assert resting
    assert back == 2  # the layer resumes once the rest is over


def test_each_event_loop_gets_its_own_pipe(redis_server: RedisServer) -> None:
    """SDK users call ``asyncio.run`` again and again: a pipe of a closed loop is never reused."""
    cache = dual_cache(redis_server)

    async def write_then_read(value: int) -> object:
        await shared.shared_set(cache, "litellm_budget:loop", value, 60)
        return await shared.shared_get(cache, "litellm_budget:loop")

    assert [asyncio.run(write_then_read(value)) for value in (1, 2, 3)] == [1, 2, 3]


def test_a_client_that_cannot_pipeline_is_a_miss_with_a_warning(
    redis_server: RedisServer, failures: list[BaseException]
) -> None:
    """Whatever breaks inside the pipe (here: building the pipeline) reaches the readers as a miss."""

    async def scenario() -> object:
        cache = dual_cache(redis_server)
        redis = cache.redis_cache
        assert redis is not None

        def broken(*_: Any, **__: Any) -> Any:
            raise ConnectionError("closed")

        redis.init_async_client().pipeline = broken  # type: ignore[method-assign]
        return await shared.shared_get(cache, "litellm_budget:x")

    assert asyncio.run(scenario()) is None
    assert [type(exc) for exc in failures] == [ConnectionError]  # at once, not after the 2 s timeout


def test_after_a_restart_stale_connections_cost_no_second_rest(redis_server: RedisServer) -> None:
    """A pool full of connections to the old server: the first call after the rest still answers."""

    async def scenario() -> tuple[object, bool]:
        cache = dual_cache(redis_server)
        redis = cache.redis_cache
        assert redis is not None
        client = redis.init_async_client()
        await asyncio.gather(*(client.ping() for _ in range(6)))  # six idle connections in the pool
        redis_server.stop()
        redis_server.restart()
        await shared.shared_set(cache, "litellm_budget:after", 5, 60)
        return await shared.shared_get(cache, "litellm_budget:after"), shared._available(cache) is not None

    assert asyncio.run(scenario()) == (5, True)
