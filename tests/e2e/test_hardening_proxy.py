"""Bad input, privacy and faults through the real proxy, with the plugin on and off."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.builders import agent_session, system, text, tool_step, user
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import Records, wait_for_records
from tests.support.proxy_process import ProxyProcess, post_chat, start_proxy

pytestmark = pytest.mark.proxy
CANARY = "CANARY-7d1e5b"
WINDOW = 8000


def _config(upstream: FakeUpstream, *, plugin: bool) -> dict[str, Any]:
    model = {"model": "openai/gpt-4o", "api_base": upstream.base_url, "api_key": f"sk-{CANARY}-upstream"}
    callbacks = ["proxy_structlog.configured", "proxy_spy.spy", "prometheus"]
    return {
        "model_list": [
            {"model_name": "m", "litellm_params": model, "model_info": {"max_input_tokens": WINDOW}},
            {"model_name": "no-window", "litellm_params": {**model, "model": "openai/acme-unmapped"}},
            {
                "model_name": "m-plan",  # the same model and window as ``m``, another policy
                "litellm_params": model,
                "model_info": {"max_input_tokens": WINDOW, "litellm_budget": {"policy": "plan"}},
            },
        ],
        "litellm_settings": {"callbacks": (["litellm_budget.handler"] if plugin else []) + callbacks},
        "general_settings": {"master_key": f"sk-{CANARY}-master"},
    }


def _start(upstream: FakeUpstream, folder: Path, *, plugin: bool) -> ProxyProcess:
    return start_proxy(
        _config(upstream, plugin=plugin), tmp_path=folder, helpers=["proxy_spy.py", "proxy_structlog.py"]
    )


def _records_of(proxy: ProxyProcess, log: str, call_ids: set[str]) -> Records:
    """The records of ``log`` (``spy.jsonl``, ``structlog.jsonl``) once one of each request in ``call_ids`` is there."""

    def ready(records: Records) -> bool:
        return call_ids <= {r.get("litellm_call_id", r.get("call_id")) for r in records}

    return wait_for_records(proxy.config_path.parent / log, ready, what=f"the lines of {len(call_ids)} requests")


@pytest.fixture(name="upstream", scope="module")
def fixture_upstream() -> Iterator[FakeUpstream]:
    # The provider refuses what its own (char-based) count says overflows the window.
    with FakeUpstream(max_context_tokens=3 * WINDOW) as upstream:
        yield upstream


@pytest.fixture(name="proxies", scope="module")
def fixture_proxies(
    upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, ProxyProcess]]:
    with (
        _start(upstream, tmp_path_factory.mktemp("on"), plugin=True) as on,
        _start(upstream, tmp_path_factory.mktemp("off"), plugin=False) as off,
    ):
        yield {"on": on, "off": off}


def _tool_pair(**changes: Any) -> list[dict[str, Any]]:
    step = tool_step(5)
    step[1].update(changes)
    return [user("x"), *step]


def _duplicated() -> list[dict[str, Any]]:
    step = tool_step(5)
    step[0]["tool_calls"] = step[0]["tool_calls"] * 2
    return [user("x"), step[0], step[1], dict(step[1])]


BAD_INPUTS: dict[str, Callable[[], dict[str, Any]]] = {
    "messages-not-a-list": lambda: {"messages": {"role": "user", "content": "x"}},
    "entry-not-a-dict": lambda: {"messages": [user("x"), "hello"]},
    "missing-role": lambda: {"messages": [{"content": "x"}]},
    "unknown-role": lambda: {"messages": [{"role": "robot", "content": "x"}]},
    "content-none": lambda: {"messages": [system(), {"role": "user", "content": None}]},
    "content-number": lambda: {"messages": [{"role": "user", "content": 42}]},
    "nested-lists": lambda: {"messages": [{"role": "user", "content": [["a"]]}]},
    "unknown-part-type": lambda: {"messages": [{"role": "user", "content": [{"type": "mystery", "data": "x"}]}]},
    "tool-without-id": lambda: {"messages": _tool_pair(tool_call_id=None)},
    "tool-unknown-id": lambda: {"messages": _tool_pair(tool_call_id="call_nope")},
    "invalid-json-arguments": lambda: {"messages": [*agent_session(2)[:-1], {**agent_session(1)[-1]}]},
    "duplicated-ids": lambda: {"messages": _duplicated()},
    "empty-messages": lambda: {"messages": []},
    "10mb-message": lambda: {"messages": [system(), user("word " * 2_000_000)]},
    "5000-messages": lambda: {
        "messages": [
            system(),
            *[user(f"m{i}") if i % 2 == 0 else {"role": "assistant", "content": "ok"} for i in range(5000)],
            user("end"),
        ]
    },
    "unknown-model": lambda: {"model": "nope", "messages": [user("x")]},
    "model-without-window": lambda: {"model": "no-window", "messages": agent_session(30, 900)},
    "system-bigger-than-window": lambda: {"messages": [system(text(20_000)), user("hi")]},
    "max-tokens-above-window": lambda: {"messages": agent_session(10, 300), "max_tokens": 100_000},
    "max-tokens-negative": lambda: {"messages": [user("x")], "max_tokens": -5},
    "huge-tools-schema": lambda: {
        "messages": agent_session(10, 300),
        "tools": [
            {
                "type": "function",
                "function": {"name": f"tool_{i}", "description": text(300, i), "parameters": {"type": "object"}},
            }
            for i in range(40)
        ],
    },
    "emoji-zero-width-surrogates": lambda: {"messages": [user("emoji 😀 zero\u200bwidth lone \ud800 surrogate " * 50)]},
    "n2-streaming": lambda: {"messages": agent_session(30, 900), "n": 2, "stream": True},
}


def _send(proxy: ProxyProcess, case: dict[str, Any], timeout: float = 120) -> tuple[int, str]:
    """The status and body of ``case`` sent to ``proxy``; an answer slower than ``timeout`` seconds raises."""
    body = {"model": "m", **case}
    stream = bool(body.pop("stream", False))
    status, _, payload = post_chat(proxy, body, stream=stream, timeout=timeout)
    return status, json.dumps(payload) if not isinstance(payload, str) else payload


#: Requests LiteLLM itself fails slowly (about 9 s each, with the plugin and without: its own
#: retries of a request it cannot send); `make test-slow` runs them, after `make test`, in CI.
SLOW_INPUTS = {"messages-not-a-list", "entry-not-a-dict", "content-number", "nested-lists", "unknown-part-type"}


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW_INPUTS else name for name in BAD_INPUTS]
)
def test_bad_input_adds_no_server_errors(proxies: dict[str, ProxyProcess], name: str) -> None:
    """The plugin adds no 5xx, never hangs, keeps the proxy serving; what it refuses is a clear 400."""
    on_status, on_text = _send(proxies["on"], BAD_INPUTS[name](), timeout=60)  # no answer by then: a hang
    off_status, _ = _send(proxies["off"], BAD_INPUTS[name]())

    assert on_status < 500 or off_status >= 500, f"{name}: {on_status} with the plugin, {off_status} without"
    if on_status == 400 and off_status != 400:
        assert "context window" in on_text
    assert httpx.get(proxies["on"].base_url + "/health/liveliness", timeout=10).status_code == 200


#: Entries of ``messages`` that are no message at all: LiteLLM answers them, never the plugin's exception.
NOT_MESSAGES: dict[str, list[Any]] = {
    "a-string": ["hello"],
    "a-number": [1],
    "a-null": [None],
    "a-list": [["a"]],
    "a-message-then-a-string": [user("x"), "x"],
}


@pytest.mark.slow  # LiteLLM itself fails these slowly (SLOW_INPUTS)
@pytest.mark.parametrize("name", NOT_MESSAGES)
def test_entries_that_are_no_message_get_litellms_own_answer(proxies: dict[str, ProxyProcess], name: str) -> None:
    """The first read of the request is inside the fail-open boundary: LiteLLM's answer, the plugin's report."""
    body = {"model": "m", "messages": NOT_MESSAGES[name]}
    logged_before = len(proxies["on"].log_text())  # the proxy is shared: earlier tests' lines are theirs
    on_status, on_headers, on_payload = post_chat(proxies["on"], body, timeout=120)
    off_status, _, off_payload = post_chat(proxies["off"], body, timeout=120)
    # The structlog line of the request is written after its answer.
    events = _records_of(proxies["on"], "structlog.jsonl", {on_headers["x-litellm-call-id"]})
    mine = [e for e in events if e.get("litellm_call_id") == on_headers.get("x-litellm-call-id")]

    assert (on_status, on_payload) == (off_status, off_payload)
    assert [e["event"] for e in mine] == ["request_unsupported"]
    assert "not an object" in mine[0]["reason"]
    assert "litellm_budget/adapter" not in proxies["on"].log_text()[logged_before:]


def test_an_orphan_tool_result_over_the_window_is_refused(proxies: dict[str, ProxyProcess]) -> None:
    """A tool result that answers no call cannot be trimmed safely: over its window it is refused, never sent over."""
    orphan = {"role": "tool", "tool_call_id": "nope", "content": "word " * 8000}
    status, headers, payload = post_chat(proxies["on"], {"model": "m", "messages": [user("x"), orphan]})

    assert status == 400, headers.get("x-litellm-budget-action")
    assert "answers no open tool call" in json.dumps(payload)
    assert "over the 8000-token window" in json.dumps(payload)


def test_an_orphan_tool_result_inside_the_window_gets_the_providers_answer(proxies: dict[str, ProxyProcess]) -> None:
    """Under its window the malformed request goes as it came: the provider's own answer, reported ``unsupported``."""
    body = {"model": "m", "messages": [user("x"), {"role": "tool", "tool_call_id": "nope", "content": "small"}]}
    on_status, headers, _ = post_chat(proxies["on"], body)
    off_status, _, _ = post_chat(proxies["off"], body)

    assert on_status == off_status
    assert headers.get("x-litellm-budget-action") == "unsupported"


def test_a_conversations_edits_stay_in_their_model_group(proxies: dict[str, ProxyProcess]) -> None:
    """One conversation sent to ``m-plan``, to ``m`` (``auto``), then to ``m-plan`` again: plan's fit both times."""
    proxy, messages = proxies["on"], agent_session(40, 700)
    fitted = [post_chat(proxy, {"model": group, "messages": messages})[1] for group in ("m-plan", "m", "m-plan")]
    counts = [{k: h[f"x-litellm-budget-{k}"] for k in ("policy", "elided", "dropped", "action")} for h in fitted]

    assert counts[0]["action"] == counts[1]["action"] == "trimmed"
    assert counts[0] != counts[1]  # the two policies fit it differently
    assert counts[2] == counts[0]


class TestPrivacy:
    def test_canary_never_in_logs_reports_headers_or_metrics(self, proxies: dict[str, ProxyProcess]) -> None:
        """Message text and API keys never reach the plugin's events (one per request), reports, headers, metrics."""
        proxy = proxies["on"]
        trimmed = agent_session(30, 900)
        trimmed[3]["content"] = f"{CANARY} " + trimmed[3]["content"]
        headers = [
            post_chat(proxy, {"model": "m", "messages": trimmed})[1],
            post_chat(proxy, {"model": "m", "messages": [system(f"{CANARY} " + text(20_000)), user(CANARY)]})[1],
        ]
        call_ids = {sent["x-litellm-call-id"] for sent in headers}
        events = _records_of(proxy, "structlog.jsonl", call_ids)  # both written after the answers
        ours = [e for e in events if e.get("event", "").startswith(("request_", "window_", "rejection_", "hook_"))]
        reports = [
            ((record.get("metadata") or {}).get("spend_logs_metadata") or {}).get("litellm_budget")
            for record in _records_of(proxy, "spy.jsonl", call_ids)
        ]
        metrics = httpx.get(
            proxy.base_url + "/metrics/", headers=proxy.auth_headers, follow_redirects=True, timeout=10
        ).text

        assert {e.get("action") for e in ours} >= {"trimmed", "rejected"}
        for sent in headers:
            assert [e["event"] for e in ours if e.get("litellm_call_id") == sent["x-litellm-call-id"]] in (
                ["request_trimmed"],
                ["request_rejected"],
            )
        assert CANARY not in json.dumps(ours)
        assert CANARY not in json.dumps([r for r in reports if r])
        assert CANARY not in json.dumps(
            [{k: v for k, v in h.items() if k.startswith("x-litellm-budget")} for h in headers]
        )
        assert CANARY not in "\n".join(line for line in metrics.splitlines() if "litellm_budget" in line)
