"""
Where a notice (the marker, a summary) goes, for the strict chat templates of local model servers, which refuse a system
message anywhere but first (Qwen), turns that do not alternate (Mistral), or system roles past the first turn (Gemma).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from litellm_budget.typing import Message

#: Marks a notice until ``place_notices`` put it in its place; it never reaches a provider.
NOTICE_KEY = "litellm_budget_notice"
#: Marks a notice that goes into the leading system text.
LEADING_KEY = "litellm_budget_leading"
#: The placements a setting may name, the first the default: a user-side note merged into the user message
#: next to it (or one of its own between two assistant turns), so roles alternate as they did; a message of the
#: format's system role where it stands (OpenAI accepts that anywhere); appended to the leading system text.
PLACEMENTS = ("user_note", "system_message", "leading_system")
#: Between a notice and the text it is merged with.
SEPARATOR = "\n\n"


def is_notice(message: Message) -> bool:
    """Whether ``message`` is a notice not yet placed."""
    return message.get(NOTICE_KEY) is True


def plain(message: Message) -> dict[str, Any]:
    """The message without the notice's marks: what reaches the provider."""
    return {key: value for key, value in message.items() if key not in (NOTICE_KEY, LEADING_KEY)}


def place_notices(
    messages: Sequence[Message],
    *,
    is_user: Callable[[Message], bool],
    merged: Callable[[Sequence[Message]], Message],
    into_leading: Callable[[list[Message], Message], list[Message]],
) -> list[Message]:
    """
    Each notice in its place: a user-side one merged, in order, with the user messages next to it (keeping the first
    non-notice's keys, so two user turns a drop left side by side become one); a leading one taken into the leading
    system text, the user turns around it joined all the same; any other left where it is, unmarked. The final message
    joins nothing (only the last resort changes it); untouched messages stay the same objects.
    """
    final = len(messages) - 1
    placed: list[Message] = []
    leading: list[Message] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        if not is_notice(message):
            placed.append(message)
            index += 1
            continue
        note = message.get(LEADING_KEY) is not True and is_user(message)
        group = [message] if note else []
        if message.get(LEADING_KEY) is True:
            leading.append(plain(message))
        elif not note:
            placed.append(plain(message))  # a system message where it stands: nothing to join
            index += 1
            continue
        if placed and is_user(placed[-1]) and not is_notice(placed[-1]):
            group.insert(0, placed.pop())
        following = messages[index + 1] if index + 1 < final else None
        if following is not None and is_user(following) and not is_notice(following) and (note or group):
            group.append(following)
            index += 1
        if group:
            placed.append(plain(merged(group)) if len(group) > 1 else plain(group[0]))
        index += 1
    for notice in leading:
        placed = into_leading(placed, notice)
    return placed
