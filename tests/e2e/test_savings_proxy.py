"""
Through the real proxy, on each API it fits: the tokens a trim saved reach the spend-log row where
LiteLLM's Usage views read them. The row is built by LiteLLM's own ``get_logging_payload`` from the
success event (what the proxy's database writer receives; no database runs here) and read by its
own ``extract_compression_saved_tokens``; what it reads must be what the plugin's report says.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from litellm_budget.core.formats import anthropic_from_chat, responses_from_chat
from tests.support.builders import agent_session, deployment
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import wait_for_records
from tests.support.proxy_process import ProxyProcess, post_json, start_proxy

pytestmark = pytest.mark.proxy
WINDOW = 6000


@pytest.fixture(name="proxy", scope="module")
def fixture_proxy(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    folder = tmp_path_factory.mktemp("savings")
    config = {
        "model_list": [
            deployment("gpt", "openai/gpt-4o", upstream.base_url, window=WINDOW),
            deployment("claude", "anthropic/claude-sonnet-4-5", upstream.root_url, window=WINDOW),
        ],
        "litellm_settings": {"callbacks": ["litellm_budget.handler", "proxy_spend_rows.rows"]},
    }
    with start_proxy(config, tmp_path=folder, helpers=["proxy_spend_rows.py"]) as proxy:
        yield proxy


def _request(route: str, steps: int) -> tuple[str, dict[str, Any]]:
    """The path and body of an agent's request on ``route``, ``steps`` tool steps long."""
    messages = agent_session(steps, 800)
    if route == "chat":
        return "/v1/chat/completions", {"model": "gpt", "messages": messages}
    if route == "messages":
        system, turns = anthropic_from_chat(messages)
        return "/v1/messages", {"model": "claude", "system": system, "messages": turns, "max_tokens": 500}
    return "/v1/responses", {"model": "gpt", "instructions": "Be brief.", "input": responses_from_chat(messages[1:])}


def _row(proxy: ProxyProcess, call_id: str) -> dict[str, Any]:
    path = Path(proxy.log_path.parent / "rows.jsonl")
    found = wait_for_records(path, lambda rows: any(row["call_id"] == call_id for row in rows), what=call_id)
    return next(row for row in found if row["call_id"] == call_id)


@pytest.mark.parametrize("route", ["chat", "messages", "responses"])
@pytest.mark.parametrize(("steps", "action"), [(16, "trimmed"), (1, "passthrough")])
def test_the_spend_row_saves_what_the_report_says(proxy: ProxyProcess, route: str, steps: int, action: str) -> None:
    """LiteLLM's extractor reads the report's own saving from the row: ``tokens_before - tokens_after``, or 0."""
    path, body = _request(route, steps)
    status, headers, _ = post_json(proxy, path, body)
    row = _row(proxy, headers["x-litellm-call-id"])

    report = row["spend_logs_metadata"]["litellm_budget"]
    assert status == 200
    assert (report["action"], headers["x-litellm-budget-action"]) == (action, action)
    assert row["saved"] == report["tokens_before"] - report["tokens_after"]
    assert (row["saved"] > 0) is (action == "trimmed")
    assert str(report["tokens_before"]) == headers["x-litellm-budget-tokens-before"]
    assert str(report["tokens_after"]) == headers["x-litellm-budget-tokens-after"]
    # The row keeps what the proxy writes beside: the savings went into LiteLLM's own bucket, no new one.
    assert row["requester_ip_address"] == "127.0.0.1"
