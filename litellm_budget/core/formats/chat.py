"""OpenAI chat completions: roles, content as a string or a list of parts, ``tool_calls`` answered by ``tool``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from litellm_budget.core.checks import is_mapping
from litellm_budget.typing import Message

from .chat_checks import unsupported_reason
from .parts import map_texts, texts_of
from .seam import ASSISTANT, SYSTEM, TOOL, USER

if TYPE_CHECKING:
    from litellm_budget.core.tokens import TokenCounter

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
        """See ``parts.map_texts``."""
        return map_texts(message, rewrite)

    def call_ids(self, message: Message) -> Sequence[str]:
        """The ``id`` of each of the assistant's ``tool_calls``."""
        return [call["id"] for call in message.get("tool_calls") or ()]

    def calls(self, message: Message) -> Sequence[tuple[str, object, object]]:
        """Each of the assistant's ``tool_calls`` as ``(id, name, arguments)``."""
        found = []
        for call in message.get("tool_calls") or ():
            function = call.get("function") if is_mapping(call) else None
            if is_mapping(function):
                found.append((str(call.get("id")), function.get("name"), function.get("arguments")))
        return found

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
        return unsupported_reason(messages, tools, max_tokens)


#: The chat format; stateless, so one instance serves every request.
CHAT = ChatFormat()
