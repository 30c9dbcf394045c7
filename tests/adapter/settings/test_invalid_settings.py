"""
No silent misconfiguration: a wrong setting stops the plugin at start where it can be seen there,
naming key, value and deployment; one only a request shows is left out of that request's settings,
logged once as ``settings_invalid``, and the request is fitted with the rest, never sent unfitted.
"""

from __future__ import annotations

import asyncio
import copy
import sys
import types
from typing import Any

import litellm
import pytest
from litellm.types.utils import CallTypes
from structlog.testing import capture_logs

from litellm_budget import ContextBudget
from litellm_budget.adapter.report.publish import EVENTS
from litellm_budget.adapter.settings.invalid import InvalidSetting, InvalidSettings
from litellm_budget.core.budget import SettingProblem
from tests.support.builders import agent_session, deployment

WINDOW = 4000
MODEL = "openai/acme-settings"


class ListRouter:
    """The part of a ``litellm.Router`` the plugin reads at start: its ``model_list``."""

    def __init__(self, *deployments: dict[str, Any]) -> None:
        self.model_list = list(deployments)

    def get_model_list(self, model_name: str | None = None) -> list[dict[str, Any]]:
        return [d for d in self.model_list if model_name in (None, d["model_name"])]


def chat(model_info: dict[str, Any], call_id: str, **metadata: Any) -> dict[str, Any]:
    """A deployment hook's kwargs for a 4k deployment, with a history three times its size."""
    return {
        "model": MODEL,
        "messages": agent_session(14, 800),
        "litellm_call_id": call_id,
        "model_info": model_info,
        "metadata": {"model_group": "m", **metadata},
    }


def _events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


def _reports(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] in EVENTS.values()]


class TestAtStart:
    def test_a_typo_in_a_routers_deployment_refuses_construction(self) -> None:
        """``ContextBudget(router=...)`` names the key, its value, the deployment's name and id."""
        router = ListRouter(deployment("m", MODEL, id="dep-1", window=WINDOW, budget={"polcy": "plan"}))

        with pytest.raises(ValueError, match="1 invalid setting") as refused:
            ContextBudget(router=router)

        assert (
            "deployment 'm' (model_info.id 'dep-1'): model_info.litellm_budget.polcy = 'plan': "
            "is not a setting (did you mean 'policy'?)"
        ) in str(refused.value)
        assert "the settings are: allow_request_overrides," in str(refused.value)

    def test_every_invalid_setting_is_named_at_once(self) -> None:
        """A bad policy, a window that is no integer and a bad callback knob: one message, all three."""
        router = ListRouter(
            deployment("big", MODEL, budget={"policy": "planx"}),
            deployment("small", MODEL, max_input_tokens="4k"),
            deployment("fine", MODEL, window=WINDOW, budget={"policy": "plan"}),
        )

        with pytest.raises(ValueError, match="3 invalid settings") as refused:
            ContextBudget(router=router, watermark=7)

        lines = str(refused.value).splitlines()[1:]
        assert lines == [
            "  ContextBudget.watermark = 7: must be between 0 and 1 (exclusive)",
            "  deployment 'big': model_info.litellm_budget.policy = 'planx': "
            "must be one of ['auto', 'elide', 'plan', 'summarize']",
            "  deployment 'small': model_info.max_input_tokens = '4k': "
            "must be a positive integer, the deployment's window",
        ]

    @pytest.mark.parametrize("section", ["litelm_budget", "litellm-budget", "LiteLLM_Budget", "litellm_buget"])
    def test_a_misspelled_section_is_refused_like_a_typo(self, section: str, monkeypatch: pytest.MonkeyPatch) -> None:
        """``callback_settings: {litelm_budget: {...}}`` would be ignored without a word: it stops the plugin."""
        monkeypatch.setattr(litellm, "callback_settings", {section: {"policy": "plan"}}, raising=False)

        with pytest.raises(ValueError, match="1 invalid setting") as refused:
            ContextBudget()

        assert (
            f"callback_settings.{section} = {{'policy': 'plan'}}: is not a section LiteLLM gives the plugin; "
            "did you mean 'litellm_budget'?"
        ) in str(refused.value)

    def test_other_sections_are_left_alone(self, monkeypatch: pytest.MonkeyPatch) -> None:
        sections = {"litellm_budget": {"policy": "plan"}, "langfuse": {"x": 1}, "budget_manager": {}}
        monkeypatch.setattr(litellm, "callback_settings", sections, raising=False)

        assert ContextBudget().settings.policy == "plan"

    def test_a_real_router_is_checked(self) -> None:
        """The same through a ``litellm.Router``, whose deployments get an id of their own."""
        router = litellm.Router(model_list=[deployment("m", MODEL, budget={"protected_tail": "8"})])

        with pytest.raises(ValueError, match=r"deployment 'm' \(model_info.id '.+'\): .*protected_tail = '8'"):
            ContextBudget(router=router)

        assert ContextBudget(router=litellm.Router(model_list=[deployment("m", MODEL, budget={"protected_tail": 4})]))

    def test_the_proxys_config_is_checked_while_it_loads(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """In a proxy the config it read is there before its callbacks are created (pinned in tests/e2e)."""
        config = {"model_list": [deployment("m", MODEL, id="dep-1", budget={"polcy": "plan"})]}
        proxy_config = types.SimpleNamespace(get_config_state=lambda: copy.deepcopy(config))
        monkeypatch.setitem(sys.modules, "litellm.proxy.proxy_server", types.SimpleNamespace(proxy_config=proxy_config))

        with pytest.raises(ValueError, match=r"deployment 'm' \(model_info.id 'dep-1'\): .*polcy = 'plan'"):
            ContextBudget()

        config["model_list"] = [deployment("m", MODEL, id="dep-1", budget={"policy": "plan"})]
        assert ContextBudget().settings.policy == "auto"  # the deployment's own policy applies to it only


class TestAtRequestTime:
    @pytest.mark.asyncio
    async def test_a_deployment_first_seen_in_a_request_is_fitted_with_its_valid_settings(self) -> None:
        """A model added later (DB, UI, reload): the typo is left out, logged once; the rest applies."""
        budget = ContextBudget()
        model_info = {
            "id": "dep-db",
            "max_input_tokens": WINDOW,
            "litellm_budget": {"polcy": "elide", "policy": "plan"},
        }

        with capture_logs() as logs:
            for number in range(3):
                fitted = await budget.async_pre_call_deployment_hook(
                    chat(model_info, f"call-{number}"), CallTypes.acompletion
                )
                assert fitted is not None

        (event,) = _events(logs, "settings_invalid")
        assert {key: event[key] for key in ("source", "key", "value", "model_group", "deployment")} == {
            "source": "model_info.litellm_budget",
            "key": "polcy",
            "value": "'elide'",
            "model_group": "m",
            "deployment": "dep-db",
        }
        assert "did you mean 'policy'" in event["reason"]
        assert [(r["policy"], r["window"], r["action"]) for r in _reports(logs)] == [("plan", WINDOW, "trimmed")] * 3
        assert not _events(logs, "hook_failed")

    @pytest.mark.asyncio
    async def test_a_bad_policy_value_fits_with_the_plugins_policy(self) -> None:
        """``policy: planx`` is left out: the request is fitted with the policy the plugin has."""
        budget = ContextBudget(policy="plan")

        with capture_logs() as logs:
            fitted = await budget.async_pre_call_deployment_hook(
                chat({"max_input_tokens": WINDOW, "litellm_budget": {"policy": "planx"}}, "c"), CallTypes.acompletion
            )

        assert fitted is not None
        assert [(r["policy"], r["action"]) for r in _reports(logs)] == [("plan", "trimmed")]
        assert [(e["key"], e["value"]) for e in _events(logs, "settings_invalid")] == [("policy", "'planx'")]

    @pytest.mark.asyncio
    async def test_a_bad_request_override_is_left_out_and_the_rest_applies(self) -> None:
        """With allow_request_overrides, a bad key is logged once; the valid ones (a lower window) apply."""
        budget = ContextBudget(allow_request_overrides=True)
        wants = {"litellm_budget": {"policy": "planx", "window": 3000, "protected_tail": 2, "polcy": "x"}}

        with capture_logs() as logs:
            for number in range(2):
                await budget.async_pre_call_deployment_hook(
                    chat({"max_input_tokens": WINDOW}, f"c{number}", **copy.deepcopy(wants)), CallTypes.acompletion
                )

        assert [(r["policy"], r["window"]) for r in _reports(logs)] == [("auto", 3000)] * 2
        invalid = _events(logs, "settings_invalid")
        assert sorted((e["source"], e["key"], e["model_group"], e["model"]) for e in invalid) == [
            ("metadata.litellm_budget", "polcy", "m", MODEL),
            ("metadata.litellm_budget", "policy", "m", MODEL),
        ]
        assert not _events(logs, "request_override_refused")

    @pytest.mark.asyncio
    async def test_a_bad_window_override_is_named(self) -> None:
        """``window: "3k"`` is no window: logged, and the deployment's own applies."""
        budget = ContextBudget(allow_request_overrides=True)

        with capture_logs() as logs:
            await budget.async_pre_call_deployment_hook(
                chat({"max_input_tokens": WINDOW}, "c", litellm_budget={"window": "3k"}), CallTypes.acompletion
            )

        assert [r["window"] for r in _reports(logs)] == [WINDOW]
        assert [(e["key"], e["value"]) for e in _events(logs, "settings_invalid")] == [("window", "'3k'")]

    @pytest.mark.asyncio
    async def test_configured_settings_gone_wrong_later_are_left_out(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A config reload with a bad value: logged once, the valid rest applies, requests are still fitted."""
        monkeypatch.setattr(litellm, "callback_settings", {}, raising=False)
        budget = ContextBudget()
        litellm.callback_settings = {"litellm_budget": {"watermark": 7, "policy": "plan"}}

        with capture_logs() as logs:
            for number in range(2):
                assert await budget.async_pre_call_deployment_hook(
                    chat({"max_input_tokens": WINDOW}, f"c{number}"), CallTypes.acompletion
                )

        assert [r["policy"] for r in _reports(logs)] == ["plan"] * 2
        assert budget.settings.watermark == 0.7
        (event,) = _events(logs, "settings_invalid")
        assert (event["source"], event["key"], event["value"]) == ("callback_settings.litellm_budget", "watermark", "7")

    @pytest.mark.asyncio
    async def test_a_router_met_at_request_time_is_checked_on_first_use(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The proxy's router, first seen in a request: every deployment's invalid setting is logged then, once."""
        router = ListRouter(
            deployment("m", MODEL, window=WINDOW),
            deployment("other", MODEL, id="dep-2", budget={"reserve_cap": -1}),
        )
        monkeypatch.setitem(sys.modules, "litellm.proxy.proxy_server", types.SimpleNamespace(llm_router=router))
        budget = ContextBudget()  # the server module has no config state here: nothing to check at start

        with capture_logs() as logs:
            for _ in range(2):
                await budget.async_pre_call_hook(
                    None, None, {"model": "m", "messages": agent_session(2)}, "acompletion"
                )

        assert [(e["model_group"], e["deployment"], e["key"]) for e in _events(logs, "settings_invalid")] == [
            ("other", "dep-2", "reserve_cap")
        ]


class TestOnce:
    def test_each_invalid_setting_is_logged_once_then_counted(self) -> None:
        """The first sight is an error event; repeats are counted, with a debug line at the 10th, 100th..."""
        seen = InvalidSettings()
        entry = InvalidSetting(
            source="metadata.litellm_budget", problem=SettingProblem.of("polcy", "x", "is not a setting")
        )

        with capture_logs() as logs:
            for _ in range(100):
                seen.note([entry])

        assert [(e["event"], e["log_level"]) for e in logs] == [
            ("settings_invalid", "error"),
            ("settings_invalid_again", "debug"),
            ("settings_invalid_again", "debug"),
        ]
        assert [e.get("times") for e in logs] == [None, 10, 100]
        assert seen.times(entry) == 100


class TestUnknownWindows:
    def test_a_group_without_a_window_is_named_at_start_with_the_fix(self) -> None:
        """No model_info window, none in LiteLLM's map, no default_window: a warning at start names it."""
        router = ListRouter(
            deployment("known", MODEL, window=WINDOW),
            {"model_name": "mystery", "litellm_params": {"model": "openai/acme-no-window", "api_key": "k"}},
            {"model_name": "mapped", "litellm_params": {"model": "openai/gpt-4o", "api_key": "k"}},
            deployment("defaulted", MODEL, budget={"default_window": 8000}),
        )
        with capture_logs() as logs:
            ContextBudget(router=router)

        (event,) = _events(logs, "window_unknown_at_start")
        assert event["model_groups"] == ["mystery"]
        assert "model_info: {max_input_tokens: <its window>}" in event["fix"]
        assert not _events(_start_logs(deployment("known", MODEL, window=WINDOW)), "window_unknown_at_start")

    def test_its_requests_are_counted_and_say_how_to_fix_it(self) -> None:
        """The request goes as it came, but its report has its tokens (not 0) and the fix in its reason."""
        plugin = ContextBudget()
        kwargs = chat({}, "unknown-1")
        kwargs["model"] = "openai/acme-no-window"
        with capture_logs() as logs:
            result = asyncio.run(plugin.async_pre_call_deployment_hook(kwargs, CallTypes.acompletion))

        (report,) = _reports(logs)
        assert report["action"] == "unknown_window"
        assert report["tokens_before"] == report["tokens_after"] > 2 * WINDOW
        assert "max_input_tokens" in report["reason"]
        assert result is None or result["messages"] == kwargs["messages"]


def _start_logs(*deployments: dict[str, Any]) -> list[dict[str, Any]]:
    """What a plugin logs at start over a Router of ``deployments``."""
    with capture_logs() as logs:
        ContextBudget(router=ListRouter(*deployments))
    return logs
