"""
The format checks' verdicts, remembered by content.

A client resends its whole history with every request. What the checks conclude about a prefix (it
passed, with these calls left open) is a pure function of that content, so it is remembered under
its content keys: a request that starts with exactly a prefix that passed resumes its pairing after
it, with the same result a whole check gives by construction. What a memo holds decides only how
much is read again, never whether a message is checked: content never seen passing is read. (Each
message's own verdict was remembered too; it showed no gain in the replay, and went.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from litellm_budget.core._checks import request_problem
from litellm_budget.core._memo import MEMOS

#: Shorter prefixes are read again: resuming saves nothing there.
MIN_PREFIX = 3


class Resume(NamedTuple):
    """
    Where a check starts: its pairing after the first ``at`` messages, with what it held after
    them; every message from there is read.
    """

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
    """
    Where a check of the messages under ``keys`` may start: after their longest prefix with a key
    (``Reading.known_keys``), when exactly that content passed this format's checks before.
    """
    known = next((index for index, key in enumerate(keys) if key is None), len(keys))
    found = MEMOS.passed_prefixes.get(fmt_name, tuple(keys[:known])) if known >= MIN_PREFIX else None
    return START if found is None else Resume(known, found[0])


def remember_passed(fmt_name: str, keys: Sequence[int], verdict: Verdict) -> None:
    """Remember that the messages under ``keys`` passed this format's checks, ending in ``verdict.state``."""
    if verdict.reason is not None:
        return
    if len(keys) >= MIN_PREFIX:
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
    The verdict on a request whose shape, or one of the entries ``resume`` leaves unread, has a
    problem (``entry_problem`` reads one entry); else its entries, for the format's pairing checks.
    ``name`` is what the request calls them: ``messages``, or Responses' ``input`` of items.
    """
    problem = request_problem(entries, tools, max_tokens, name=name)
    if problem is not None or not isinstance(entries, list):
        return Verdict(problem)
    for index in resume.unread(len(entries)):
        reason = entry_problem(entries[index])
        if reason is not None:
            return Verdict(f"{'item' if name == 'input' else 'message'} {index}: {reason}")
    return entries
