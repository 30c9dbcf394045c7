"""Anthropic Messages through the real proxy and the real anthropic SDK: fitted natively, reported truly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from litellm_budget.core.client_edits import CLEARED_RESULT
from litellm_budget.core.counting import counter_for
from litellm_budget.core.formats import ANTHROPIC, RESPONSES, join_system
from litellm_budget.core.formats import anthropic_from_chat as from_chat
from litellm_budget.core.validity import anthropic_unsupported as unsupported_reason
from litellm_budget.core.validity import responses_unsupported
from tests.support.builders import agent_session
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import wait_for_count, wait_for_records
from tests.support.proxy_process import ProxyProcess, anthropic_client, start_proxy

pytestmark = pytest.mark.proxy
WINDOW = 8000
CLAUDE = "anthropic/claude-sonnet-4-5"
SYSTEM = [
    {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "Use the tools."},
]


@pytest.fixture(name="proxy", scope="module")
def fixture_proxy(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    folder = tmp_path_factory.mktemp("messages")
    config = {
        "model_list": [
            {
                "model_name": "claude",
                "litellm_params": {
                    "model": "anthropic/claude-sonnet-4-5",
                    "api_base": upstream.root_url,
                    "api_key": "k",
                },
                "model_info": {"max_input_tokens": WINDOW},
            },
            {
                # /v1/messages to an OpenAI model: LiteLLM bridges it to the Responses API.
                "model_name": "gpt-bridge",
                "litellm_params": {"model": "openai/gpt-4o", "api_base": upstream.base_url, "api_key": "k"},
                "model_info": {"max_input_tokens": WINDOW},
            },
        ],
        "litellm_settings": {"callbacks": ["litellm_budget.handler", "proxy_spy.spy"]},
    }
    with start_proxy(config, tmp_path=folder, helpers=["proxy_spy.py"]) as proxy:
        yield proxy


@pytest.fixture(name="client")
def fixture_client(proxy: ProxyProcess) -> Iterator[anthropic.Anthropic]:
    with anthropic_client(proxy) as client:
        yield client


def _conversation() -> list[dict[str, Any]]:
    """About 20k tokens of an agent's tool history, in Anthropic's shape."""
    _, messages = from_chat(agent_session(30, 700))
    return messages


def _spy_success(proxy: ProxyProcess, timeout: float = 15.0) -> dict[str, Any]:
    def has_success(records: list[dict[str, Any]]) -> bool:
        return any(record["outcome"] == "success" for record in records)

    records = wait_for_records(proxy.config_path.parent / "spy.jsonl", has_success, what="a success", timeout=timeout)
    return [record for record in records if record["outcome"] == "success"][-1]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("client_metadata", [False, True], ids=["no-metadata", "claude-code-metadata"])
def test_messages_are_fitted_natively(
    client: anthropic.Anthropic, upstream: FakeUpstream, stream: bool, client_metadata: bool
) -> None:
    """What the provider gets fits, pairs and alternates, system untouched, no system role in messages."""
    messages = _conversation()
    extra: dict[str, Any] = {"metadata": {"user_id": "user-1"}} if client_metadata else {}
    upstream.clear()

    raw = client.messages.with_raw_response.create(
        model="claude",
        max_tokens=1024,
        system=SYSTEM,
        messages=messages,
        stream=stream,
        **extra,  # type: ignore[arg-type]
    )
    if stream:
        for _ in raw.parse():
            pass
    sent = upstream.requests[-1]
    joined = join_system(sent["system"], sent["messages"])

    assert raw.headers["x-litellm-budget-action"] == "trimmed"
    assert sent["system"] == SYSTEM
    assert unsupported_reason(joined, None, None) is None
    assert all(message["role"] in {"user", "assistant"} for message in sent["messages"])
    assert sum(ANTHROPIC.count_message(counter_for("claude-sonnet-4-5"), m) for m in joined) < WINDOW
    assert sent.get("metadata", {}) == extra.get("metadata", {})


def test_the_report_says_anthropic_and_reaches_the_logging_payload(
    client: anthropic.Anthropic, proxy: ProxyProcess
) -> None:
    """The success payload carries the report of the Anthropic fit, as chat requests' do."""
    client.messages.create(model="claude", max_tokens=1024, system=SYSTEM, messages=_conversation())  # type: ignore[arg-type]

    report = _spy_success(proxy)["metadata"]["spend_logs_metadata"]["litellm_budget"]

    assert (report["format"], report["action"]) == ("anthropic", "trimmed")
    assert report["tokens_after"] < report["tokens_before"]


def test_a_request_that_fits_is_forwarded_as_sent(client: anthropic.Anthropic, upstream: FakeUpstream) -> None:
    """A short conversation goes upstream byte for byte, reported as a pass-through."""
    messages = [{"role": "user", "content": "Hello."}, {"role": "user", "content": "Still there?"}]
    upstream.clear()

    raw = client.messages.with_raw_response.create(model="claude", max_tokens=64, messages=messages)  # type: ignore[arg-type]

    assert raw.headers["x-litellm-budget-action"] == "passthrough"
    assert upstream.requests[-1]["messages"] == messages


def test_messages_bridged_to_an_openai_deployment_fit(client: anthropic.Anthropic, upstream: FakeUpstream) -> None:
    """LiteLLM turns /v1/messages into a Responses call: what the provider gets fits and every output pairs."""
    upstream.clear()

    raw = client.messages.with_raw_response.create(
        model="gpt-bridge",
        max_tokens=1024,
        system=SYSTEM,
        messages=_conversation(),  # type: ignore[arg-type]
    )
    sent = upstream.requests[-1]
    items = sent["input"]

    assert raw.headers["x-litellm-budget-action"] == "trimmed"
    assert responses_unsupported(items, None, None) is None
    assert sum(RESPONSES.count_message(counter_for("gpt-4o"), item) for item in items) < WINDOW


@pytest.mark.slow  # its own proxy; calibration through the proxy runs by default in test_calibration_proxy.py
def test_claudes_own_counting_is_learned_from_its_usage(tmp_path: Path) -> None:
    """Usage reported on /v1/messages calibrates later fits of that model, as on chat."""
    with FakeUpstream(usage_ratio=2.0) as inflated:
        config = {
            "model_list": [
                {
                    "model_name": "claude",
                    "litellm_params": {"model": CLAUDE, "api_base": inflated.root_url, "api_key": "k"},
                    "model_info": {"max_input_tokens": WINDOW},
                }
            ],
            "litellm_settings": {"callbacks": ["litellm_budget.handler", "proxy_spy.spy"]},
        }
        spy = tmp_path / "spy.jsonl"
        with (
            start_proxy(config, tmp_path=tmp_path, helpers=["proxy_spy.py"]) as proxy,
            anthropic_client(proxy) as client,
        ):
            for number in range(8):
                client.messages.create(
                    model="claude", max_tokens=64, messages=[{"role": "user", "content": f"{number} " + "word " * 1500}]
                )
                wait_for_count(spy, number + 1)

    reports = [
        json.loads(line)["metadata"]["spend_logs_metadata"]["litellm_budget"] for line in spy.read_text().splitlines()
    ]
    assert reports[0]["token_ratio"] == 1.1  # the prior of Claude models, until usage teaches more
    assert reports[-1]["format"] == "anthropic"
    assert reports[-1]["token_ratio"] > 1.5


def test_a_clients_context_management_is_applied_for_an_openai_upstream(
    client: anthropic.Anthropic, upstream: FakeUpstream
) -> None:
    """clear_tool_uses asked on /v1/messages to a non-Anthropic model is applied here and reported in the response."""
    edits = {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "tool_uses", "value": 2},
                "keep": {"type": "tool_uses", "value": 1},
            }
        ]
    }
    _, messages = from_chat(agent_session(4, 100))
    upstream.clear()

    raw = client.messages.with_raw_response.create(
        model="gpt-bridge",
        max_tokens=256,
        messages=messages,  # type: ignore[arg-type]
        extra_body={"context_management": edits},
    )
    body = raw.http_response.json()
    outputs = [item["output"] for item in upstream.requests[-1]["input"] if item.get("type") == "function_call_output"]

    assert body["context_management"]["applied_edits"][0]["type"] == "clear_tool_uses_20250919"
    assert body["context_management"]["applied_edits"][0]["cleared_tool_uses"] == 3
    assert [CLEARED_RESULT in str(output) for output in outputs] == [True, True, True, False]
    assert "context_management" not in upstream.requests[-1]


def test_a_streamed_answer_carries_the_applied_edits(client: anthropic.Anthropic, upstream: FakeUpstream) -> None:
    """The same edits on a stream: the anthropic SDK's final message has them, from the message_delta event."""
    edits = {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "tool_uses", "value": 2},
                "keep": {"type": "tool_uses", "value": 1},
            }
        ]
    }
    _, messages = from_chat(agent_session(4, 100))

    with client.beta.messages.stream(
        model="gpt-bridge",
        max_tokens=256,
        messages=messages,  # type: ignore[arg-type]
        context_management=edits,  # type: ignore[arg-type]
        betas=["context-management-2025-06-27"],
    ) as stream:
        final = stream.get_final_message()
    plain = client.messages.create(model="gpt-bridge", max_tokens=256, messages=messages)  # type: ignore[arg-type]

    assert final.context_management is not None
    [applied] = final.context_management.applied_edits
    assert (applied.type, applied.cleared_tool_uses) == ("clear_tool_uses_20250919", 3)  # type: ignore[union-attr]
    assert [block.type for block in final.content] == ["text"]
    assert "context_management" not in upstream.requests[-2]
    assert getattr(plain, "context_management", None) is None  # nothing asked, nothing said


def test_an_anthropic_upstream_applies_the_clients_edits_itself(
    client: anthropic.Anthropic, upstream: FakeUpstream
) -> None:
    """For an Anthropic deployment the edits go upstream as asked, and nothing is cleared here: never twice."""
    edits = {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 1}}]}
    _, messages = from_chat(agent_session(4, 100))
    upstream.clear()

    client.messages.create(
        model="claude",
        max_tokens=256,
        messages=messages,  # type: ignore[arg-type]
        extra_body={"context_management": edits},
    )
    sent = upstream.requests[-1]

    assert sent["context_management"] == edits
    assert CLEARED_RESULT not in json.dumps(sent["messages"])
