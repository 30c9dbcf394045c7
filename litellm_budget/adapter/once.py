"""Remember which fits a request already had, so retries, fallbacks and later hooks do no work twice."""

from __future__ import annotations

from typing import NamedTuple

from ._lru import BoundedLRU


class FitRecord(NamedTuple):
    """One fit of a request: the window it was for and the shape of the messages involved."""

    window: int
    policy: str
    shape: int
    max_tokens: int

    def same_messages(self, other: FitRecord) -> bool:
        """Same policy, same message shape, same ``max_tokens``."""
        return (self.policy, self.shape, self.max_tokens) == (other.policy, other.shape, other.max_tokens)


class DoneFits:
    """
    Fits done per request, keyed by ``litellm_call_id`` (made by LiteLLM for each request and
    kept across its hooks, retries and fallbacks).

    Only a fit's *output* lets a later hook skip: those messages already fit. Seeing the
    *input* again (a retry that starts from the caller's messages) means fitting again,
    quietly: the result is the same, and it was reported once already.
    """

    def __init__(self, max_requests: int = 8192) -> None:
        self._records: BoundedLRU[tuple[tuple[FitRecord, FitRecord], ...]] = BoundedLRU(max_requests)

    def already_fitted(self, call_id: str, wanted: FitRecord) -> bool:
        """These messages are the output of a fit of this request for a window no larger than wanted."""
        return any(
            after.same_messages(wanted) and 0 < after.window <= (wanted.window or after.window)
            for _, after in self._of(call_id)
        )

    def already_reported(self, call_id: str, fitted_input: FitRecord) -> bool:
        """This very input was fitted and reported for this request at this window before."""
        return any(before == fitted_input for before, _ in self._of(call_id))

    def remember(self, call_id: str, fitted_input: FitRecord, output: FitRecord) -> None:
        """Record one fit of the request ``call_id``."""
        if call_id:
            self._records.put(call_id, (*self._of(call_id), (fitted_input, output)))

    def _of(self, call_id: str) -> tuple[tuple[FitRecord, FitRecord], ...]:
        return (self._records.get(call_id) or ()) if call_id else ()
