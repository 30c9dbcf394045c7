"""OpenAI chat messages as Anthropic Messages: for replays, tests and callers converting by hand."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from litellm_budget.core._checks import is_mapping
from litellm_budget.core.formats._anthropic import _is_type, merge_same_roles
from litellm_budget.core.validity._anthropic_checks import RESULT_TYPE
from litellm_budget.typing import Message


def from_chat(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """
    OpenAI chat messages as Anthropic's ``(system, messages)``: system and developer texts become the system
    text, ``tool_calls`` ``tool_use`` blocks (input parsed from the JSON arguments, else ``{"raw": arguments}``),
    tool results ``tool_result`` blocks, and neighbours of one role merge, so consecutive results share one user
    message. Nothing is invented: a conversation that opens with an assistant stays that way.
    """
    system: list[str] = []
    converted: list[Message] = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role in {"system", "developer"}:
            texts = [block["text"] for block in _chat_blocks(content) if block["type"] == "text"]
            system.append(content if isinstance(content, str) else "\n".join(texts))
        elif role == "assistant":
            converted.append({"role": "assistant", "content": _assistant_blocks(message)})
        elif role == "tool":
            result: dict[str, Any] = {"type": RESULT_TYPE, "tool_use_id": message.get("tool_call_id")}
            if content:
                result["content"] = content if isinstance(content, str) else _chat_blocks(content)
            converted.append({"role": "user", "content": [result]})
        elif role == "function":
            converted.append({"role": "user", "content": f"{message.get('name')} returned: {content}"})
        else:
            converted.append(
                {"role": "user", "content": content if isinstance(content, str) else _chat_blocks(content)}
            )
    return ("\n\n".join(system) if system else None), merge_same_roles(converted)


def _assistant_blocks(message: Message) -> list[Any]:
    blocks: list[Any] = [dict(block) for block in message.get("thinking_blocks") or () if is_mapping(block)]
    blocks += _chat_blocks(message.get("content"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        blocks.append(
            {"type": "tool_use", "id": call.get("id"), "name": function.get("name"), "input": _input_of(function)}
        )
    return blocks


def _input_of(function: Mapping[str, Any]) -> Any:
    arguments = function.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"raw": arguments}


def _chat_blocks(content: object) -> list[dict[str, Any]]:
    """Chat content as Anthropic blocks: text parts as text, ``image_url`` as image, others as they are."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, str) or _is_type(part, "text", "input_text", "output_text"):
            text = part if isinstance(part, str) else part.get("text")
            blocks += [{"type": "text", "text": text}] if text else []
        elif _is_type(part, "image_url"):
            blocks.append({"type": "image", "source": _image_source(part["image_url"])})
        elif is_mapping(part):
            blocks.append(dict(part))
    return blocks


def _image_source(image: object) -> dict[str, Any]:
    url = str(image.get("url") if is_mapping(image) else image)
    head, _, data = url.partition(";base64,")
    if url.startswith("data:") and data:
        return {"type": "base64", "media_type": head.removeprefix("data:"), "data": data}
    return {"type": "url", "url": url}
