"""
``report_unfitted``: what the plugin would have sent for a request LiteLLM's pre-call checks
refused, fitted as the hooks would fit it, the learned token ratio included.
"""

from __future__ import annotations

from typing import Any

from litellm_budget.adapter.hooks.unfitted import PRE_CALL_CHECKS, UNFITTED_KEY, report_unfitted
from litellm_budget.adapter.request.targets import Target
from litellm_budget.core.budget import BudgetSettings
from tests.support.builders import agent_session

WINDOW = 4000


class _Router:
    """The one Router method the pre-call target reads: the group's deployments."""

    def get_model_list(self, model_name: str) -> list[dict[str, Any]]:
        model = {"model": "openai/gpt-4o"}
        return [{"model_name": model_name, "litellm_params": model, "model_info": {"max_input_tokens": WINDOW}}]


def _refused(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A failure event's kwargs as LiteLLM 1.108.5 hands them when its Router's window check refused."""
    return {
        "standard_logging_object": {"metadata": {}, "call_type": "acompletion", "model_group": "m"},
        "exception": f"ContextWindowExceededError: {PRE_CALL_CHECKS} found no deployment",
        "litellm_params": {"proxy_server_request": {"body": {"model": "m", "messages": messages}}},
    }


def test_the_estimate_is_made_at_the_learned_ratio() -> None:
    """The ratio ``Memory.ratio`` gives for the target is the one the estimate is fitted at."""
    messages = agent_session(steps=30)
    asked: list[Target] = []

    def learned(target: Target) -> float:
        asked.append(target)
        return 1.5

    prior = report_unfitted(_refused(messages), BudgetSettings(), _Router(), lambda _: None)
    kwargs = _refused(messages)
    report = report_unfitted(kwargs, BudgetSettings(), _Router(), learned)

    assert prior is not None
    assert report is not None
    assert [target.model for target in asked] == ["openai/gpt-4o"]
    assert report.token_ratio == 1.5 != prior.token_ratio
    assert report.budget < prior.budget  # the same window holds fewer counted tokens at 1.5
    assert kwargs["standard_logging_object"]["metadata"]["spend_logs_metadata"][UNFITTED_KEY]["token_ratio"] == 1.5


def test_other_failures_get_no_estimate() -> None:
    kwargs = {**_refused(agent_session(steps=3)), "exception": "APIConnectionError: upstream down"}

    assert report_unfitted(kwargs, BudgetSettings(), _Router(), lambda _: 1.5) is None
