"""
Through the real proxy: a wrong setting in a deployment's ``model_info`` stops it at start,
naming key, value and deployment in what the operator sees (the exit and the log); a request's
bad override is fitted with the valid settings and logged once. With the pins of the LiteLLM
start-up these checks rely on: the config is readable when the ``callbacks`` are created, the
router exists only later, and an exception raised there stops the proxy with its message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from litellm_budget.core.counting import counter_for
from tests.support.builders import agent_session
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import complete_records
from tests.support.proxy_process import ProxyProcess, ProxyStartError, post_chat, start_proxy

pytestmark = pytest.mark.proxy
WINDOW = 4000
HELPERS = ("proxy_structlog.py", "proxy_startup_probe.py")
#: Uvicorn's exit status when the application's start-up fails (LiteLLM 1.108.5 runs it so).
STARTUP_FAILED = 3


def _config(upstream_url: str, model_info: dict[str, Any], **extra: Any) -> dict[str, Any]:
    model = {"model": "openai/gpt-4o", "api_base": upstream_url, "api_key": "k"}
    return {
        "model_list": [{"model_name": "m", "litellm_params": model, "model_info": model_info}],
        "litellm_settings": {
            "callbacks": ["proxy_startup_probe.probe", "litellm_budget.handler", "proxy_structlog.configured"]
        },
        **extra,
    }


def _start(config: dict[str, Any], folder: Path) -> ProxyProcess:
    return start_proxy(config, tmp_path=folder, helpers=HELPERS, timeout=90)


def _refused(model_info: dict[str, Any], folder: Path) -> tuple[str, str]:
    """Start a proxy that must refuse: the error's text, and the whole log the operator reads."""
    with pytest.raises(ProxyStartError) as failed:
        _start(_config("http://127.0.0.1:9/v1", model_info), folder)
    return str(failed.value), (folder / "proxy.log").read_text(encoding="utf-8", errors="replace")


@pytest.mark.slow  # a refusal at start runs by default in test_reports_proxy.py; tests/adapter covers this message
def test_a_typo_in_a_deployments_settings_stops_the_proxy(tmp_path: Path) -> None:
    """``model_info.litellm_budget: {polcy: plan}``: the proxy exits, its log names key, value, deployment and id."""
    error, log = _refused(
        {"id": "dep-small", "max_input_tokens": WINDOW, "litellm_budget": {"polcy": "plan"}}, tmp_path
    )

    line = (
        "deployment 'm' (model_info.id 'dep-small'): model_info.litellm_budget.polcy = 'plan': "
        "is not a setting (did you mean 'policy'?)"
    )
    assert f"litellm proxy exited with {STARTUP_FAILED} during start-up" in error
    assert line in log
    assert "ValueError: litellm_budget: 1 invalid setting; fix or remove each before starting:" in log
    assert "Application startup failed. Exiting." in log
    assert line in error  # the end of the log, where the operator looks


@pytest.mark.slow  # the same refusal as the typo's, another message (tests/adapter covers each message)
def test_a_misspelled_section_stops_the_proxy(tmp_path: Path) -> None:
    """``callback_settings: {litelm_budget: ...}`` is refused at start, as a typo inside the section is."""
    config = _config("http://127.0.0.1:9/v1", {"max_input_tokens": WINDOW})
    config["callback_settings"] = {"litelm_budget": {"policy": "plan"}}
    with pytest.raises(ProxyStartError) as failed:
        _start(config, tmp_path)

    assert "callback_settings.litelm_budget = {'policy': 'plan'}: is not a section" in str(failed.value)
    assert "did you mean 'litellm_budget'?" in str(failed.value)


@pytest.mark.parametrize(
    ("section", "said"),
    [
        ("callback_setting", "is not a section LiteLLM reads; did you mean 'callback_settings'?"),
        pytest.param("litellm_budget", "belongs under 'callback_settings'", marks=pytest.mark.slow),
    ],
)
def test_a_misspelled_top_level_section_stops_the_proxy(tmp_path: Path, section: str, said: str) -> None:
    """``callback_setting: {litellm_budget: ...}`` (no ``s``) at the top level is refused at start, with the fix."""
    config = _config("http://127.0.0.1:9/v1", {"max_input_tokens": WINDOW})
    config[section] = {"litellm_budget": {"policy": "plan"}} if section != "litellm_budget" else {"policy": "plan"}
    with pytest.raises(ProxyStartError) as failed:
        _start(config, tmp_path)

    assert f"config.{section} = " in str(failed.value)
    assert said in str(failed.value)


@pytest.mark.slow  # the same refusal as the typo's, another message (tests/adapter covers each message)
def test_a_bad_policy_value_stops_the_proxy(tmp_path: Path) -> None:
    """``policy: planx`` on a deployment without an id: named by its model_name, with the policies there are."""
    error, log = _refused({"max_input_tokens": WINDOW, "litellm_budget": {"policy": "planx"}}, tmp_path)

    policies = "['auto', 'elide', 'plan', 'summarize']"
    line = f"deployment 'm': model_info.litellm_budget.policy = 'planx': must be one of {policies}"
    assert f"litellm proxy exited with {STARTUP_FAILED} during start-up" in error
    assert line in log
    assert line in error


@pytest.fixture(name="proxy", scope="module")
def fixture_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProxyProcess, FakeUpstream]]:
    folder = tmp_path_factory.mktemp("overrides")
    config = _config(
        "",
        {"id": "dep-1", "max_input_tokens": WINDOW},
        callback_settings={"litellm_budget": {"allow_request_overrides": True}},
    )
    with FakeUpstream() as upstream:
        config["model_list"][0]["litellm_params"]["api_base"] = upstream.base_url
        with _start(config, folder) as proxy:
            yield proxy, upstream


def test_litellm_creates_callbacks_with_the_config_read_and_the_router_still_to_come(
    proxy: tuple[ProxyProcess, FakeUpstream],
) -> None:
    """
    Pin (LiteLLM 1.108.5): when ``callbacks`` are created, ``proxy_config.get_config_state()`` holds
    the config's ``model_list`` and ``callback_settings`` are set, but ``llm_router`` does not exist
    yet; it does at the first request. No hook hands a CustomLogger the router at start.
    """
    running, _ = proxy
    post_chat(running, {"model": "m", "messages": agent_session(1, 50)})

    created, request = complete_records(running.log_path.parent / "probe.jsonl")[:2]

    assert (created["when"], created["server_loaded"], created["router_deployments"]) == ("created", True, None)
    assert created["config_model_info"] == [{"id": "dep-1", "max_input_tokens": WINDOW}]
    assert created["callback_settings"] == {"litellm_budget": {"allow_request_overrides": True}}
    assert (request["when"], request["router_deployments"]) == ("request", ["m"])


def test_a_bad_request_override_is_fitted_with_the_valid_settings_and_logged_once(
    proxy: tuple[ProxyProcess, FakeUpstream],
) -> None:
    """``policy: planx`` beside a valid ``protected_tail``: fitted into the window, one ``settings_invalid``."""
    running, upstream = proxy
    messages = agent_session(16, 800)  # three times the window
    wants = {"litellm_budget": {"policy": "planx", "protected_tail": 4}}
    answers = []
    for _ in range(2):
        upstream.clear()
        answers.append(post_chat(running, {"model": "m", "messages": messages, "metadata": wants}))
        sent = upstream.requests[-1]["messages"]
        assert sum(map(counter_for("gpt-4o").count_message, sent)) < WINDOW

    path = running.log_path.parent / "structlog.jsonl"
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    invalid = [event for event in events if event["event"] == "settings_invalid"]
    assert [(status, headers["x-litellm-budget-action"]) for status, headers, _ in answers] == [(200, "trimmed")] * 2
    assert [headers["x-litellm-budget-policy"] for _, headers, _ in answers] == ["auto"] * 2
    assert [(e["source"], e["key"], e["value"], e["model_group"]) for e in invalid] == [
        ("metadata.litellm_budget", "policy", "'planx'", "m")
    ]
    assert not [event for event in events if event["event"] == "hook_failed"]
