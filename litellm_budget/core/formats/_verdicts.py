"""
The format checks' verdicts, remembered by content.

A client resends its whole history with every request. What the checks conclude about one message
(its shape is fine) and about a prefix (it passed, with these calls left open) is a pure function
of that content, so it is remembered under the content keys: a message whose content passed before
is not read again, and a request that starts with exactly a prefix that passed resumes its pairing
after it, with the same result a whole check gives by construction. What a memo holds decides only
how much is read again, never whether a message is checked: content never seen passing is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from litellm_budget.core._memo import Memo

#: Passed prefixes remembered (one a conversation, as a rule), each a tuple of its keys.
PASSED_ENTRIES = 2048
_PASSED: Memo[tuple[object]] = Memo("passed_prefixes", ("format", "prefix"), PASSED_ENTRIES)
#: Shorter prefixes are read again: resuming saves nothing there.
MIN_PREFIX = 3
#: Messages whose own checks passed, by format and content key (a few dozen bytes each).
FINE_ENTRIES = 65_536
_FINE: Memo[bool] = Memo("fine_messages", ("format", "message"), FINE_ENTRIES)


class Resume(NamedTuple):
    """
    Where a check starts: its pairing after the first ``at`` messages, with what it held after
    them; each message's own checks where ``fine`` does not say its content passed them.
    """

    at: int = 0
    state: object = None
    fine: Sequence[bool] = ()

    def unread(self, count: int) -> Iterator[int]:
        """The indices of the ``count`` messages whose own checks must run."""
        fine = self.fine
        return (index for index in range(self.at, count) if index >= len(fine) or not fine[index])


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
    found = _PASSED.get(fmt_name, tuple(keys[:known])) if known >= MIN_PREFIX else None
    # After a passed prefix the rest is new as a rule (no key): its verdicts are looked up only then.
    start = 0 if found is None else known
    fine = [False] * start + [key is not None and _FINE.get(fmt_name, key) is not None for key in keys[start:]]
    return Resume(fine=fine) if found is None else Resume(known, found[0], fine)


def remember_passed(fmt_name: str, keys: Sequence[int], verdict: Verdict, resume: Resume = START) -> None:
    """
    Remember that the messages under ``keys`` passed this format's checks, ending in
    ``verdict.state``, each message's own checks among them (those ``resume`` did not know).
    """
    if verdict.reason is not None:
        return
    for index in resume.unread(len(keys)):
        _FINE.put(True, fmt_name, keys[index])
    if len(keys) >= MIN_PREFIX:
        _PASSED.put((verdict.state,), fmt_name, tuple(keys))
