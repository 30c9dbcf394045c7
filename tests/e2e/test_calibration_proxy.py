"""Calibration inside the real proxy: usage from success events shrinks later budgets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from litellm_budget.core.counting import counter_for
from tests.support.builders import agent_session, system, text, user
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import wait_for_count
from tests.support.proxy_process import post_chat, start_proxy

pytestmark = pytest.mark.proxy


@pytest.fixture(name="upstream", scope="module")
def fixture_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(usage_ratio=2.0) as upstream:
        yield upstream


def test_learned_ratio_applies_to_later_requests(upstream: FakeUpstream, tmp_path: Path) -> None:
    """After a few answers reporting inflated usage, the proxy's reports carry a ratio above 1.5."""
    config = {
        "model_list": [
            {
                "model_name": "m",
                "litellm_params": {"model": "openai/acme-inflated", "api_base": upstream.base_url, "api_key": "k"},
                "model_info": {"max_input_tokens": 6000},
            }
        ],
        "litellm_settings": {"callbacks": ["litellm_budget.handler", "proxy_spy.spy"]},
    }
    spy_log = tmp_path / "spy.jsonl"
    with start_proxy(config, tmp_path=tmp_path, helpers=["proxy_spy.py"]) as proxy:
        for number in range(8):
            assert post_chat(proxy, {"model": "m", "messages": [system(), user(text(1500, number))]})[0] == 200
            wait_for_count(spy_log, number + 1)  # success logging (and learning) is asynchronous
        upstream.clear()
        status, _, _ = post_chat(proxy, {"model": "m", "messages": [system(), user(text(3800))]})
        wait_for_count(spy_log, 9)

    reports = [
        json.loads(line)["metadata"]["spend_logs_metadata"]["litellm_budget"]
        for line in spy_log.read_text().splitlines()
    ]
    assert status == 200
    assert reports[0]["token_ratio"] == 1.0
    assert reports[-1]["token_ratio"] > 1.5
    assert reports[-1]["action"] == "trimmed"
    assert "the gateway cut this message" in upstream.requests[-1]["messages"][-1]["content"]


@pytest.mark.slow  # its own proxy; tests/adapter/windows/test_calibration.py covers the rule by default
def test_a_small_move_of_the_learned_ratio_leaves_a_conversation_as_it_was(tmp_path: Path) -> None:
    """
    The reported bug: the same 9k-token request twice, one response in between moving the
    learned ratio by about 1%, was fitted to 8,649 and then 7,135 tokens. Now the provider
    receives the same bytes both times (conversation state, and a ratio applied with hysteresis).
    """
    counter = counter_for("openai/acme-drift")
    with FakeUpstream(
        usage_ratio=1.03, prompt_counter=lambda body: sum(map(counter.count_message, body["messages"]))
    ) as upstream:
        config = {
            "model_list": [
                {
                    "model_name": "m",
                    "litellm_params": {"model": "openai/acme-drift", "api_base": upstream.base_url, "api_key": "k"},
                    "model_info": {"max_input_tokens": 12_000},
                }
            ],
            "litellm_settings": {"callbacks": ["litellm_budget.handler", "proxy_spy.spy"]},
        }
        spy_log = tmp_path / "spy.jsonl"
        request = {"model": "m", "messages": agent_session(16, 700)}
        with start_proxy(config, tmp_path=tmp_path, helpers=["proxy_spy.py"]) as proxy:
            assert post_chat(proxy, request)[0] == 200
            wait_for_count(spy_log, 1)  # its usage moved the learned ratio
            assert post_chat(proxy, request)[0] == 200
            wait_for_count(spy_log, 2)
        first, second = (record["messages"] for record in upstream.requests[-2:])
    reports = [
        json.loads(line)["metadata"]["spend_logs_metadata"]["litellm_budget"]
        for line in spy_log.read_text().splitlines()
    ]
    assert [r["action"] for r in reports] == ["trimmed", "trimmed"]
    assert first == second
    assert reports[0]["tokens_after"] == reports[1]["tokens_after"]
