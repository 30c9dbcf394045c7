"""
Check verdicts remembered by content: a request starting with exactly a prefix that passed (these calls left open)
resumes its pairing after it, as a whole check would. A memo saves reading only: content never seen passing is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from litellm_budget.core._checks import request_problem
from litellm_budget.core._memo import MEMOS

#: Shorter prefixes are read again: resuming saves nothing there.
MIN_PREFIX = 3


class Resume(NamedTuple):
    """Where a check starts: its pairing after the first ``at`` messages, holding ``state``; the rest is read."""

    at: int = 0
    state: object = None

    def unread(self, count: int) -> Iterator[int]:
        """The indices of the ``count`` messages whose own checks must run."""
        return iter(range(self.at, count))


class Verdict(NamedTuple):
    """A check's result: why the request cannot be fitted (``None``: it can), and its pairing state at the end."""

    reason: str | None
    state: object = None


START = Resume()


def resume_from(fmt_name: str, keys: Sequence[int | None]) -> Resume:
    """Where a check may start: after the longest keyed prefix of ``keys``, if that very content passed before."""
    known = next((index for index, key in enumerate(keys) if key is None), len(keys))
    found = MEMOS.passed_prefixes.get(fmt_name, tuple(keys[:known])) if known >= MIN_PREFIX else None
    return START if found is None else Resume(known, found[0])


def remember_passed(fmt_name: str, keys: Sequence[int], verdict: Verdict) -> None:
    """Remember that the messages under ``keys`` passed this format's checks, ending in ``verdict.state``."""
    if verdict.reason is None and len(keys) >= MIN_PREFIX:
        MEMOS.passed_prefixes.put((verdict.state,), fmt_name, tuple(keys))


def first_problem(
    entries: object,
    tools: object,
    max_tokens: object,
    resume: Resume,
    entry_problem: Callable[[object], str | None],
    *,
    name: str = "messages",
) -> Verdict | list[Any]:
    """
    The verdict on a request whose shape, or an entry ``resume`` leaves unread (``entry_problem`` reads one), has
    a problem; else its entries, for the pairing checks. ``name``: ``messages``, or Responses' ``input`` of items.
    """
    problem = request_problem(entries, tools, max_tokens, name=name)
    if problem is not None or not isinstance(entries, list):
        return Verdict(problem)
    for index in resume.unread(len(entries)):
        reason = entry_problem(entries[index])
        if reason is not None:
            return Verdict(f"{'item' if name == 'input' else 'message'} {index}: {reason}")
    return entries
