"""
Recall through the real proxy: two replicas behind one real redis-server and a scripted fake model
that calls ``litellm_budget_recall``. Chat completions and ``/v1/messages`` (plain and streamed) are
answered inside the proxy, the client gets only the final answer, the report, the headers and the
counter show the recall, a replica serves a handle the other stored, and with Redis gone a replica
still serves what it stored itself.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from litellm_budget.core.formats import anthropic_from_chat as from_chat
from tests.support.builders import agent_session, system, user
from tests.support.fake_upstream import RECALL_TOOL, FakeUpstream, RecallScript
from tests.support.jsonl import complete_records, wait_for_records
from tests.support.proxy_process import ProxyProcess, parse_sse, post_chat, post_json, start_proxies, start_proxy
from tests.support.redis_process import RedisServer, redis_server_or_skip

# Two proxies and a redis-server (about a minute): the slow run. The default run serves recalls
# through LiteLLM's SDK and Router (tests/e2e/test_recall_sdk.py), the same hooks the proxy runs.
pytestmark = [pytest.mark.proxy, pytest.mark.redis, pytest.mark.slow]
WINDOW = 8000
HANDLE = re.compile(r"recall (r-[0-9a-f]{8})")
BASH = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {}}}}
#: One master key for both replicas, as a deployment has: a key's handles are the same on each.
MASTER_KEY = "sk-recall-test-0123456789abcdef0123456789"


@dataclass
class Replica:
    proxy: ProxyProcess
    folder: Path

    def spy(self) -> list[dict[str, Any]]:
        return complete_records(self.folder / "spy.jsonl")


@dataclass
class Rig:
    redis: RedisServer
    upstream: FakeUpstream
    a: Replica
    b: Replica


@pytest.fixture(name="rig", scope="module")
def fixture_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    root = tmp_path_factory.mktemp("recall")
    redis = RedisServer(binary=redis_server_or_skip(), folder=root / "redis").start()
    with FakeUpstream() as upstream:
        config = {
            "model_list": [
                {
                    "model_name": "agent",
                    "litellm_params": {"model": "openai/acme-agent", "api_base": upstream.base_url, "api_key": "k"},
                    "model_info": {"max_input_tokens": WINDOW},
                },
                {
                    "model_name": "claude",
                    "litellm_params": {"model": "anthropic/claude-sonnet-4-5", "api_base": upstream.root_url},
                    "model_info": {"max_input_tokens": WINDOW},
                },
            ],
            "litellm_settings": {
                "callbacks": ["litellm_budget.handler", "proxy_spy.spy", "prometheus"],
                "enable_redis_auth_cache": True,
            },
            "callback_settings": {"litellm_budget": {"recall_tool": True}},
            "general_settings": {
                "master_key": MASTER_KEY,
                "coordination_redis": {"host": redis.host, "port": redis.port},
            },
        }

        def start(name: str) -> Replica:
            folder = root / name
            folder.mkdir()
            env = {"REDIS_CIRCUIT_BREAKER_RECOVERY_TIMEOUT": "1", "ANTHROPIC_API_KEY": "k"}
            return Replica(start_proxy(config, tmp_path=folder, env=env, helpers=["proxy_spy.py"]), folder)

        a, b = start_proxies(["a", "b"], start)
        try:
            yield Rig(redis, upstream, a, b)
        finally:
            a.proxy.stop()
            b.proxy.stop()
            redis.stop()


def chat(replica: Replica, messages: list[dict[str, Any]]) -> tuple[int, httpx.Headers, Any]:
    return post_chat(replica.proxy, {"model": "agent", "messages": messages, "tools": [BASH]})


def handles_in(body: dict[str, Any]) -> list[str]:
    return HANDLE.findall(json.dumps(body.get("messages") or body.get("input")))


def recalls_counted(replica: Replica, group: str, outcome: str) -> float:
    metrics = httpx.get(replica.proxy.base_url + "/metrics/", headers=replica.proxy.auth_headers, timeout=10)
    labels = rf'model_group="{group}",outcome="{outcome}"'
    found = re.search(rf"^litellm_budget_recalls_total\{{{labels}\}} ([\d.]+)$", metrics.text, re.M)
    return float(found.group(1)) if found else 0.0


def spy_recalls(replica: Replica, before: int) -> list[list[tuple[str, str]]]:
    """The recalls each success logged since ``before`` lists (LiteLLM logs the call and its follow-up)."""
    found = wait_for_records(replica.folder / "spy.jsonl", lambda r: len(r) >= before + 2, what="two successes")
    spend = [record["metadata"].get("spend_logs_metadata") or {} for record in found[before:]]
    return [[(r["handle"], r["outcome"]) for r in entry.get("litellm_budget_recalls") or []] for entry in spend]


def test_chat_completions_recall_is_served_inside_the_proxy(rig: Rig) -> None:
    rig.upstream.recall = RecallScript()
    rig.upstream.clear()
    messages = agent_session(30, 900, question="Chat: fix the failing test.")
    before = len(rig.a.spy())

    status, headers, body = chat(rig.a, messages)

    assert status == 200, body
    first, followup = rig.upstream.requests
    handle = handles_in(first)[0]
    assert first["tools"][-1]["function"]["name"] == RECALL_TOOL
    assert followup["messages"][-1]["content"].startswith(f"[litellm_budget: {handle}, ")
    message = body["choices"][0]["message"]
    assert message["content"].startswith(f"FINAL[[litellm_budget: {handle}, ")
    assert not message.get("tool_calls")
    assert headers["x-litellm-budget-recalls"] == "1/1"
    assert headers["x-litellm-budget-action"] == "trimmed"
    assert spy_recalls(rig.a, before) == [[(handle, "served")]] * 2
    assert recalls_counted(rig.a, "agent", "served") >= 1
    assert message["content"][40:120] not in rig.a.proxy.log_text()  # the text is never logged


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages_recall_is_served_inside_the_proxy(rig: Rig, stream: bool) -> None:
    """/v1/messages, plain and streamed: streamed, LiteLLM holds the answer back until the recall is served."""
    rig.upstream.recall = RecallScript()
    rig.upstream.clear()
    question = f"Messages ({'streamed' if stream else 'plain'}): fix the failing test."
    system_text, messages = from_chat(agent_session(30, 900, question=question))
    request = {"model": "claude", "max_tokens": 1024, "system": system_text, "messages": messages}
    request["tools"] = [{"name": "bash", "input_schema": {"type": "object", "properties": {}}}]

    status, _, body = post_json(rig.a.proxy, "/v1/messages", request, stream=stream)

    assert status == 200, body
    first, followup = rig.upstream.requests
    handle = handles_in(first)[0]
    assert first["tools"][-1]["name"] == RECALL_TOOL
    answered = followup["messages"][-1]["content"][0]
    assert answered["type"] == "tool_result"
    assert answered["content"].startswith(f"[litellm_budget: {handle}, ")
    if stream:
        events = parse_sse(body)
        assert RECALL_TOOL not in json.dumps(events)
        text = "".join(e["delta"].get("text", "") for e in events if e.get("type") == "content_block_delta")
    else:
        assert [block["type"] for block in body["content"]] == ["text"]
        text = body["content"][0]["text"]
    assert text.startswith(f"FINAL[[litellm_budget: {handle}, ")


def stored_by_a(rig: Rig, question: str) -> tuple[list[dict[str, Any]], str]:
    """A conversation replica A fitted (its model does not recall): its messages and a handle A stored."""
    rig.upstream.recall = None
    rig.upstream.clear()
    messages = agent_session(30, 900, question=question)
    status, _, body = chat(rig.a, messages)
    assert status == 200, body
    return messages, handles_in(rig.upstream.requests[0])[0]


def wait_for_key(redis: RedisServer, handle: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if redis.command("KEYS", f"*litellm_budget:recall:*:{handle}"):
            return
        time.sleep(0.05)
    pytest.fail(f"Redis never held {handle}")


def test_a_replica_serves_a_handle_the_other_stored(rig: Rig) -> None:
    """B never fitted the conversation's long history: the text comes from Redis, as A stored it."""
    messages, handle = stored_by_a(rig, "Replicas: fix the failing test.")
    wait_for_key(rig.redis, handle)
    original = next(m["content"] for m in messages if m["role"] == "tool")
    # The client goes on from a short history that names the handle (the assistant wrote it down).
    later = [*messages[:2], {"role": "assistant", "content": f"Noted: recall {handle}."}, user("Go on.")]
    rig.upstream.recall = RecallScript(handle=handle)
    rig.upstream.clear()

    status, headers, body = chat(rig.b, later)

    assert status == 200, body
    first, followup = rig.upstream.requests
    assert handles_in(first) == [handle]  # B elided nothing: the handle is only in the client's words
    assert first["tools"][-1]["function"]["name"] == RECALL_TOOL  # offered: Redis says the conversation stored
    assert original[:800] in followup["messages"][-1]["content"]
    assert headers["x-litellm-budget-recalls"] == "1/1"


def test_with_redis_down_a_replica_serves_what_it_stored_itself(rig: Rig) -> None:
    """No error anywhere: B fits, stores and serves locally; the other replica's texts are out of its reach."""
    rig.redis.stop()
    try:
        rig.upstream.recall = RecallScript()
        rig.upstream.clear()
        status, headers, body = chat(rig.b, agent_session(30, 900, question="Outage: fix the failing test."))
        assert status == 200, body
        assert headers["x-litellm-budget-recalls"] == "1/1"
        assert body["choices"][0]["message"]["content"].startswith("FINAL[[litellm_budget: r-")
        assert "hook_failed" not in rig.b.proxy.log_text()
    finally:
        rig.redis.restart()


def test_a_handle_of_another_conversation_is_never_served(rig: Rig) -> None:
    """Another conversation's request asks for a handle it was never given: other scope, unknown handle."""
    _, handle = stored_by_a(rig, "Keys: fix the failing test.")
    rig.upstream.recall = RecallScript(handle=handle)
    rig.upstream.clear()
    other = [system(), user("Another conversation entirely."), *agent_session(30, 900)[2:]]

    status, headers, body = chat(rig.b, other)

    assert status == 200, body
    assert headers["x-litellm-budget-recalls"] == "0/1"
    assert "no longer available" in body["choices"][0]["message"]["content"]
