"""
The pure part of Anthropic's compaction (``compact_20260112`` in ``context_management.edits``): which edit was asked,
its trigger, and a history holding a ``compaction`` block read as the API reads it; the adapter makes the summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from litellm_budget.core._checks import is_int, is_mapping
from litellm_budget.typing import Message

COMPACT = "compact_20260112"
COMPACTION_BLOCK = "compaction"
#: The API's default trigger, in input tokens (it refuses less than 50,000; this step takes any).
DEFAULT_COMPACT_TRIGGER = 150_000


def split_applied(applied: Sequence[Mapping[str, Any]]) -> tuple[list[Any], list[Any]]:
    """What a response reports of the edits served: the compaction blocks (first in its content) and the other edits."""
    blocks = [entry for entry in applied if entry.get("type") == COMPACTION_BLOCK]
    return blocks, [entry for entry in applied if entry.get("type") != COMPACTION_BLOCK]


def compact_edit(context_management: object) -> Mapping[str, Any] | None:
    """The ``compact_20260112`` edit a request's ``context_management`` asks for, if any."""
    edits = context_management.get("edits") if is_mapping(context_management) else None
    if not isinstance(edits, list):
        return None
    return next((e for e in edits if is_mapping(e) and e.get("type") == COMPACT), None)


def without_compact_edit(context_management: Mapping[str, Any]) -> dict[str, Any] | None:
    """``context_management`` without its compaction edit (never applied twice); ``None`` when no edit is left."""
    edits = [e for e in context_management.get("edits") or () if not (is_mapping(e) and e.get("type") == COMPACT)]
    return {**context_management, "edits": edits} if edits else None


def compact_trigger(edit: Mapping[str, Any]) -> int:
    """The input tokens past which the edit compacts: its ``trigger.value``, else the API's default."""
    trigger = edit.get("trigger")
    value = trigger.get("value") if is_mapping(trigger) else None
    return value if is_int(value) and value >= 0 else DEFAULT_COMPACT_TRIGGER


def compaction_note(summary: str) -> str:
    """The words that stand for a compacted history: a record of the past, never a task."""
    return (
        "[litellm_budget: the earlier conversation was compacted at the client's request, summarized:]\n"
        f"{summary}\n"
        "[litellm_budget: end of the summary. The conversation continues below.]"
    )


def after_compaction(messages: Sequence[Message]) -> tuple[list[Message], bool]:
    """
    ``messages`` (never mutated) as the API reads them, and whether a summary was found: what precedes the last
    ``compaction`` block with a summary goes, that summary becomes a user text block (any upstream understands) in its
    place, the rest of its message after it; blocks without one (failed compactions) are no-ops, dropped.
    """
    found = _last_compaction(messages)
    if found is None:
        return _cleaned(messages), False
    at, block_at = found
    content = messages[at]["content"]
    note = {"type": "text", "text": compaction_note(content[block_at]["content"])}
    rest = _cleaned(messages[at + 1 :])
    after = [block for block in content[block_at + 1 :] if not _is_compaction(block)]
    head: list[Message] = [{"role": "user", "content": [note]}]
    if after:
        head.append({**messages[at], "content": after})
    elif rest and rest[0].get("role") == "user":
        first = rest.pop(0)
        inner = first.get("content")
        blocks = [{"type": "text", "text": inner}] if isinstance(inner, str) else list(inner or [])
        head = [{**first, "content": [note, *blocks]}]
    return [*head, *rest], True


def _last_compaction(messages: Sequence[Message]) -> tuple[int, int] | None:
    """(message, block) of the last ``compaction`` block that holds a summary."""
    for at in range(len(messages) - 1, -1, -1):
        content = messages[at].get("content")
        blocks: list[Any] = content if isinstance(content, list) else []
        for block_at in range(len(blocks) - 1, -1, -1):
            block = blocks[block_at]
            if _is_compaction(block) and isinstance(block.get("content"), str) and block["content"]:
                return at, block_at
    return None


def _is_compaction(block: object) -> bool:
    return is_mapping(block) and block.get("type") == COMPACTION_BLOCK


def _cleaned(messages: Sequence[Message]) -> list[Message]:
    """The messages without ``compaction`` blocks that hold no summary; a message left empty goes too."""
    cleaned: list[Message] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(_is_compaction(block) for block in content):
            kept = [block for block in content if not _is_compaction(block)]
            if kept:
                cleaned.append({**message, "content": kept})
        else:
            cleaned.append(message)
    return cleaned
