"""Decide whether an Anthropic Messages request is well-formed enough to trim safely, and say why not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from litellm_budget.core._checks import is_mapping
from litellm_budget.core.validity._verdicts import START, Resume, Verdict, first_problem

#: Blocks with which an assistant calls a tool; ``server_tool_use`` is answered in the same message.
CALL_TYPES = frozenset({"tool_use", "server_tool_use"})
RESULT_TYPE = "tool_result"
#: Where the API starts reading the history (``formats._history``); with the tool changes, the blocks a fit keeps.
COMPACTION = "compaction"
TOOL_CHANGES = frozenset({"tool_addition", "tool_removal"})
HISTORY_MARKS = TOOL_CHANGES | {COMPACTION}
ROLES = frozenset({"user", "assistant"})


def unsupported_reason(messages: object, tools: object, max_tokens: object) -> str | None:
    """Why this request cannot be trimmed safely, or ``None`` when it can (``check``)."""
    return check(messages, tools, max_tokens).reason


def check(messages: object, tools: object, max_tokens: object, resume: Resume = START) -> Verdict:
    """
    Why ``join_system(system, messages)`` cannot be trimmed safely (``None`` when it can), and the calls left open at
    its end. Trimming relies on the Messages API's shape: user and assistant messages (system ones anywhere, as Claude
    Code's ``mid-conversation-system`` beta sends them), content as text or a list of typed blocks (a system message may
    hold only its ``output_config``), the first message a user's or a compaction's, every ``tool_use`` answered by a
    ``tool_result`` in the very next message (unless the assistant's is the last) and every ``tool_result`` answering
    the assistant message right before it, ahead of any other block of its message. Anything else is forwarded untouched
    for the provider to refuse, and the report says why. ``resume`` starts after a prefix whose very content passed.
    """
    listed = first_problem(messages, tools, max_tokens, resume, _message_problem)
    if isinstance(listed, Verdict):
        return listed
    start = _start_problem(listed)
    return Verdict(start) if start is not None else _pairing(listed, resume)


def _message_problem(message: object) -> str | None:
    if not is_mapping(message):
        return f"is {type(message).__name__}, not an object"
    role = message.get("role")
    if role not in ROLES and role != "system":
        return "has no role" if role is None else "has an unknown role"
    content = message.get("content")
    if isinstance(content, str) or (role == "system" and content is None and is_mapping(message.get("output_config"))):
        return None
    if not _is_block_list(content):
        return f"content is {type(content).__name__}, not text or a list of blocks"
    return _blocks_problem(role, content)


def _blocks_problem(role: str, blocks: list[Mapping[str, Any]]) -> str | None:
    seen_other = False
    for block in blocks:
        kind = block["type"]
        if kind in CALL_TYPES and (role != "assistant" or not isinstance(block.get("id"), str)):
            return f"has a malformed {kind} block"
        if kind == RESULT_TYPE:
            inner = block.get("content")
            if role != "user" or not isinstance(block.get("tool_use_id"), str):
                return "has a malformed tool_result block"
            if inner is not None and not isinstance(inner, str) and not _is_block_list(inner):
                return "has a tool_result whose content is not text or a list of blocks"
            if seen_other:
                return "has a tool_result after another block (tool results come first)"
        else:
            seen_other = True
    return None


def _start_problem(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """A first message besides system ones: a user's, or an assistant's holding a compaction (a resumed history)."""
    first = next((i for i, message in enumerate(messages) if message["role"] != "system"), None)
    if first is None:
        return "no messages besides the system"
    content = messages[first]["content"]
    resumes = isinstance(content, list) and any(block["type"] == COMPACTION for block in content)
    if messages[first]["role"] != "user" and not resumes:
        return f"message {first}: the first message is not a user message"
    return None


def _pairing(messages: Sequence[Mapping[str, Any]], resume: Resume) -> Verdict:
    """Each tool_use answered in the very next message, a tool_result nothing else; state: the calls left open."""
    open_calls: set[str] = set(resume.state) if resume.at and isinstance(resume.state, frozenset) else set()
    for index in range(resume.at, len(messages)):
        message = messages[index]
        if message["role"] == "system":
            continue
        ids = _ids(message, "tool_use", "id") if message["role"] == "assistant" else _ids(message, RESULT_TYPE)
        if len(set(ids)) != len(ids):
            return Verdict(f"message {index}: duplicated tool ids")
        if message["role"] == "assistant":
            if open_calls:
                return Verdict(f"message {index}: follows an assistant tool_use that was not answered")
            open_calls = set(ids)
            continue
        if not open_calls.issuperset(ids):
            return Verdict(f"message {index}: tool_result answers no tool_use of the assistant message before it")
        if open_calls.difference(ids):
            return Verdict(f"message {index}: does not answer every tool_use of the assistant message before it")
        open_calls = set()
    return Verdict(None, frozenset(open_calls))


def _ids(message: Mapping[str, Any], kind: str, key: str = "tool_use_id") -> list[str]:
    content = message["content"]
    return [block[key] for block in content if block["type"] == kind] if isinstance(content, list) else []


def _is_block_list(content: object) -> TypeGuard[list[Mapping[str, Any]]]:
    return isinstance(content, list) and all(is_mapping(b) and isinstance(b.get("type"), str) for b in content)
