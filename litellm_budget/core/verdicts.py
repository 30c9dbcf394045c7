"""
The format checks' verdicts on passed prefixes, remembered by content.

A client resends its whole history with every request. The checks read all of it each time, and
what they conclude about a prefix (it passed, with these calls left open) is a pure function of
the prefix's content, so it is remembered under the prefix's content keys: a request that starts
with exactly that content resumes after it, with the same result a whole check gives by
construction. What a memo holds decides only how much is read again, never whether a message is
checked: a message whose content was never seen passing is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .memo import BoundedLRU, remembered

#: Passed prefixes remembered (one a conversation, as a rule), each a tuple of its keys.
PASSED_ENTRIES = 2048
_PASSED: BoundedLRU[tuple[object]] = remembered(PASSED_ENTRIES)
#: Shorter prefixes are read again: resuming saves nothing there.
MIN_PREFIX = 3


class Resume(NamedTuple):
    """Where a check starts: after the first ``at`` messages, with what its pairing held after them."""

    at: int = 0
    state: object = None


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
    if known < MIN_PREFIX:
        return START
    found = _PASSED.get((fmt_name, tuple(keys[:known])))
    return START if found is None else Resume(known, found[0])


def remember_passed(fmt_name: str, keys: Sequence[int], verdict: Verdict) -> None:
    """Remember that the messages under ``keys`` passed this format's checks, ending in ``verdict.state``."""
    if verdict.reason is None and len(keys) >= MIN_PREFIX:
        _PASSED.put((fmt_name, tuple(keys)), (verdict.state,))
