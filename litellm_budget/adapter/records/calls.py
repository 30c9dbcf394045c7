"""
A call's life in one record, changed by the transitions of ``Calls`` (drawn in docs/development.md), each named for what
a hook did. A call's hooks, retries and fallbacks each see their own copy of LiteLLM's kwargs, so nothing is kept on
them: the ``litellm_call_id`` LiteLLM makes for each call, and keeps across all of them, finds the record again.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from litellm_budget.bounded import BoundedLRU
from litellm_budget.core.api import BudgetReport

from .fit_records import FitRecord
from .lending import Lent, LentLists

#: The store keeps the calls touched last, at least half this many: a call's record must outlive
#: the call itself (its response headers are written after the answer, minutes later for a long one).
MAX_CALLS = 16384


def call_id_of(request: MutableMapping[str, Any], *, mint: bool = False) -> str:
    """
    The request's ``litellm_call_id`` (``""``: none); with ``mint`` a missing one is set: a Router call from the SDK
    gets its id only after routing, and LiteLLM keeps one set before (as a caller's own) for every hook of the call.
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


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CallRecord:
    """
    Everything known about one call. Only a fit's *output* lets a later hook skip (those messages already fit);
    its *input* again (a retry) is fitted again, quietly: the result is the same, and was reported once already.
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
    #: The model group and the generic ``fallbacks`` its Router reads for this call, the plugin's own copy
    #: (``fallbacks.refit_on_any_error``): a context error LiteLLM left unmapped opens it to the refit.
    fallbacks: tuple[str, list[Any]] | None = None

    def already_fitted(self, wanted: FitRecord) -> bool:
        """These messages are the output of a fit of this call for a window no larger than wanted."""
        return any(output.fits_in(wanted) for _, output in self.fits)

    def already_reported(self, fitted_input: FitRecord) -> bool:
        """This very input was fitted and reported for this call at this window before."""
        return any(before == fitted_input for before, _ in self.fits)


NO_RECORD = CallRecord()


class Calls:
    """The one store of call records, the calls touched last kept, beside the lists lent in place (``LentLists``)."""

    def __init__(self, max_calls: int = MAX_CALLS) -> None:
        self._records: BoundedLRU[CallRecord] = BoundedLRU(max_calls)
        self._lent = LentLists()
        self._lock = threading.Lock()

    def get(self, call_id: str) -> CallRecord:
        """The record of ``call_id``; an empty one for an unknown call or no id."""
        return (self._records.get(call_id) if call_id else None) or NO_RECORD

    def update(self, call_id: str, change: Callable[[CallRecord], CallRecord]) -> None:
        """Replace the record of ``call_id`` by ``change(record)``; nothing is kept without an id."""
        if call_id:
            with self._lock:
                self._records.put(call_id, change(self.get(call_id)))

    def fitted(self, call_id: str, fitted_input: FitRecord, output: FitRecord, report: BudgetReport) -> None:
        """A hook sent a fit of the call: its report is what it sent (on the gate's bound: counted later)."""
        self.update(call_id, lambda r: dataclasses.replace(r, fits=(*r.fits, (fitted_input, output)), served=report))

    def sent_as_it_came(self, call_id: str, report: BudgetReport) -> None:
        """A hook sent the request untouched, one this plugin will not fit: ``report`` says why."""
        self.update(call_id, lambda r: dataclasses.replace(r, served=report))

    def counted(self, call_id: str, bound: BudgetReport, exact: BudgetReport) -> None:
        """The count the size gate left for later is done: the report it served is exact (a later one stands)."""
        self.update(call_id, lambda r: dataclasses.replace(r, served=exact) if r.served is bound else r)

    def deferred(self, call_id: str, report: BudgetReport) -> None:
        """The call was handed to a fallback: remember why, for the attempt that serves it."""
        self.update(call_id, lambda r: dataclasses.replace(r, deferred=report))

    def refused(self, call_id: str, report: BudgetReport, model_group: str) -> None:
        """The call was refused here; nothing it sent before stands."""
        self.update(call_id, lambda r: dataclasses.replace(r, rejected=(report, model_group), served=None))

    def lend(self, call_id: str, fitted: list[Any], lent: Lent) -> None:
        """The filter hook trims the caller's list in place, until ``give_back``; nothing without an id."""
        self._lent.lend(call_id, fitted, lent)

    def lent_of(self, call_id: str) -> Lent | None:
        return self._lent.of(call_id)

    def give_back(self, call_id: str) -> Lent | None:
        """The deployment hook restores the caller's list (to be fitted next) and gets what was lent."""
        return self._lent.give_back(call_id)

    def adopt(self, call_id: str, request: Mapping[str, Any], messages: list[Any]) -> None:
        """A list lent under another id of this call (LiteLLM 1.110 copies the kwargs) becomes this call's."""
        self._lent.adopt(call_id, request, messages)

    def reclaim(self, messages: list[Any]) -> None:
        """A list still lent, seen again by the filter hook: its call failed between the hooks."""
        self._lent.reclaim(messages)

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

    def gave_fallbacks(self, call_id: str, group: str, fallbacks: list[Any]) -> None:
        """The proxy's hook gave the call its own generic ``fallbacks`` list, for its Router to read."""
        self.update(call_id, lambda r: dataclasses.replace(r, fallbacks=(group, fallbacks)))

    def not_chat(self, call_id: str) -> None:
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
