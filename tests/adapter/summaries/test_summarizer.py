"""The summarizer: one call per block, cached in memory and the DualCache, never in a request's way."""

from __future__ import annotations

import asyncio
from typing import Any

import litellm
import pytest

from litellm_budget.adapter.summaries.prompt import bounded_summary, max_words, render_block, summary_prompt
from litellm_budget.adapter.summaries.summarizer import (
    CACHE_PREFIX,
    SUMMARY_TAG,
    Block,
    Summarizer,
    SummarySource,
    is_summary_call,
)
from litellm_budget.core.budget import BudgetSettings
from litellm_budget.core.formats import format_named
from litellm_budget.core.policies import block_digest, summary_job
from litellm_budget.tools.sessions import converted
from tests.support.builders import agent_session, text
from tests.support.fake_router import REPLY, FakeRouter
from tests.support.memory_redis import shared_cache
from tests.support.waiting import wait_for_async

SETTINGS = BudgetSettings(summary_model="cheap", summary_timeout=5)
BLOCK = agent_session(6, 200)[2:]
DIGEST = block_digest(BLOCK)


class BrokenRedis:
    """A Redis that is down: every call raises."""

    async def async_get_cache(self, key: str, **_: Any) -> Any:
        raise ConnectionError

    async def async_batch_get_cache(self, keys: list[str], **_: Any) -> Any:
        raise ConnectionError

    async def async_set_cache(self, key: str, value: Any, **_: Any) -> None:
        raise ConnectionError


class BrokenCache:
    """A DualCache whose Redis is down."""

    redis_cache = BrokenRedis()


@pytest.mark.asyncio
async def test_a_miss_calls_the_summary_model_through_the_router_tagged() -> None:
    """One call to summary_model, tagged so the plugin leaves it alone, with its tokens and cost."""
    router = FakeRouter()

    outcome = await Summarizer().summary(
        SummarySource(router, None, SETTINGS), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
    )

    assert (outcome.text, outcome.failed, outcome.calls, outcome.tokens, outcome.cost) == (REPLY, None, 1, 940, 0.0021)
    (call,) = router.calls
    assert call["model"] == "cheap"
    assert call["max_tokens"] == SETTINGS.summary_max_tokens
    assert call["metadata"] == {"litellm_budget": {"summary_call": True}, "tags": [SUMMARY_TAG]}
    assert is_summary_call(call)


@pytest.mark.asyncio
async def test_a_summary_made_once_is_served_from_memory() -> None:
    """The second request for a block gets the same text without a call."""
    router, summarizer = FakeRouter(), Summarizer()
    await summarizer.summary(SummarySource(router, None, SETTINGS), Block(digest=DIGEST, messages=BLOCK, fmt="chat"))

    again = await summarizer.summary(
        SummarySource(router, None, SETTINGS), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
    )

    assert (again.text, again.calls, again.cost) == (REPLY, 0, None)
    assert len(router.calls) == 1


@pytest.mark.asyncio
async def test_another_replica_finds_the_summary_in_the_dual_cache() -> None:
    """A summary one replica made is read by another from the shared DualCache, with no call."""
    shared, router = shared_cache(), FakeRouter()
    await Summarizer().summary(
        SummarySource(router, shared, SETTINGS), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
    )

    found = await Summarizer().summary(
        SummarySource(FakeRouter(error=RuntimeError()), shared, SETTINGS),
        Block(digest=DIGEST, messages=BLOCK, fmt="chat"),
    )

    assert found.text == REPLY
    assert found.calls == 0
    assert await shared.async_get_cache(CACHE_PREFIX + DIGEST) == REPLY


@pytest.mark.asyncio
async def test_concurrent_requests_for_one_block_make_one_call() -> None:
    """Requests that need the same summary at once share one call; only the first pays for it."""
    router, summarizer = FakeRouter(delay=0.05), Summarizer()

    outcomes = await asyncio.gather(
        *(
            summarizer.summary(
                SummarySource(router, shared_cache(), SETTINGS), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
            )
            for _ in range(5)
        )
    )

    assert len(router.calls) == 1
    assert {o.text for o in outcomes} == {REPLY}
    assert sorted(o.calls for o in outcomes) == [0, 0, 0, 0, 1]
    assert sum(o.cost or 0 for o in outcomes) == pytest.approx(0.0021)


@pytest.mark.asyncio
async def test_a_slow_summary_fails_the_wait_and_is_ready_for_the_next_request() -> None:
    """Past summary_timeout the request goes on with a reason; the call finishes and is cached."""
    shared, router, summarizer = shared_cache(), FakeRouter(delay=0.2), Summarizer()
    hasty = BudgetSettings(summary_model="cheap", summary_timeout=0.01)

    late = await summarizer.summary(
        SummarySource(router, shared, hasty), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
    )
    assert (late.text, late.failed, late.calls) == (None, "timeout after 0.01s", 1)

    # The call goes on in the background: wait until it finished and wrote the summary where replicas read it.
    await wait_for_async(lambda: shared.async_get_cache(CACHE_PREFIX + DIGEST), what="the late summary in the cache")
    ready = await summarizer.summary(
        SummarySource(router, None, hasty), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
    )
    assert (ready.text, ready.calls) == (REPLY, 0)
    assert await shared.async_get_cache(CACHE_PREFIX + DIGEST) == REPLY
    assert len(router.calls) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("router", "reason"),
    [
        (FakeRouter(error=litellm.APIError(500, "down", "openai", "cheap")), "error: APIError"),
        (FakeRouter(error=litellm.Timeout("slow", "cheap", "openai")), "error: Timeout"),
        (FakeRouter(reply="   "), "error: empty reply"),
    ],
)
async def test_a_failing_summarizer_never_raises_and_is_not_retried_at_once(router: FakeRouter, reason: str) -> None:
    """Any failure is a reason in the outcome; the block is not tried again right away."""
    summarizer = Summarizer()

    failed = await summarizer.summary(
        SummarySource(router, None, SETTINGS), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
    )
    again = await summarizer.summary(
        SummarySource(router, None, SETTINGS), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
    )

    assert (failed.text, failed.failed, failed.calls) == (None, reason, 1)
    assert (again.failed, again.calls) == (reason, 0)
    assert len(router.calls) == 1


@pytest.mark.asyncio
async def test_a_broken_cache_is_a_miss_and_no_model_is_a_reason() -> None:
    """Redis down: the summary is still made and kept in memory. No summary_model: a reason, no call."""
    router, summarizer = FakeRouter(), Summarizer()

    made = await summarizer.summary(
        SummarySource(router, BrokenCache(), SETTINGS), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
    )
    kept = await summarizer.summary(
        SummarySource(router, BrokenCache(), SETTINGS), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
    )
    none = await Summarizer().summary(
        SummarySource(router, None, BudgetSettings()), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
    )

    assert (made.text, kept.text, kept.calls) == (REPLY, REPLY, 0)
    assert (none.text, none.failed, none.calls) == (None, "summary_model not configured", 0)
    assert len(router.calls) == 1


@pytest.mark.asyncio
async def test_a_longer_block_extends_the_summary_of_the_block_it_starts_with() -> None:
    """summary_for finds the earlier block's summary (here in the DualCache) and sends only what is new."""
    session = agent_session(12, 200)
    earlier, later = session[2:10], session[2:16]
    shared, router = shared_cache(), FakeRouter()
    await Summarizer().summary(
        SummarySource(FakeRouter("Earlier summary."), shared, SETTINGS),
        Block(digest=block_digest(earlier), messages=earlier, fmt="chat"),
    )
    job = summary_job(session, format_named("chat"), list(range(2, 16)))

    outcome = await Summarizer().summary_for(SummarySource(router, shared, SETTINGS), job, "chat")

    assert job.digest == block_digest(later)
    assert outcome.text == REPLY
    prompt = router.calls[0]["messages"][1]["content"]
    assert "Earlier summary." in prompt
    assert prompt.count("assistant: ") == 3  # the three steps after the earlier block
    assert await shared.async_get_cache(CACHE_PREFIX + job.digest) == REPLY


class TestIsSummaryCall:
    @pytest.mark.parametrize("key", ["metadata", "litellm_metadata"])
    def test_reads_either_metadata(self, key: str) -> None:
        assert is_summary_call({key: {"litellm_budget": {"summary_call": True}}})

    @pytest.mark.parametrize(
        "data",
        [{}, {"metadata": None}, {"metadata": {"litellm_budget": {"policy": "plan"}}}, {"metadata": {"tags": ["x"]}}],
    )
    def test_other_requests_are_not(self, data: dict[str, Any]) -> None:
        assert not is_summary_call(data)


class TestPrompt:
    @pytest.mark.parametrize("fmt", ["chat", "anthropic", "responses"])
    def test_every_format_renders_roles_texts_and_calls(self, fmt: str) -> None:
        """Plain text: one paragraph per message, tool calls as name and arguments."""
        block = converted([*agent_session(2, 50)], fmt)
        rendered = render_block(block, fmt)

        assert "bash(" in rendered
        assert '"command": "ls call_' in rendered
        assert "Fix the failing test." in rendered

    def test_long_tool_outputs_are_shortened(self) -> None:
        rendered = render_block([{"role": "tool", "tool_call_id": "c", "content": "x" * 50_000}], "chat")

        assert len(rendered) < 5000
        assert "more characters]" in rendered

    def test_the_prompt_asks_for_structure_and_a_bound(self) -> None:
        system, user = summary_prompt(BLOCK, "chat", 512, previous_summary="Before.")

        for heading in ("Task", "Decisions made", "Files and entities touched", "Errors seen", "Open questions"):
            assert heading in system["content"]
        assert f"At most {max_words(512)} words" in system["content"]
        assert user["content"].startswith("A summary of the conversation so far:\n\nBefore.")

    def test_a_long_reply_is_cut_to_its_word_bound(self) -> None:
        assert len(bounded_summary(text(2000), 512).split()) == max_words(512) + 1
        assert bounded_summary("  short  ", 512) == "short"


@pytest.mark.asyncio
async def test_a_real_router_serves_the_summary_call_and_prices_it() -> None:
    """Through a litellm.Router (a mocked deployment): the tagged call is accepted and its cost known."""
    deployment = {"model": "openai/gpt-4o-mini", "api_key": "k", "mock_response": REPLY}
    router = litellm.Router(model_list=[{"model_name": "cheap", "litellm_params": deployment}])

    patient = BudgetSettings(summary_model="cheap", summary_timeout=30)  # a first Router call warms up for a while

    outcome = await Summarizer().summary(
        SummarySource(router, shared_cache(), patient), Block(digest=DIGEST, messages=BLOCK, fmt="chat")
    )

    assert (outcome.text, outcome.failed, outcome.calls) == (REPLY, None, 1)
    assert outcome.cost is not None
    assert outcome.cost > 0
