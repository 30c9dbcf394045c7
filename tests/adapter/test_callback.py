"""The adapter's contract with LiteLLM: registration, settings, fail-open, what it leaves alone."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from litellm.types.utils import CallTypes
from structlog.testing import capture_logs

import litellm_budget
from litellm_budget import BudgetSettings, ContextBudget
from litellm_budget.adapter.callback import ContextBudget as DefinedHere
from litellm_budget.adapter.failopen import HookFailedError
from litellm_budget.adapter.report.publish import EVENTS
from tests.support.builders import agent_session, system, text, user


def kwargs_for(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "openai/acme-x", "messages": messages, "litellm_call_id": f"call-{id(messages)}", **extra}


@pytest.fixture(name="callback_settings")
def fixture_callback_settings() -> Iterator[dict[str, Any]]:
    saved = getattr(litellm, "callback_settings", None)
    litellm.callback_settings = {}
    yield litellm.callback_settings
    litellm.callback_settings = saved


class TestRegistration:
    def test_proxy_sees_hooks_on_the_class_itself(self) -> None:
        """The proxy only calls hooks the registered object's own class defines (pinned by LiteLLM's rule)."""
        for hook in ("async_pre_call_hook", "async_post_call_response_headers_hook", "async_pre_call_deployment_hook"):
            assert hook in vars(type(litellm_budget.handler))

    def test_proxy_skips_inherited_pre_call_hooks(self) -> None:
        """LiteLLM 1.108.5 checks `vars(type(cb))`, so a subclass that only inherits the hook is skipped."""
        import inspect

        from litellm.proxy import utils

        source = inspect.getsource(utils)
        assert '"async_pre_call_hook" in vars(' in source

    def test_handler_is_a_ready_instance(self) -> None:
        """`litellm_budget.handler` is the instance the proxy's `callbacks: [litellm_budget.handler]` resolves to."""
        from litellm.integrations.custom_logger import CustomLogger
        from litellm.proxy.types_utils.utils import get_instance_fn

        resolved = get_instance_fn("litellm_budget.handler")

        assert isinstance(resolved, CustomLogger)
        assert resolved is litellm_budget.handler
        assert ContextBudget is DefinedHere

    def test_bad_knobs_fail_at_construction(self) -> None:
        """A typo in a knob fails when the plugin is created, not on the first request."""
        with pytest.raises(
            ValueError, match=r"ContextBudget\.polcy = 'plan': is not a setting \(did you mean 'policy'\?\)"
        ):
            ContextBudget(polcy="plan")


class TestSettings:
    def test_precedence(self, callback_settings: dict[str, Any]) -> None:
        """Defaults < callback_settings.litellm_budget < constructor knobs."""
        callback_settings["litellm_budget"] = {"policy": "plan", "protected_tail": 4}

        settings = ContextBudget(protected_tail=6).settings

        assert (settings.policy, settings.protected_tail) == ("plan", 6)

    @pytest.mark.asyncio
    async def test_request_overrides_only_when_allowed(self) -> None:
        """metadata.litellm_budget applies only with allow_request_overrides, and only lowers the window."""
        messages = agent_session(20, 900)
        wants = {"litellm_budget": {"policy": "elide", "window": 6000}}
        refused = ContextBudget(default_window=30_000)
        allowed = ContextBudget(default_window=30_000, allow_request_overrides=True)
        raised = ContextBudget(default_window=5000, allow_request_overrides=True)

        with capture_logs() as logs:
            await refused.async_pre_call_deployment_hook(
                kwargs_for(messages, metadata=copy.deepcopy(wants)), CallTypes.acompletion
            )
            await allowed.async_pre_call_deployment_hook(
                kwargs_for(messages, metadata=copy.deepcopy(wants)), CallTypes.acompletion
            )
            await raised.async_pre_call_deployment_hook(
                kwargs_for(messages, metadata={"litellm_budget": {"window": 50_000}}), CallTypes.acompletion
            )

        reports = [log for log in logs if log["event"] in EVENTS.values()]
        assert [(r["policy"], r["window"]) for r in reports] == [("auto", 30_000), ("elide", 6000), ("auto", 5000)]
        assert [log["event"] for log in logs].count("request_override_refused") == 1


class TestPassThrough:
    @pytest.mark.asyncio
    async def test_other_call_types_untouched(self) -> None:
        """Embeddings, text completions and calls without messages are none of the plugin's business."""
        budget = ContextBudget(default_window=100)

        assert await budget.async_pre_call_deployment_hook({"model": "m", "input": ["x"]}, CallTypes.aembedding) is None
        assert (
            await budget.async_pre_call_deployment_hook({"model": "m", "prompt": "x"}, CallTypes.atext_completion)
            is None
        )
        assert await budget.async_pre_call_deployment_hook({"model": "m"}, CallTypes.acompletion) is None
        data = {"model": "m", "prompt": "x"}
        assert await budget.async_pre_call_hook(None, None, data, "atext_completion") == {"model": "m", "prompt": "x"}


class TestFailOpen:
    @pytest.mark.asyncio
    async def test_internal_error_forwards_untouched(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A bug inside the plugin logs hook_failed and forwards the request as it came."""

        def broken(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("boom with a secret that must not be logged")

        monkeypatch.setattr("litellm_budget.adapter.hooks.hook_pass.fit_request", broken)
        messages = agent_session(20, 900)
        request = kwargs_for(messages)

        with capture_logs() as logs:
            result = await ContextBudget(default_window=4000).async_pre_call_deployment_hook(
                request, CallTypes.acompletion
            )

        assert result is None
        assert request["messages"] is messages
        assert logs[-1]["event"] == "hook_failed"
        assert (logs[-1]["hook"], logs[-1]["step"]) == ("async_pre_call_deployment_hook", "fit")
        assert logs[-1]["error_type"] == "RuntimeError"
        assert "secret" not in str(logs)

    @pytest.mark.asyncio
    async def test_fail_closed_raises(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With fail_closed the same bug refuses the request instead, with an error that says why (not what it held)."""

        def broken(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("boom")

        monkeypatch.setattr("litellm_budget.adapter.hooks.hook_pass.fit_request", broken)

        with pytest.raises(
            HookFailedError, match=r"at its fit step .*fail_closed is set, so the request is refused"
        ) as caught:
            await ContextBudget(default_window=4000, fail_closed=True).async_pre_call_deployment_hook(
                kwargs_for(agent_session(3)), CallTypes.acompletion
            )

        assert isinstance(caught.value.__cause__, RuntimeError)
        assert "boom" not in str(caught.value)

    @pytest.mark.asyncio
    async def test_rejection_is_not_a_failure(self) -> None:
        """A deliberate rejection is raised even when failing open: it is the answer, not a bug."""
        with pytest.raises(litellm.ContextWindowExceededError):
            await ContextBudget(default_window=2000).async_pre_call_deployment_hook(
                kwargs_for([system(text(5000)), user("x")]), CallTypes.acompletion
            )


class TestOnce:
    @pytest.mark.asyncio
    async def test_second_hook_and_retries_do_no_work(self) -> None:
        """The same request seen again (a retry, the proxy's second hook) is neither refitted nor logged twice."""
        budget = ContextBudget(default_window=8000)
        messages = agent_session(30, 900)
        request = kwargs_for(messages, metadata={})

        with capture_logs() as logs:
            first = await budget.async_pre_call_deployment_hook(request, CallTypes.acompletion)
            assert first is not None
            again = await budget.async_pre_call_deployment_hook(dict(first), CallTypes.acompletion)
            retry = await budget.async_pre_call_deployment_hook(
                kwargs_for(messages, metadata={}, litellm_call_id=request["litellm_call_id"]), CallTypes.acompletion
            )

        assert [log["event"] for log in logs] == ["request_trimmed"]
        assert again is None
        assert retry is not None
        assert retry["messages"] == first["messages"]

    @pytest.mark.asyncio
    async def test_smaller_fallback_window_is_fitted_again(self) -> None:
        """A fallback to a smaller deployment is new work: fitted again for its window."""
        budget = ContextBudget()
        messages = agent_session(30, 900)
        call_id = "same-call"

        with capture_logs() as logs:
            await budget.async_pre_call_deployment_hook(
                kwargs_for(messages, litellm_call_id=call_id, model_info={"max_input_tokens": 20_000}),
                CallTypes.acompletion,
            )
            await budget.async_pre_call_deployment_hook(
                kwargs_for(messages, litellm_call_id=call_id, model_info={"max_input_tokens": 8000}),
                CallTypes.acompletion,
            )

        assert [log["window"] for log in logs] == [20_000, 8000]


def test_settings_type() -> None:
    """The settings property is a BudgetSettings value."""
    assert isinstance(ContextBudget().settings, BudgetSettings)


class TestSettingsChecks:
    def test_wrong_configured_settings_fail_at_construction(self, callback_settings: dict[str, Any]) -> None:
        """A typo in callback_settings fails when the plugin is created (the proxy creates it at start)."""
        callback_settings["litellm_budget"] = {"polcy": "plan"}

        with pytest.raises(ValueError, match=r"callback_settings\.litellm_budget\.polcy = 'plan': is not a setting"):
            ContextBudget()
