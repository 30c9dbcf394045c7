"""Split a conversation into what may be dropped whole (units) and what must stay (pinned)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ._shape import SYSTEM_ROLES
from ._types import Message

Unit = tuple[int, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """
    Where a conversation may be cut without splitting a tool call from its results.

    ``turns`` (oldest first) are what ``plan`` drops: a user turn with everything answering
    it and, inside the current turn, one assistant step with its tool results. ``steps`` are
    what ``auto`` drops: every user message and every assistant step on its own, except the
    first user message, which usually states the task. Neither holds a pinned message:
    system messages, the current question and the step holding the final message.
    """

    turns: tuple[Unit, ...]
    steps: tuple[Unit, ...]
    pinned: frozenset[int]
    question: int | None


def layout_of(messages: Sequence[Message]) -> Layout:
    """Find the units and the pinned messages of a well-formed conversation."""
    roles = [m["role"] for m in messages]
    system = {i for i, role in enumerate(roles) if role in SYSTEM_ROLES}
    body = [i for i in range(len(roles)) if i not in system]
    question = max((i for i in body if roles[i] == "user"), default=None)
    history = [i for i in body if question is not None and i < question]
    current = _group([i for i in body if question is None or i > question], roles, {"assistant"})
    final_step = current.pop() if current else ()
    pinned = system | set(final_step) | ({question} if question is not None else set())
    first_user = min((i for i in body if roles[i] == "user"), default=None)
    history_steps = _group(history, roles, {"user", "assistant"})
    return Layout(
        turns=(*_group(history, roles, {"user"}), *current),
        steps=(*(unit for unit in history_steps if unit != (first_user,)), *current),
        pinned=frozenset(pinned),
        question=question,
    )


def _group(indices: list[int], roles: list[str], openers: set[str]) -> list[Unit]:
    """Start a new unit at each opener role; what comes before the first opener is one unit."""
    units: list[list[int]] = []
    for index in indices:
        if not units or roles[index] in openers:
            units.append([])
        units[-1].append(index)
    return [tuple(unit) for unit in units]
