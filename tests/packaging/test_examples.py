"""Every example runs as documented; examples/config.yaml is loaded by the real proxy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from litellm_budget import BudgetSettings
from tests.support.builders import agent_session, tool_step
from tests.support.paths import EXAMPLES
from tests.support.proxy_process import post_chat, start_proxy


def run_example(name: str) -> str:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=120, env=env, check=True
    )
    return done.stdout


def json_lines(output: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


@pytest.mark.subprocess
class TestScripts:
    def test_sdk_async(self) -> None:
        """The async SDK example trims a 180-message history and prints one JSON log line for it."""
        output = run_example("sdk_async.py")

        events = json_lines(output)
        assert [e["event"] for e in events] == ["request_trimmed"]
        assert events[0]["tokens_after"] < events[0]["tokens_before"]  # type: ignore[operator]
        assert output.rstrip().endswith("All green.")

    def test_router(self) -> None:
        """The Router example trims on the small model and falls back to the large one for a huge prompt."""
        output = run_example("router.py")

        assert "long chat -> small model here" in output
        assert "huge system prompt -> large model here" in output

    def test_sync_fit(self) -> None:
        """The sync snippet fits before litellm.completion."""
        output = run_example("sync_fit.py")

        assert output.startswith("trimmed: ")
        assert output.rstrip().endswith("You're welcome.")


@pytest.mark.proxy
def test_config_yaml_in_the_real_proxy(tmp_path: Path) -> None:
    """examples/config.yaml starts the proxy offline; requests are fitted, headers and metrics show it."""
    body = {"messages": agent_session(30, 900)}
    with start_proxy(EXAMPLES / "config.yaml", tmp_path=tmp_path) as proxy:
        status, headers, payload = post_chat(proxy, {**body, "model": "agent-model"})
        _, plan_headers, _ = post_chat(proxy, {**body, "model": "agent-model-plan"})
        metrics = httpx.get(
            proxy.base_url + "/metrics/", headers=proxy.auth_headers, follow_redirects=True, timeout=10
        ).text

    assert status == 200
    assert payload["choices"][0]["message"]["content"].startswith("Understood")
    assert headers["x-litellm-budget-action"] == "trimmed"
    assert plan_headers["x-litellm-budget-policy"] == "plan"
    assert 'metadata_litellm_budget_action="trimmed"' in metrics


def test_config_summaries_yaml_names_valid_settings_and_its_own_summary_group() -> None:
    """examples/config-summaries.yaml: its callback settings are valid and summary_model is one of its groups."""
    config = yaml.safe_load((EXAMPLES / "config-summaries.yaml").read_text(encoding="utf-8"))
    settings = BudgetSettings().updated(config["callback_settings"]["litellm_budget"])

    assert settings.summary_model in {deployment["model_name"] for deployment in config["model_list"]}
    assert config["litellm_settings"]["callbacks"] == ["litellm_budget.handler"]


@pytest.mark.proxy
@pytest.mark.slow  # its own proxy; summaries through the real proxy run by default in tests/e2e/test_summaries_proxy.py
def test_config_summaries_yaml_in_the_real_proxy(tmp_path: Path) -> None:
    """examples/config-summaries.yaml starts the proxy offline; a long session is trimmed with a summary, made once."""
    messages = agent_session(40, 400)
    with start_proxy(EXAMPLES / "config-summaries.yaml", tmp_path=tmp_path) as proxy:
        status, headers, _ = post_chat(proxy, {"model": "agent-model", "messages": messages})
        again = post_chat(proxy, {"model": "agent-model", "messages": [*messages, *tool_step(400, seed=9)]})
        events = [line for line in proxy.log_text().splitlines() if "request_trimmed" in line]

    assert (status, again[0]) == (200, 200)
    assert headers["x-litellm-budget-action"] == "trimmed"
    assert len(events) == 2
    assert all("summarized=True" in event for event in events)
    assert ["summary_calls=1" in event for event in events] == [True, False]
