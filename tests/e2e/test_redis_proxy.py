"""Two real proxies behind one real redis-server: the shared token ratio, and Redis going away mid-run.

What is pinned here, on LiteLLM 1.108.5:

* **Which proxy config gives the plugin a Redis-backed DualCache.** The ``cache`` LiteLLM passes to
  ``async_pre_call_hook`` is the proxy's ``user_api_key_cache``, and it is backed by Redis only when a
  coordination Redis is resolved (``general_settings.coordination_redis``, a Redis response cache
  ``litellm_settings.cache`` + ``cache_params.type: redis``, or ``REDIS_HOST``/``REDIS_PORT``) **and**
  ``litellm_settings.enable_redis_auth_cache: true``. ``router_settings.redis_host`` never does it.
  Pinned by loading each config with the proxy's own ``ProxyConfig.load_config`` (one forked child per
  config), and in the two running proxies by a probe callback that records the cache its hook gets.
* **Two LiteLLM behaviours that break sharing** (pinned in-process against the real redis-server):
  a ``DualCache.async_set_cache`` made in a success callback is queued on the request's Redis
  pipeline, which the request already flushed, so it never reaches Redis; and a reader's in-memory
  tier answers before Redis, so once a replica holds a value it does not see later writes by others.
  This is why the plugin reads and writes the DualCache's ``redis_cache`` directly (adapter/replicas/shared.py).
* **Through the proxies:** a ratio learned on replica A is adopted by replica B; with Redis stopped in
  the middle of a run every request to either replica is answered and fitted, the plugin warns once
  and logs no failure of its own; when Redis returns (same port, empty) the sharing resumes.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from litellm_budget.adapter.records.conversations import CACHE_PREFIX as CONVERSATION_PREFIX
from litellm_budget.core import parse_ranges
from tests.support.builders import agent_session, deployment, system, text, user
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import Records, complete_records, wait_for_count
from tests.support.proxy_process import ProxyProcess, post_chat, start_proxies, start_proxy
from tests.support.redis_process import RedisServer, redis_server_or_skip
from tests.support.waiting import wait_for, wait_for_async

pytestmark = pytest.mark.redis

#: What the plugin writes (litellm_budget/adapter/calibration.py); read back from Redis by the tests.
RATIO_KEY = "litellm_budget:token_ratio:"
#: The fake provider reports 1.3x its own estimate, so calibration learns a ratio well above 1.
USAGE_RATIO = 1.3
WINDOW = 6000
#: One model group per phase: the plugin re-reads the shared ratio at most every 10 s *per model*.
GROUPS = {"hello": "openai/acme-hello", "learn": "openai/acme-learn", "outage": "openai/acme-outage"}
GROUPS["resume"] = "openai/acme-resume"
#: Conversation state: one conversation alternating between the replicas, and the same on one replica.
TALK_GROUPS = {"talk": "openai/acme-talk", "talk-one": "openai/acme-talk-one"}
#: A small window of its own, no calibration: its requests are trimmed, and share their conversation's state.
PROBE_GROUP, PROBE_WINDOW = "probe", 1000

# A callback the proxies load from beside their config: what cache the pre-call hook receives.
CACHE_PROBE = """
import json, os
from litellm.integrations.custom_logger import CustomLogger


class CacheProbe(CustomLogger):
    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type):
        redis = getattr(cache, "redis_cache", None)
        record = {
            "cache": type(cache).__name__,
            "redis": None if redis is None else type(redis).__name__,
            "redis_port": None if redis is None else str(redis.redis_kwargs.get("port")),
            "in_memory_ttl": getattr(cache, "default_in_memory_ttl", None),
        }
        with open(os.environ["PROBE_LOG"], "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\\n")
        return data


probe = CacheProbe()
"""


# -- the redis-server and the two replicas ---------------------------------------------------------------


@pytest.fixture(name="redis", scope="module")
def fixture_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the module (the outage test stops and restarts it on the same port)."""
    server = RedisServer(binary=redis_server_or_skip(), folder=tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Replica:
    name: str
    proxy: ProxyProcess
    folder: Path

    @property
    def spy_log(self) -> Path:
        return self.folder / "spy.jsonl"

    @property
    def probe_log(self) -> Path:
        return self.folder / "probe.jsonl"


@dataclass
class Rig:
    redis: RedisServer
    upstream: FakeUpstream
    a: Replica
    b: Replica


def _report(record: dict[str, Any]) -> dict[str, Any]:
    report = record["metadata"].get("spend_logs_metadata", {}).get("litellm_budget")
    if not isinstance(report, dict):
        pytest.fail(f"a logged success carries no litellm_budget report: {record}")
    return report


def replica_config(redis: RedisServer, upstream: FakeUpstream) -> dict[str, Any]:
    """The recommended config: a coordination Redis, and the auth cache (what the hook gets) on it."""
    return {
        "model_list": [
            *(deployment(group, model, upstream.base_url, window=WINDOW) for group, model in GROUPS.items()),
            # No calibration here: both runs must fit against the same budgets.
            *(
                deployment(group, model, upstream.base_url, window=WINDOW, budget={"calibrate": False})
                for group, model in TALK_GROUPS.items()
            ),
            deployment(
                PROBE_GROUP, "openai/acme-probe", upstream.base_url, window=PROBE_WINDOW, budget={"calibrate": False}
            ),
        ],
        "litellm_settings": {
            "callbacks": ["litellm_budget.handler", "proxy_spy.spy", "cache_probe.probe"],
            "enable_redis_auth_cache": True,
        },
        "general_settings": {"coordination_redis": {"host": redis.host, "port": redis.port}},
    }


def _start_replicas(config: dict[str, Any], root: Path) -> tuple[Replica, Replica]:
    """Start both proxies at once (start-up is most of this module's time)."""

    def start(name: str) -> Replica:
        folder = root / name
        folder.mkdir()
        (folder / "cache_probe.py").write_text(CACHE_PROBE, encoding="utf-8")
        env = {
            "PROBE_LOG": str(folder / "probe.jsonl"),
            # LiteLLM's Redis circuit breaker stays open 60 s by default; the tests wait 1 s.
            "REDIS_CIRCUIT_BREAKER_RECOVERY_TIMEOUT": "1",
        }
        return Replica(name, start_proxy(config, tmp_path=folder, env=env, helpers=["proxy_spy.py"]), folder)

    a, b = start_proxies(["a", "b"], start)
    return a, b


@pytest.fixture(name="rig", scope="module")
def fixture_rig(redis: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with FakeUpstream(usage_ratio=USAGE_RATIO) as upstream:
        a, b = _start_replicas(replica_config(redis, upstream), tmp_path_factory.mktemp("replicas"))
        try:
            yield Rig(redis, upstream, a, b)
        finally:
            a.proxy.stop()
            b.proxy.stop()


def send(replica: Replica, group: str, tokens: int, seed: int) -> int:
    """One chat request of about ``tokens`` tokens; its status."""
    body = {"model": group, "messages": [system(), user(text(tokens, seed))]}
    return post_chat(replica.proxy, body)[0]


def learn_on(replica: Replica, group: str, requests: int, seed: int) -> None:
    """Requests whose usage the provider inflates; each success is logged (and learned from) before the next."""
    for number in range(requests):
        before = len(complete_records(replica.spy_log))
        if (status := send(replica, group, 1500, seed + number)) != 200:
            pytest.fail(f"replica {replica.name}: status {status}\n{replica.proxy.log_tail()}")
        wait_for_count(replica.spy_log, before + 1)


def shared_ratio(redis: RedisServer, group: str) -> float | None:
    value = redis.command("GET", RATIO_KEY + GROUPS[group])
    return None if value is None else float(json.loads(value))


def settled_ratio(redis: RedisServer, group: str, quiet: float = 1.5, timeout: float = 15.0) -> float | None:
    """
    The ratio Redis holds for ``group`` once the replica teaching it has settled: unchanged for
    ``quiet`` seconds. A replica learns from each success after its answer went out (and the spy
    logged it), and writes again whenever its ratio moved: the first value Redis holds may not be
    the one another replica reads a moment later.
    """
    deadline = time.monotonic() + timeout
    last, since = shared_ratio(redis, group), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        value = shared_ratio(redis, group)
        if value != last:
            last, since = value, time.monotonic()
        elif value is not None and time.monotonic() - since >= quiet:
            return value
    return None


def wait_for_shared_edits(redis: RedisServer, report: dict[str, Any], timeout: float = 10.0) -> None:
    """
    Wait until Redis holds a conversation state with the edits ``report`` says were sent. A replica
    queues its write and does not wait for it (``adapter/replicas/shared.py``): on a busy machine the next
    request could reach the other replica first, which then fits from its own older state, as it
    should. The test is about what a replica does once the other's state is there.
    """
    wanted = (parse_ranges(report["dropped_at"]), parse_ranges(report["elided_at"]))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for key in redis.command("KEYS", f"*{CONVERSATION_PREFIX}*") or []:
            value = redis.command("GET", key)
            state = json.loads(value) if value is not None else None
            if isinstance(state, dict) and (state.get("dropped"), state.get("elided")) == wanted:
                return
        time.sleep(0.05)
    pytest.fail(f"Redis never held the edits {wanted}")


def wait_until_sharing(redis: RedisServer, replica: Replica, timeout: float = 30.0) -> None:
    """
    Until ``replica`` writes to Redis again, after an outage: LiteLLM's circuit breaker recovers
    after 1 s here, and the plugin rests Redis after each failure (doubling from 1 s up to
    ``shared.MAX_REST``). Each probe is a new conversation the replica trims and shares the state of;
    the first state in Redis says the rest is over.
    """
    before, probes = len(conversation_keys(redis)), itertools.count()

    def shared_a_probe() -> bool:
        messages = agent_session(4, 300, question=f"Probe {next(probes)} of replica {replica.name}.")
        if (status := post_chat(replica.proxy, {"model": PROBE_GROUP, "messages": messages})[0]) != 200:
            pytest.fail(f"replica {replica.name}: probe status {status}")
        return len(conversation_keys(redis)) > before

    wait_for(shared_a_probe, what=f"replica {replica.name} sharing again", timeout=timeout)


def sharing_again(rig: Rig) -> None:
    """
    Redis running and both replicas sharing through it, with no conversation state in it. The tests
    run in random order: after the outage test Redis is back only once a test brings it back, and
    each replica then leaves it alone for a while (its rest after a failure).
    """
    ensure_running(rig.redis)
    for replica in (rig.a, rig.b):
        wait_until_sharing(rig.redis, replica)
    for key in conversation_keys(rig.redis):  # the probes' states
        rig.redis.command("DEL", key)


def conversation_keys(redis: RedisServer) -> list[str]:
    return list(redis.command("KEYS", f"*{CONVERSATION_PREFIX}*") or [])


def first_report_on(replica: Replica, group: str, tokens: int = 1500, seed: int = 900) -> dict[str, Any]:
    """Send one request to ``replica`` and return its report (what the fit used)."""
    before = len(complete_records(replica.spy_log))
    if (status := send(replica, group, tokens, seed)) != 200:
        pytest.fail(f"replica {replica.name}: status {status}")
    return _report(wait_for_count(replica.spy_log, before + 1)[before])


# -- the proxies ---------------------------------------------------------------------------------------


@pytest.mark.proxy
def test_the_pre_call_hook_gets_a_redis_backed_dual_cache(rig: Rig) -> None:
    """With the recommended config both replicas' hooks get the auth cache, on our redis-server."""
    for replica in (rig.a, rig.b):
        assert send(replica, "hello", 50, 0) == 200
        records = wait_for_count(replica.probe_log, 1)
        assert records[-1] == {
            "cache": "UserApiKeyCache",
            "redis": "RedisCache",
            "redis_port": str(rig.redis.port),
            "in_memory_ttl": 60,  # a value read from Redis is then served from memory for 60 s
        }


@pytest.mark.proxy
def test_a_ratio_learned_on_one_replica_is_adopted_by_the_other(rig: Rig) -> None:
    sharing_again(rig)
    learn_on(rig.a, "learn", requests=5, seed=0)
    learned = first_report_on(rig.a, "learn")["token_ratio"]
    if learned <= 1.05:
        pytest.fail(f"replica a did not learn the inflated usage: ratio {learned}")

    shared = settled_ratio(rig.redis, "learn")
    assert shared is not None, f"nothing settled under {RATIO_KEY}{GROUPS['learn']}: {rig.redis.command('KEYS', '*')}"
    adopted = first_report_on(rig.b, "learn")["token_ratio"]
    assert adopted == pytest.approx(shared)
    assert adopted > 1.05


@dataclass
class Outage:
    """What a run of requests against both replicas saw, Redis stopped after its first few."""

    statuses: list[int]
    records: dict[str, Records]  # the spy's records of each replica's requests in the run
    logs: dict[str, str]  # what each replica logged during the run


@pytest.fixture(name="outage", scope="module")
def fixture_outage(rig: Rig) -> Outage:
    """40 requests, half to each replica, 8 at a time; Redis is stopped after the first 8 (and stays down)."""
    ensure_running(rig.redis)
    replicas = (rig.a, rig.b)
    logs_before = {r.name: len(r.proxy.log_text()) for r in replicas}
    records_before = {r.name: len(complete_records(r.spy_log)) for r in replicas}
    plan = [(rig.a if n % 2 else rig.b, 8000 if n % 4 < 2 else 1500, n) for n in range(40)]  # a and b get both

    def one(job: tuple[Replica, int, int]) -> int:
        return send(job[0], "outage", job[1], job[2])

    with ThreadPoolExecutor(max_workers=8) as pool:
        warm = list(pool.map(one, plan[:8]))
        rig.redis.stop()
        during = list(pool.map(one, plan[8:]))
    records = {}
    for replica in replicas:
        sent = sum(1 for target, _, _ in plan if target is replica)
        records[replica.name] = wait_for_count(replica.spy_log, records_before[replica.name] + sent)[
            records_before[replica.name] :
        ]
    return Outage(
        statuses=warm + during,
        records=records,
        logs={r.name: r.proxy.log_text()[logs_before[r.name] :] for r in replicas},
    )


def ensure_running(redis: RedisServer) -> None:
    """Bring the module's redis-server back (same port, empty) if a test stopped it."""
    if not redis.is_running():
        redis.restart()


@pytest.mark.proxy
def test_requests_succeed_while_redis_is_down(rig: Rig, outage: Outage) -> None:
    """Redis stopped mid-run: every request to either replica is answered and fitted; a warning, no failure."""
    assert not rig.redis.is_running()
    assert outage.statuses == [200] * 40
    for name, records in outage.records.items():
        assert {record["outcome"] for record in records} == {"success"}, name
        assert {_report(record)["action"] for record in records} == {"passthrough", "trimmed"}  # still fitting
        lines = outage.logs[name].splitlines()
        # The plugin's own warning (at most one a minute), and LiteLLM's. A refused connection fails
        # fast (nothing waits on Redis): the plugin's failure is the connection, never its timeout.
        warnings = [line for line in lines if "shared_cache_unavailable" in line and "[warning" in line]
        assert warnings, name
        assert all("error_type=ConnectionError" in line for line in warnings), warnings
        assert any("WARNING" in line and "Redis circuit breaker OPENED" in line for line in lines), name
        # ``hook_failed`` means a bug of the plugin (failopen.py); an operator's Redis outage is not one.
        assert [line for line in lines if "hook_failed" in line] == [], name


@pytest.mark.slow  # an outage and a restart of Redis; the default run covers sharing and the outage itself
@pytest.mark.proxy
def test_sharing_resumes_when_redis_returns(rig: Rig, outage: Outage) -> None:
    ensure_running(rig.redis)  # the same port, empty
    if rig.redis.command("PING") != "PONG":
        pytest.fail("redis-server did not come back")
    for replica in (rig.a, rig.b):
        wait_until_sharing(rig.redis, replica)
        if send(replica, "hello", 50, 1) != 200:
            pytest.fail(f"replica {replica.name} failed after Redis returned")

    learn_on(rig.a, "resume", requests=5, seed=100)
    written = settled_ratio(rig.redis, "resume")
    assert written is not None, f"nothing settled under {RATIO_KEY}{GROUPS['resume']} in Redis after it returned"
    adopted = first_report_on(rig.b, "resume")["token_ratio"]
    assert adopted == pytest.approx(written)
    assert adopted > 1.05


# -- the redis-server helper -----------------------------------------------------------------------------


def test_redis_server_stops_and_restarts_on_the_same_port_empty(redis_server: RedisServer) -> None:
    port, pid = redis_server.port, redis_server.pid
    assert redis_server.command("SET", "k", "v") == "OK"
    assert redis_server.stop() == 0  # SIGTERM: a clean exit
    assert not redis_server.is_running()
    with pytest.raises(ConnectionRefusedError):
        redis_server.command("PING")
    redis_server.restart()
    assert (redis_server.port, redis_server.starts) == (port, 2)
    assert redis_server.pid != pid
    assert redis_server.command("GET", "k") is None  # nothing persisted
    assert redis_server.command("CONFIG", "GET", "save") == ["save", ""]
    assert redis_server.command("CONFIG", "GET", "bind") == ["bind", "127.0.0.1"]


# -- LiteLLM's DualCache on a real Redis, in-process -----------------------------------------------------


def _auth_cache(redis: RedisServer) -> Any:
    """A cache like the proxy's ``user_api_key_cache`` once Redis is attached (60 s in memory)."""
    from litellm.caching.redis_cache import RedisCache
    from litellm.proxy.common_utils.user_api_key_cache import UserApiKeyCache

    return UserApiKeyCache(redis_cache=RedisCache(host=redis.host, port=redis.port), default_in_memory_ttl=60)


@pytest.fixture(name="live_redis")
def fixture_live_redis(redis: RedisServer) -> RedisServer:
    """The module's redis-server, running and empty (an earlier test may have stopped it)."""
    ensure_running(redis)
    redis.command("FLUSHALL")
    return redis


@pytest.mark.asyncio
async def test_pin_a_set_after_the_request_pipeline_flushed_never_reaches_redis(live_redis: RedisServer) -> None:
    """A DualCache write from a success callback stays queued, unsent (why replicas/shared.py writes Redis directly)."""
    from litellm.caching.redis_batch import request_redis_batch_scope

    cache = _auth_cache(live_redis)
    with request_redis_batch_scope() as batches:
        await batches.flush_all()  # what RedisRequestBatchMiddleware does when the response is sent
        await cache.async_set_cache(RATIO_KEY + "m", 1.3, ttl=3600)  # as a success callback would, after the response
        assert [batch.pending for batch in batches.batches] == [1]
        # A write of the request's post-call batch, declared after it: sent at the post-call flush
        # deadline, with every post-call write declared before it.
        batches.post_call(cache.redis_cache).set("post-call-marker", 1, ttl=60)
    assert await cache.async_get_cache(RATIO_KEY + "m") == 1.3  # this replica's memory has it
    await wait_for_async(lambda: live_redis.command("EXISTS", "post-call-marker"), what="the post-call flush")
    assert live_redis.command("GET", RATIO_KEY + "m") is None  # this batch has no deadline

    await cache.async_set_cache(RATIO_KEY + "m", 1.3, ttl=3600)  # outside a request: straight to Redis
    assert live_redis.command("GET", RATIO_KEY + "m") == "1.3"


@pytest.mark.asyncio
async def test_pin_a_reader_keeps_the_first_value_it_read_from_memory(live_redis: RedisServer) -> None:
    """Two replicas' caches on one Redis: the reader adopts the first write, then serves it from memory."""
    writer, reader = _auth_cache(live_redis), _auth_cache(live_redis)
    await writer.async_set_cache(RATIO_KEY + "m", 1.1, ttl=3600)
    assert await reader.async_get_cache(RATIO_KEY + "m") == 1.1
    await writer.async_set_cache(RATIO_KEY + "m", 1.2, ttl=3600)
    assert live_redis.command("GET", RATIO_KEY + "m") == "1.2"
    assert await reader.async_get_cache(RATIO_KEY + "m") == 1.1  # stale for default_in_memory_ttl (60 s)
    # A replica's own write goes to its memory with the write's TTL (the plugin's: 7 days).
    await reader.async_set_cache(RATIO_KEY + "m", 1.15, ttl=7 * 24 * 3600)
    await writer.async_set_cache(RATIO_KEY + "m", 1.25, ttl=3600)
    assert await reader.async_get_cache(RATIO_KEY + "m") == 1.15


# -- which config backs the hook's cache with Redis (the proxy's own load_config) ------------------------

LOAD_CONFIGS = r"""
import asyncio, json, os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import litellm
from litellm.proxy import proxy_server as ps

def load(path, env):
    os.environ.update(env)
    asyncio.run(ps.proxy_config.load_config(router=None, config_file_path=path))
    cache = ps.proxy_logging_obj.call_details["user_api_key_cache"]  # the `cache` of async_pre_call_hook
    redis = cache.redis_cache
    return {
        "hook_cache_is_user_api_key_cache": cache is ps.user_api_key_cache,
        "redis_port": None if redis is None else str(redis.redis_kwargs.get("port")),
        "response_cache": None if litellm.cache is None else type(litellm.cache.cache).__name__,
    }

results = {}
for name, (path, env) in json.loads(sys.argv[1]).items():
    read, write = os.pipe()
    pid = os.fork()  # each config in a fresh copy of the imported proxy: its globals start clean
    if pid == 0:
        os.close(read)
        try:
            result = load(path, env)
        except BaseException as exc:
            result = {"error": repr(exc)}
        os.write(write, json.dumps(result).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        results[name] = json.loads(pipe.read())
    os.waitpid(pid, 0)
print(json.dumps(results))
"""


def _configs(redis: RedisServer) -> dict[str, tuple[dict[str, Any], dict[str, str], bool, str | None]]:
    """name: (config, environment, whether the hook's cache is on Redis, the response cache it turns on)."""
    at = {"host": redis.host, "port": redis.port}
    env = {"REDIS_HOST": redis.host, "REDIS_PORT": str(redis.port)}
    auth = {"enable_redis_auth_cache": True}
    response_cache = {"cache": True, "cache_params": {"type": "redis", **at}}

    def config(litellm_settings: Any = None, general: Any = None, router: Any = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "model_list": [{"model_name": "m", "litellm_params": {"model": "openai/x", "api_key": "k"}}],
            "litellm_settings": litellm_settings or {},
            "general_settings": {"master_key": "sk-pin", **(general or {})},
        }
        if router:
            data["router_settings"] = router
        return data

    router_redis = {"redis_host": redis.host, "redis_port": redis.port}
    return {
        "coordination_redis+auth_cache": (config(auth, {"coordination_redis": at}), {}, True, None),
        "cache_redis+auth_cache": (config({**response_cache, **auth}), {}, True, "RedisCache"),
        "REDIS_HOST_env+auth_cache": (config(auth), env, True, None),
        "coordination_redis": (config(general={"coordination_redis": at}), {}, False, None),
        "cache_redis": (config(response_cache), {}, False, "RedisCache"),
        "REDIS_HOST_env": (config(), env, False, None),
        "router_settings_redis+auth_cache": (config(auth, router=router_redis), {}, False, None),
        "auth_cache_in_general_settings": (config(general={"coordination_redis": at, **auth}), {}, False, None),
    }


@pytest.mark.slow  # a pin of LiteLLM's start-up; the tests that rely on it run by default
@pytest.mark.subprocess
def test_pin_which_proxy_config_backs_the_hook_cache_with_redis(live_redis: RedisServer, tmp_path: Path) -> None:
    configs = _configs(live_redis)
    jobs = {}
    for name, (config, env, _, _) in configs.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        jobs[name] = (str(path), env)
    done = subprocess.run(
        [sys.executable, "-c", LOAD_CONFIGS, json.dumps(jobs)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    expected = {
        name: {
            "hook_cache_is_user_api_key_cache": True,
            "redis_port": str(live_redis.port) if on_redis else None,
            "response_cache": response_cache,
        }
        for name, (_, _, on_redis, response_cache) in configs.items()
    }
    assert results == expected


@pytest.mark.proxy
def test_a_conversation_alternating_between_replicas_gets_the_edits_of_one_replica(rig: Rig) -> None:
    """
    Conversation state through Redis: each request of one agent conversation goes to the other
    replica, and the provider receives exactly what one replica alone sends for it; a replica keeps
    the edits the other one made (``edits_kept``), so the cached prefix holds across replicas.
    """
    sharing_again(rig)
    session = agent_session(14, 500)
    requests = [session[:end] for end in range(3, len(session) + 1) if session[end - 1]["role"] == "tool"]

    def sent_for(model: str) -> list[list[dict[str, Any]]]:
        return [r["messages"] for r in rig.upstream.requests if r.get("model") == model.split("/", 1)[1]]

    reports: list[dict[str, Any]] = []
    for number, messages in enumerate(requests):
        replica = (rig.a, rig.b)[number % 2]
        before = len(complete_records(replica.spy_log))
        assert post_chat(replica.proxy, {"model": "talk", "messages": messages})[0] == 200
        reports.append(_report(wait_for_count(replica.spy_log, before + 1)[before]))
        if reports[-1]["action"] == "trimmed":
            wait_for_shared_edits(rig.redis, reports[-1])
    for messages in requests:
        assert post_chat(rig.a.proxy, {"model": "talk-one", "messages": messages})[0] == 200

    alternating, alone = sent_for(TALK_GROUPS["talk"]), sent_for(TALK_GROUPS["talk-one"])
    assert len(alternating) == len(alone) == len(requests)
    assert alternating == alone
    kept_on_b = [r["edits_kept"] for number, r in enumerate(reports) if number % 2 == 1]
    assert any(kept_on_b), "replica B never continued replica A's edits"
