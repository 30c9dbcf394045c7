"""OpenAI Responses: an ``input`` list of items, calls and outputs paired by ``call_id``, reasoning with its step."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from litellm_budget.core._canonical import as_json
from litellm_budget.core._checks import is_mapping
from litellm_budget.core.formats._history import pinned_kinds
from litellm_budget.core.formats._parts import map_texts as map_content_texts
from litellm_budget.core.formats._parts import part_text, texts_of
from litellm_budget.core.formats._placement import LEADING_KEY, NOTICE_KEY, is_notice, place_notices
from litellm_budget.core.formats._protocol import ASSISTANT, SYSTEM, TOOL, USER
from litellm_budget.core.validity._responses_checks import (
    BUILTIN_CALLS,
    CALL_TYPES,
    COMPACTION,
    OUTPUT_TYPES,
    PAIRED_CALLS,
    PAIRED_OUTPUTS,
    PINNED_TYPES,
    STEP_TYPES,
    SYSTEM_ROLES,
    item_type,
)
from litellm_budget.core.validity._responses_checks import check as check_request
from litellm_budget.core.validity._responses_checks import unsupported_reason as unsupported_request
from litellm_budget.typing import Message

if TYPE_CHECKING:
    from litellm_budget.core.formats._protocol import TokenCounter

#: What opens a new step right after an output even in a step that began with reasoning.
STEP_OPENERS = frozenset({"reasoning"})
# Ciphertext is base64 of what the provider decrypts (hidden reasoning, compacted history): BPE splits it into
# ~1.5 characters a token, several times the plaintext's cost, and slowly. Base64 holds 3 bytes in 4 characters
# and text averages ~4 bytes a token, so length / 4 stays a little above the plaintext's tokens, in constant time.
ENCRYPTED_CHARS_PER_TOKEN = 4


def is_step_item(item: Message) -> bool:
    """An item of the assistant's side of a step: its message, reasoning, calls (hosted tools' too)."""
    kind = item_type(item)
    return kind in STEP_TYPES or (kind == "message" and item.get("role") == "assistant")


class ResponsesFormat:
    """The ``MessageFormat`` of an OpenAI Responses ``input`` list (see ``as_items`` for a string input)."""

    name = "responses"

    def kinds(self, messages: Sequence[Message]) -> list[str]:
        """
        Messages by role; the first assistant-side item after a user message or an output opens a step (``ASSISTANT``),
        the rest of it is ``TOOL``, so reasoning stays with the calls it led to. No step opens while a call is
        unanswered, so a call and its output share a unit however the client orders them; in a step that began with
        reasoning only a new reasoning item opens the next: a reasoning model starts every response with one, so a
        call after an output without one is a parallel call of the same response, which the API refuses without its
        reasoning. Compactions, their triggers, added tools and all before the last one are system.
        """
        kinds: list[str] = []
        open_calls: set[str] = set()
        in_step = reasoning_step = False
        for item in messages:
            kind = item_type(item)
            if is_step_item(item):
                continues = in_step or bool(open_calls) or (reasoning_step and kind not in STEP_OPENERS)
                kinds.append(TOOL if continues else ASSISTANT)
                reasoning_step = (reasoning_step and continues) or kind == "reasoning"
                in_step = True
                if kind in PAIRED_CALLS:
                    open_calls.add(item["call_id"])
            elif kind == "message" or kind in PINNED_TYPES:
                system = kind in PINNED_TYPES or item["role"] in SYSTEM_ROLES
                kinds.append(SYSTEM if system else USER)
                in_step, reasoning_step = in_step and system, reasoning_step and system
            else:
                kinds.append(TOOL)
                if kind in PAIRED_OUTPUTS:
                    open_calls.discard(item["call_id"])
                    in_step = False
        start = self.history_start(messages)
        return kinds if start is None else pinned_kinds(kinds, start, ())

    def history_start(self, messages: Sequence[Message]) -> int | None:
        """The newest ``compaction`` item: it stands for everything before it."""
        return next((i for i in range(len(messages) - 1, -1, -1) if item_type(messages[i]) == COMPACTION), None)

    def texts(self, message: Message) -> Iterator[str]:
        """A message's text, or an output's: never arguments, reasoning, compaction or images."""
        key = _text_key(message)
        return texts_of(message[key]) if key is not None else iter(())

    def map_texts(self, message: Message, rewrite: Callable[[str], str]) -> Message:
        """A copy whose texts went through ``rewrite``; every other key, ``call_id`` included, is kept."""
        key = _text_key(message)
        if key is None:
            return dict(message)
        return {**message, key: map_content_texts({"content": message[key]}, rewrite)["content"]}

    def calls(self, message: Message) -> Sequence[tuple[str, object, object]]:
        """
        A function call as ``(call_id, name, arguments)``; a custom tool call with its ``input``; a
        built-in tool's call under its type, with its ``action`` (shell) or ``operation`` (patch).
        """
        kind = item_type(message)
        if kind in BUILTIN_CALLS:
            arguments = message.get("action") if "action" in message else message.get("operation")
            return [(str(message.get("call_id")), kind, arguments)]
        if kind not in CALL_TYPES:
            return []
        arguments = message.get("arguments") if "arguments" in message else message.get("input")
        return [(str(message.get("call_id")), message.get("name"), arguments)]

    def answered_ids(self, message: Message) -> Sequence[str]:
        """The ``call_id`` an output answers."""
        return [message["call_id"]] if item_type(message) in PAIRED_OUTPUTS else []

    def notice(self, text: str, placement: str = "user_note") -> Message:
        """
        A user-side note (a server rendering ``input`` with a chat template takes it where a developer message
        mid-conversation fails); a developer message where it stands (OpenAI takes one anywhere), or in the leading one.
        """
        role = "user" if placement == "user_note" else "developer"
        leading = {LEADING_KEY: True} if placement == "leading_system" else {}
        content = [{"type": "input_text", "text": text}]
        return {"type": "message", "role": role, "content": content, NOTICE_KEY: True, **leading}

    def finish(self, messages: list[Message]) -> list[Message]:
        """Each notice in its place: merged into the user messages next to it, or the leading developer text."""
        return place_notices(messages, is_user=_is_user_message, merged=_merged, into_leading=_into_leading)

    def count_message(self, counter: TokenCounter, message: Message) -> int:
        """
        The text (or output) as chat counts content, with chat's framing per item; every other
        field as its text or JSON (names, arguments, ids), and ciphertext by its length.
        """
        key = _text_key(message)
        total = counter.count_message({"content": message[key]} if key is not None else {})
        for field, value in message.items():
            if field == key or value is None:
                continue
            if field == "encrypted_content" and isinstance(value, str):
                total += math.ceil(len(value) / ENCRYPTED_CHARS_PER_TOKEN)
            else:
                total += counter.count_text(value if isinstance(value, str) else as_json(value))
        return total

    unsupported_reason = staticmethod(unsupported_request)
    check = staticmethod(check_request)


#: The Responses format; stateless, so one instance serves every request.
RESPONSES = ResponsesFormat()


def as_items(value: str | list[Message]) -> list[Message]:
    """A Responses ``input`` as a list of items: a string is one user message."""
    return [{"type": "message", "role": "user", "content": value}] if isinstance(value, str) else value


def from_chat(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """
    OpenAI chat messages as Responses items: system and developer messages as developer messages, user and assistant
    text as messages, each tool call as a ``function_call`` (its ``call_id`` the call's id), each tool message as the
    ``function_call_output`` answering it. A ``function`` message raises ``ValueError``: Responses has no item for it.
    """
    items: list[dict[str, Any]] = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role in SYSTEM_ROLES or role == "user":
            items.append(_message_item("user" if role == "user" else "developer", content))
        elif role == "assistant":
            if any(texts_of(content)) or (isinstance(content, list) and content):
                items.append(_message_item("assistant", content))
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                name, arguments = function.get("name"), function.get("arguments")
                items.append({"type": "function_call", "call_id": call["id"], "name": name, "arguments": arguments})
        elif role == "tool":
            output = content if isinstance(content, str) else _parts("user", content)
            items.append({"type": "function_call_output", "call_id": message["tool_call_id"], "output": output})
        else:
            msg = f"a chat message of role {role!r} has no Responses item"
            raise ValueError(msg)
    return items


def _is_user_message(item: Message) -> bool:
    return item_type(item) == "message" and item.get("role") == "user"


def _merged(run: Sequence[Message]) -> Message:
    """A run of user message items as one: their parts in order."""
    base = next((item for item in run if not is_notice(item)), run[0])
    return {**base, "content": [part for item in run for part in _parts("user", item.get("content"))]}


def _into_leading(items: list[Message], notice: Message) -> list[Message]:
    """
    ``notice``'s parts appended to the last leading system or developer message (a developer message of its own
    first if none); never to the joined ``instructions``: the request's own are sent as the client wrote them.
    """
    leading = 0
    while (
        leading < len(items) and item_type(items[leading]) == "message" and items[leading].get("role") in SYSTEM_ROLES
    ):
        leading += 1
    own = [i for i in range(leading) if not items[i].get(INSTRUCTIONS_KEY)]
    if not own:
        return [*items[:leading], {**notice, "role": "developer"}, *items[leading:]]
    last = own[-1]
    target = items[last]
    joined = {**target, "content": [*_parts(str(target.get("role")), target.get("content")), *notice["content"]]}
    return [*items[:last], joined, *items[last + 1 :]]


def _message_item(role: str, content: object) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": _parts(role, content)}


def _parts(role: str, content: object) -> list[dict[str, Any]]:
    """Chat content as Responses parts: text as input or output text, other keys kept; images as ``input_image``."""
    text_type = "output_text" if role == "assistant" else "input_text"
    parts: list[dict[str, Any]] = []
    for part in [content] if isinstance(content, str) else content if isinstance(content, list) else ():
        text = part_text(part)
        if isinstance(part, str):
            parts.append({"type": text_type, "text": part})
        elif text is not None and is_mapping(part):
            parts.append({**part, "type": text_type})
        elif is_mapping(part) and part.get("type") == "image_url":
            image = part.get("image_url")
            parts.append({"type": "input_image", "image_url": image.get("url") if is_mapping(image) else image})
        elif is_mapping(part):
            parts.append(dict(part))
    return parts


def _text_key(item: Message) -> str | None:
    """Where the item's editable text is: a message's ``content``, an output's ``output``."""
    kind = item_type(item)
    if kind == "message":
        return "content"
    return "output" if kind in OUTPUT_TYPES else None


#: Marks the ``instructions`` joined in as the first item; it never reaches the provider as an item.
INSTRUCTIONS_KEY = "litellm_budget_instructions"


def join_instructions(instructions: object, items: Sequence[Message]) -> list[Message]:
    """The list the policies fit: ``instructions`` (counted, never dropped) as a developer item first."""
    if not isinstance(instructions, str) or not instructions:
        return list(items)
    return [{"type": "message", "role": "developer", "content": instructions, INSTRUCTIONS_KEY: True}, *items]


def split_instructions(items: Sequence[Message]) -> list[Message]:
    """Undo ``join_instructions``: the input items without the instructions item."""
    return [item for item in items if not item.get(INSTRUCTIONS_KEY)]
