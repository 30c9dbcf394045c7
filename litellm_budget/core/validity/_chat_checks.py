"""Decide whether a chat completions request is well-formed enough to trim safely, and say why not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from litellm_budget.core._checks import is_mapping
from litellm_budget.core.validity._verdicts import START, Resume, Verdict, first_problem

SYSTEM_ROLES = frozenset({"system", "developer"})
#: The roles of what answers a call: a ``tool`` result, or a legacy ``function`` one.
ANSWER_ROLES = frozenset({"tool", "function"})
ROLES = SYSTEM_ROLES | ANSWER_ROLES | {"user", "assistant"}


def unsupported_reason(messages: object, tools: object, max_tokens: object) -> str | None:
    """Why this request cannot be trimmed safely, or ``None`` when it can (``check``)."""
    return check(messages, tools, max_tokens).reason


def check(messages: object, tools: object, max_tokens: object, resume: Resume = START) -> Verdict:
    """
    Why this request cannot be trimmed safely (``None`` when it can), and the pairing state at its end. Trimming relies
    on OpenAI's shape: known roles, text or list content, each tool result answering a call of the assistant message
    just before it. Anything else is forwarded untouched for the provider to refuse, and the report says why.
    """
    listed = first_problem(messages, tools, max_tokens, resume, _message_problem)
    return listed if isinstance(listed, Verdict) else _pairing(listed, resume)


def _message_problem(message: object) -> str | None:
    if not is_mapping(message):
        return f"is {type(message).__name__}, not an object"
    role = message.get("role")
    if role not in ROLES:
        return "has no role" if role is None else "has an unknown role"
    content = message.get("content")
    if content is not None and not isinstance(content, str) and not _is_content_list(content):
        return f"content is {type(content).__name__}, not text or a list of parts"
    calls = message.get("tool_calls")
    if calls is not None and (role != "assistant" or not _are_tool_calls(calls)):
        return "has malformed tool_calls"
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        return "is a tool result without a tool_call_id"
    return None


def _pairing(messages: Sequence[Mapping[str, Any]], resume: Resume) -> Verdict:
    """
    Every tool result answers an open call of the assistant just before it, and every call is answered; the
    state: whether a result may follow the last message (it is an assistant's or answers one).
    """
    open_calls: set[str] = set()
    answering = bool(resume.state) if resume.at else False
    for index in range(resume.at, len(messages)):
        message = messages[index]
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            if not answering or call_id not in open_calls:
                return Verdict(f"message {index}: tool result answers no open tool call")
            open_calls.discard(call_id)
            continue
        if role == "function":
            if not answering:
                return Verdict(f"message {index}: function result follows no assistant call")
            continue
        if open_calls:
            return Verdict(f"message {index}: follows an assistant tool call that was not answered")
        answering = role == "assistant"
        ids = [call["id"] for call in message.get("tool_calls") or ()]
        if len(set(ids)) != len(ids):
            return Verdict(f"message {index}: duplicated tool_call ids")
        open_calls = set(ids)
    if open_calls:
        return Verdict("the last assistant tool call was not answered")
    return Verdict(None, answering)


def _is_content_list(content: object) -> bool:
    if not isinstance(content, list):
        return False
    return all(isinstance(part, str) or (is_mapping(part) and isinstance(part.get("type"), str)) for part in content)


def _are_tool_calls(calls: object) -> bool:
    # A function call holds ``function``; a custom tool's call (``type: custom``) holds ``custom``.
    return isinstance(calls, list) and all(
        is_mapping(call)
        and isinstance(call.get("id"), str)
        and is_mapping(call.get("custom" if call.get("type") == "custom" else "function"))
        for call in calls
    )
