"""
Counted after the request left: what the size gate passes goes uncounted, and its report is still
published once, whole, with exact counts; calibration learns from those; a full queue counts on the path.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from litellm.types.utils import CallTypes
from structlog.testing import capture_logs

from litellm_budget import ContextBudget
from litellm_budget.adapter.report.later_counts import LaterCounts
from litellm_budget.core import BudgetReport
from litellm_budget.core.api import FitRequest, fit_request
from litellm_budget.core.counting import counter_for, forget_counts
from litellm_budget.core.formats import CHAT
from litellm_budget.tools.sessions import load_conversation, requests_of, session_files
from tests.conftest import SessionSet
from tests.support.builders import agent_session, deployment_kwargs
from tests.support.fake_upstream import FakeUpstream
from tests.support.sdk_support import PayloadSpy, logging_settled, only_callbacks

#: Fields that say when and how fast a report was made, not what was done: everything else must agree.
TIMING = ("duration_ms", "size_gate", "tokens_bound")


def report_of(kwargs: dict[str, Any]) -> dict[str, Any]:
    return dict(kwargs["metadata"]["spend_logs_metadata"]["litellm_budget"])


@pytest.mark.asyncio
async def test_the_bound_goes_now_and_the_count_right_after() -> None:
    """In the hook's return the report holds the bound; one loop turn later the exact count, published once."""
    budget = ContextBudget()
    messages = agent_session(10, 300)
    kwargs = deployment_kwargs(messages, 128_000, "gated-1")
    exact = fit_request(FitRequest(messages, model="gpt-4o", window=128_000)).report

    with capture_logs() as logs:
        await budget.async_pre_call_deployment_hook(kwargs, CallTypes.acompletion)
        at_hook = report_of(kwargs)
        events_at_hook = list(logs)
        await asyncio.sleep(0)

    assert (at_hook["size_gate"], at_hook["tokens_exact"]) == (True, False)
    assert at_hook["tokens_before"] == at_hook["tokens_bound"] >= exact.tokens_before
    assert events_at_hook == []
    (event,) = [e for e in logs if e["event"] == "request_passed_through"]
    assert (event["tokens_before"], event["tokens_after"], event["tokens_exact"]) == (
        exact.tokens_before,
        exact.tokens_after,
        True,
    )
    assert report_of(kwargs)["tokens_before"] == exact.tokens_before
    served = budget._memory.calls.get("gated-1").served
    assert served is not None
    assert served.tokens_exact
    headers = await budget.async_post_call_response_headers_hook(kwargs, None, None)
    assert headers is not None
    assert (headers["x-litellm-budget-tokens-before"], headers["x-litellm-budget-tokens-exact"]) == (
        str(exact.tokens_before),
        "true",
    )


@pytest.mark.asyncio
async def test_kept_edits_go_with_the_bound_and_are_counted_right_after() -> None:
    """
    A trimmed conversation's next request keeps its edits with its new step uncounted: the hook's
    report holds the bound of what is sent; one loop turn later, the fit's own exact counts, and
    ``tokens_after`` is the count of the messages the hook handed on to the provider.
    """
    budget, reference = ContextBudget(), ContextBudget(size_gate=False)
    session = agent_session(30, 800)
    forget_counts()
    kept = None
    for number, request in enumerate(requests_of(session)):
        kwargs = deployment_kwargs(request, 16_000, f"kept-{number}")
        await budget.async_pre_call_deployment_hook(kwargs, CallTypes.acompletion)
        at_hook = report_of(kwargs)
        await asyncio.sleep(0)
        expected = deployment_kwargs(request, 16_000, f"kept-{number}")
        await reference.async_pre_call_deployment_hook(expected, CallTypes.acompletion)
        if at_hook["size_gate"] and at_hook["action"] == "trimmed":
            kept = (at_hook, report_of(kwargs), report_of(expected), kwargs["messages"])

    assert kept is not None
    at_hook, after, exact, sent = kept
    counter = counter_for("gpt-4o")
    assert after["tokens_after"] == counter.count_tools(None) + sum(CHAT.count_message(counter, m) for m in sent)
    assert (at_hook["edits_kept"], at_hook["tokens_exact"]) == (True, False)
    assert at_hook["tokens_bound"] == at_hook["tokens_after"] > exact["tokens_after"]
    assert at_hook["tokens_before"] > exact["tokens_before"]
    assert after["tokens_exact"]
    assert (after["tokens_before"], after["tokens_after"]) == (exact["tokens_before"], exact["tokens_after"])


@pytest.mark.asyncio
async def test_headers_written_before_the_count_say_so() -> None:
    """A response faster than the count (it never is here, but could be): the bound, marked as one."""
    budget = ContextBudget()
    kwargs = deployment_kwargs(agent_session(4, 100), 128_000, "gated-2")
    await budget.async_pre_call_deployment_hook(kwargs, CallTypes.acompletion)

    headers = await budget.async_post_call_response_headers_hook(kwargs, None, None)

    assert headers is not None
    assert headers["x-litellm-budget-tokens-exact"] == "false"
    await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_a_full_queue_counts_on_the_path() -> None:
    """The queue holds at most so much: past it, the request is counted before it goes, as without the gate."""
    budget = ContextBudget()
    budget._memory.later = LaterCounts(budget._memory.calls, max_queued=0)
    kwargs = deployment_kwargs(agent_session(4, 100), 128_000, "gated-3")

    await budget.async_pre_call_deployment_hook(kwargs, CallTypes.acompletion)

    report = report_of(kwargs)
    assert (report["size_gate"], report["tokens_exact"]) == (True, True)
    assert len(budget._memory.later) == 0


@pytest.mark.asyncio
async def test_size_gate_off_counts_every_request_before_it_goes() -> None:
    """``size_gate: false``: the report is exact in the hook, as before the gate."""
    kwargs = deployment_kwargs(agent_session(4, 100), 128_000, "gated-4")

    await ContextBudget(size_gate=False).async_pre_call_deployment_hook(kwargs, CallTypes.acompletion)

    assert (report_of(kwargs)["size_gate"], report_of(kwargs)["tokens_exact"]) == (False, True)


@pytest.fixture(name="upstream", scope="module")
def fixture_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(usage_ratio=1.5) as upstream:
        yield upstream


@pytest.mark.asyncio
async def test_calibration_learns_from_the_exact_count(upstream: FakeUpstream) -> None:
    """Through LiteLLM's SDK: the ratio learned from a request the gate passed is usage over the exact count."""
    model = "openai/acme-gated"
    learner, spy = ContextBudget(default_window=128_000), PayloadSpy()
    messages = agent_session(6, 400)
    exact = fit_request(FitRequest(messages, model=model, window=128_000)).report.tokens_after

    with only_callbacks(learner, spy):
        await litellm.acompletion(model=model, api_base=upstream.base_url, api_key="k", messages=messages)
        await spy.wait(1)
        for _ in range(50):
            if learner._memory.calibration.ratio(model) is not None:
                break
            await asyncio.sleep(0.02)

    reported = upstream.requests[-1]  # what the provider was sent: the caller's messages, untouched
    assert reported["messages"] == messages
    report = spy.payloads[0]["metadata"]["spend_logs_metadata"]["litellm_budget"]
    assert (report["size_gate"], report["tokens_exact"], report["tokens_after"]) == (True, True, exact)
    prompt_tokens = spy.payloads[0]["prompt_tokens"]
    weight = learner.settings.calibration_weight if learner.settings else 0.3
    assert learner._memory.calibration.learned(model, learner.settings) == pytest.approx(
        1.0 + weight * (prompt_tokens / exact - 1.0)
    )


def same_but_timing(report: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in report.items() if key not in TIMING}


@pytest.mark.asyncio
@pytest.mark.sessions
@pytest.mark.parametrize("window", [16_000, 128_000])
async def test_reports_with_the_gate_on_and_off_agree_on_every_session(window: int, session_set: SessionSet) -> None:
    """
    Every request of every session (this repository's made ones, and the shared ones where they
    are), in order (conversation state on), through the deployment hook of a plugin with the gate
    and of one without: once counted, the same events with the same
    reports, every field but timing; and the same requests sent. At 128k, where no session is
    trimmed, every request passes the gate: a history counted with the last request goes at its
    count and only the new step at its bytes (by bytes alone, 51 of the 785 would not pass). At 16k
    most requests that keep their conversation's edits go with their new messages uncounted.
    """
    gated, counted = ContextBudget(), ContextBudget(size_gate=False)
    passed = kept = requests = 0
    forget_counts()  # each request's new messages are new to the counter, whatever ran before
    await logging_settled()  # no earlier test's queued logging lands in these captures
    for path in session_files([session_set.folder]):
        for number, request in enumerate(requests_of(load_conversation(path).messages)):
            call_id = f"{path.stem}-{number}"
            with capture_logs() as on:
                sent_on = deployment_kwargs(request, window, call_id)
                await gated.async_pre_call_deployment_hook(sent_on, CallTypes.acompletion)
                await asyncio.sleep(0)
            with capture_logs() as off:
                sent_off = deployment_kwargs(request, window, call_id)
                await counted.async_pre_call_deployment_hook(sent_off, CallTypes.acompletion)
            assert [same_but_timing(e) for e in on] == [same_but_timing(e) for e in off], call_id
            assert sent_on["messages"] == sent_off["messages"]
            assert same_but_timing(report_of(sent_on)) == same_but_timing(report_of(sent_off))
            passed += report_of(sent_on)["size_gate"]
            kept += report_of(sent_on)["size_gate"] and report_of(sent_on)["edits_kept"]
            requests += 1
    # Of the made sessions' 151 requests, 21 keep their edits uncounted at 16k; of the shared 785, 150 and more.
    assert passed == requests if window == 128_000 else kept >= {"shared": 151, "made": 16}[session_set.name]


def test_a_report_is_exact_unless_the_gate_says_otherwise() -> None:
    """The default report is an exact one: every report before the gate existed reads the same."""
    report = BudgetReport(model="m", policy="auto", action="passthrough")

    assert (report.size_gate, report.tokens_exact, report.tokens_bound) == (False, True, None)
    assert dataclasses.asdict(report)["tokens_exact"] is True
