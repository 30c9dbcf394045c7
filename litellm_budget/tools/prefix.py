"""How much of a prompt repeats the one before: the prefix a provider's prompt cache or a local KV cache would reuse."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from litellm_budget.typing import Message


def shared_prefix(
    previous: Sequence[Message], current: Sequence[Message], sizes: Sequence[int], blocks: BlockCount | None = None
) -> int:
    """Tokens of the leading messages ``current`` shares with ``previous``, plus ``blocks`` of the first to differ."""
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


def text_heads(count_text: Callable[[str], int], texts: Callable[[Message], Any]) -> BlockCount:
    """
    ``BlockCount`` for formats cached as rendered text (chat, Responses): the tokens of the text two
    versions of a message of one role begin with, less the last one, which may merge with what follows.
    """

    def shared_head(before: Message, now: Message) -> int:
        if before.get("role") != now.get("role") or before.get("type") != now.get("type"):
            return 0
        old, new = "".join(texts(before)), "".join(texts(now))
        same = 0
        limit = min(len(old), len(new))
        while same < limit and old[same] == new[same]:
            same += 1
        return max(0, count_text(old[:same]) - 1) if same else 0

    return shared_head
