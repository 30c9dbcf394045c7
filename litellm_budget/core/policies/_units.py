"""Split a conversation into what may be dropped whole (units) and what must stay (pinned)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from litellm_budget.core.formats import ASSISTANT, SYSTEM, TOOL, USER, MessageFormat
from litellm_budget.core.formats._chat import CHAT
from litellm_budget.typing import Message

Unit = tuple[int, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """
    Where a conversation may be cut without splitting a tool call from its results. ``turns`` (oldest first) are what
    ``plan`` drops: a user turn with all answering it and, inside the current turn, one assistant step with its tool
    results. ``steps`` are what ``auto`` drops: each user message but the task and each assistant step. Neither holds a
    pinned message: the system ones, the question, the final step, the newest step before a final question.
    """

    turns: tuple[Unit, ...]
    steps: tuple[Unit, ...]
    #: Every unit ``plan`` or ``auto`` may drop, at the finest grain (the task too). Conversation state
    #: keeps drops in these, so a turn that closes does not change what stays dropped.
    atoms: tuple[Unit, ...]
    pinned: frozenset[int]
    question: int | None
    #: The first user message: an agent's task.
    first_user: int | None = None


def layout_of(messages: Sequence[Message], fmt: MessageFormat = CHAT) -> Layout:
    """Find the units and the pinned messages of a well-formed conversation."""
    return layout_of_kinds(fmt.kinds(messages))


def layout_of_kinds(kinds: Sequence[str]) -> Layout:
    """``layout_of`` for messages already read as their kinds (``SYSTEM``, ``USER``, ...)."""
    system: set[int] = set()
    body: list[int] = []
    first_user = question = None
    for index, kind in enumerate(kinds):  # one pass: this runs for every request, however long its history
        if kind == SYSTEM:
            system.add(index)
            continue
        if kind == USER:
            question = index
            first_user = index if first_user is None else first_user
        body.append(index)
    newest = _newest_step(kinds, question)
    split = 0 if question is None else body.index(question)
    history = [i for i in body[:split] if i not in newest] if newest else body[:split]
    current = _group(body[split + 1 :] if question is not None else body, kinds, {ASSISTANT})
    final_step = current.pop() if current else ()
    pinned = system | set(final_step) | set(newest) | ({question} if question is not None else set())
    history_steps = _group(history, kinds, {USER, ASSISTANT})
    return Layout(
        turns=(*_group(history, kinds, {USER}), *current),
        steps=(*(unit for unit in history_steps if unit != (first_user,)), *current),
        atoms=(*history_steps, *current),
        pinned=frozenset(pinned),
        question=question,
        first_user=first_user,
    )


def _newest_step(kinds: Sequence[str], question: int | None) -> Unit:
    """
    The assistant step right before a final question: without it the question reads out of context,
    and after a reply (no calls) user turns would no longer alternate as strict chat templates want.
    """
    if question is None or question != len(kinds) - 1:
        return ()
    start = question - 1
    while start > 0 and kinds[start] == TOOL:
        start -= 1
    return tuple(range(start, question)) if start >= 0 and kinds[start] == ASSISTANT else ()


def _group(indices: list[int], kinds: Sequence[str], openers: set[str]) -> list[Unit]:
    """Start a new unit at each opener kind; what comes before the first opener is one unit."""
    units: list[list[int]] = []
    for index in indices:
        if not units or kinds[index] in openers:
            units.append([])
        units[-1].append(index)
    return [tuple(unit) for unit in units]
