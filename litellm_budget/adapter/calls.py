"""
What the plugin knows about each call, in one record per call in one bounded store, keyed by
LiteLLM's call id: the one function here reads it (``call_id_of``).

A call's hooks, retries and fallbacks each see their own copy of LiteLLM's kwargs, so nothing is
kept on the kwargs: the ``litellm_call_id`` LiteLLM makes for each call, and keeps across all of
them, finds the record again.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Callable, MutableMapping
from typing import Any, NamedTuple

from litellm_budget.core.api import BoundedLRU, BudgetReport, Fitted, is_mapping, texts_of

#: The store keeps the calls touched last, at least half this many: a call's record must outlive
#: the call itself (its response headers are written after the answer, minutes later for a long one).
MAX_CALLS = 16384


def call_id_of(request: MutableMapping[str, Any], *, mint: bool = False) -> str:
    """
    The request's ``litellm_call_id``; ``""`` when it has none. With ``mint``, a missing one is set
    to a new id: a Router call made from the SDK gets its id only after routing, and LiteLLM keeps
    one set before (as it keeps a caller's own), so every hook of the call finds the same id.
    """
    call_id = request.get("litellm_call_id")
    if isinstance(call_id, str) and call_id:
        return call_id
    if not mint:
        return ""
    request["litellm_call_id"] = minted = str(uuid.uuid4())
    return minted


def loop_call_id(logging_obj: object, kwargs: MutableMapping[str, Any]) -> str:
    """The call id in LiteLLM's agentic loop: its logging object's, which every follow-up keeps, else the kwargs'."""
    found = getattr(logging_obj, "litellm_call_id", None)
    return found if isinstance(found, str) and found else call_id_of(kwargs)


class FitRecord(NamedTuple):
    """One side of a fit of a request: the window it was for, and what identifies the messages."""

    window: int
    policy: str
    #: ``fingerprint`` of the messages.
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

    def fits_in(self, wanted: FitRecord) -> bool:
        """These are ``wanted``'s messages, fitted for a window no larger than it wants."""
        return self.same_messages(wanted) and 0 < self.window <= (wanted.window or self.window)


def record_of(window: int | None, policy: str, messages: list[Any], max_tokens: object) -> FitRecord:
    """The record of ``messages`` sent with ``max_tokens``, for a fit at ``window`` with ``policy``."""
    return FitRecord(window or 0, policy, fingerprint(messages), hash(max_tokens))


def sent_record(fitted_input: FitRecord, fitted: Fitted, asked_max_tokens: object) -> FitRecord:
    """
    The record of what a fit sent: its input's own when it went as it came (passed through, with
    the ``max_tokens`` asked), so an untouched request's fingerprint is taken once, not twice.
    """
    report = fitted.report
    if report.action == "passthrough" and fitted.max_tokens == asked_max_tokens:
        return fitted_input
    return record_of(report.window, report.policy, fitted.messages, fitted.max_tokens)


def fingerprint(messages: list[Any]) -> int:
    """A cheap identity of a message list (roles and text sizes), to recognise it again after copies."""
    return hash(tuple(map(_role_and_size, messages)))


def _role_and_size(message: Any) -> tuple[Any, int]:
    if not is_mapping(message):
        return (type(message).__name__, 0)
    content = message.get("content")
    size = len(content) if isinstance(content, str) else sum(map(len, texts_of(content)))
    return (message.get("role"), size)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CallRecord:
    """
    Everything known about one call. Only a fit's *output* lets a later hook skip (those messages
    already fit); seeing its *input* again (a retry that starts from the caller's messages) means
    fitting again, quietly: the result is the same, and it was reported once already.
    """

    #: Each fit of the call: what it was fitted from, and what it sent.
    fits: tuple[tuple[FitRecord, FitRecord], ...] = ()
    #: What the call's latest attempt sent (after a fallback: the fallback's), for its headers.
    served: BudgetReport | None = None
    #: Why an attempt was handed to a router fallback, for the attempt that serves it.
    deferred: BudgetReport | None = None
    #: The refusal and its model group: a success after it means someone re-sent the call untouched.
    rejected: tuple[BudgetReport, str] | None = None
    #: ``False`` when the proxy's first hook saw another call type than chat (the Router's filter
    #: hook sees a text completion's prompt, or Anthropic's blocks, as chat messages).
    chat: bool = True
    #: The client's ``context_management`` edits served here, for its response to report (``()``:
    #: none applied, which the response says too; ``None``: nothing was asked of this plugin).
    client_edits: tuple[dict[str, Any], ...] | None = None
    #: The conversation key the fit read (conversation state), for cache truth after the response.
    conversation: str | None = None

    def already_fitted(self, wanted: FitRecord) -> bool:
        """These messages are the output of a fit of this call for a window no larger than wanted."""
        return any(output.fits_in(wanted) for _, output in self.fits)

    def already_reported(self, fitted_input: FitRecord) -> bool:
        """This very input was fitted and reported for this call at this window before."""
        return any(before == fitted_input for before, _ in self.fits)


NO_RECORD = CallRecord()


class Calls:
    """The one store of call records: bounded (``MAX_CALLS``), the calls touched last kept."""

    def __init__(self, max_calls: int = MAX_CALLS) -> None:
        self._records: BoundedLRU[CallRecord] = BoundedLRU(max_calls)
        self._lock = threading.Lock()

    def get(self, call_id: str) -> CallRecord:
        """The record of ``call_id``; an empty one for an unknown call or no id."""
        return (self._records.get(call_id) if call_id else None) or NO_RECORD

    def update(self, call_id: str, change: Callable[[CallRecord], CallRecord]) -> None:
        """Replace the record of ``call_id`` by ``change(record)``; nothing is kept without an id."""
        if call_id:
            with self._lock:
                self._records.put(call_id, change(self.get(call_id)))

    def remember_fit(self, call_id: str, fitted_input: FitRecord, output: FitRecord, report: BudgetReport) -> None:
        """One fit of the call was sent: record it, and its report as what the call sent."""
        self.update(call_id, lambda r: dataclasses.replace(r, fits=(*r.fits, (fitted_input, output)), served=report))

    def serve(self, call_id: str, report: BudgetReport) -> None:
        """``report`` describes what this call's latest attempt sent."""
        self.update(call_id, lambda r: dataclasses.replace(r, served=report))

    def defer(self, call_id: str, report: BudgetReport) -> None:
        """This call was handed to a fallback: remember why, for the attempt that serves it."""
        self.update(call_id, lambda r: dataclasses.replace(r, deferred=report))

    def reject(self, call_id: str, report: BudgetReport, model_group: str) -> None:
        """This call was refused here; nothing it sent before stands."""
        self.update(call_id, lambda r: dataclasses.replace(r, rejected=(report, model_group), served=None))

    def resent_after_rejection(self, call_id: str) -> tuple[BudgetReport, str] | None:
        """The rejection of ``call_id`` when nothing was served for it since; asked once, on its way out."""
        record = self.get(call_id)
        if record.rejected is None:
            return None
        self.update(call_id, lambda r: dataclasses.replace(r, rejected=None))
        return record.rejected if record.served is None else None

    def note_conversation(self, call_id: str, key: str | None) -> None:
        """The fit of ``call_id`` read its conversation's key: cache truth finds the conversation by it."""
        if key and self.get(call_id).conversation != key:
            self.update(call_id, lambda r: dataclasses.replace(r, conversation=key))

    def not_chat(self, call_id: str) -> None:
        """The proxy saw this call as another call type than chat."""
        self.update(call_id, lambda r: dataclasses.replace(r, chat=False))

    def record_edits(self, call_id: str, applied: list[dict[str, Any]]) -> None:
        """Keep what the response to ``call_id`` reports, after what an earlier hook kept for it."""
        self.update(call_id, lambda r: dataclasses.replace(r, client_edits=(*(r.client_edits or ()), *applied)))

    def take_edits(self, call_id: str) -> list[dict[str, Any]] | None:
        """The edits served for ``call_id``, once (its response reports them); ``None`` when none were."""
        edits = self.get(call_id).client_edits
        if edits is None:
            return None
        self.update(call_id, lambda r: dataclasses.replace(r, client_edits=None))
        return list(edits)
