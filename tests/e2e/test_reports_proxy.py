"""Through the real proxy: what the plugin reports is what happened, on every call type and outcome."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.builders import system, text, user
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import wait_for_count, wait_for_records
from tests.support.proxy_process import ProxyProcess, ProxyStartError, post_chat, post_json, start_proxy

pytestmark = pytest.mark.proxy
WINDOW = 6000


def _config(upstream: FakeUpstream, **extra: Any) -> dict[str, Any]:
    model = {"model": "openai/gpt-4o", "api_base": upstream.base_url, "api_key": "k"}
    return {
        "model_list": [{"model_name": "m", "litellm_params": model, "model_info": {"max_input_tokens": WINDOW}}],
        "litellm_settings": {"callbacks": ["litellm_budget.handler", "proxy_structlog.configured", "proxy_spy.spy"]},
        **extra,
    }


@pytest.fixture(name="upstream", scope="module")
def fixture_upstream() -> Iterator[FakeUpstream]:
    # Usage reported at twice the real count: learning from it would move the token ratio a lot.
    with FakeUpstream(usage_ratio=2.0) as upstream:
        yield upstream


@pytest.fixture(name="proxy", scope="module")
def fixture_proxy(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    folder = tmp_path_factory.mktemp("call-types")
    with start_proxy(_config(upstream), tmp_path=folder, helpers=["proxy_spy.py", "proxy_structlog.py"]) as proxy:
        yield proxy


def _spy_lines(proxy: ProxyProcess, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
    return wait_for_count(proxy.log_path.parent / "spy.jsonl", count, timeout)


def _structlog_events(proxy: ProxyProcess) -> list[str]:
    path = proxy.log_path.parent / "structlog.jsonl"
    return [json.loads(line)["event"] for line in path.read_text().splitlines()] if path.exists() else []


def test_text_completions_pass_through_unreported_and_teach_nothing(
    proxy: ProxyProcess, upstream: FakeUpstream
) -> None:
    """Long /v1/completions go upstream untouched, unreported; a later chat request is fitted as if they never came."""
    prompt = text(4 * WINDOW)
    completions = []
    for _ in range(3):
        upstream.clear()
        status, headers, _ = post_json(proxy, "/v1/completions", {"model": "m", "prompt": prompt, "max_tokens": 5})
        completions.append(headers["x-litellm-call-id"])

        assert status == 200
        assert not any(name.startswith("x-litellm-budget-") for name in headers)
        assert upstream.requests[-1]["messages"] == [{"role": "user", "content": prompt}]
    _spy_lines(proxy, 3)  # their success events are logged: whatever they could teach, they taught
    logged = _structlog_events(proxy)
    status, headers, _ = post_chat(proxy, {"model": "m", "messages": [system(), user(text(3 * WINDOW))]})
    events = {event["call_id"]: event for event in _spy_lines(proxy, 4)}

    assert logged == []
    assert [event for event in _structlog_events(proxy) if event.startswith("request_")] == ["request_trimmed"]
    assert [events[call_id]["metadata"].get("spend_logs_metadata") or {} for call_id in completions] == [{}, {}, {}]
    assert status == 200
    assert headers["x-litellm-budget-action"] == "trimmed"
    chat = events[headers["x-litellm-call-id"]]
    assert chat["metadata"]["spend_logs_metadata"]["litellm_budget"]["token_ratio"] == 1.0


def test_a_rejection_reaches_failure_logging(proxy: ProxyProcess) -> None:
    """A request that cannot fit is answered 400, and its failure event carries the rejected report."""
    before = len(_spy_lines(proxy, 0))

    status, _, body = post_chat(proxy, {"model": "m", "messages": [system(text(2 * WINDOW)), user("hi")]})
    failure = _spy_lines(proxy, before + 1)[-1]
    # A second failure event, if LiteLLM ever logs these itself, would come before the success of a
    # later request (a text completion: the plugin leaves it alone, and it teaches nothing).
    later = post_json(proxy, "/v1/completions", {"model": "m", "prompt": "hi", "max_tokens": 5})[1]["x-litellm-call-id"]
    logged = wait_for_records(
        proxy.log_path.parent / "spy.jsonl",
        lambda records: later in {r["call_id"] for r in records},
        what="a later request",
    )

    assert status == 400
    assert body["error"]["provider_specific_fields"]["litellm_budget"]["action"] == "rejected"
    assert failure["outcome"] == "failure"
    assert failure["metadata"]["spend_logs_metadata"]["litellm_budget"]["action"] == "rejected"
    assert failure["metadata"]["spend_logs_metadata"]["litellm_budget_action"] == "rejected"
    assert [record["call_id"] for record in logged[before:]] == [failure["call_id"], later]


def test_a_wrong_setting_stops_the_proxy_at_start(upstream: FakeUpstream, tmp_path: Path) -> None:
    """A typo in callback_settings.litellm_budget stops the proxy at start, naming key, value and the known ones."""
    config = _config(upstream, callback_settings={"litellm_budget": {"polcy": "plan"}})

    with pytest.raises(ProxyStartError) as failed:
        start_proxy(config, tmp_path=tmp_path, helpers=["proxy_spy.py", "proxy_structlog.py"], timeout=90)

    assert "callback_settings.litellm_budget.polcy = 'plan': is not a setting (did you mean 'policy'?)" in str(
        failed.value
    )
    assert "the settings are: allow_request_overrides," in str(failed.value)
    assert "watermark" in str(failed.value)


def test_with_litellms_json_logs_every_event_is_a_json_line(upstream: FakeUpstream, tmp_path: Path) -> None:
    """
    ``litellm_settings.json_logs: true`` and nothing configuring structlog (the proxy as operators run
    it): the report and the cache report are JSON lines among LiteLLM's, none a console line.
    """
    config = _config(upstream, litellm_settings={"callbacks": ["litellm_budget.handler"], "json_logs": True})

    status, call_id, lines = _one_trimmed_request(config, tmp_path, until='"cache_observed"')

    ours = [json.loads(line) for line in lines if '"component": "litellm_budget"' in line]
    assert status == 200
    assert [(e["event"], e["message"], e["level"]) for e in ours] == [  # no debug line (token_ratio_learned)
        ("request_trimmed", "request_trimmed", "info"),
        ("cache_observed", "cache_observed", "info"),
    ]
    assert {e["litellm_call_id"] for e in ours} == {call_id}
    assert not [line for line in lines if "request_trimmed" in line and not line.startswith("{")]


def test_without_json_logs_the_log_file_gets_console_lines_without_colours(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """
    The proxy as most operators run it (no JSON logs, nothing configuring structlog, stdout a file):
    the report and the cache report are structlog's console lines, in plain text a log reader greps.
    """
    config = _config(upstream, litellm_settings={"callbacks": ["litellm_budget.handler"]})

    status, call_id, lines = _one_trimmed_request(config, tmp_path, until=" cache_observed ")

    ours = [line for line in lines if f"litellm_call_id={call_id}" in line]
    assert status == 200
    assert [line.split("] ", 1)[1].split(" ", 1)[0] for line in ours] == ["request_trimmed", "cache_observed"]
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[info     \] ", line) for line in ours)
    assert "action=trimmed" in ours[0]
    assert not [line for line in lines if "\x1b[" in line and "litellm_call_id" in line]


def _one_trimmed_request(config: dict[str, Any], tmp_path: Path, *, until: str) -> tuple[int, str, list[str]]:
    """A proxy on ``config`` answers a request over its window: status, call id, log lines once ``until`` is logged."""
    with start_proxy(config, tmp_path=tmp_path) as proxy:
        status, headers, _ = post_chat(proxy, {"model": "m", "messages": [system(), user(text(3 * WINDOW))]})
        deadline = time.monotonic() + 20
        while until not in proxy.log_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        return status, headers["x-litellm-call-id"], proxy.log_text().splitlines()
