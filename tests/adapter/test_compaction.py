"""Anthropic's compact_20260112, served with the summary model: the pure reading, the adapter step, the response."""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest

from litellm_budget import BudgetSettings
from litellm_budget.adapter.compaction import respond_with_edits, serve_compaction
from litellm_budget.adapter.summarizer import Summarizer
from litellm_budget.adapter.targets import Target
from litellm_budget.core.compaction import (
    COMPACT,
    DEFAULT_COMPACT_TRIGGER,
    after_compaction,
    compact_edit,
    compact_trigger,
    compaction_note,
    without_compact_edit,
)
from litellm_budget.core.formats.anthropic import ANTHROPIC
from litellm_budget.core.formats.anthropic_convert import from_chat
from litellm_budget.core.tokens import counter_for
from tests.support.builders import agent_session
from tests.support.fake_router import REPLY, FakeRouter

CLEAR = {"type": "clear_tool_uses_20250919"}
SUMMARY = "Task: fix the failing test. Decisions made: patched parse()."


def compact(trigger: int | None = None, **extra: Any) -> dict[str, Any]:
    edit: dict[str, Any] = {"type": COMPACT, **extra}
    if trigger is not None:
        edit["trigger"] = {"type": "input_tokens", "value": trigger}
    return edit


def conversation(steps: int = 12) -> list[dict[str, Any]]:
    """Anthropic messages of an agent's tool history: about 300 tokens a step."""
    return from_chat(agent_session(steps, 300))[1]


def text_of(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


class TestEdit:
    def test_the_edit_its_trigger_and_the_rest(self) -> None:
        asked = {"edits": [CLEAR, compact(60_000, pause_after_compaction=False)]}

        assert compact_edit(asked) == asked["edits"][1]
        assert compact_edit({"edits": [CLEAR]}) is None
        assert compact_edit("junk") is None
        assert compact_trigger(asked["edits"][1]) == 60_000
        assert compact_trigger(compact()) == DEFAULT_COMPACT_TRIGGER
        assert without_compact_edit(asked) == {"edits": [CLEAR]}
        assert without_compact_edit({"edits": [compact()]}) is None


class TestAfterCompaction:
    def test_what_came_before_the_block_is_gone_and_its_summary_stands_first(self) -> None:
        call = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}
        history = [
            *conversation(3),
            {
                "role": "assistant",
                "content": [{"type": "compaction", "content": SUMMARY}, {"type": "text", "text": "Next."}, call],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]},
        ]
        before = copy.deepcopy(history)

        messages, found = after_compaction(history)

        assert found
        assert history == before
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert messages[0]["content"] == [{"type": "text", "text": compaction_note(SUMMARY)}]
        assert messages[1]["content"] == [{"type": "text", "text": "Next."}, call]
        assert messages[2] is history[-1]

    def test_a_block_alone_in_its_message_joins_the_next_user_turn(self) -> None:
        """With pause_after_compaction the response is the block alone; the next user turn follows it."""
        history = [*conversation(2), {"role": "assistant", "content": [{"type": "compaction", "content": SUMMARY}]}]
        history.append({"role": "user", "content": "Go on."})

        messages, _ = after_compaction(history)

        assert messages == [
            {
                "role": "user",
                "content": [{"type": "text", "text": compaction_note(SUMMARY)}, {"type": "text", "text": "Go on."}],
            }
        ]

    def test_the_last_block_wins_and_failed_ones_are_no_ops(self) -> None:
        older = {
            "role": "assistant",
            "content": [{"type": "compaction", "content": "old"}, {"type": "text", "text": "A"}],
        }
        failed = {
            "role": "assistant",
            "content": [{"type": "compaction", "content": None}, {"type": "text", "text": "B"}],
        }
        empty = {"role": "assistant", "content": [{"type": "compaction", "content": None}]}
        history = [{"role": "user", "content": "Q1"}, older, {"role": "user", "content": "Q2"}, failed]

        messages, found = after_compaction(history)
        plain, none = after_compaction([{"role": "user", "content": "Q"}, empty, {"role": "user", "content": "Q3"}])

        assert found
        assert text_of(messages[0]) == compaction_note("old")
        assert messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": "B"}]}
        assert not none
        assert plain == [{"role": "user", "content": "Q"}, {"role": "user", "content": "Q3"}]


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
        router, body = FakeRouter(), request(conversation(), CLEAR, compact(1000))
        sent = copy.deepcopy(body["messages"])

        served = await serve_compaction(Summarizer(), body, target(), router=router, cache=None)

        assert served is not None
        block, edit = served
        assert block == {"type": "compaction", "content": REPLY}
        assert edit["type"] == COMPACT
        count = functools.partial(ANTHROPIC.count_message, counter_for("openai/gpt-4o"))
        note = {"role": "user", "content": [{"type": "text", "text": compaction_note(REPLY)}]}
        assert edit["cleared_input_tokens"] == sum(map(count, sent)) - count(note)
        assert body["context_management"] == {"edits": [CLEAR]}  # the other edits are left as asked
        assert body["messages"] == sent  # this request is sent as the fit sends it
        (call,) = router.calls
        prompt = call["messages"][1]["content"]
        assert "You are an agent." not in prompt  # the system prompt is kept, not compacted
        assert prompt.count("assistant: ") == 12

    async def test_under_the_trigger_the_edit_goes_and_nothing_is_said(self) -> None:
        router, body = FakeRouter(), request(conversation(), compact())

        assert await serve_compaction(Summarizer(), body, target(), router=router, cache=None) is None
        assert "context_management" not in body
        assert router.calls == []

    async def test_the_next_request_starts_from_the_summary(self) -> None:
        """The client appended the response: what came before the block is not sent, nor summarized again."""
        router, summarizer = FakeRouter(), Summarizer()
        first = request(conversation(), compact(1000))
        [block, _] = await serve_compaction(summarizer, first, target(), router=router, cache=None) or []
        answer = {"role": "assistant", "content": [block, {"type": "text", "text": "Done."}]}
        second = request([*conversation(), answer, {"role": "user", "content": "Thanks."}], compact(1000))

        assert await serve_compaction(summarizer, second, target(), router=router, cache=None) is None
        assert [text_of(m) for m in second["messages"]] == [compaction_note(REPLY), "Done.", "Thanks."]
        assert len(router.calls) == 1

    async def test_without_a_summary_model_it_says_so_and_leaves_the_request_to_the_fit(self) -> None:
        body = request(conversation(), compact(1000))

        served = await serve_compaction(Summarizer(), body, target(summary_model=None), router=FakeRouter(), cache=None)

        assert served == [{"type": COMPACT, "cleared_input_tokens": 0, "skipped": "summary_model not configured"}]
        assert "context_management" not in body

    async def test_a_late_summary_is_skipped_with_the_reason(self) -> None:
        body = request(conversation(), compact(1000))
        slow = target(summary_timeout=0.01)

        served = await serve_compaction(Summarizer(), body, slow, router=FakeRouter(delay=0.2), cache=None)

        assert served == [{"type": COMPACT, "cleared_input_tokens": 0, "skipped": "timeout after 0.01s"}]

    @pytest.mark.parametrize(
        ("model", "summary_model", "proxy"),
        [("anthropic/claude-sonnet-4-5", None, True), ("openai/gpt-4o", "cheap", False)],
        ids=["anthropic-compacts-natively", "sdk-call-gets-no-response-hook"],
    )
    async def test_left_alone(self, model: str, summary_model: str | None, proxy: bool) -> None:
        body = request(conversation(), compact(1000), proxy=proxy)
        before = copy.deepcopy(body)

        served = await serve_compaction(
            Summarizer(), body, target(model, summary_model=summary_model), router=FakeRouter(), cache=None
        )

        assert served is None
        assert body == before


def test_the_response_carries_the_block_first_and_the_applied_edits() -> None:
    response = {"type": "message", "content": [{"type": "text", "text": "ok"}]}
    applied = [{"type": "compaction", "content": SUMMARY}, {"type": COMPACT, "cleared_input_tokens": 900}, CLEAR]

    respond_with_edits(response, applied)

    assert response["content"] == [{"type": "compaction", "content": SUMMARY}, {"type": "text", "text": "ok"}]
    assert response["context_management"] == {"applied_edits": applied[1:]}
    assert respond_with_edits("a stream", applied) == "a stream"
