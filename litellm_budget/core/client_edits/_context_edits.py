"""Anthropic's context editing a client asks for, applied for upstreams that lack it and reported as the API would."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from litellm_budget.core._checks import is_int, is_mapping
from litellm_budget.typing import Message

CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
#: The API's defaults: clear past 100k input tokens, keep the last 3 tool uses and the last turn's thinking.
DEFAULT_TRIGGER = MappingProxyType({"type": "input_tokens", "value": 100_000})
DEFAULT_KEEP_TOOL_USES = 3
DEFAULT_KEEP_THINKING_TURNS = 1
CLEARED_RESULT = "[litellm_budget: this tool result was cleared by the context editing the client asked for.]"
_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})

Count = Callable[[Message], int]
#: The messages an edit leaves and its report as the API gives it; ``None``: nothing cleared, the messages unchanged.
Cleared = tuple[list[Message], dict[str, Any] | None]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Edited:
    """The messages after the client's edits, each applied edit as the API reports it, and the edits not known."""

    messages: list[Message]
    applied: list[dict[str, Any]]
    unknown: list[str]


def apply_context_edits(messages: Sequence[Message], context_management: object, count: Count) -> Edited:
    """Apply ``context_management.edits`` in order to Anthropic ``messages`` (never mutated; changes are copies)."""
    edits = context_management.get("edits") if is_mapping(context_management) else None
    current, applied, unknown = list(messages), [], []
    for edit in edits if isinstance(edits, list) else ():
        kind = edit.get("type") if is_mapping(edit) else None
        if kind == CLEAR_TOOL_USES:
            current, report = clear_tool_uses(current, edit, count)
        elif kind == CLEAR_THINKING:
            current, report = clear_thinking(current, edit, count)
        else:
            unknown.append(str(kind))
            continue
        if report is not None:
            applied.append(report)
    return Edited(messages=current, applied=applied, unknown=unknown)


def clear_tool_uses(messages: list[Message], edit: Mapping[str, Any], count: Count) -> Cleared:
    """
    Past the trigger, the results of the oldest tool uses (``uses_cleared``) replaced by a placeholder, their inputs
    too with ``clear_tool_inputs``; nothing at all when that would clear fewer tokens than ``clear_at_least``.
    """
    uses = [(index, block) for index, message in enumerate(messages) for block in _tool_uses(message)]
    before = sum(map(count, messages))
    if not _triggered(edit.get("trigger") or DEFAULT_TRIGGER, before, len(uses)):
        return messages, None
    keep = _value(edit.get("keep"), DEFAULT_KEEP_TOOL_USES)
    names = [block.get("name") for _, block in uses]
    cleared = [uses[at][1] for at in uses_cleared(names, keep, set(edit.get("exclude_tools") or ()))]
    ids = {block.get("id") for block in cleared}
    inputs = _inputs_to_clear(edit.get("clear_tool_inputs"), cleared)
    edited = [_cleared_message(message, ids, inputs) for message in messages]
    saved = before - sum(map(count, edited))
    if not cleared or saved < _value(edit.get("clear_at_least"), 0):
        return messages, None
    return edited, {"type": CLEAR_TOOL_USES, "cleared_tool_uses": len(cleared), "cleared_input_tokens": saved}


def uses_cleared(names: Sequence[object], keep: int, excluded: Collection[object]) -> list[int]:
    """
    The positions of the uses ``clear_tool_uses`` clears, given their tool names oldest first: all but the last
    ``keep``, none of the ``excluded``. The one rule, shared with the replay's peer (``benchmarks/lab/peers.py``).
    """
    return [at for at, name in enumerate(names[: max(0, len(names) - keep)]) if name not in excluded]


def clear_thinking(messages: list[Message], edit: Mapping[str, Any], count: Count) -> Cleared:
    """Take the thinking blocks out of every assistant turn but the last ``keep`` (``"all"`` keeps them all)."""
    keep = edit.get("keep")
    if keep == "all":
        return messages, None
    thinking = [i for i, m in enumerate(messages) if m.get("role") == "assistant" and _has_thinking(m)]
    older = set(thinking[: max(0, len(thinking) - _value(keep, DEFAULT_KEEP_THINKING_TURNS))])
    edited = [_without_thinking(message) if index in older else message for index, message in enumerate(messages)]
    turns = sum(1 for new, old in zip(edited, messages, strict=True) if new is not old)
    if not turns:
        return messages, None
    saved = sum(map(count, messages)) - sum(map(count, edited))
    return edited, {"type": CLEAR_THINKING, "cleared_thinking_turns": turns, "cleared_input_tokens": saved}


def _triggered(trigger: object, tokens: int, uses: int) -> bool:
    if not is_mapping(trigger):
        return tokens > DEFAULT_TRIGGER["value"]  # type: ignore[operator]
    threshold = _value(trigger, 0)
    return uses > threshold if trigger.get("type") == "tool_uses" else tokens > threshold


def _value(setting: object, default: int) -> int:
    """The ``value`` of a ``{"type": ..., "value": N}`` setting, else ``default``."""
    value = setting.get("value") if is_mapping(setting) else None
    return value if is_int(value) and value >= 0 else default


def _inputs_to_clear(setting: object, cleared: list[Mapping[str, Any]]) -> set[Any]:
    """``clear_tool_inputs``: ``True`` clears every cleared use's input, a list those of the tools named."""
    if setting is True:
        return {block.get("id") for block in cleared}
    if isinstance(setting, list):
        return {block.get("id") for block in cleared if block.get("name") in setting}
    return set()


def _tool_uses(message: Message) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return []
    return [block for block in content if is_mapping(block) and block.get("type") == "tool_use"]


def _cleared_message(message: Message, ids: set[Any], inputs: set[Any]) -> Message:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    blocks = [_cleared_block(block, ids, inputs) for block in content]
    if all(new is old for new, old in zip(blocks, content, strict=True)):
        return message
    return {**message, "content": blocks}


def _cleared_block(block: Any, ids: set[Any], inputs: set[Any]) -> Any:
    if not is_mapping(block):
        return block
    kind = block.get("type")
    if kind == "tool_result" and block.get("tool_use_id") in ids and block.get("content") != CLEARED_RESULT:
        return {**block, "content": CLEARED_RESULT}
    if kind == "tool_use" and block.get("id") in inputs and block.get("input") != {}:
        return {**block, "input": {}}
    return block


def _has_thinking(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(is_mapping(b) and b.get("type") in _THINKING_TYPES for b in content)


def _without_thinking(message: Message) -> Message:
    """The message without its thinking blocks; as it is when nothing else would be left."""
    kept = [b for b in message["content"] if not (is_mapping(b) and b.get("type") in _THINKING_TYPES)]
    return {**message, "content": kept} if kept else message
