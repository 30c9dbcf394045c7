"""How much of a prompt repeats the one before it: what a provider's prompt cache would hit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from litellm_budget.typing import Message


def shared_prefix(
    previous: Sequence[Message], current: Sequence[Message], sizes: Sequence[int], blocks: BlockCount | None = None
) -> int:
    """
    Tokens of the leading messages ``current`` has in common with ``previous``: a prompt cache
    hit. With ``blocks`` (Anthropic, whose cache is a prefix of content blocks), the first
    message that differs still shares its leading blocks that did not change.
    """
    shared = 0
    for before, now, size in zip(previous, current, sizes, strict=False):
        if before is not now and before != now:
            return shared + (blocks(before, now) if blocks is not None else 0)
        shared += size
    return shared


#: Tokens of the leading content blocks two versions of a message share.
BlockCount = Callable[[Message, Message], int]


def anthropic_blocks(count: Callable[[Message], int]) -> BlockCount:
    """``BlockCount`` for Anthropic messages (a string content is one text block, as the API reads it)."""

    def shared_blocks(before: Message, now: Message) -> int:
        if before.get("role") != now.get("role"):
            return 0
        old, new = _blocks_of(before), _blocks_of(now)
        same = 0
        while same < min(len(old), len(new)) and old[same] == new[same]:
            same += 1
        return count({"role": now.get("role"), "content": new[:same]}) if same else 0

    return shared_blocks


def _blocks_of(message: Message) -> list[Any]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
