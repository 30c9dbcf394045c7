"""Through the real proxy: the operator's router comes first, and reports describe what was served."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import litellm
import pytest

from tests.support.builders import agent_session, deployment
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import wait_for_records
from tests.support.proxy_process import ProxyProcess, post_chat, start_proxy

pytestmark = pytest.mark.proxy
SMALL, BIG = 4000, 16000
TRIM_HERE = {"prefer_fallbacks": False}


@pytest.fixture(name="proxy", scope="module")
def fixture_proxy(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    folder = tmp_path_factory.mktemp("router")
    config = {
        "model_list": [
            deployment("small-model", "openai/acme-small", upstream.base_url, window=SMALL),
            deployment("big-model", "openai/acme-big", upstream.base_url, window=BIG),
            deployment("cheap-model", "openai/acme-cheap", upstream.base_url, window=SMALL, budget=TRIM_HERE),
            deployment("mixed", "openai/acme-mixed-small", upstream.base_url, window=SMALL),
            deployment("mixed", "openai/acme-mixed-big", upstream.base_url, window=BIG),
            # A window only the plugin knows: LiteLLM's own check cannot refuse it first.
            deployment("unmapped-small", "openai/acme-unmapped", upstream.base_url, budget={"default_window": SMALL}),
        ],
        "litellm_settings": {
            "callbacks": ["litellm_budget.handler", "proxy_spy.spy"],
            "context_window_fallbacks": [
                {"small-model": ["big-model"]},
                {"cheap-model": ["big-model"]},
                {"unmapped-small": ["big-model"]},
            ],
        },
        "router_settings": {"enable_pre_call_checks": True},
    }
    with start_proxy(config, tmp_path=folder, helpers=["proxy_spy.py"]) as proxy:
        yield proxy


def _history() -> list[dict[str, Any]]:
    """About 9k tokens of tool history: over the small window, well inside the big one."""
    return agent_session(10, 800)


def _tokens(messages: list[dict[str, Any]]) -> int:
    return int(litellm.token_counter(model="gpt-4o", messages=messages))


def _spy_events(proxy: ProxyProcess, call_id: str, outcomes: set[str], timeout: float = 15.0) -> list[dict[str, Any]]:
    def of_call(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [record for record in records if record["call_id"] == call_id]

    def arrived(records: list[dict[str, Any]]) -> bool:
        return outcomes <= {record["outcome"] for record in of_call(records)}

    path = proxy.config_path.parent / "spy.jsonl"
    return of_call(wait_for_records(path, arrived, what=f"{outcomes} of {call_id}", timeout=timeout))


def test_a_bigger_fallback_comes_before_trimming(proxy: ProxyProcess, upstream: FakeUpstream) -> None:
    """A request over the small model's window goes untrimmed to the big fallback; headers describe that."""
    history = _history()
    upstream.clear()

    status, headers, _ = post_chat(proxy, {"model": "small-model", "messages": history})
    events = _spy_events(proxy, headers["x-litellm-call-id"], {"success", "failure"})

    assert SMALL < _tokens(history) < BIG
    assert status == 200
    assert [request["model"] for request in upstream.requests] == ["acme-big"]
    assert upstream.requests[0]["messages"] == history
    assert (headers["x-litellm-budget-action"], headers["x-litellm-budget-window"]) == ("passthrough", str(BIG))
    # The success event describes what was served. With enable_pre_call_checks the plugin only
    # stepped aside: LiteLLM's own window check refused the small deployment and logged that
    # failure (no report of ours, as nothing of ours happened there).
    success = next(e for e in events if e["outcome"] == "success")
    assert [e["model_group"] for e in events if e["outcome"] == "failure"] == ["small-model"]
    report = success["metadata"]["spend_logs_metadata"]["litellm_budget"]
    assert (success["model_group"], report["action"], report["window"]) == ("big-model", "passthrough", BIG)


def test_the_plugins_own_hand_over_is_in_the_served_payload(proxy: ProxyProcess, upstream: FakeUpstream) -> None:
    """When the plugin hands a request to the bigger fallback, the served payload tells both outcomes."""
    history = _history()
    upstream.clear()

    status, headers, _ = post_chat(proxy, {"model": "unmapped-small", "messages": history})
    events = _spy_events(proxy, headers["x-litellm-call-id"], {"success"})

    assert status == 200
    assert [request["model"] for request in upstream.requests] == ["acme-big"]
    spend = next(e for e in events if e["outcome"] == "success")["metadata"]["spend_logs_metadata"]
    assert (spend["litellm_budget"]["action"], spend["litellm_budget"]["window"]) == ("passthrough", BIG)
    deferred = spend["litellm_budget_deferred"]
    assert (deferred["action"], deferred["window"], deferred["model"]) == ("deferred", SMALL, "openai/acme-unmapped")


def test_an_operator_can_prefer_trimming_on_the_cheap_model(proxy: ProxyProcess, upstream: FakeUpstream) -> None:
    """With prefer_fallbacks off, the same request is trimmed and served by the small model."""
    upstream.clear()

    status, headers, _ = post_chat(proxy, {"model": "cheap-model", "messages": _history()})

    assert status == 200
    assert [request["model"] for request in upstream.requests] == ["acme-cheap"]
    assert _tokens(upstream.requests[0]["messages"]) < SMALL
    assert (headers["x-litellm-budget-action"], headers["x-litellm-budget-window"]) == ("trimmed", str(SMALL))


def test_a_mixed_group_is_fitted_to_the_deployment_that_serves(proxy: ProxyProcess, upstream: FakeUpstream) -> None:
    """In a group of 4k and 16k deployments, a 9k request is served whole by the 16k one, not cut to 4k."""
    history = _history()
    upstream.clear()

    status, headers, _ = post_chat(proxy, {"model": "mixed", "messages": history})

    assert status == 200
    assert [request["model"] for request in upstream.requests] == ["acme-mixed-big"]
    assert upstream.requests[0]["messages"] == history
    assert (headers["x-litellm-budget-action"], headers["x-litellm-budget-window"]) == ("passthrough", str(BIG))


@pytest.mark.slow  # the control run of LiteLLM alone; the plugin's own routing runs by default above
def test_without_the_plugin_the_same_deployments_serve(upstream: FakeUpstream, tmp_path: Path) -> None:
    """LiteLLM alone routes these requests to the same deployments: the plugin honours the router."""
    config = {
        "model_list": [
            deployment("small-model", "openai/acme-small", upstream.base_url, window=SMALL),
            deployment("big-model", "openai/acme-big", upstream.base_url, window=BIG),
            deployment("mixed", "openai/acme-mixed-small", upstream.base_url, window=SMALL),
            deployment("mixed", "openai/acme-mixed-big", upstream.base_url, window=BIG),
        ],
        "litellm_settings": {"context_window_fallbacks": [{"small-model": ["big-model"]}]},
        "router_settings": {"enable_pre_call_checks": True},
    }
    with start_proxy(config, tmp_path=tmp_path) as proxy:
        upstream.clear()
        for group in ("small-model", "mixed"):
            assert post_chat(proxy, {"model": group, "messages": _history()})[0] == 200

    assert [request["model"] for request in upstream.requests] == ["acme-big", "acme-mixed-big"]
