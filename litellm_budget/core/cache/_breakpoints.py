"""
Where the plugin adds ``cache_control`` breakpoints (``cache_breakpoints``): Anthropic caches a prompt
only up to them, at most four a request, and reads an earlier entry only from a breakpoint at most
20 blocks after it. The client's own are never moved or removed, and count against the four.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from litellm_budget.core.formats import SYSTEM, MessageFormat
from litellm_budget.core.wording._notices import NOTICE_PREFIX
from litellm_budget.typing import Message

#: The API's limit per request.
MAX_BREAKPOINTS = 4
#: The breakpoint the plugin adds: the default, five-minute cache.
BREAKPOINT: Mapping[str, str] = MappingProxyType({"type": "ephemeral"})
#: Blocks the API takes no breakpoint on.
UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def breakpoints_in(messages: Sequence[Message], tools: object = None, *, automatic: object = None) -> int:
    """
    Breakpoints already in a request, wherever the API counts them: tools, messages, their blocks and
    those in a ``tool_result``, and the top-level ``cache_control`` (``automatic`` caching takes one).
    """
    found = sum(1 for tool in tools if has_breakpoint(tool)) if isinstance(tools, list) else 0
    for message in messages:
        content = message.get("content")
        found += has_breakpoint(message) + (_marks_in(content) if isinstance(content, list) else 0)
    return found + isinstance(automatic, Mapping)


def _marks_in(blocks: list[Any]) -> int:
    """Breakpoints on ``blocks`` and on the blocks a ``tool_result`` among them holds."""
    found = 0
    for block in blocks:
        found += has_breakpoint(block)
        inner = block.get("content") if isinstance(block, dict) and block.get("type") == "tool_result" else None
        if isinstance(inner, list):
            found += sum(1 for part in inner if has_breakpoint(part))
    return found


def stable_ends(messages: Sequence[Message], fmt: MessageFormat, *, edited: bool = True) -> list[int]:
    """
    The indices (in the core's list as sent) that end a prefix worth a breakpoint, most worth first: the last message
    the plugin edited (its later edits leave that prefix as it is), its first edit (the marker or first placeholder),
    the last leading system message (what a new drop leaves), the last message (what the next request continues).
    Edits are found by their words (``notices.py``), kept by every format; ``edited=False`` (untrimmed) skips them.
    """

    def has_notice(index: int) -> bool:
        content = messages[index].get("content")
        if isinstance(content, str) or content is None:  # most messages: no walk over blocks
            return content is not None and content.startswith(NOTICE_PREFIX)
        return any(text.startswith(NOTICE_PREFIX) for text in fmt.texts(messages[index]))

    indices = range(len(messages))
    last = next((i for i in reversed(indices) if has_notice(i)), None) if edited else None
    first = next(i for i in indices if has_notice(i)) if last is not None else None
    kinds = fmt.kinds(messages)
    leading = next((i for i, kind in enumerate(kinds) if kind != SYSTEM), len(kinds))
    ends = [*(() if last is None else (last, first)), *([leading - 1] if leading else []), *indices[-1:]]
    return list(dict.fromkeys(ends))


def with_breakpoints(
    messages: Sequence[Message], ends: Iterable[int], *, tools: object = None, automatic: object = None
) -> tuple[list[Message], list[int]]:
    """
    ``messages`` with a breakpoint on the last markable block of each of ``ends`` (in order, skipping
    those already marked) while the request has fewer than four; the messages marked, the only copies.
    """
    room = MAX_BREAKPOINTS - breakpoints_in(messages, tools, automatic=automatic)
    result, marked = list(messages), []
    for end in ends:
        if room <= 0:
            break
        if not 0 <= end < len(result) or _ends_marked(result[end]):
            continue
        message = _with_breakpoint(result[end])
        if message is not None:
            result[end] = message
            marked.append(end)
            room -= 1
    return result, marked


def _with_breakpoint(message: Message) -> Message | None:
    """A copy of ``message`` whose last markable block carries the breakpoint; ``None``: none can."""
    content = message.get("content")
    if isinstance(content, str) and content:
        return {**message, "content": [{"type": "text", "text": content, "cache_control": dict(BREAKPOINT)}]}
    if not isinstance(content, list):
        return None
    for index in range(len(content) - 1, -1, -1):
        block = content[index]
        if _markable(block):
            block = {**block, "cache_control": dict(BREAKPOINT)}
            return {**message, "content": [*content[:index], block, *content[index + 1 :]]}
    return None


def _ends_marked(message: Message) -> bool:
    content = message.get("content")
    return has_breakpoint(message) or (isinstance(content, list) and bool(content) and has_breakpoint(content[-1]))


def _markable(block: Any) -> bool:
    if not isinstance(block, Mapping) or block.get("type") in UNMARKABLE:
        return False
    return block.get("type") != "text" or bool(block.get("text"))


def has_breakpoint(value: Any) -> bool:
    """Whether ``value`` (a tool, a message or a block) carries a ``cache_control`` breakpoint."""
    # dict first: the request's own JSON, where a Mapping check would cost most of the scan.
    if isinstance(value, dict):
        return "cache_control" in value and isinstance(value["cache_control"], Mapping)
    return isinstance(value, Mapping) and isinstance(value.get("cache_control"), Mapping)
