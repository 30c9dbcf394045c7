"""
Settings an operator wrote on a virtual key or a team (``litellm_budget`` in LiteLLM's key and team
metadata): where they stand among the other sources, and what a bad one does.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from litellm.types.utils import CallTypes
from structlog.testing import capture_logs

from litellm_budget import ContextBudget
from tests.support.builders import agent_session

WINDOW = 4000


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


class TestKeySettings:
    @pytest.mark.asyncio
    async def test_request_over_key_over_team_over_deployment(self) -> None:
        """Each source's own key applies; where two write one, the nearer to the request wins."""
        metadata = {
            "user_api_key_team_metadata": {"litellm_budget": {"policy": "plan", "protected_tail": 6, "window": 3500}},
            "user_api_key_metadata": {"litellm_budget": {"policy": "elide", "allow_request_overrides": True}},
            "litellm_budget": {"protected_tail": 4},
        }
        data = request(metadata, model_info={"max_input_tokens": WINDOW, "litellm_budget": {"watermark": 0.6}})
        budget = ContextBudget()

        with capture_logs() as logs:
            await budget.async_pre_call_deployment_hook(data, CallTypes.acompletion)

        (report,) = [log for log in logs if log["event"] == "request_trimmed"]
        assert (report["policy"], report["window"]) == ("elide", 3500)
        assert report["watermark"] == int(0.6 * report["budget"])

    @pytest.mark.asyncio
    async def test_a_keys_window_only_lowers_the_deployments(self) -> None:
        data = request({"user_api_key_metadata": {"litellm_budget": {"window": 50_000}}})

        with capture_logs() as logs:
            await ContextBudget().async_pre_call_deployment_hook(data, CallTypes.acompletion)

        assert [log["window"] for log in logs if log["event"] == "request_trimmed"] == [WINDOW]

    @pytest.mark.asyncio
    async def test_invalid_ones_are_left_out_and_logged_once_naming_the_key(self) -> None:
        metadata = {
            "user_api_key_alias": "ci-bot",
            "user_api_key_metadata": {"litellm_budget": {"polcy": "plan", "protected_tail": 4}},
            "user_api_key_team_id": "team-1",
            "user_api_key_team_metadata": {"litellm_budget": ["plan"]},
        }
        budget = ContextBudget()

        with capture_logs() as logs:
            for _ in range(2):
                await budget.async_pre_call_deployment_hook(request(copy.deepcopy(metadata)), CallTypes.acompletion)

        invalid = [log for log in logs if log["event"] == "settings_invalid"]
        assert sorted((log["source"], log["key"], log["owner"]) for log in invalid) == [
            ("key metadata.litellm_budget", "polcy", "ci-bot"),
            ("team metadata.litellm_budget", "", "team-1"),
        ]
        assert [log["event"] for log in logs].count("request_trimmed") == 2
        assert "hook_failed" not in [log["event"] for log in logs]
