"""
Anthropic Messages: content blocks, ``tool_use`` answered by ``tool_result`` blocks in the next user message, strict
user/assistant alternation, a top-level ``system`` the policies see as a first pseudo-message (``join_system``). Client
system messages (Claude Code's ``mid-conversation-system`` beta) are pinned like it and transparent to alternation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from litellm_budget.core._checks import is_mapping
from litellm_budget.core.formats._history import pinned_kinds
from litellm_budget.core.formats._placement import LEADING_KEY, NOTICE_KEY, place_notices
from litellm_budget.core.formats._protocol import ASSISTANT, SYSTEM, TOOL, USER
from litellm_budget.core.validity._anthropic_checks import CALL_TYPES, COMPACTION, HISTORY_MARKS, RESULT_TYPE
from litellm_budget.core.validity._anthropic_checks import check as check_request
from litellm_budget.core.validity._anthropic_checks import unsupported_reason as unsupported_request
from litellm_budget.typing import Message

if TYPE_CHECKING:
    from litellm_budget.core.formats._protocol import TokenCounter

_TURN_ROLES = frozenset({"user", "assistant"})
#: Marks the pseudo-message ``join_system`` makes, so a client's own system message is never taken for it.
JOINED_KEY = "litellm_budget_joined_system"


class AnthropicFormat:
    """The ``MessageFormat`` of Anthropic Messages, over ``join_system(system, messages)``."""

    name = "anthropic"

    def kinds(self, messages: Sequence[Message]) -> list[str]:
        """Roles as kinds, a user message holding a ``tool_result`` as ``TOOL``; compactions and tool changes pinned."""
        kinds = [_kind(message) for message in messages]
        start, held = _markers(messages)
        return pinned_kinds(kinds, start, held) if start is not None or held else kinds

    def history_start(self, messages: Sequence[Message]) -> int | None:
        """The message of the newest ``compaction`` block with a summary: the API ignores what is before it."""
        return _markers(messages)[0]

    def texts(self, message: Message) -> Iterator[str]:
        """Text blocks (or a string content) and the text of each ``tool_result``, in order."""
        content = message.get("content")
        if isinstance(content, str):
            yield content
            return
        for block in content if isinstance(content, list) else ():
            if _is_text(block):
                yield block["text"]
            elif _is_type(block, RESULT_TYPE):
                inner = block.get("content")
                if isinstance(inner, str):
                    yield inner
                elif isinstance(inner, list):
                    yield from (part["text"] for part in inner if _is_text(part))

    def map_texts(self, message: Message, rewrite: Callable[[str], str]) -> Message:
        """
        Every other block and key is kept (thinking and its signature, ``cache_control``); a text block the rewrite
        empties goes (the API refuses empty text), a ``tool_result`` stays, with its ``tool_use_id``, even when emptied.
        """
        content = message.get("content")
        if isinstance(content, str):
            return {**message, "content": rewrite(content)}
        if not isinstance(content, list):
            return dict(message)
        return {**message, "content": _map_blocks(content, rewrite)}

    def calls(self, message: Message) -> Sequence[tuple[str, object, object]]:
        """Each ``tool_use`` and ``server_tool_use`` block of an assistant, as ``(id, name, input)``."""
        if message.get("role") != "assistant":
            return []
        return [
            (str(block.get("id")), block.get("name"), block.get("input"))
            for block in _blocks(message)
            if _is_type(block, *CALL_TYPES)
        ]

    def answered_ids(self, message: Message) -> Sequence[str]:
        """
        The ``tool_use_id`` of a user message's ``tool_result`` blocks; in an assistant message, of its server tool
        results (``web_search_tool_result``, ...), which answer its own ``server_tool_use``.
        """
        if message.get("role") == "user":
            return [block["tool_use_id"] for block in _blocks(message) if _is_type(block, RESULT_TYPE)]
        return [
            block["tool_use_id"]
            for block in _blocks(message)
            if isinstance(block.get("tool_use_id"), str) and not _is_type(block, RESULT_TYPE)
        ]

    def notice(self, text: str, placement: str = "user_note") -> Message:
        """A user message of one text block (``messages`` has no system role); ``leading_system``: in ``system``."""
        leading = {LEADING_KEY: True} if placement == "leading_system" else {}
        return {"role": "user", "content": [{"type": "text", "text": text}], NOTICE_KEY: True, **leading}

    def finish(self, messages: list[Message]) -> list[Message]:
        """Notices placed, then same-role neighbours merged so roles alternate; only for a request a policy changed."""
        # merge_same_roles merges notices' runs too: place_notices only takes the leading ones out and unmarks the rest.
        placed = place_notices(messages, is_user=lambda _: False, merged=lambda run: run[0], into_leading=_into_system)
        return merge_same_roles(placed)

    def count_message(self, counter: TokenCounter, message: Message) -> int:
        """
        Counted as chat, each ``tool_result`` as a stub then its blocks: text counts as text, an image at the flat image
        price, not as escaped JSON. Claude's tokenizer and framing differ; the learned per-model ratio covers that.
        """
        content = message.get("content")
        if isinstance(content, list) and any(_is_type(block, RESULT_TYPE) for block in content):
            message = {**message, "content": [part for block in content for part in _counted_parts(block)]}
        return counter.count_message(message)

    unsupported_reason = staticmethod(unsupported_request)
    check = staticmethod(check_request)


#: The Anthropic Messages format; stateless, so one instance serves every request.
ANTHROPIC = AnthropicFormat()


def join_system(system: object, messages: Sequence[Message]) -> list[Message]:
    """The list the policies fit: ``system`` (when not ``None``) as a pseudo-message, then ``messages``."""
    if system is None:
        return list(messages)
    return [{"role": "system", "content": system, JOINED_KEY: True}, *messages]


def split_system(messages: Sequence[Message]) -> tuple[Any, list[Message]]:
    """Undo ``join_system``: the request's ``system`` (the same object, or ``None``) and its messages."""
    if messages and messages[0].get(JOINED_KEY) is True:
        return messages[0].get("content"), list(messages[1:])
    return None, list(messages)


def merge_same_roles(messages: Sequence[Message]) -> list[Message]:
    """
    Neighbouring user (or assistant) messages as one, their blocks concatenated (a string as one text block); system
    messages between them, which alternation ignores, end up after it. Others stay the very same objects.
    """
    merged: list[Message] = []
    last_turn: int | None = None  # index in ``merged`` of the last user or assistant message
    for message in messages:
        role = message.get("role")
        if role not in _TURN_ROLES:
            merged.append(message)
            continue
        previous = merged[last_turn] if last_turn is not None else None
        if previous is not None and previous.get("role") == role:
            merged[last_turn] = {**previous, "content": [*_as_blocks(previous), *_as_blocks(message)]}  # type: ignore[index]
        else:
            merged.append(message)
            last_turn = len(merged) - 1
    return merged


def _into_system(messages: list[Message], notice: Message) -> list[Message]:
    """``notice``'s text block at the end of the request's ``system`` (made for it, if there is none)."""
    if messages and messages[0].get(JOINED_KEY) is True:
        system = messages[0]
        return [{**system, "content": [*_as_blocks(system), *notice["content"]]}, *messages[1:]]
    return [{"role": "system", "content": notice["content"], JOINED_KEY: True}, *messages]


def _markers(messages: Sequence[Message]) -> tuple[int | None, list[int]]:
    """
    The newest message holding a ``compaction`` block with a summary (one without is a failed compaction, a
    no-op), and every user or assistant message holding a compaction or a tool change.
    """
    start, held = None, []
    for index, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") == "system" or not isinstance(content, list):
            continue
        marks = [block for block in content if _is_type(block, *HISTORY_MARKS)]
        if marks:
            held.append(index)
            if any(_is_type(b, COMPACTION) and isinstance(b.get("content"), str) and b["content"] for b in marks):
                start = index
    return start, held


def _kind(message: Message) -> str:
    role = message["role"]
    if role == "system":
        return SYSTEM
    if role == "assistant":
        return ASSISTANT
    return TOOL if any(_is_type(block, RESULT_TYPE) for block in _blocks(message)) else USER


def _map_blocks(blocks: list[Any], rewrite: Callable[[str], str]) -> list[Any]:
    mapped = []
    for block in blocks:
        if _is_text(block):
            text = block["text"]
            new_text = rewrite(text)
            if new_text is text:
                mapped.append(block)
            elif new_text or not text:
                mapped.append({**block, "text": new_text})
        elif _is_type(block, RESULT_TYPE) and isinstance(block.get("content"), str | list):
            mapped.append(_map_result(block, rewrite))
        else:
            mapped.append(block)
    return mapped


def _map_result(block: Mapping[str, Any], rewrite: Callable[[str], str]) -> Mapping[str, Any]:
    inner = block["content"]
    new = rewrite(inner) if isinstance(inner, str) else _map_blocks(inner, rewrite)
    if new is inner:
        return block
    if not new and inner:
        return {key: value for key, value in block.items() if key != "content"}
    return {**block, "content": new}


def _counted_parts(block: object) -> Iterator[object]:
    if not _is_type(block, RESULT_TYPE):
        yield block
        return
    yield {key: value for key, value in block.items() if key != "content"}
    inner = block.get("content")
    if isinstance(inner, str):
        yield {"type": "text", "text": inner}
    elif isinstance(inner, list):
        yield from inner
    elif inner is not None:
        yield {"content": inner}


def _as_blocks(message: Message) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content or ())


def _blocks(message: Message) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [block for block in content if is_mapping(block)] if isinstance(content, list) else []


def _is_type(block: object, *types: str) -> TypeGuard[Mapping[str, Any]]:
    return is_mapping(block) and block.get("type") in types


def _is_text(block: object) -> TypeGuard[Mapping[str, Any]]:
    return _is_type(block, "text") and isinstance(block.get("text"), str)
