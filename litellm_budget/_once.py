"""Remember which fits a request already had, so retries, fallbacks and later hooks do no work twice."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple

from ._lru import BoundedLRU


class FitRecord(NamedTuple):
    """One fit of a request: the window it was for and the shape of the messages involved."""

    window: int
    policy: str
    shape: int
    max_tokens: int

    def covers(self, wanted: FitRecord) -> bool:
        """The same messages already fit a window no larger than the one wanted now."""
        same = (self.policy, self.shape, self.max_tokens) == (wanted.policy, wanted.shape, wanted.max_tokens)
        return same and 0 < self.window <= (wanted.window or self.window)


class DoneFits:
    """
    Fits done per request, keyed by ``litellm_call_id`` and by the request's metadata dict,
    which LiteLLM shares between the proxy's hooks and the Router's attempts.
    """

    def __init__(self, max_requests: int = 8192) -> None:
        self._records: BoundedLRU[tuple[FitRecord, ...]] = BoundedLRU(max_requests)

    def covered(self, keys: Sequence[Hashable], wanted: FitRecord) -> bool:
        """Whether an earlier fit of this request already covers ``wanted``."""
        return any(record.covers(wanted) for record in self._of(keys))

    def remember(self, keys: Sequence[Hashable], *records: FitRecord) -> None:
        """Add ``records`` to what each key's request has had."""
        known = self._of(keys)
        for key in keys:
            self._records.put(key, (*known, *records))

    def _of(self, keys: Sequence[Hashable]) -> tuple[FitRecord, ...]:
        return tuple(record for key in keys for record in self._records.get(key) or ())
