"""Learning how a provider counts: from reported usage, damped, clamped, shared, applied."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import litellm
import pytest

from litellm_budget import BudgetSettings, ContextBudget, fit
from litellm_budget.adapter.windows.calibration import CACHE_PREFIX, Calibration
from litellm_budget.core.api import FitRequest, fit_request
from tests.support.builders import agent_session, system, text, user
from tests.support.fake_upstream import FakeUpstream
from tests.support.memory_redis import shared_cache
from tests.support.sdk_support import PayloadSpy, only_callbacks

SETTINGS = BudgetSettings()


class TestCalibration:
    def test_damped_towards_the_observed_ratio(self) -> None:
        """Each observation moves the ratio a weighted step towards what the provider reported."""
        calibration = Calibration()

        first = calibration.observe("m", 1000, 1500, SETTINGS)
        second = calibration.observe("m", 1000, 1500, SETTINGS)

        assert first == pytest.approx(1.15)
        assert second == pytest.approx(1.255)
        assert calibration.ratio("other") is None

    def test_clamped_to_the_bounds(self) -> None:
        """However often a provider reports 3x, the ratio stays within calibration_bounds."""
        calibration = Calibration()
        for _ in range(50):
            calibration.observe("m", 1000, 3900, SETTINGS)

        assert calibration.ratio("m") == SETTINGS.calibration_bounds[1]

    @pytest.mark.parametrize(
        ("counted", "reported"),
        [(1000, None), (1000, 0), (100, 150), (5000, 10), (1000, True)],
        ids=["no-usage", "zero", "tiny-request", "mock-usage", "bool"],
    )
    def test_ignores_what_says_nothing(self, counted: int, reported: Any) -> None:
        """No usage, tiny requests and absurd ratios (mock responses) teach nothing."""
        calibration = Calibration()

        assert calibration.observe("m", counted, reported, SETTINGS) is None
        assert calibration.ratio("m") is None


class TestAppliedRatio:
    def test_small_moves_of_the_learned_ratio_are_not_applied(self) -> None:
        """Hysteresis: the applied ratio follows only once the learned one is 3% away from it."""
        calibration = Calibration()
        calibration.observe("m", 1000, 1200, SETTINGS)
        applied = calibration.ratio("m")
        assert applied == pytest.approx(1.06)
        calibration.observe("m", 1000, 1100, SETTINGS)  # learned 1.072: 1.1% away
        assert calibration.ratio("m") == applied
        for _ in range(4):
            calibration.observe("m", 1000, 1300, SETTINGS)
        assert calibration.ratio("m") == pytest.approx(calibration.learned("m", SETTINGS))
        assert calibration.ratio("m") > applied * 1.03

    def test_claude_starts_from_its_prior_and_learning_replaces_it(self) -> None:
        """Claude's tokenizer counts more than cl100k: the first fit assumes 1.1, what is learned replaces it."""
        messages = [{"role": "user", "content": "hello " * 50}]
        first = fit_request(FitRequest(messages, model="anthropic/claude-sonnet-4-5", window=8000))
        gpt = fit_request(FitRequest(messages, model="gpt-4o", window=8000))
        learned = fit_request(FitRequest(messages, model="anthropic/claude-sonnet-4-5", window=8000, ratio=1.02))
        configured = BudgetSettings(token_ratios={"claude-sonnet-4-5": 1.3})
        assert (first.report.token_ratio, gpt.report.token_ratio) == (1.1, 1.0)
        assert learned.report.token_ratio == 1.02
        assert (
            fit_request(
                FitRequest(messages, model="claude-sonnet-4-5", window=8000, settings=configured)
            ).report.token_ratio
            == 1.3
        )
        calibration = Calibration()
        assert calibration.learned("claude-sonnet-4-5", SETTINGS) == 1.1  # where learning starts


@pytest.fixture(name="inflating_upstream", scope="module")
def fixture_inflating_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(usage_ratio=2.0) as upstream:
        yield upstream


@pytest.mark.asyncio
async def test_inflated_usage_shrinks_later_budgets(inflating_upstream: FakeUpstream) -> None:
    """After a few calls to a provider that counts more, a request the plain count lets through is trimmed."""
    model, window = "openai/acme-calibrated", 6000
    learner = ContextBudget(default_window=window)
    spy = PayloadSpy()
    borderline = [system(), user(text(3800))]

    with only_callbacks(learner, spy):
        for number in range(6):
            await litellm.acompletion(
                model=model,
                api_base=inflating_upstream.base_url,
                api_key="k",
                messages=[system(), user(text(1500, number))],
            )
            await spy.wait(number + 1)
        # Success logging runs in background tasks, in no fixed order: wait until all six are learned
        # (the learned ratio holds still), so no late one moves it between this read and the fit.
        calibration, last = learner._memory.calibration, 0.0
        for _ in range(50):
            await asyncio.sleep(0.1)
            learned = calibration.learned(model, SETTINGS)
            if learned > 1.5 and learned == last:
                break
            last = learned
        calibrated = learner._memory.calibration.ratio(model)
        inflating_upstream.clear()
        await litellm.acompletion(model=model, api_base=inflating_upstream.base_url, api_key="k", messages=borderline)
        await spy.wait(7)

    plain = fit(borderline, model=model, window=window)
    assert calibrated > 1.5
    assert plain.report.action == "passthrough"
    sent = inflating_upstream.requests[-1]["messages"]
    assert sent != borderline
    assert "the gateway cut this message" in sent[-1]["content"]
    reports = [payload["metadata"]["spend_logs_metadata"]["litellm_budget"] for payload in spy.payloads]
    (borderline_report,) = [r for r in reports if r["action"] == "trimmed"]  # payloads arrive in no fixed order
    assert borderline_report["token_ratio"] == pytest.approx(calibrated)


@pytest.mark.asyncio
async def test_replicas_share_the_ratio_through_the_proxy_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ratio one replica learned reaches another through the DualCache both pre-call hooks receive."""
    from litellm.proxy import proxy_server

    model = "openai/acme-shared"
    router = litellm.Router(
        model_list=[
            {
                "model_name": "group",
                "litellm_params": {"model": model, "api_key": "k"},
                "model_info": {"max_input_tokens": 8000},
            }
        ]
    )
    monkeypatch.setattr(proxy_server, "llm_router", router)
    shared = shared_cache()  # what a proxy with Redis passes (tests/e2e/test_redis_proxy.py: a real one)
    first, second = ContextBudget(), ContextBudget()
    data = {"model": "group", "messages": agent_session(3), "metadata": {}}
    await first.async_pre_call_hook(None, shared, dict(data), "acompletion")
    success = {
        "standard_logging_object": {
            "call_type": "acompletion",
            "prompt_tokens": 1600,
            "metadata": {
                "spend_logs_metadata": {
                    "litellm_budget": {"model": model, "action": "passthrough", "tokens_after": 1000}
                }
            },
        }
    }
    await first.async_log_success_event(success, None, None, None)

    await second.async_pre_call_hook(None, shared, dict(data), "acompletion")

    assert first._memory.calibration.ratio(model) > 1.1
    assert second._memory.calibration.ratio(model) == pytest.approx(first._memory.calibration.ratio(model))
    assert shared.redis_cache.values[CACHE_PREFIX + model] == pytest.approx(first._memory.calibration.ratio(model))
