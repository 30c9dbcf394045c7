"""Cache truth in the core: what was shared with the previous request, what the cache should read, why it read less."""

from __future__ import annotations

import json
from typing import Any

import pytest

from litellm_budget.core import forget_all
from litellm_budget.core.cache import (
    MARKER,
    TOOLS,
    CacheReport,
    CacheRules,
    CacheUsage,
    cache_report,
    moved_by,
    origins,
    sent_prompt,
)
from litellm_budget.core.wording import cut_note, marker_start, omitted_note, placeholder_for, summary_note
from tests.support.builders import system, text, tool_step, user

RULES = CacheRules(lifetime=300.0, minimum=1024)
TOOLS_SCHEMA = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def _history(steps: int = 4) -> list[dict[str, Any]]:
    messages = [system(text(400)), user("Task.")]
    for step in range(steps):
        messages += tool_step(400, seed=step)
    return messages


def _report(
    messages: list[dict[str, Any]], *, dropped: str = "", elided: str = "", cut: str = "", marker: bool = False
) -> dict[str, Any]:
    return {
        "messages_before": len(messages),
        "dropped_at": dropped,
        "elided_at": elided,
        "cut_at": cut,
        "marker": marker,
    }


def _observe(
    previous: Any, current: Any, read: int | None, *, rules: CacheRules = RULES, total: int = 10_000
) -> CacheReport:
    return cache_report(previous, current, CacheUsage(input=total, read=read), rules)


class TestSentPrompt:
    def test_breakpoints_are_marks_not_part_of_the_prefix(self) -> None:
        """The same message with a cache_control block hashes alike, and the mark is kept as (entry, block)."""
        plain = {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
        marked = {
            "role": "user",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
            ],
        }

        one, two = sent_prompt([plain]), sent_prompt([marked])

        assert one.digests == two.digests
        assert (one.marks, two.marks) == ((), ((0, 1),))
        assert two.blocks == (2,)

    def test_remembered_facts_equal_fresh_ones(self) -> None:
        """A history read before (facts remembered by content) gives the very prompt a cold read gives."""
        note = omitted_note(4, 2)
        messages = [system(text(400)), user(f"Task.\n\n{note}"), *tool_step(400, seed=1), *_history(2)[2:]]
        copies = json.loads(json.dumps(messages))  # other objects, the same content: as the next request brings

        forget_all()
        cold = sent_prompt(messages, tools=TOOLS_SCHEMA)
        warm = sent_prompt(copies, tools=TOOLS_SCHEMA)
        edited = sent_prompt([*copies[:-1], {**copies[-1], "content": "other"}], tools=TOOLS_SCHEMA)

        assert warm == cold
        assert cold.heads[2] != cold.digests[2]  # the merged marker's head and body were remembered too
        assert edited.digests[:-1] == cold.digests[:-1]
        assert edited.digests[-1] != cold.digests[-1]

    def test_the_tools_schema_leads(self) -> None:
        """The tools schema is the first entry, its origin TOOLS; messages follow with their own."""
        messages = _history(1)

        prompt = sent_prompt(messages, tools=TOOLS_SCHEMA)

        assert len(prompt.digests) == len(messages) + 1
        assert prompt.origins == (TOOLS, 0, 1, 2, 3)

    def test_origins_follow_the_drops_and_the_marker(self) -> None:
        """
        Dropped messages are left out and one marker stands where the first was, or joins the
        message before or after it, or both (the first's origin).
        """
        fields = {"messages_before": 8, "dropped_at": "2-5", "marker": True}

        assert origins(5, fields) == (0, 1, MARKER, 6, 7)
        assert origins(4, fields) == (0, 1, 6, 7)
        assert origins(3, fields) == (0, 1, 7)
        assert origins(2, fields) == ()  # does not add up: nothing is claimed
        assert origins(8, {"messages_before": 8}) == tuple(range(8))


class TestReport:
    def test_the_first_request_has_nothing_to_compare(self) -> None:
        """No previous request: what the provider said, and nothing predicted or missed."""
        report = _observe(None, sent_prompt(_history()), 0)

        assert (report.shared_tokens, report.predicted_tokens, report.cache_miss, report.idle_seconds) == (
            0,
            0,
            None,
            None,
        )
        assert report.hit_ratio == 0.0

    def test_an_appended_request_is_predicted_and_a_hit(self) -> None:
        """Appending keeps the whole previous prompt as the prefix: predicted, read, no miss."""
        messages = _history()
        before = sent_prompt(messages, at=1.0, deployment="d")
        after = sent_prompt([*messages, *tool_step(400, seed=9)], at=2.0, deployment="d")

        report = _observe(before, after, 8000)

        assert report.shared_entries == report.previous_entries == len(messages)
        assert 7000 < report.shared_tokens == report.predicted_tokens < 9000
        assert report.cache_miss is None
        assert report.hit_ratio == 0.8
        assert report.as_dict()["cache_hit_ratio"] == 0.8

    @pytest.mark.parametrize(
        ("change", "reason"),
        [
            ({"deployment": "other"}, "deployment"),
            ({"at": 400.0}, "idle"),
        ],
    )
    def test_a_cold_cache_is_explained(self, change: dict[str, Any], reason: str) -> None:
        """Nothing read of a shared prefix: another deployment, or idle past the lifetime; nothing predicted."""
        messages = _history()
        before = sent_prompt(messages, at=1.0, deployment="d")
        after = sent_prompt(messages + tool_step(400), **{"at": 2.0, "deployment": "d", **change})

        report = _observe(before, after, 0)

        assert report.cache_miss == reason
        assert report.predicted_tokens == 0

    def test_a_read_of_the_shared_prefix_on_another_deployment_is_no_miss(self) -> None:
        """Deployments that share one cache (one provider account) read it: nothing to explain."""
        messages = _history()
        before = sent_prompt(messages, deployment="a")
        after = sent_prompt(messages + tool_step(400), deployment="b")

        report = _observe(before, after, 8000)

        assert report.cache_miss is None
        assert report.same_deployment is False

    def test_below_the_minimum_and_unknown(self) -> None:
        """A shared prefix under the minimum that is not read is below_minimum; above it, unknown."""
        messages = _history()
        before, after = sent_prompt(messages), sent_prompt(messages + tool_step(400))

        assert _observe(before, after, 0, total=900).cache_miss == "below_minimum"
        assert _observe(before, after, 0).cache_miss == "unknown"
        assert _observe(before, after, None).cache_miss is None  # the provider does not say

    def test_a_client_edit_of_an_early_message(self) -> None:
        """The client changed an early tool output: the prefix moved there, and it was not the plugin."""
        messages = _history()
        edited = [*messages[:3], {**messages[3], "content": "cleared"}, *messages[4:], *tool_step(400)]

        report = _observe(
            sent_prompt(messages, report=_report(messages)), sent_prompt(edited, report=_report(edited)), 2000
        )

        assert report.shared_entries == 3
        assert report.cache_miss == "client_edit"


class TestMovedBy:
    def test_a_new_elision_is_the_plugins(self) -> None:
        """The same message elided now and not before: plugin_elision."""
        messages = _history()
        now = [*messages[:3], {**messages[3], "content": "[elided]"}, *messages[4:]]
        before = sent_prompt(messages, report=_report(messages))
        after = sent_prompt(now, report=_report(now, elided="3"))

        assert moved_by(before, after, before.shared_with(after)) == "plugin_elision"

    def test_a_new_drop_is_the_plugins(self) -> None:
        """A marker where messages were: plugin_drop."""
        messages = _history()
        marker = {"role": "user", "content": "[litellm_budget: 4 earlier messages were omitted ...]"}
        now = [*messages[:2], marker, *messages[6:]]
        before = sent_prompt(messages, report=_report(messages))
        after = sent_prompt(now, report=_report(messages, dropped="2-5", marker=True))

        assert moved_by(before, after, before.shared_with(after)) == "plugin_drop"

    def test_a_cut_and_an_unknown_layout(self) -> None:
        """A message cut now and not before is plugin_cut; edits that do not add up are unknown."""
        messages = _history()
        now = [*messages[:-1], {**messages[-1], "content": "cut"}]
        before = sent_prompt(messages, report=_report(messages))

        assert (
            moved_by(before, sent_prompt(now, report=_report(now, cut=str(len(now) - 1))), len(now) - 1) == "plugin_cut"
        )
        assert moved_by(before, sent_prompt(now, report={"messages_before": 3}), len(now) - 1) == "unknown"


class TestMergedMarker:
    """The default ``user_note``: the marker is text at the end of the user turn before the kept history."""

    TASK = "Task: fix the parser. " + text(300)

    def _sent(self, note: str | None, *, joined: str | None = None, task: str | None = None) -> Any:
        body = task or self.TASK
        content = body if note is None else f"{body}\n\n{note}"
        if joined is not None:
            content = f"{content}\n\n{joined}"
        tail = tool_step(400, seed=7)
        messages = [system(text(400)), user(content), *tail]
        return sent_prompt(messages, deployment="d", at=1.0)

    def test_the_marker_is_found_and_nothing_else(self) -> None:
        """A marker, or a summary in its place, is found where it was merged; placeholders and cut notes are not."""
        note, summary = omitted_note(4, 2), summary_note("Read setup.py.", 4, 2)

        assert marker_start(note) == 0
        assert marker_start(f"the task\n\n{summary}") == len("the task")
        assert marker_start(f"the task\n\n{placeholder_for('tool')}") is None
        assert marker_start(f"the task\n\n{cut_note(10, 10, 100)}") is None
        assert marker_start("the task names [litellm_budget: 3 earlier things] inline") is None

    def test_the_text_before_a_new_marker_is_still_shared(self) -> None:
        """The task alone, then the task with a marker: the cache still reads the task's tokens."""
        before, after = self._sent(None), self._sent(omitted_note(4, 2))

        report = _observe(before, after, 3000)

        assert report.shared_entries == 1  # the system prompt alone, as whole entries
        assert report.shared_tokens > _observe(before, self._sent(None, task="Other. " + text(300)), 0).shared_tokens
        assert report.cache_miss == "plugin_drop"

    def test_a_changed_marker_is_the_plugins(self) -> None:
        """Only the marker changed (more was dropped), or it joined the next user turn too: plugin_drop."""
        before = self._sent(omitted_note(4, 2))

        assert moved_by(before, self._sent(omitted_note(8, 4)), 1) == "plugin_drop"
        assert moved_by(before, self._sent(omitted_note(8, 4), joined="Observation: ok"), 1) == "plugin_drop"

    def test_the_clients_edit_under_a_marker_is_not(self) -> None:
        """The task's own text changed beside an unchanged marker: not the plugin's."""
        note = omitted_note(4, 2)

        reason = moved_by(self._sent(note), self._sent(note, task="Task: fix the lexer. " + text(300)), 1)

        assert reason != "plugin_drop"


class TestBreakpoints:
    RULES = CacheRules(lifetime=300.0, minimum=1024, breakpoints=True)

    @staticmethod
    def _marked(message: dict[str, Any]) -> dict[str, Any]:
        return {
            **message,
            "content": [{"type": "text", "text": message["content"], "cache_control": {"type": "ephemeral"}}],
        }

    def test_without_a_breakpoint_nothing_is_reachable(self) -> None:
        """Anthropic caches only at breakpoints: a shared prefix without any is no_breakpoint."""
        messages = _history()

        report = _observe(sent_prompt(messages), sent_prompt(messages + tool_step(400)), 0, rules=self.RULES)

        assert report.predicted_tokens == 0
        assert report.cache_miss == "no_breakpoint"

    def test_a_breakpoint_in_reach_is_predicted(self) -> None:
        """The previous request's breakpoint at its last message, reached by this one's: predicted."""
        messages = _history()
        before = [*messages[:-1], self._marked(messages[-1])]
        after = [*messages, *tool_step(400)]
        after[-1] = self._marked(after[-1])

        report = _observe(sent_prompt(before), sent_prompt(after), 8000, rules=self.RULES)

        assert report.shared_entries == len(messages)  # the breakpoint moved on: the prefix did not
        assert report.predicted_tokens > 0

    def test_a_breakpoint_out_of_reach_is_not(self) -> None:
        """More than 20 blocks after the previous breakpoint, and no breakpoint between: not reachable."""
        messages = _history(1)
        before = [*messages[:-1], self._marked(messages[-1])]
        after = [*messages]
        for step in range(12):
            after += tool_step(50, seed=step)
        after[-1] = self._marked(after[-1])

        report = _observe(sent_prompt(before), sent_prompt(after), 8000, rules=self.RULES)

        assert report.predicted_tokens == 0
