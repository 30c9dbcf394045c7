"""The replay's cache-hit measure: whole messages, and for Anthropic the unchanged leading blocks too."""

from __future__ import annotations

import functools

from litellm_budget.core.counting import counter_for
from litellm_budget.core.formats import ANTHROPIC
from litellm_budget.tools.prefix import anthropic_blocks, shared_prefix
from tests.support.builders import text

COUNT = functools.partial(ANTHROPIC.count_message, counter_for("gpt-4o"))
TASK = {"role": "user", "content": text(300)}
MARKER = {"type": "text", "text": "[litellm_budget: 12 earlier messages were omitted ...]"}
STEP = {"role": "assistant", "content": [{"type": "text", "text": text(200, 1)}]}


def test_whole_messages_only_without_a_block_count() -> None:
    before, now = [TASK, STEP], [{"role": "user", "content": [{"type": "text", "text": TASK["content"]}, MARKER]}, STEP]
    assert shared_prefix(before, now, [COUNT(m) for m in now]) == 0


def test_a_marker_appended_to_the_task_keeps_the_task_cached_for_anthropic() -> None:
    """Anthropic caches a prefix of blocks: the task's own block (a string is one text block) still hits."""
    merged = {"role": "user", "content": [{"type": "text", "text": TASK["content"]}, MARKER]}
    shared = shared_prefix([TASK, STEP], [merged, STEP], [COUNT(merged), COUNT(STEP)], anthropic_blocks(COUNT))
    assert 0 < shared < COUNT(merged)
    assert abs(shared - COUNT(TASK)) <= 5


def test_identical_prompts_share_everything() -> None:
    sizes = [COUNT(TASK), COUNT(STEP)]
    assert shared_prefix([TASK, STEP], [TASK, STEP], sizes, anthropic_blocks(COUNT)) == sum(sizes)
