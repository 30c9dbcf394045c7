"""The hook's summary step (summarizer.py's summary_ahead): what it asks for, given a silent trial fit."""

from __future__ import annotations

from typing import Any

import pytest

from litellm_budget import BudgetSettings
from litellm_budget.adapter.summaries.summarizer import Block, Summarizer, SummarySource, summary_ahead
from litellm_budget.core.api import FitRequest, Fitted, fit_request
from litellm_budget.core.formats import format_named
from litellm_budget.core.policies import block_digest
from tests.support.builders import agent_session, tool_step
from tests.support.fake_router import REPLY, FakeRouter
from tests.support.waiting import wait_for_async

pytestmark = pytest.mark.asyncio
CHAT = format_named("chat")
# Plain markers: a digest of the dropped steps takes more room than a summary would, so beside a
# digest no step is too heavy for a summary, and the heavy-step cases below need the plain marker.
SETTINGS = BudgetSettings(summary_model="cheap", summary_max_tokens=200, digest_chars=0)
HISTORY = agent_session(24, 400)
#: The next step's output is light: the dropped block (messages 2-35) has room for a new summary ...
LIGHT = [*HISTORY, *tool_step(1200, seed=3)]
#: ... or heavy: the same block is dropped, but a summary of the most allowed size would not fit.
HEAVY = [*HISTORY, *tool_step(2650, seed=3)]


def fit(messages: list[dict[str, Any]], summaries: dict[str, str] | None = None) -> Fitted:
    return fit_request(
        FitRequest(messages, model="gpt-4o", window=8000, settings=SETTINGS, fmt=CHAT, summaries=summaries)
    )


async def test_a_needed_summary_is_made_and_offered_to_the_fit() -> None:
    router, summarizer = FakeRouter(), Summarizer()
    trial = fit(LIGHT)

    summaries, outcome = await summary_ahead(summarizer, SummarySource(router, None, SETTINGS), trial, LIGHT, CHAT)

    assert summaries == {trial.report.summary_needed: REPLY}
    assert outcome is not None
    assert outcome.calls == 1
    assert fit(LIGHT, summaries).report.summarized


async def test_a_heavy_step_gets_the_known_summary_of_its_block_without_a_call() -> None:
    """
    The same block, dropped where a new summary would have no room: the known (shorter) summary
    is offered and sent, so this request keeps the prefix of its neighbours instead of the marker.
    """
    router, summarizer = FakeRouter(), Summarizer()
    light = fit(LIGHT)
    await summary_ahead(summarizer, SummarySource(router, None, SETTINGS), light, LIGHT, CHAT)
    trial = fit(HEAVY)
    assert (trial.report.dropped_at, trial.report.summary_failed) == (light.report.dropped_at, "no room for a summary")

    summaries, outcome = await summary_ahead(summarizer, SummarySource(router, None, SETTINGS), trial, HEAVY, CHAT)
    sent = fit(HEAVY, summaries)

    assert summaries == {light.report.summary_needed: REPLY}
    assert outcome is None
    assert len(router.calls) == 1  # the light request's call only
    assert (sent.report.summarized, sent.report.summary_failed) == (True, None)
    notice = next(m for m in sent.messages if REPLY in str(m.get("content")))
    assert notice == next(m for m in fit(LIGHT, summaries).messages if REPLY in str(m.get("content")))


async def test_a_heavy_step_with_no_known_summary_makes_no_call() -> None:
    router = FakeRouter()

    summaries, outcome = await summary_ahead(
        Summarizer(), SummarySource(router, None, SETTINGS), fit(HEAVY), HEAVY, CHAT
    )

    assert (summaries, outcome, router.calls) == (None, None, [])
    assert fit(HEAVY).report.summary_failed == "no room for a summary"


async def test_a_hanging_summary_model_delays_only_the_first_request() -> None:
    """
    A call in flight is waited for at most summary_timeout after it started: later requests go on at
    once. The call answers after 0.35 s: a second request that waited a summary_timeout of its own
    (0.2 s more, after the first's) would get its answer; one that goes on at once comes back first.
    """
    router, summarizer = FakeRouter(delay=0.35), Summarizer()
    hasty = BudgetSettings(summary_model="cheap", summary_timeout=0.2)
    block = HISTORY[2:10]
    digest = block_digest(block)

    first = await summarizer.summary(
        SummarySource(router, None, hasty), Block(digest=digest, messages=block, fmt="chat")
    )
    second = await summarizer.summary(
        SummarySource(router, None, hasty), Block(digest=digest, messages=block, fmt="chat")
    )
    answered_before_second = router.returned
    await wait_for_async(lambda: router.returned, what="the summary call's answer")
    third = await summarizer.summary(
        SummarySource(router, None, hasty), Block(digest=digest, messages=block, fmt="chat")
    )

    assert (first.failed, first.calls) == ("timeout after 0.2s", 1)
    assert (second.failed, second.calls) == ("timeout after 0.2s", 0)
    assert answered_before_second == 0  # the second came back while the call it joined was still out
    assert (third.text, third.calls) == (REPLY, 0)
    assert len(router.calls) == 1
