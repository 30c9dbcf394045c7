"""
The request LiteLLM sends after recalls were answered, in each API's shape. Only the recall calls are echoed: a
call of the client's own tools beside them is made again by the model, or not at all, so none stays unanswered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from litellm_budget.core.api import is_mapping

from .offer import without_tool

CHAT_SURFACE, ANTHROPIC_SURFACE, RESPONSES_SURFACE = "chat_completions", "anthropic_messages", "responses"
#: What the model may have written beside its calls, kept in the echo (thinking blocks must be).
_KEPT_BLOCKS = frozenset({"text", "thinking", "redacted_thinking"})

Call = Mapping[str, Any]


def followup_messages(
    surface: str, messages: Sequence[Any], response: Any, calls: Sequence[Call], answers: Sequence[str]
) -> list[Any]:
    """``messages`` with the model's recall ``calls`` and their ``answers`` after them."""
    pairs = list(zip(calls, answers, strict=True))
    if surface == ANTHROPIC_SURFACE:
        blocks = [block for block in _blocks(response) if block.get("type") in _KEPT_BLOCKS]
        blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]} for c in calls]
        results = [{"type": "tool_result", "tool_use_id": c["id"], "content": text} for c, text in pairs]
        return [*messages, {"role": "assistant", "content": blocks}, {"role": "user", "content": results}]
    if surface == RESPONSES_SURFACE:
        items = [{"role": "user", "content": messages}] if isinstance(messages, str) else list(messages)
        for call, text in pairs:
            arguments = json.dumps(call["arguments"])
            items.append({"type": "function_call", "call_id": call["id"], "name": call["name"], "arguments": arguments})
            items.append({"type": "function_call_output", "call_id": call["id"], "output": text})
        return items
    echoed = [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
        for c in calls
    ]
    assistant = {"role": "assistant", "content": _chat_text(response), "tool_calls": echoed}
    results = [{"role": "tool", "tool_call_id": c["id"], "content": text} for c, text in pairs]
    return [*messages, assistant, *results]


def closing_patch(surface: str, tools: object) -> tuple[list[Any] | None, dict[str, object]]:
    """
    The tools and parameters of a follow-up after which no recall may come: the tools less the recall tool, or where
    it was the only one (an API refuses tool calls in a history without tools), the same tools and ``tool_choice`` none.
    """
    rest = without_tool(tools)
    if rest:
        return rest, {}
    return None, {"tool_choice": {"type": "none"} if surface == ANTHROPIC_SURFACE else "none"}


def _blocks(response: Any) -> list[dict[str, Any]]:
    content = response.get("content") if is_mapping(response) else getattr(response, "content", None)
    found = []
    for block in content if isinstance(content, list) else []:
        dumped = block.model_dump() if hasattr(block, "model_dump") else block
        if is_mapping(dumped):
            found.append(dict(dumped))
    return found


def _chat_text(response: Any) -> str | None:
    try:
        text = response.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return None
    return text if isinstance(text, str) and text else None
