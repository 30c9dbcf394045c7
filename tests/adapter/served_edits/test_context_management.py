"""A client's context_management served by the gateway: compaction with the summary model, and the response."""

from __future__ import annotations

import asyncio
import copy
import functools
from typing import Any

import pytest

from litellm_budget import BudgetSettings
from litellm_budget.adapter.request.targets import Target
from litellm_budget.adapter.served_edits.context_management import respond_with_edits, serve_compaction
from litellm_budget.adapter.summaries.summarizer import Summarizer
from litellm_budget.core.client_edits import COMPACT, compaction_note
from litellm_budget.core.counting import counter_for
from litellm_budget.core.formats import ANTHROPIC
from tests.support.builders import CLEAR_TOOL_USES_EDIT, anthropic_history, compact_asked, text_of
from tests.support.fake_router import REPLY, FakeRouter

SUMMARY = "Task: fix the failing test. Decisions made: patched parse()."


def target(model: str = "openai/gpt-4o", **knobs: Any) -> Target:
    settings = BudgetSettings(**{"summary_model": "cheap", "summary_max_tokens": 200, **knobs})
    return Target(model=model, group="g", window=128_000, settings=settings)


def request(messages: list[dict[str, Any]], *edits: dict[str, Any], proxy: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "g", "messages": messages, "system": "You are an agent.", "max_tokens": 512}
    body["context_management"] = {"edits": list(edits)}
    if proxy:
        body["proxy_server_request"] = {"url": "http://proxy/v1/messages"}
    return body


@pytest.mark.asyncio
class TestServe:
    async def test_past_the_trigger_the_history_is_summarized_once_and_the_edit_taken_out(self) -> None:
        router, body = FakeRouter(), request(anthropic_history(), CLEAR_TOOL_USES_EDIT, compact_asked(1000))
        sent = copy.deepcopy(body["messages"])

        served = await serve_compaction(Summarizer(), body, target(), router=router, cache=None)

        assert served is not None
        block, edit = served
        assert block == {"type": "compaction", "content": REPLY}
        assert edit["type"] == COMPACT
        count = functools.partial(ANTHROPIC.count_message, counter_for("openai/gpt-4o"))
        note = {"role": "user", "content": [{"type": "text", "text": compaction_note(REPLY)}]}
        assert edit["cleared_input_tokens"] == sum(map(count, sent)) - count(note)
        assert body["context_management"] == {"edits": [CLEAR_TOOL_USES_EDIT]}  # the other edits are left as asked
        assert body["messages"] == sent  # this request is sent as the fit sends it
        (call,) = router.calls
        prompt = call["messages"][1]["content"]
        assert "You are an agent." not in prompt  # the system prompt is kept, not compacted
        assert prompt.count("assistant: ") == 12

    async def test_under_the_trigger_the_edit_goes_and_nothing_is_said(self) -> None:
        router, body = FakeRouter(), request(anthropic_history(), compact_asked())

        assert await serve_compaction(Summarizer(), body, target(), router=router, cache=None) is None
        assert "context_management" not in body
        assert router.calls == []

    async def test_the_next_request_starts_from_the_summary(self) -> None:
        """The client appended the response: what came before the block is not sent, nor summarized again."""
        router, summarizer = FakeRouter(), Summarizer()
        first = request(anthropic_history(), compact_asked(1000))
        [block, _] = await serve_compaction(summarizer, first, target(), router=router, cache=None) or []
        answer = {"role": "assistant", "content": [block, {"type": "text", "text": "Done."}]}
        second = request([*anthropic_history(), answer, {"role": "user", "content": "Thanks."}], compact_asked(1000))

        assert await serve_compaction(summarizer, second, target(), router=router, cache=None) is None
        assert [text_of(m) for m in second["messages"]] == [compaction_note(REPLY), "Done.", "Thanks."]
        assert len(router.calls) == 1

    async def test_without_a_summary_model_it_says_so_and_leaves_the_request_to_the_fit(self) -> None:
        body = request(anthropic_history(), compact_asked(1000))

        served = await serve_compaction(Summarizer(), body, target(summary_model=None), router=FakeRouter(), cache=None)

        assert served == [{"type": COMPACT, "cleared_input_tokens": 0, "skipped": "summary_model not configured"}]
        assert "context_management" not in body

    async def test_a_late_summary_is_skipped_with_the_reason(self) -> None:
        body = request(anthropic_history(), compact_asked(1000))
        slow = target(summary_timeout=0.01)
        summarizer = Summarizer()

        served = await serve_compaction(summarizer, body, slow, router=FakeRouter(delay=0.2), cache=None)

        assert served == [{"type": COMPACT, "cleared_input_tokens": 0, "skipped": "timeout after 0.01s"}]
        # The late summary goes on in the background: it ends here, not in the logs of a later test.
        await asyncio.gather(*summarizer._inflight.values())

    @pytest.mark.parametrize(
        ("model", "summary_model", "proxy"),
        [("anthropic/claude-sonnet-4-5", None, True), ("openai/gpt-4o", "cheap", False)],
        ids=["anthropic-compacts-natively", "sdk-call-gets-no-response-hook"],
    )
    async def test_left_alone(self, model: str, summary_model: str | None, proxy: bool) -> None:
        body = request(anthropic_history(), compact_asked(1000), proxy=proxy)
        before = copy.deepcopy(body)

        served = await serve_compaction(
            Summarizer(), body, target(model, summary_model=summary_model), router=FakeRouter(), cache=None
        )

        assert served is None
        assert body == before


def test_the_response_carries_the_block_first_and_the_applied_edits() -> None:
    response = {"type": "message", "content": [{"type": "text", "text": "ok"}]}
    applied = [
        {"type": "compaction", "content": SUMMARY},
        {"type": COMPACT, "cleared_input_tokens": 900},
        CLEAR_TOOL_USES_EDIT,
    ]

    respond_with_edits(response, applied)

    assert response["content"] == [{"type": "compaction", "content": SUMMARY}, {"type": "text", "text": "ok"}]
    assert response["context_management"] == {"applied_edits": applied[1:]}
    assert respond_with_edits("a stream", applied) == "a stream"
