"""OpenAI chat completions: roles, content as a string or a list of parts, ``tool_calls`` answered by ``tool``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

from litellm_budget.core._checks import is_mapping
from litellm_budget.core.formats._parts import map_texts, texts_of
from litellm_budget.core.formats._placement import LEADING_KEY, NOTICE_KEY, SEPARATOR, is_notice, place_notices
from litellm_budget.core.formats._protocol import ASSISTANT, SYSTEM, TOOL, USER
from litellm_budget.core.validity._chat_checks import SYSTEM_ROLES
from litellm_budget.core.validity._chat_checks import check as check_request
from litellm_budget.core.validity._chat_checks import unsupported_reason as unsupported_request
from litellm_budget.typing import Message

if TYPE_CHECKING:
    from litellm_budget.core.formats._protocol import TokenCounter

_KINDS = MappingProxyType(
    {"system": SYSTEM, "developer": SYSTEM, "user": USER, "assistant": ASSISTANT, "tool": TOOL, "function": TOOL}
)


class ChatFormat:
    """The ``MessageFormat`` of chat completions, the format LiteLLM's ``acompletion`` takes."""

    name = "chat"

    def kinds(self, messages: Sequence[Message]) -> list[str]:
        """The roles, with ``developer`` read as system and ``function`` as a tool result."""
        return [_KINDS[message["role"]] for message in messages]

    def history_start(self, messages: Sequence[Message]) -> int | None:  # noqa: ARG002 - chat has no compaction
        """Chat has no compaction: the provider reads every message."""
        return None

    def texts(self, message: Message) -> Iterator[str]:
        return texts_of(message.get("content"))

    def map_texts(self, message: Message, rewrite: Callable[[str], str]) -> Message:
        return map_texts(message, rewrite)

    def calls(self, message: Message) -> Sequence[tuple[str, object, object]]:
        """Each of the assistant's ``tool_calls`` as ``(id, name, arguments)``; a custom tool's with its ``input``."""
        found = []
        for call in message.get("tool_calls") or ():
            custom = is_mapping(call) and call.get("type") == "custom"
            function = call.get("custom" if custom else "function") if is_mapping(call) else None
            if is_mapping(function):
                arguments = function.get("input" if custom else "arguments")
                found.append((str(call.get("id")), function.get("name"), arguments))
        return found

    def answered_ids(self, message: Message) -> Sequence[str]:
        """A ``tool`` message's ``tool_call_id``."""
        answered = message.get("tool_call_id")
        return [answered] if isinstance(answered, str) else []

    def notice(self, text: str, placement: str = "user_note") -> Message:
        """A user-side note; or a system message where it stands (OpenAI takes one anywhere), or in the leading one."""
        leading = {LEADING_KEY: True} if placement == "leading_system" else {}
        return {"role": "user" if placement == "user_note" else "system", "content": text, NOTICE_KEY: True, **leading}

    def finish(self, messages: list[Message]) -> list[Message]:
        """Each notice in its place: merged into the user messages next to it, or the leading system text."""
        return place_notices(
            messages, is_user=lambda message: message.get("role") == "user", merged=_merged, into_leading=_into_leading
        )

    def count_message(self, counter: TokenCounter, message: Message) -> int:
        """OpenAI's accounting, as LiteLLM's ``token_counter`` applies it."""
        return counter.count_message(message)

    unsupported_reason = staticmethod(unsupported_request)
    check = staticmethod(check_request)


#: The chat format; stateless, so one instance serves every request.
CHAT = ChatFormat()


def _merged(run: Sequence[Message]) -> Message:
    """A run of user messages as one: their texts joined, or their parts in order where one has parts."""
    base = next((m for m in run if not is_notice(m)), run[0])
    contents = [m.get("content") for m in run]
    if all(isinstance(c, str) or c is None for c in contents):
        return {**base, "content": SEPARATOR.join(c for c in contents if c)}
    parts = [part for c in contents for part in ([{"type": "text", "text": c}] if isinstance(c, str) else c or [])]
    return {**base, "content": parts}


def _into_leading(messages: list[Message], notice: Message) -> list[Message]:
    """``notice``'s text at the end of the leading system messages' last one (a new system message first, if none)."""
    leading = 0
    while leading < len(messages) and messages[leading].get("role") in SYSTEM_ROLES:
        leading += 1
    if not leading:
        return [{"role": "system", "content": notice["content"]}, *messages]
    last = messages[leading - 1]
    joined = _merged([last, {"role": last.get("role"), "content": notice["content"]}])
    return [*messages[: leading - 1], {**joined, "role": last.get("role")}, *messages[leading:]]
