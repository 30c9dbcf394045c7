"""OpenAI chat completions: roles, content as a string or a list of parts, ``tool_calls`` answered by ``tool``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from litellm_budget.core.checks import is_mapping
from litellm_budget.typing import Message

from . import ASSISTANT, SYSTEM, TOOL, USER

if TYPE_CHECKING:
    from litellm_budget.core.tokens import TokenCounter

TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
IMAGE_PART_TYPES = frozenset({"image_url", "image", "input_image"})
SYSTEM_ROLES = frozenset({"system", "developer"})
ANSWER_ROLES = frozenset({"tool", "function"})
_KINDS = {"system": SYSTEM, "developer": SYSTEM, "user": USER, "assistant": ASSISTANT, "tool": TOOL, "function": TOOL}


class ChatFormat:
    """The ``MessageFormat`` of chat completions, the format LiteLLM's ``acompletion`` takes."""

    name = "chat"

    def kinds(self, messages: Sequence[Message]) -> list[str]:
        """The roles, with ``developer`` read as system and ``function`` as a tool result."""
        return [_KINDS[message["role"]] for message in messages]

    def texts(self, message: Message) -> Iterator[str]:
        """Every text of the content."""
        return texts_of(message.get("content"))

    def map_texts(self, message: Message, rewrite: Callable[[str], str]) -> Message:
        """See ``map_texts``."""
        return map_texts(message, rewrite)

    def call_ids(self, message: Message) -> Sequence[str]:
        """The ``id`` of each of the assistant's ``tool_calls``."""
        return [call["id"] for call in message.get("tool_calls") or ()]

    def answered_ids(self, message: Message) -> Sequence[str]:
        """A ``tool`` message's ``tool_call_id``."""
        answered = message.get("tool_call_id")
        return [answered] if isinstance(answered, str) else []

    def notice(self, text: str) -> Message:
        """A system message: chat allows them anywhere in the list."""
        return {"role": "system", "content": text}

    def finish(self, messages: list[Message]) -> list[Message]:
        """Chat takes any order of roles, a system message anywhere: nothing to do."""
        return messages

    def count_message(self, counter: TokenCounter, message: Message) -> int:
        """OpenAI's accounting, as LiteLLM's ``token_counter`` applies it."""
        return counter.count_message(message)

    def unsupported_reason(self, messages: object, tools: object, max_tokens: object) -> str | None:
        """See ``chat_checks.unsupported_reason``."""
        from .chat_checks import unsupported_reason

        return unsupported_reason(messages, tools, max_tokens)


#: The chat format; stateless, so one instance serves every request.
CHAT = ChatFormat()


def part_text(part: object) -> str | None:
    """The text of a content part (a bare string or a text part); ``None`` for images and others."""
    if isinstance(part, str):
        return part
    if is_mapping(part) and part.get("type") in TEXT_PART_TYPES and isinstance(part.get("text"), str):
        return str(part["text"])
    return None


def texts_of(content: object) -> Iterator[str]:
    """Every text in ``content``: the string itself, or each text part of a list."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            text = part_text(part)
            if text is not None:
                yield text


def map_texts(message: Mapping[str, Any], rewrite: Callable[[str], str]) -> dict[str, Any]:
    """
    A copy of ``message`` whose every text went through ``rewrite``; other parts are kept as
    they are. A text part the rewrite empties is left out, because some providers refuse
    empty text blocks.
    """
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": rewrite(content)}
    parts = []
    for part in content or ():
        text = part_text(part)
        new_text = text if text is None else rewrite(text)
        if text is None or new_text is text:
            parts.append(part)
        elif new_text or not text:
            parts.append(new_text if isinstance(part, str) else {**part, "text": new_text})
    return {**message, "content": parts}
