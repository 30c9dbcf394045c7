"""Client history markers (compactions, tool changes) read as ``SYSTEM``, so no policy drops, elides or cuts them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from litellm_budget.core.formats._protocol import ASSISTANT, SYSTEM, TOOL, USER


def pinned_kinds(kinds: list[str], start: int | None, held: Iterable[int]) -> list[str]:
    """
    ``kinds`` with every message up to ``start`` (the newest compaction, where the provider starts reading; or
    ``None``) and each of ``held`` read as ``SYSTEM``, with the rest of its step (the results answering it, or the
    step its result answers). The question (the last user message) stays the question: it is pinned anyway.
    """
    question = max((i for i, kind in enumerate(kinds) if kind == USER), default=None)
    pinned = list(kinds)
    for index in (*(() if start is None else (start,)), *held):
        if kinds[index] == USER and index == question:
            continue
        first, last = _step_around(kinds, index)
        pinned[first : last + 1] = [SYSTEM] * (last + 1 - first)
    if start is not None:
        pinned[: start + 1] = [SYSTEM] * (start + 1)
    return pinned


def _step_around(kinds: Sequence[str], index: int) -> tuple[int, int]:
    """The first and last index of the step holding ``index``: its assistant opener and the results after it."""
    first = index
    if kinds[index] == TOOL:
        while first > 0 and kinds[first - 1] == TOOL:
            first -= 1
        first = first - 1 if first > 0 and kinds[first - 1] == ASSISTANT else index
    last = index
    if kinds[first] in (ASSISTANT, TOOL):
        while last + 1 < len(kinds) and kinds[last + 1] == TOOL:
            last += 1
    return first, last
