"""The plugin inside the real LiteLLM proxy, registered as `litellm_budget.handler`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import litellm
import pytest

from litellm_budget.core.counting import REPLY_PRIMING, counter_for
from litellm_budget.core.formats import CHAT
from litellm_budget.core.wording import NOTICE_PREFIX
from tests.support.builders import agent_session, deployment, system, text, user
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import wait_for_count, wait_for_records
from tests.support.proxy_process import ProxyProcess, parse_sse, post_chat, start_proxy

pytestmark = pytest.mark.proxy


@pytest.fixture(name="proxy", scope="module")
def fixture_proxy(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    folder = tmp_path_factory.mktemp("proxy")
    config = {
        "model_list": [
            deployment("budget-model", "openai/gpt-4o", upstream.base_url, window=8000),
            deployment("tuned", "openai/gpt-4o", upstream.base_url, window=8000, budget={"policy": "plan"}),
            deployment("small-ctx", "openai/acme-tiny", upstream.base_url, window=1000),
            deployment("big-ctx", "openai/acme-big", upstream.base_url, window=60_000),
        ],
        "litellm_settings": {
            "callbacks": ["litellm_budget.handler", "proxy_spy.spy", "prometheus"],
            "context_window_fallbacks": [{"small-ctx": ["big-ctx"]}],
            "custom_prometheus_metadata_labels": ["metadata.litellm_budget_action"],
        },
        "router_settings": {"enable_pre_call_checks": True},
    }
    with start_proxy(config, tmp_path=folder, helpers=["proxy_spy.py"]) as proxy:
        yield proxy


def spy_records(proxy: ProxyProcess, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    return wait_for_count(proxy.config_path.parent / "spy.jsonl", count, timeout)


def spy_record_of(proxy: ProxyProcess, call_id: str, timeout: float = 10.0) -> dict[str, Any]:
    """The success payload the spy logged for ``call_id`` (logging is asynchronous: wait for it)."""

    def served(record: dict[str, Any]) -> bool:
        return bool(record["call_id"] == call_id and record["outcome"] == "success")

    path = proxy.config_path.parent / "spy.jsonl"
    records = wait_for_records(
        path, lambda found: any(map(served, found)), what=f"success of {call_id}", timeout=timeout
    )
    return [record for record in records if served(record)][-1]


def long_body(model: str = "budget-model") -> dict[str, Any]:
    return {"model": model, "messages": agent_session(30, 900)}


class TestTrimming:
    @pytest.mark.parametrize("stream", [False, True])
    def test_upstream_receives_the_fitted_request(
        self, proxy: ProxyProcess, upstream: FakeUpstream, stream: bool
    ) -> None:
        """Through /v1/chat/completions (streaming or not) the provider gets a request that fits."""
        upstream.clear()

        status, headers, payload = post_chat(proxy, long_body(), stream=stream)

        assert status == 200
        if stream:
            assert parse_sse(payload)[-1] == "[DONE]"
        sent = upstream.requests[-1]["messages"]
        assert litellm.token_counter(model="gpt-4o", messages=sent) < 8000
        assert any(NOTICE_PREFIX in str(m.get("content")) for m in sent)
        assert headers["x-litellm-budget-action"] == "trimmed"
        assert int(headers["x-litellm-budget-tokens-after"]) < int(headers["x-litellm-budget-tokens-before"])
        # The report counts what the provider received, markers and digests included, as the plugin counts.
        counter = counter_for("gpt-4o")
        received = REPLY_PRIMING + sum(CHAT.count_message(counter, message) for message in sent)
        assert int(headers["x-litellm-budget-tokens-after"]) == received

    def test_a_cut_is_in_the_headers(self, proxy: ProxyProcess, upstream: FakeUpstream) -> None:
        """One question bigger than the window: the last resort cuts it, and the headers say so."""
        upstream.clear()

        status, headers, _ = post_chat(proxy, {"model": "budget-model", "messages": [system(), user(text(12_000))]})

        assert status == 200
        assert (headers["x-litellm-budget-action"], headers["x-litellm-budget-cut"]) == ("trimmed", "1")
        assert (headers["x-litellm-budget-elided"], headers["x-litellm-budget-dropped"]) == ("0", "0")
        assert "cut this message" in upstream.requests[-1]["messages"][-1]["content"]

    def test_small_requests_pass_untouched(self, proxy: ProxyProcess, upstream: FakeUpstream) -> None:
        """A request that fits is forwarded exactly."""
        messages = [system(), user("Hello there")]
        upstream.clear()

        status, headers, _ = post_chat(proxy, {"model": "budget-model", "messages": messages})

        assert status == 200
        assert upstream.requests[-1]["messages"] == messages
        assert headers["x-litellm-budget-action"] == "passthrough"

    def test_settings_from_model_info(self, proxy: ProxyProcess) -> None:
        """A deployment's model_info.litellm_budget sets its policy."""
        status, headers, _ = post_chat(proxy, long_body("tuned"))

        assert status == 200
        assert headers["x-litellm-budget-policy"] == "plan"

    def test_request_overrides_refused_by_default(self, proxy: ProxyProcess) -> None:
        """A client's metadata.litellm_budget is ignored unless the operator allows it."""
        body = {**long_body(), "metadata": {"litellm_budget": {"policy": "elide"}}}

        status, headers, _ = post_chat(proxy, body)

        assert status == 200
        assert headers["x-litellm-budget-policy"] == "auto"


class TestRejection:
    def test_unfittable_is_a_400_naming_the_context_window(self, proxy: ProxyProcess, upstream: FakeUpstream) -> None:
        """System plus question alone overflow: HTTP 400, param messages, the report attached."""
        upstream.clear()

        status, headers, payload = post_chat(
            proxy, {"model": "budget-model", "messages": [system(text(20_000)), user("hi")]}
        )

        assert status == 400
        error = payload["error"]
        assert "context window" in error["message"]
        assert error["param"] == "messages"
        assert error["provider_specific_fields"]["litellm_budget"]["action"] == "rejected"
        assert headers["x-litellm-budget-action"] == "rejected"
        assert upstream.requests == []

    def test_context_window_fallback_answers_from_the_big_model(
        self, proxy: ProxyProcess, upstream: FakeUpstream
    ) -> None:
        """What cannot fit small-ctx is answered by big-ctx through context_window_fallbacks."""
        upstream.clear()

        status, _, payload = post_chat(
            proxy, {"model": "small-ctx", "messages": [system(text(3000)), user("question")]}
        )

        assert status == 200, payload
        assert payload["choices"][0]["message"]["content"] == "ok"
        assert upstream.requests[-1]["model"] == "acme-big"


class TestObservability:
    def test_report_in_every_loggers_payload(self, proxy: ProxyProcess) -> None:
        """Another logger in the proxy gets the report in spend_logs_metadata, action and policy as strings."""
        _, headers, _ = post_chat(proxy, long_body())

        record = spy_record_of(proxy, headers["x-litellm-call-id"])

        spend = record["metadata"]["spend_logs_metadata"]
        assert spend["litellm_budget"]["action"] == "trimmed"
        assert (spend["litellm_budget_action"], spend["litellm_budget_policy"]) == ("trimmed", "auto")

    def test_metrics_on_the_proxy(self, proxy: ProxyProcess) -> None:
        """/metrics shows the plugin's counters and LiteLLM's own metrics labelled with the action."""
        post_chat(proxy, long_body())

        metrics = httpx.get(
            proxy.base_url + "/metrics/", headers=proxy.auth_headers, timeout=10, follow_redirects=True
        ).text

        assert 'litellm_budget_trims_total{model_group="budget-model",policy="auto"}' in metrics
        assert "litellm_budget_tokens_saved_total" in metrics
        assert 'metadata_litellm_budget_action="trimmed"' in metrics
