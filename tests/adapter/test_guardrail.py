"""
The guardrail form: what LiteLLM's loader hands it, what it refuses at start, and its hooks asking
LiteLLM's own guardrail rules before they fit (the proxy itself is in tests/e2e/test_guardrail_proxy.py).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from litellm.proxy.guardrails.init_guardrails import init_guardrails_v2
from litellm.types.guardrails import LitellmParams
from litellm.types.utils import CallTypes
from structlog.testing import capture_logs

import litellm_budget
from litellm_budget import BudgetGuardrail, ContextBudget
from litellm_budget.adapter.guardrail_start import StartRefusedError, settings_in
from tests.support.builders import agent_session
from tests.support.sdk_support import only_callbacks

WINDOW = 4000


def loader_kwargs(name: str = "budget", **params: Any) -> dict[str, Any]:
    """The keyword arguments LiteLLM 1.108.5's loader gives a custom guardrail, built as it builds them."""
    written = {"guardrail": "litellm_budget.BudgetGuardrail", "mode": "pre_call", "default_on": True, **params}
    dumped = LitellmParams(**written).model_dump(exclude_none=True)
    extra = {k: v for k, v in dumped.items() if k not in {"guardrail", "mode", "default_on", "stream_scope"}}
    return {"guardrail_name": name, "event_hook": written["mode"], "default_on": written["default_on"], **extra}


def guardrail(**params: Any) -> BudgetGuardrail:
    return BudgetGuardrail(**loader_kwargs(**params))


def request(metadata: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A chat request the deployment hook sees: three times the window, with LiteLLM's metadata."""
    messages = agent_session(12, 800)
    return {
        "model": "openai/acme-x",
        "messages": messages,
        "model_info": {"max_input_tokens": WINDOW},
        "litellm_call_id": f"call-{id(messages)}",
        "metadata": metadata or {},
        **extra,
    }


@pytest.fixture(name="no_callbacks", autouse=True)
def fixture_no_callbacks() -> Iterator[None]:
    with only_callbacks():
        yield


class TestStart:
    def test_settings_are_the_keys_that_are_none_of_litellms(self) -> None:
        """Of the ~40 parameters LiteLLM passes with defaults, none is taken for a setting; ``policy`` is."""
        kwargs = loader_kwargs(policy="plan", protected_tail=4)

        assert len(kwargs) > 20
        assert settings_in(kwargs) == {"policy": "plan", "protected_tail": 4}
        assert guardrail(policy="plan").settings.policy == "plan"

    def test_the_loaders_path_resolves_to_the_class(self) -> None:
        """``guardrail: litellm_budget.BudgetGuardrail`` resolves in the installed package."""
        from litellm.proxy.types_utils.utils import get_instance_fn

        assert get_instance_fn("litellm_budget.BudgetGuardrail") is BudgetGuardrail

    def test_importing_the_guardrail_creates_no_callback(self) -> None:
        """``handler`` is made when asked for: the guardrail form never runs a second plugin's checks."""
        from litellm_budget.adapter import callback

        vars(callback).pop("handler", None)
        guardrail()

        assert "handler" not in vars(callback)
        assert isinstance(litellm_budget.handler, ContextBudget)
        assert vars(callback)["handler"] is litellm_budget.handler

    def test_beside_the_callback_it_says_which_line_to_remove(self) -> None:
        litellm.callbacks.append(ContextBudget())

        with pytest.raises(StartRefusedError, match="registered twice: as a callback") as refused:
            guardrail()

        assert 'Remove "litellm_budget.handler" from litellm_settings.callbacks' in str(refused.value)
        assert "or remove the guardrail 'budget'" in str(refused.value)

    def test_a_second_guardrail_is_refused(self) -> None:
        litellm.callbacks.append(guardrail(name="first"))

        with pytest.raises(StartRefusedError, match="as the guardrails 'first' and 'second'"):
            guardrail(name="second")

    @pytest.mark.parametrize("mode", ["post_call", "during_call", ["pre_call", "post_call"]])
    def test_a_mode_it_cannot_fit_in_is_refused(self, mode: Any) -> None:
        with pytest.raises(StartRefusedError, match="write `mode: pre_call`"):
            BudgetGuardrail(**{**loader_kwargs(), "event_hook": mode})

    def test_a_bad_setting_is_refused_naming_the_guardrail(self) -> None:
        with pytest.raises(StartRefusedError) as refused:
            guardrail(polcy="plan")

        assert "guardrail 'budget': litellm_params.polcy = 'plan': is not a setting (did you mean 'policy'?)" in str(
            refused.value
        )

    def test_a_refusal_stops_litellms_loader(self, tmp_path: Any) -> None:
        """LiteLLM skips a guardrail raising ``ValueError`` or ``TypeError``; the refusal is neither: it stops."""
        litellm.callbacks.append(ContextBudget())
        entry = {"guardrail_name": "budget", "litellm_params": {"guardrail": "litellm_budget.BudgetGuardrail"}}
        entry["litellm_params"].update(mode="pre_call", default_on=True)

        with pytest.raises(StartRefusedError):
            init_guardrails_v2(all_guardrails=[entry], config_file_path=str(tmp_path / "config.yaml"))
        assert not issubclass(StartRefusedError, ValueError | TypeError)


class TestRules:
    @pytest.mark.asyncio
    @pytest.mark.parametrize(
        ("default_on", "metadata", "fitted"),
        [
            (True, {}, True),
            (True, {"user_api_key_metadata": {"disable_global_guardrails": True}}, False),
            (True, {"user_api_key_team_metadata": {"disable_global_guardrails": True}}, False),
            (True, {"user_api_key_metadata": {"opted_out_global_guardrails": ["budget"]}}, False),
            (False, {}, False),
            (False, {"guardrails": ["budget"]}, True),
            (False, {"guardrails": ["another"]}, False),
        ],
    )
    async def test_the_deployment_hook_asks_litellms_rules(
        self, default_on: bool, metadata: dict[str, Any], fitted: bool
    ) -> None:
        """LiteLLM calls this hook on every request: the guardrail fits only where its rules say."""
        data = request(copy.deepcopy(metadata))

        with capture_logs() as logs:
            result = await guardrail(default_on=default_on).async_pre_call_deployment_hook(data, CallTypes.acompletion)

        assert (result is not None) is fitted
        assert ("request_trimmed" in [log["event"] for log in logs]) is fitted
        assert ("applied_guardrails" in data["metadata"]) is fitted

    @pytest.mark.asyncio
    async def test_one_record_per_request_whichever_hooks_fit_it(self) -> None:
        """A fit, then a smaller deployment's: one ``guardrail_information`` record, the last fit's."""
        budget = guardrail(default_window=8000)
        data = request()
        del data["model_info"]
        await budget.async_pre_call_hook(None, None, data, "acompletion")  # no router: left to the deployment
        first = data["metadata"].get("standard_logging_guardrail_information")
        await budget.async_pre_call_deployment_hook(data, CallTypes.acompletion)
        data["model_info"] = {"max_input_tokens": WINDOW}
        data["messages"] = agent_session(12, 800)  # the next attempt's copy of the request, on a smaller deployment
        await budget.async_pre_call_deployment_hook(data, CallTypes.acompletion)

        (record,) = data["metadata"]["standard_logging_guardrail_information"]
        report = data["metadata"]["spend_logs_metadata"]["litellm_budget"]
        assert first is None
        assert record["guardrail_response"]["window"] == report["window"] == WINDOW
        assert record["guardrail_response"]["tokens_saved"] == report["tokens_before"] - report["tokens_after"]
        assert (record["guardrail_provider"], record["guardrail_status"]) == ("litellm_budget", "guardrail_intervened")
        assert data["metadata"]["applied_guardrails"] == ["budget"]
