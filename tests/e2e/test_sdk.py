"""The plugin through LiteLLM's real SDK entry points, against a recording fake upstream."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import litellm
import pytest
from litellm.integrations.custom_logger import CustomLogger
from packaging.version import Version
from structlog.testing import capture_logs

from litellm_budget import ContextBudget
from litellm_budget.core.formats import anthropic_from_chat as from_chat
from litellm_budget.core.formats import join_system
from litellm_budget.core.validity import anthropic_unsupported
from litellm_budget.core.wording import NOTICE_PREFIX
from tests.support.builders import agent_session, deployment, system, text, user
from tests.support.fake_upstream import FakeUpstream
from tests.support.sdk_support import PayloadSpy, only_callbacks
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("quiet_logging")]
SMALL = 8000


@pytest.fixture(name="spy")
def fixture_spy() -> Iterator[PayloadSpy]:
    spy = PayloadSpy()
    with only_callbacks(ContextBudget(default_window=SMALL), spy):
        yield spy


def long_session() -> list[dict[str, Any]]:
    return agent_session(30, 900)


class TestAcompletion:
    @pytest.mark.parametrize("stream", [False, True])
    async def test_trims_what_the_upstream_receives(
        self, upstream: FakeUpstream, spy: PayloadSpy, stream: bool
    ) -> None:
        """acompletion (streaming or not) sends the fitted request; the caller's list is untouched."""
        messages = long_session()
        snapshot = copy.deepcopy(messages)
        upstream.clear()

        response = await litellm.acompletion(
            model="openai/acme-unknown", api_base=upstream.base_url, api_key="sk-test", messages=messages, stream=stream
        )
        if stream:
            async for _ in response:
                pass

        sent = upstream.requests[-1]["messages"]
        assert messages == snapshot
        assert sent != snapshot
        assert any(NOTICE_PREFIX in str(m.get("content")) for m in sent)
        assert litellm.token_counter(model="gpt-4o", messages=sent) < SMALL

    async def test_report_reaches_standard_logging_payload(self, upstream: FakeUpstream, spy: PayloadSpy) -> None:
        """Every LiteLLM logger sees the report in spend_logs_metadata, with flat string labels."""
        with capture_logs() as logs:
            await litellm.acompletion(
                model="openai/acme-unknown", api_base=upstream.base_url, api_key="k", messages=long_session()
            )
            payloads = await spy.wait()

        spend = payloads[-1]["metadata"]["spend_logs_metadata"]
        assert spend["litellm_budget"]["action"] == "trimmed"
        assert spend["litellm_budget_action"] == "trimmed"
        assert spend["litellm_budget_policy"] == "auto"
        events = [log for log in logs if log["event"].startswith("request_")]
        assert [e["event"] for e in events] == ["request_trimmed"]
        assert events[0]["tokens_after"] < events[0]["tokens_before"]

    async def test_unfittable_raises_context_window_exceeded(self, upstream: FakeUpstream, spy: PayloadSpy) -> None:
        """What cannot fit raises LiteLLM's ContextWindowExceededError and never reaches the upstream."""
        upstream.clear()

        with pytest.raises(litellm.ContextWindowExceededError) as caught:
            await litellm.acompletion(
                model="openai/acme-unknown",
                api_base=upstream.base_url,
                api_key="k",
                messages=[system(text(20_000)), user("hi")],
            )

        assert caught.value.param == "messages"
        assert caught.value.provider_specific_fields["litellm_budget"]["action"] == "rejected"
        assert upstream.requests == []

    async def test_sdk_num_retries_resends_a_rejection_untouched_and_we_say_so(
        self, upstream: FakeUpstream, spy: PayloadSpy
    ) -> None:
        """
        Pinned LiteLLM 1.108.5 behaviour: with tenacity installed (langchain-core brings it), the
        SDK's own ``num_retries`` re-sends a request our deployment hook rejected through a path
        that runs no pre-call hook, so it reaches the provider untouched, and no success event
        follows (only ``log_pre_api_call`` fires). The plugin cannot stop it; it must not leave its
        rejection standing as the whole story: it warns when the request goes out.
        """
        pytest.importorskip("tenacity")
        upstream.clear()
        with capture_logs() as logs:
            await litellm.acompletion(
                model="openai/acme-unknown",
                api_base=upstream.base_url,
                api_key="k",
                messages=[system(text(20_000)), user("hi")],
                num_retries=2,
            )
            await wait_for_async(  # the success event runs after the call returns
                lambda: any(log["event"] == "rejected_request_resent" for log in logs), what="the resent warning"
            )
        assert len(upstream.requests) == 1  # LiteLLM sent it, untouched
        events = [log["event"] for log in logs]
        assert "request_rejected" in events
        assert "rejected_request_resent" in events

    async def test_rejection_reaches_failure_logging(self, upstream: FakeUpstream, spy: PayloadSpy) -> None:
        """The failure event of a rejected request carries the report, as success events do."""
        with pytest.raises(litellm.ContextWindowExceededError):
            await litellm.acompletion(
                model="openai/acme-unknown",
                api_base=upstream.base_url,
                api_key="k",
                messages=[system(text(20_000)), user("hi")],
            )
        for _ in range(100):
            if spy.failures:
                break
            await asyncio.sleep(0.02)

        spend = spy.failures[-1]["metadata"]["spend_logs_metadata"]
        assert spend["litellm_budget"]["action"] == "rejected"
        assert spend["litellm_budget_action"] == "rejected"

    async def test_positional_call_passes_through(self, upstream: FakeUpstream, spy: PayloadSpy) -> None:
        """LiteLLM hides positional arguments from the hook: such calls are forwarded untouched (pinned)."""
        messages = long_session()
        upstream.clear()

        await litellm.acompletion("openai/acme-unknown", messages, api_base=upstream.base_url, api_key="k")

        assert upstream.requests[-1]["messages"] == messages


class TestRouter:
    async def test_window_from_deployment_model_info(self, upstream: FakeUpstream, spy: PayloadSpy) -> None:
        """The chosen deployment's model_info.max_input_tokens is the window."""
        router = litellm.Router(model_list=[deployment("small", "openai/gpt-4o", upstream.base_url, window=6000)])
        upstream.clear()

        with capture_logs() as logs:
            await router.acompletion(model="small", messages=long_session())

        sent = upstream.requests[-1]["messages"]
        assert litellm.token_counter(model="gpt-4o", messages=sent) < 6000
        assert [log["window"] for log in logs if log["event"] == "request_trimmed"] == [6000]

    async def test_context_window_fallbacks_answer_from_the_big_model(
        self, upstream: FakeUpstream, spy: PayloadSpy
    ) -> None:
        """A request that cannot fit the small model falls back to the big one, which answers it."""
        router = litellm.Router(
            model_list=[
                deployment("small", "openai/acme-small", upstream.base_url, window=1000),
                deployment("big", "openai/acme-big", upstream.base_url, window=60_000),
            ],
            context_window_fallbacks=[{"small": ["big"]}],
        )
        upstream.clear()

        response = await router.acompletion(model="small", messages=[system(text(3000)), user("question")])

        assert response.choices[0].message.content == "ok"
        assert upstream.requests[-1]["model"] == "acme-big"

    async def test_trims_before_enable_pre_call_checks(self, upstream: FakeUpstream, spy: PayloadSpy) -> None:
        """With the Router's own window check on, the request is trimmed first, so the deployment stays."""
        router = litellm.Router(
            model_list=[deployment("small", "openai/gpt-4o", upstream.base_url, window=6000)],
            enable_pre_call_checks=True,
        )
        messages = long_session()
        snapshot = copy.deepcopy(messages)
        upstream.clear()

        await router.acompletion(model="small", messages=messages)

        assert litellm.token_counter(model="gpt-4o", messages=upstream.requests[-1]["messages"]) < 6000
        assert messages == snapshot

    async def test_pre_call_checks_alone_reject_it(self, upstream: FakeUpstream) -> None:
        """Without the plugin LiteLLM's own check refuses the same request (what the plugin saves us from)."""
        router = litellm.Router(
            model_list=[deployment("small", "openai/gpt-4o", upstream.base_url, window=6000)],
            enable_pre_call_checks=True,
        )
        with only_callbacks(), pytest.raises(litellm.ContextWindowExceededError):
            await router.acompletion(model="small", messages=long_session())

    async def test_both_hooks_of_a_call_share_its_trace_id(self, upstream: FakeUpstream) -> None:
        """
        Pin: the filter and deployment hooks of a Router call see the same ``litellm_trace_id``. A
        ``litellm_call_id`` the filter hook sets reached the deployment hook through LiteLLM 1.109;
        1.110's Router hands the filter hook a copy of the kwargs, so there the plugin finds the list
        it lent by the trace id (``adapter/records/lending.py``).
        """
        seen: dict[str, object] = {}

        class Recorder(CustomLogger):  # type: ignore[misc]
            async def async_filter_deployments(
                self,
                model: str,
                healthy_deployments: list[Any],
                messages: list[Any] | None,
                request_kwargs: dict[str, Any] | None = None,
                parent_otel_span: Any = None,
            ) -> list[Any]:
                seen["call before"] = (request_kwargs or {}).get("litellm_call_id")
                seen["trace before"] = (request_kwargs or {}).get("litellm_trace_id")
                if request_kwargs is not None:
                    request_kwargs["litellm_call_id"] = "set-before-routing"
                return healthy_deployments

            async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> None:
                seen["call after"] = kwargs.get("litellm_call_id")
                seen["trace after"] = kwargs.get("litellm_trace_id")

        router = litellm.Router(model_list=[deployment("small", "openai/gpt-4o", upstream.base_url, window=6000)])
        with only_callbacks(Recorder()):
            await router.acompletion(model="small", messages=[user("hi")])

        assert seen["call before"] is None
        assert isinstance(seen["trace before"], str)
        assert seen["trace before"]
        assert seen["trace after"] == seen["trace before"]
        kept = Version(version("litellm")) < Version("1.110")
        assert (seen["call after"] == "set-before-routing") is kept

    async def test_the_callers_list_comes_back_when_the_filter_hook_gets_a_copy(self, upstream: FakeUpstream) -> None:
        """As under LiteLLM 1.110's Router: the caller's list is whole after the call, the trim reported once."""

        class GivenACopy(ContextBudget):
            async def async_filter_deployments(
                self,
                model: str,
                healthy_deployments: list[Any],
                messages: list[Any] | None,
                request_kwargs: dict[str, Any] | None = None,
                parent_otel_span: Any = None,
            ) -> list[Any]:
                copied = dict(request_kwargs or {})
                return await super().async_filter_deployments(model, healthy_deployments, messages, copied)

        router = litellm.Router(
            model_list=[deployment("small", "openai/gpt-4o", upstream.base_url, window=6000)],
            enable_pre_call_checks=True,
        )
        messages = long_session()
        snapshot = copy.deepcopy(messages)
        upstream.clear()

        with only_callbacks(GivenACopy()), capture_logs() as logs:
            await router.acompletion(model="small", messages=messages)

        sent = upstream.requests[-1]["messages"]
        assert messages == snapshot
        assert litellm.token_counter(model="gpt-4o", messages=sent) < 6000
        reports = [log for log in logs if log["event"].startswith("request_")]
        assert [(log["event"], log["hook"], log["window"]) for log in reports] == [
            ("request_trimmed", "async_filter_deployments", 6000)
        ]
        assert (reports[0]["messages_before"], reports[0]["messages_after"]) == (len(snapshot), len(sent))

    async def test_a_list_a_failed_call_left_trimmed_is_whole_after_the_retry(self, upstream: FakeUpstream) -> None:
        """
        Another filter left no deployment after the plugin lent its trim, and LiteLLM raised: nothing
        of the plugin's ran since. The caller's next call with that list gets it back whole first.
        """

        class NoDeployment(CustomLogger):  # type: ignore[misc]
            async def async_filter_deployments(
                self,
                model: str,
                healthy_deployments: list[Any],
                messages: list[Any] | None,
                request_kwargs: dict[str, Any] | None = None,
                parent_otel_span: Any = None,
            ) -> list[Any]:
                return []

        router = litellm.Router(
            model_list=[deployment("small", "openai/gpt-4o", upstream.base_url, window=6000)], num_retries=0
        )
        budget, messages = ContextBudget(), long_session()
        snapshot = copy.deepcopy(messages)
        with only_callbacks(budget, NoDeployment()), pytest.raises(litellm.RouterRateLimitError):
            await router.acompletion(model="small", messages=messages)
        assert len(messages) < len(snapshot)
        upstream.clear()

        with only_callbacks(budget), capture_logs() as logs:
            await router.acompletion(model="small", messages=messages)

        sent = upstream.requests[-1]["messages"]
        assert messages == snapshot
        assert litellm.token_counter(model="gpt-4o", messages=sent) < 6000
        trimmed = [log for log in logs if log["event"] == "request_trimmed"]
        assert [(log["hook"], log["messages_before"], log["messages_after"]) for log in trimmed] == [
            ("async_filter_deployments", len(snapshot), len(sent))
        ]

    async def test_message_objects_are_read_like_dicts(self, upstream: FakeUpstream, spy: PayloadSpy) -> None:
        """A history holding litellm.Message objects is fitted on every hook, never reported unsupported."""
        router = litellm.Router(
            model_list=[deployment("small", "openai/gpt-4o", upstream.base_url, window=6000)],
            enable_pre_call_checks=True,
        )
        messages: list[Any] = long_session()
        messages[2] = litellm.Message(**messages[2])
        messages.append(litellm.Message(role="user", content="Go on."))
        upstream.clear()

        with capture_logs() as logs:
            await router.acompletion(model="small", messages=messages)

        assert [entry["event"] for entry in logs if entry["event"].startswith("request_")] == ["request_trimmed"]
        assert litellm.token_counter(model="gpt-4o", messages=upstream.requests[-1]["messages"]) < 6000
        assert isinstance(messages[2], litellm.Message)

    async def test_a_bigger_fallback_comes_before_trimming(self, upstream: FakeUpstream) -> None:
        """Over the small model's window, the Router's bigger fallback serves it whole; the deferral is logged."""
        router = litellm.Router(
            model_list=[
                deployment("small", "openai/acme-small", upstream.base_url, window=4000),
                deployment("big", "openai/acme-big", upstream.base_url, window=16000),
            ],
            context_window_fallbacks=[{"small": ["big"]}],
        )
        spy = PayloadSpy()
        history = agent_session(10, 800)
        upstream.clear()

        with only_callbacks(ContextBudget(router=router), spy), capture_logs() as logs:
            await router.acompletion(model="small", messages=history)
            for _ in range(250):
                if any(p["model_group"] == "small" for p in spy.failures) and any(
                    p["model_group"] == "big" for p in spy.payloads
                ):
                    break
                await asyncio.sleep(0.02)

        assert [request["model"] for request in upstream.requests] == ["acme-big"]
        assert upstream.requests[0]["messages"] == history
        assert [e["event"] for e in logs if e["event"].startswith("request_")] == [
            "request_deferred",
            "request_passed_through",
        ]
        failed = [p for p in spy.failures if p["model_group"] == "small"]
        served = [p for p in spy.payloads if p["model_group"] == "big"]
        assert failed[-1]["metadata"]["spend_logs_metadata"]["litellm_budget"]["action"] == "deferred"
        assert served[-1]["metadata"]["spend_logs_metadata"]["litellm_budget"]["window"] == 16000

    async def test_without_the_router_the_sdk_trims_on_the_small_model(self, upstream: FakeUpstream) -> None:
        """A plugin that was not given the Router cannot see its fallbacks: it fits the small model, as before."""
        router = litellm.Router(
            model_list=[
                deployment("small", "openai/acme-small", upstream.base_url, window=4000),
                deployment("big", "openai/acme-big", upstream.base_url, window=16000),
            ],
            context_window_fallbacks=[{"small": ["big"]}],
        )
        upstream.clear()

        with only_callbacks(ContextBudget()):
            await router.acompletion(model="small", messages=agent_session(10, 800))

        assert [request["model"] for request in upstream.requests] == ["acme-small"]


class TestAnthropicMessages:
    async def test_acreate_answers_with_the_context_edits_it_applied(self, upstream: FakeUpstream) -> None:
        """The SDK's /v1/messages twin bridged to an OpenAI model: the client's clear_tool_uses is applied
        here and the response says so in context_management.applied_edits, as Anthropic's would."""
        _, messages = from_chat(agent_session(12, 300))
        edits = {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 100}}]}
        with only_callbacks(ContextBudget(default_window=128_000)):
            response = await litellm.anthropic.messages.acreate(
                model="openai/acme-bridged",
                max_tokens=256,
                messages=messages,
                context_management=edits,
                api_base=upstream.base_url,
                api_key="k",
            )
        applied = response["context_management"]["applied_edits"]
        assert [edit["type"] for edit in applied] == ["clear_tool_uses_20250919"]
        assert applied[0]["cleared_tool_uses"] > 0

    async def test_acreate_is_fitted_and_the_clients_metadata_left_alone(self, upstream: FakeUpstream) -> None:
        """litellm.anthropic.messages.acreate is fitted natively; the report never goes into the provider's metadata."""
        _, messages = from_chat(agent_session(30, 700))
        upstream.clear()

        with only_callbacks(ContextBudget(default_window=SMALL)), capture_logs() as logs:
            await litellm.anthropic.messages.acreate(
                model="anthropic/acme-claude",
                max_tokens=256,
                system="You are a coding agent.",
                messages=messages,
                metadata={"user_id": "user-1"},
                api_base=upstream.root_url,
                api_key="k",
            )

        sent = upstream.requests[-1]
        events = [e for e in logs if e["event"].startswith("request_")]
        assert [(e["event"], e["format"]) for e in events] == [("request_trimmed", "anthropic")]
        assert anthropic_unsupported(join_system(sent["system"], sent["messages"]), None, None) is None
        assert sent["metadata"] == {"user_id": "user-1"}
        assert events[0]["tokens_after"] < SMALL
