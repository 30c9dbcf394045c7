"""A client's Anthropic context_management edits, applied by the gateway: every knob, as the API reports them."""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest

from litellm_budget.core.client_edits import CLEAR_THINKING, CLEAR_TOOL_USES, CLEARED_RESULT, apply_context_edits
from litellm_budget.core.counting import counter_for
from litellm_budget.core.formats import ANTHROPIC
from tests.support.builders import text

COUNT = functools.partial(ANTHROPIC.count_message, counter_for("claude-sonnet-4-5"))


def conversation(steps: int, size: int = 300, names: tuple[str, ...] = ("bash",)) -> list[dict[str, Any]]:
    """A task, then ``steps`` tool uses (with thinking) and their results of about ``size`` tokens."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    for step in range(steps):
        name = names[step % len(names)]
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"step {step}", "signature": f"sig{step}"},
                    {"type": "tool_use", "id": f"toolu_{step}", "name": name, "input": {"command": f"ls {step}"}},
                ],
            }
        )
        result = {"type": "tool_result", "tool_use_id": f"toolu_{step}", "content": text(size, step)}
        messages.append({"role": "user", "content": [result]})
    return messages


def results(messages: list[dict[str, Any]]) -> list[str]:
    return [b["content"] for m in messages if m["role"] == "user" for b in m["content"] if isinstance(b, dict)]


def edit(**knobs: Any) -> dict[str, Any]:
    return {"edits": [{"type": CLEAR_TOOL_USES, **knobs}]}


class TestClearToolUses:
    def test_past_the_trigger_all_but_the_last_kept_results_are_cleared(self) -> None:
        """With a low trigger, the oldest results go, the last `keep` stay; the report says how much."""
        messages = conversation(6)

        edited = apply_context_edits(messages, edit(trigger={"type": "input_tokens", "value": 100}), COUNT)

        assert [r == CLEARED_RESULT for r in results(edited.messages)] == [True, True, True, False, False, False]
        assert edited.applied[0]["type"] == CLEAR_TOOL_USES
        assert edited.applied[0]["cleared_tool_uses"] == 3
        assert edited.applied[0]["cleared_input_tokens"] > 800

    def test_under_the_trigger_nothing_happens(self) -> None:
        """The default trigger is 100k input tokens: a small conversation is left alone."""
        messages = conversation(6)

        edited = apply_context_edits(messages, edit(), COUNT)

        assert edited.messages == messages
        assert edited.applied == []

    @pytest.mark.parametrize(("uses", "cleared"), [(5, 0), (6, 3)], ids=["at-the-trigger", "past-it"])
    def test_a_tool_use_trigger_counts_tool_uses(self, uses: int, cleared: int) -> None:
        """trigger {type: tool_uses} fires once there are more tool uses than its value."""
        edited = apply_context_edits(conversation(uses), edit(trigger={"type": "tool_uses", "value": 5}), COUNT)

        assert sum(r == CLEARED_RESULT for r in results(edited.messages)) == cleared

    def test_keep_excluded_tools_and_inputs(self) -> None:
        """keep, exclude_tools and clear_tool_inputs each do what they say."""
        messages = conversation(6, names=("bash", "read"))
        knobs = {
            "trigger": {"type": "tool_uses", "value": 1},
            "keep": {"type": "tool_uses", "value": 1},
            "exclude_tools": ["read"],
            "clear_tool_inputs": True,
        }

        edited = apply_context_edits(messages, edit(**knobs), COUNT)

        cleared = [r == CLEARED_RESULT for r in results(edited.messages)]
        inputs = [b["input"] for m in edited.messages if m["role"] == "assistant" for b in m["content"][1:]]
        assert cleared == [True, False, True, False, True, False]
        assert inputs == [{}, {"command": "ls 1"}, {}, {"command": "ls 3"}, {}, {"command": "ls 5"}]
        assert edited.applied[0]["cleared_tool_uses"] == 3

    def test_clear_at_least_holds_back_a_clear_too_small_to_pay(self) -> None:
        """When clearing would save fewer tokens than clear_at_least, nothing is cleared."""
        messages = conversation(6)
        knobs = {
            "trigger": {"type": "tool_uses", "value": 1},
            "clear_at_least": {"type": "input_tokens", "value": 10**6},
        }

        edited = apply_context_edits(messages, edit(**knobs), COUNT)

        assert edited.messages == messages
        assert edited.applied == []

    def test_input_is_never_mutated_and_untouched_messages_are_shared(self) -> None:
        """Edits copy only what they change."""
        messages = conversation(6)
        before = copy.deepcopy(messages)

        edited = apply_context_edits(messages, edit(trigger={"type": "tool_uses", "value": 1}), COUNT)

        assert messages == before
        assert edited.messages[0] is messages[0]
        assert edited.messages[-1] is messages[-1]


class TestClearThinking:
    @pytest.mark.parametrize(
        ("keep", "kept"),
        [(None, 1), ({"type": "thinking_turns", "value": 2}, 2), ("all", 4)],
        ids=["default", "two", "all"],
    )
    def test_older_thinking_goes(self, keep: Any, kept: int) -> None:
        """Thinking stays in the last `keep` assistant turns (1 by default; "all" keeps every one)."""
        messages = conversation(4)
        knobs = {} if keep is None else {"keep": keep}

        edited = apply_context_edits(messages, {"edits": [{"type": CLEAR_THINKING, **knobs}]}, COUNT)

        with_thinking = [
            m for m in edited.messages if m["role"] == "assistant" and m["content"][0]["type"] == "thinking"
        ]
        assert len(with_thinking) == kept
        assert [e["cleared_thinking_turns"] for e in edited.applied] == ([4 - kept] if kept < 4 else [])

    def test_unknown_edits_are_named_and_left_alone(self) -> None:
        """An edit this gateway does not know (compaction) changes nothing and is reported as unknown."""
        messages = conversation(2)

        edited = apply_context_edits(messages, {"edits": [{"type": "compact_20260112"}]}, COUNT)

        assert (edited.messages, edited.applied, edited.unknown) == (messages, [], ["compact_20260112"])
