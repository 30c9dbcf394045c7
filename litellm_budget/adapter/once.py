"""Remember which fits a request already had, so retries, fallbacks and later hooks do no work twice."""

from __future__ import annotations

from typing import Any, NamedTuple

from litellm_budget.core.memo import BoundedDict, BoundedLRU
from litellm_budget.core.report import BudgetReport

from .request import fingerprint


class FitRecord(NamedTuple):
    """One side of a fit of a request: the window it was for, and what identifies the messages."""

    window: int
    policy: str
    #: ``request.fingerprint`` of the messages.
    fingerprint: int
    #: ``hash()`` of the ``max_tokens`` value, whatever its type.
    max_tokens_hash: int

    def same_messages(self, other: FitRecord) -> bool:
        """Same policy, same message fingerprint, same ``max_tokens``."""
        return (self.policy, self.fingerprint, self.max_tokens_hash) == (
            other.policy,
            other.fingerprint,
            other.max_tokens_hash,
        )


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
        self._served: BoundedDict[BudgetReport] = BoundedDict(max_requests)
        self._deferred: BoundedDict[BudgetReport] = BoundedDict(max_requests)
        self._rejected: BoundedDict[tuple[BudgetReport, str]] = BoundedDict(max_requests)

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

    def serve(self, call_id: str, report: BudgetReport) -> None:
        """``report`` describes what this request's latest attempt sent (after a fallback: the fallback's)."""
        if call_id:
            self._served.put(call_id, report)

    def served(self, call_id: str) -> BudgetReport | None:
        """The report of what was last sent for ``call_id``, for the response headers."""
        return self._served.get(call_id) if call_id else None

    def serve_deferred(self, call_id: str, report: BudgetReport) -> None:
        """This request was handed to a fallback: remember why, for the attempt that serves it."""
        if call_id:
            self._deferred.put(call_id, report)

    def deferred(self, call_id: str) -> BudgetReport | None:
        """The report of this request's hand-over to a fallback, if there was one."""
        return self._deferred.get(call_id) if call_id else None

    def reject(self, call_id: str, report: BudgetReport, model_group: str) -> None:
        """This request was refused here; a success for it later means someone re-sent it untouched."""
        if call_id:
            self._rejected.put(call_id, (report, model_group))
            self._served.pop(call_id)

    def resent_after_rejection(self, call_id: str) -> tuple[BudgetReport, str] | None:
        """The rejection of ``call_id`` when nothing was served for it since; asked once, on its success."""
        rejected = self._rejected.pop(call_id) if call_id else None
        return rejected if rejected is not None and self.served(call_id) is None else None

    def _of(self, call_id: str) -> tuple[tuple[FitRecord, FitRecord], ...]:
        return (self._records.get(call_id) or ()) if call_id else ()


def record_of(window: int | None, policy: str, messages: list[Any], max_tokens: object) -> FitRecord:
    """The record of ``messages`` sent with ``max_tokens``, for a fit at ``window`` with ``policy``."""
    return FitRecord(window or 0, policy, fingerprint(messages), hash(max_tokens))
