"""Where the plugin puts Anthropic breakpoints: where the prompt stays stable, within four, the client's kept."""

from __future__ import annotations

from typing import Any

from litellm_budget.core.cache import BREAKPOINT, MAX_BREAKPOINTS, breakpoints_in, stable_ends, with_breakpoints
from litellm_budget.core.formats import ANTHROPIC, CHAT
from litellm_budget.core.wording import TOOL_PLACEHOLDER, omitted_note
from tests.support.builders import system, text, tool_step, user


def _edited() -> list[dict[str, Any]]:
    """A chat request as the plugin sends it: system, task, marker, an elided step, a fresh step."""
    elided = tool_step(400)
    elided[1] = {**elided[1], "content": TOOL_PLACEHOLDER}
    return [system(), user("Task."), user(omitted_note(4, 2)), *elided, *tool_step(400, seed=1)]


def test_stable_ends_in_order_of_worth() -> None:
    """The last edit, the first (the marker), the system prompt, the last message."""
    messages = _edited()

    assert stable_ends(messages, CHAT) == [4, 2, 0, 6]
    assert stable_ends([system(), user("hi")], CHAT) == [0, 1]


def test_breakpoints_go_on_the_last_markable_block_and_only_copies_change() -> None:
    """A string content becomes one marked text block; a thinking block is passed over; others stay the same objects."""
    thinking = {"role": "assistant", "content": [{"type": "text", "text": "t"}, {"type": "thinking", "thinking": "x"}]}
    messages = [system(text(10)), user("Task."), thinking]

    marked, at = with_breakpoints(messages, [2, 1])

    assert at == [2, 1]
    assert marked[1]["content"] == [{"type": "text", "text": "Task.", "cache_control": dict(BREAKPOINT)}]
    assert marked[2]["content"][0]["cache_control"] == BREAKPOINT
    assert "cache_control" not in marked[2]["content"][1]
    assert marked[0] is messages[0]
    assert "cache_control" not in str(messages)  # the input is not mutated


def test_the_clients_own_count_and_are_never_moved() -> None:
    """Three of the client's leave room for one; four leave none; a marked end is not marked twice."""
    messages = [
        {"role": "user", "content": [{"type": "text", "text": f"m{i}", "cache_control": dict(BREAKPOINT)}]}
        for i in range(3)
    ] + [user("last"), user("other")]

    once, at = with_breakpoints(messages, [4, 3, 2])
    twice, again = with_breakpoints(once, [4, 3, 2])

    assert at == [4]
    assert breakpoints_in(once) == MAX_BREAKPOINTS
    assert (again, twice) == ([], once)
    tools = [{"name": "t", "cache_control": dict(BREAKPOINT)}]
    assert with_breakpoints(messages, [4], tools=tools)[1] == []


def test_anthropic_blocks_and_a_merged_marker() -> None:
    """Anthropic's list (system joined first): a marker merged into the task's user message is still found."""
    merged = {
        "role": "user",
        "content": [{"type": "text", "text": "Task."}, {"type": "text", "text": omitted_note(2, 1)}],
    }
    messages = [
        {"role": "system", "content": "S", "litellm_budget_joined_system": True},
        merged,
        {"role": "assistant", "content": "ok"},
    ]

    assert stable_ends(messages, ANTHROPIC) == [1, 0, 2]
