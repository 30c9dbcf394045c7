"""Anthropic's compact_20260112 as the core reads it: the edit, its trigger, and what a compaction block replaces."""

from __future__ import annotations

import copy

from litellm_budget.core.client_edits import (
    DEFAULT_COMPACT_TRIGGER,
    after_compaction,
    compact_edit,
    compact_trigger,
    compaction_note,
    without_compact_edit,
)
from tests.support.builders import CLEAR_TOOL_USES_EDIT, anthropic_history, compact_asked, text_of

SUMMARY = "Task: fix the failing test. Decisions made: patched parse()."


class TestEdit:
    def test_the_edit_its_trigger_and_the_rest(self) -> None:
        asked = {"edits": [CLEAR_TOOL_USES_EDIT, compact_asked(60_000, pause_after_compaction=False)]}

        assert compact_edit(asked) == asked["edits"][1]
        assert compact_edit({"edits": [CLEAR_TOOL_USES_EDIT]}) is None
        assert compact_edit("junk") is None
        assert compact_trigger(asked["edits"][1]) == 60_000
        assert compact_trigger(compact_asked()) == DEFAULT_COMPACT_TRIGGER
        assert without_compact_edit(asked) == {"edits": [CLEAR_TOOL_USES_EDIT]}
        assert without_compact_edit({"edits": [compact_asked()]}) is None


class TestAfterCompaction:
    def test_what_came_before_the_block_is_gone_and_its_summary_stands_first(self) -> None:
        call = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}
        history = [
            *anthropic_history(3),
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
        history = [
            *anthropic_history(2),
            {"role": "assistant", "content": [{"type": "compaction", "content": SUMMARY}]},
        ]
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
