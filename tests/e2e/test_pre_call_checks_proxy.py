"""
Through the real proxy with ``router_settings.enable_pre_call_checks``: a request LiteLLM's own window
check refuses before the plugin fitted it still has, in its failure event, what the plugin would
have sent (``litellm_budget_unfitted``), and never a report of the plugin's own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from litellm_budget.core.formats import anthropic_from_chat as from_chat
from tests.support.builders import agent_session, deployment, system, text, user
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import wait_for_records
from tests.support.proxy_process import ProxyProcess, anthropic_client, post_chat, start_proxy

pytestmark = pytest.mark.proxy
WINDOW = 4000
EDITS = {
    "edits": [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "tool_uses", "value": 2},
            "keep": {"type": "tool_uses", "value": 1},
        }
    ]
}


@pytest.fixture(name="proxy", scope="module")
def fixture_proxy(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    folder = tmp_path_factory.mktemp("pre-call-checks")
    config = {
        "model_list": [
            deployment("claude", "anthropic/claude-sonnet-4-5", upstream.root_url, window=WINDOW),
            deployment("gpt", "openai/gpt-4o", upstream.base_url, window=WINDOW),
        ],
        "router_settings": {"enable_pre_call_checks": True},
        "litellm_settings": {"callbacks": ["litellm_budget.handler", "proxy_spy.spy"]},
    }
    with start_proxy(config, tmp_path=folder, helpers=["proxy_spy.py"]) as proxy:
        yield proxy


def _event(proxy: ProxyProcess, call_id: str) -> dict[str, Any]:
    path: Path = proxy.config_path.parent / "spy.jsonl"
    records = wait_for_records(
        path, lambda rs: any(r["call_id"] == call_id for r in rs), what=f"the event of {call_id}"
    )
    return next(r for r in records if r["call_id"] == call_id)


@pytest.mark.parametrize("group", ["claude", "gpt"])
def test_a_refused_request_says_what_the_plugin_would_have_sent(proxy: ProxyProcess, group: str) -> None:
    """/v1/messages with context_management over the window: refused by LiteLLM, the estimate in the failure event."""
    _, messages = from_chat(agent_session(12, 400))
    with anthropic_client(proxy) as client, pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(
            model=group,
            max_tokens=256,
            messages=messages,  # type: ignore[arg-type]
            extra_body={"context_management": EDITS},
        )
    call_id = refused.value.response.headers["x-litellm-call-id"]
    spend = _event(proxy, call_id)["metadata"]["spend_logs_metadata"] or {}

    assert "litellm._pre_call_checks" in str(refused.value)
    assert "litellm_budget" not in spend  # nothing of the plugin's reached anyone
    unfitted = spend["litellm_budget_unfitted"]
    assert unfitted["reason"].startswith("not sent: LiteLLM's pre-call checks refused")
    assert (unfitted["format"], unfitted["window"]) == ("anthropic", WINDOW)
    assert unfitted["tokens_after"] < WINDOW
    if group == "claude":  # Anthropic clears the tool uses itself: the plugin would have trimmed
        assert unfitted["action"] == "trimmed"
        assert unfitted["tokens_before"] > WINDOW
    else:  # for OpenAI the plugin applies the client's edits first, and those alone fit it
        assert unfitted["action"] == "passthrough"


def test_a_request_the_plugin_fits_first_is_never_refused(proxy: ProxyProcess) -> None:
    """Chat (and /v1/messages without context_management) are fitted before LiteLLM's check, which then passes."""
    status, headers, _ = post_chat(proxy, {"model": "gpt", "messages": [system(), user(text(3 * WINDOW))]})
    _, messages = from_chat(agent_session(12, 400))
    with anthropic_client(proxy) as client:
        raw = client.messages.with_raw_response.create(model="claude", max_tokens=256, messages=messages)  # type: ignore[arg-type]

    assert (status, headers["x-litellm-budget-action"]) == (200, "trimmed")
    assert raw.headers["x-litellm-budget-action"] == "trimmed"
