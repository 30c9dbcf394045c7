"""Cache truth in the adapter: usage and sent prompt read from a success callback's kwargs, a report per call."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from litellm_budget.adapter.records.calls import Calls
from litellm_budget.adapter.report.cache_observed import CACHE_KEY, PromptHistory, observe_success, sent_of, usage_of
from litellm_budget.core import BudgetReport
from litellm_budget.core.budget import BudgetSettings
from litellm_budget.core.cache import CacheUsage
from tests.support.builders import system, text, tool_step, user


def _usage(prompt: int, cached: int | None, **extra: Any) -> dict[str, Any]:
    details = None if cached is None else {"cached_tokens": cached}
    return {"prompt_tokens": prompt, "completion_tokens": 1, "prompt_tokens_details": details, **extra}


class TestUsage:
    def test_openai_usage(self) -> None:
        """``prompt_tokens`` and ``prompt_tokens_details.cached_tokens``, as LiteLLM normalizes them."""
        assert usage_of({"metadata": {"usage_object": _usage(2000, 1500)}}, None) == CacheUsage(input=2000, read=1500)

    def test_anthropic_usage(self) -> None:
        """Anthropic's write counts too; its read under either name."""
        found = usage_of(
            {
                "metadata": {
                    "usage_object": _usage(3000, None, cache_read_input_tokens=1000, cache_creation_input_tokens=500)
                }
            },
            None,
        )

        assert found == CacheUsage(input=3000, read=1000, written=500)

    def test_a_provider_that_does_not_say(self) -> None:
        """No cache counts: read is unknown (``None``), not 0; no usage at all: nothing."""
        assert usage_of({"metadata": {"usage_object": _usage(2000, None)}}, None) == CacheUsage(input=2000, read=None)
        assert usage_of({}, None) is None
        assert usage_of({"metadata": {"usage_object": {"prompt_tokens": 0}}}, None) is None

    def test_from_the_response_when_the_payload_has_none(self) -> None:
        """A response object's ``usage`` (pydantic or plain) stands in."""

        class Response:
            usage = _usage(100, 50)

        assert usage_of({}, Response()) == CacheUsage(input=100, read=50)


class TestSent:
    def test_each_format(self) -> None:
        """Chat's messages; Anthropic's system first (bridged: its instructions); Responses' items as messages."""
        messages = [{"role": "user", "content": "hi"}]
        tools = [{"name": "t"}]

        assert sent_of({"messages": messages, "optional_params": {"tools": tools}}, "chat") == (messages, tools)
        anthropic, _ = sent_of({"messages": messages, "system": "S"}, "anthropic")
        bridged, _ = sent_of({"messages": messages, "instructions": "S"}, "anthropic")
        responses, _ = sent_of({"messages": messages, "input": None, "instructions": "S"}, "responses")

        assert anthropic == bridged
        assert [(m["role"], m["content"]) for m in anthropic] == [("system", "S"), ("user", "hi")]
        assert responses[0]["role"] in {"system", "developer"}
        assert responses[1:] == messages
        assert sent_of({}, "chat") == (None, None)


def _kwargs(messages: list[dict[str, Any]], call_id: str, usage: dict[str, Any], model_id: str = "d") -> dict[str, Any]:
    payload = {
        "call_type": "acompletion",
        "model": "openai/gpt-4o",
        "model_group": "g",
        "model_id": model_id,
        "metadata": {"usage_object": usage, "spend_logs_metadata": {"litellm_budget": {"action": "passthrough"}}},
    }
    return {
        "litellm_call_id": call_id,
        "messages": messages,
        "standard_logging_object": payload,
        "call_type": "acompletion",
        "litellm_params": {"metadata": {"spend_logs_metadata": {"from_client": "yes"}}},
    }


def _served(calls: Calls, call_id: str, messages: list[dict[str, Any]]) -> None:
    report = BudgetReport(model="openai/gpt-4o", policy="auto", action="passthrough", messages_before=len(messages))
    calls.sent_as_it_came(call_id, report)


def test_two_requests_of_a_conversation_make_a_report_each() -> None:
    """The first says what the provider read; the second compares with it, logs one event and fills the payload."""
    history, calls, settings = PromptHistory(), Calls(), BudgetSettings()
    messages = [system(text(800)), user("Task."), *tool_step(800)]
    _served(calls, "one", messages)
    longer = [*messages, *tool_step(400)]
    _served(calls, "two", longer)
    second = _kwargs(longer, "two", _usage(2400, 1700))

    with structlog.testing.capture_logs() as logs:
        first = observe_success(history, calls, _kwargs(messages, "one", _usage(1700, 0)), None, settings)
        report = observe_success(history, calls, second, None, settings)

    assert first is not None
    assert (first.cache_miss, first.shared_tokens) == (None, 0)
    assert report is not None
    assert report.cache_read_tokens == 1700
    assert report.cache_miss is None
    assert 1600 < report.predicted_tokens == report.shared_tokens < 2000  # the previous prompt's share of this one
    assert [log["event"] for log in logs] == ["cache_observed", "cache_observed"]
    assert logs[1]["litellm_call_id"] == "two"
    assert logs[1]["model_group"] == "g"
    spend = second["standard_logging_object"]["metadata"]["spend_logs_metadata"]
    assert spend[CACHE_KEY] == report.as_dict()
    assert spend[f"{CACHE_KEY}_miss"] == "none"
    assert spend["litellm_budget"] == {"action": "passthrough"}  # the request's own report is left as it was
    request_spend = second["litellm_params"]["metadata"]["spend_logs_metadata"]
    assert request_spend == {"from_client": "yes", CACHE_KEY: report.as_dict(), f"{CACHE_KEY}_miss": "none"}


@pytest.mark.parametrize("action", ["rejected", "deferred"])
def test_nothing_is_said_of_what_the_plugin_did_not_send(action: str) -> None:
    """A success the plugin has no sent report for (or one it did not send) gets no cache report."""
    calls = Calls()
    messages = [user("hi")]
    kwargs = _kwargs(messages, "x", _usage(100, 0))
    kwargs["standard_logging_object"]["metadata"]["spend_logs_metadata"] = {"litellm_budget": {"action": action}}

    assert observe_success(PromptHistory(), calls, kwargs, None, BudgetSettings()) is None
    kwargs["standard_logging_object"]["metadata"]["spend_logs_metadata"] = {}
    assert observe_success(PromptHistory(), calls, kwargs, None, BudgetSettings()) is None
