"""Faults around the plugin: a broken model map, an upstream error after trimming."""

from __future__ import annotations

import asyncio
from typing import Any

import litellm
import pytest
from structlog.testing import capture_logs

from litellm_budget import BudgetSettings, ContextBudget, fit
from tests.support.builders import agent_session, user
from tests.support.fake_upstream import CWE_MARKER, FakeUpstream
from tests.support.sdk_support import PayloadSpy, only_callbacks


class BrokenMap(dict[str, Any]):
    """A model map whose lookups fail, as a corrupted or half-loaded map would."""

    def get(self, key: Any, default: Any = None) -> Any:
        raise RuntimeError("model map unavailable")


@pytest.fixture(name="broken_map")
def fixture_broken_map(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(litellm, "model_cost", BrokenMap())


class TestModelMapFailure:
    def test_passes_through_without_a_default(self, broken_map: None) -> None:
        """A failing lookup means an unknown window: forwarded untouched, the failure named."""
        fitted = fit(agent_session(30, 900), model="gpt-4o")

        assert fitted.report.action == "unknown_window"
        assert fitted.report.reason == "window lookup failed: RuntimeError"

    def test_uses_the_default_window(self, broken_map: None) -> None:
        """With default_window set, the request is fitted to it instead."""
        fitted = fit(agent_session(30, 900), model="gpt-4o", settings=BudgetSettings(default_window=8000))

        assert fitted.report.window == 8000
        assert fitted.report.action == "trimmed"


@pytest.mark.asyncio
async def test_upstream_error_after_trimming_keeps_the_report(upstream: FakeUpstream) -> None:
    """The provider fails after we trimmed: the report was logged and reaches the failure payload."""
    spy = PayloadSpy()
    messages = [*agent_session(30, 900), user(f"please {CWE_MARKER}")]

    with only_callbacks(ContextBudget(default_window=8000), spy), capture_logs() as logs:
        with pytest.raises(litellm.ContextWindowExceededError):
            await litellm.acompletion(model="openai/acme-x", api_base=upstream.base_url, api_key="k", messages=messages)
        for _ in range(250):
            if spy.failures:
                break
            await asyncio.sleep(0.02)

    assert [log["event"] for log in logs if log["event"].startswith("request_")] == ["request_trimmed"]
    assert spy.failures[-1]["metadata"]["spend_logs_metadata"]["litellm_budget"]["action"] == "trimmed"
