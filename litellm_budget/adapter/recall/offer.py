"""
The ``litellm_budget_recall`` tool as each API defines it, where a request may be offered it, and its handles' scope.
The definition is the same bytes in every request, after the client's own tools, so the cached tools prefix stays put.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from litellm_budget.adapter.records.conversations import conversation_key
from litellm_budget.adapter.request.kwargs import read_metadata
from litellm_budget.core.api import TOOL_NAME, MessageFormat, RecallScope, is_int, is_mapping

#: The secret handles are keyed with, in this order: a secret of its own, the proxy's master key
#: (the same on every replica), else one per process (an SDK process has no replicas).
SECRET_ENV = "LITELLM_BUDGET_RECALL_SECRET"  # noqa: S105 - the variable's name, not a secret
_PROCESS_SECRET = secrets.token_bytes(32)

_DESCRIPTION = (
    "Shows again a tool output or an earlier step that the gateway elided or dropped to fit the context "
    "window: its placeholder or its line in the note of omitted messages names it as `recall r-...`. "
    "Give the handle; optionally a range of lines or a pattern, to see only those lines."
)


def recall_tool(fmt_name: str) -> dict[str, Any]:
    """The tool in format ``fmt_name``'s shape: a new object for each request, which LiteLLM may edit."""
    parameters = {
        "type": "object",
        "properties": {
            "handle": {"type": "string", "description": "The handle, such as r-1a2b3c4d."},
            "lines": {"type": "string", "description": "Only these lines, such as 120-180 (1-based, inclusive)."},
            "pattern": {"type": "string", "description": "Only the lines holding this text (case-insensitive)."},
        },
        "required": ["handle"],
    }
    if fmt_name == "anthropic":
        return {"name": TOOL_NAME, "description": _DESCRIPTION, "input_schema": parameters}
    function = {"name": TOOL_NAME, "description": _DESCRIPTION, "parameters": parameters}
    return {"type": "function", **function} if fmt_name == "responses" else {"type": "function", "function": function}


class Scope(NamedTuple):
    """A request's recall scope, and the id its stored texts are found by (safe to log: it names no key)."""

    scope: RecallScope
    scope_id: str


def has_tool(tools: object) -> bool:
    return isinstance(tools, list) and any(_tool_name(tool) == TOOL_NAME for tool in tools)


def with_tool(tools: object, fmt: MessageFormat) -> list[Any]:
    listed = list(tools) if isinstance(tools, list) else []
    return listed if has_tool(listed) else [*listed, recall_tool(fmt.name)]


def without_tool(tools: object) -> list[Any]:
    return [tool for tool in tools if _tool_name(tool) != TOOL_NAME] if isinstance(tools, list) else []


def offerable(request: Mapping[str, Any], fmt: MessageFormat) -> bool:
    """Whether LiteLLM can serve the tool here: it runs no agentic hook for a streamed chat or Responses request."""
    if request.get("stream") and fmt.name != "anthropic":
        return False
    choice = request.get("tool_choice")
    if choice == "none" or (is_mapping(choice) and choice.get("type") == "none"):
        return False
    return loop_depth(request) == 0


def loop_depth(request: Mapping[str, Any]) -> int:
    """How deep in LiteLLM's agentic loop this call is: 0 for a client's request, 1 on for follow-ups."""
    found = request.get("_agentic_loop_depth")
    if found is None:
        found = read_metadata(request).get("_agentic_loop_depth")
    return found if is_int(found) else 0


def scope_of(request: Mapping[str, Any], model: str, fmt: MessageFormat, messages: Sequence[Any]) -> Scope | None:
    """
    The scope of a request's handles: the keyed hash of its conversation key and its API key's hash,
    so two conversations, or one under two keys, never share a handle; ``None`` without a conversation.
    """
    conversation = conversation_key(model, fmt, messages)
    if conversation is None:
        return None
    salt = hmac.new(_secret(), f"{conversation}\0{_key_hash(request)}".encode(), hashlib.sha256).digest()
    return Scope(RecallScope(salt), hashlib.sha256(b"scope\0" + salt).hexdigest()[:32])


def _key_hash(request: Mapping[str, Any]) -> str:
    """The hash of the API key the proxy authenticated the request with (``""`` in the SDK)."""
    for key in ("litellm_metadata", "metadata"):
        metadata = request.get(key)
        found = metadata.get("user_api_key_hash") if is_mapping(metadata) else None
        if isinstance(found, str) and found:
            return found
    return ""


def _secret() -> bytes:
    value = os.environ.get(SECRET_ENV) or os.environ.get("LITELLM_MASTER_KEY")
    if value:
        return value.encode()
    server = sys.modules.get("litellm.proxy.proxy_server")
    master = getattr(server, "master_key", None)
    return master.encode() if isinstance(master, str) and master else _PROCESS_SECRET


def _tool_name(tool: object) -> object:
    if not is_mapping(tool):
        return None
    function = tool.get("function")
    return function.get("name") if is_mapping(function) else tool.get("name")
