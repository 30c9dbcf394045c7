"""
The callers' lists the Router's filter hook trimmed in place (``passes.FilterPass`` says why), until the same call's
deployment hook gives them back; one kept would be a false report, the history cut behind the caller's back.

The deployment hook finds its call's list by ``litellm_call_id``, which the filter hook sets where missing. LiteLLM
1.110's Router hands the filter hook a copy of the kwargs, so that id never reaches the deployment hook; the call's
``litellm_trace_id`` does (one per call, or the caller's own), and with the fingerprint of the trimmed messages finds
the list, adopted under the call id. When the Router fails between the hooks (another filter left no deployment),
nothing of the plugin's runs until the caller's next call: a list still as lent is given back when the filter hook sees
it again (a retry) or the bound forgets it.
"""

from __future__ import annotations

import dataclasses
import operator
import threading
from collections.abc import Mapping
from typing import Any

from litellm_budget.core.api import BudgetReport, Fitted

from .fit_records import FitRecord, fingerprint, record_of

#: Lists lent at most (each holds a copy of the caller's messages); one more forgets the oldest, whose call failed.
MAX_LENT = 1024


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Lent:
    """A caller's list trimmed in place: the list and what it held, the fit's records and its report."""

    caller: list[Any]
    original: list[Any]
    fitted_input: FitRecord
    output: FitRecord
    report: BudgetReport
    #: The call's ``litellm_trace_id`` (``""``: none), which finds it where the call id does not.
    trace_id: str = ""
    #: The messages lent (the caller's list holds them until given back), to tell if it changed since.
    items: tuple[Any, ...] = ()

    def untouched(self) -> bool:
        """Whether the caller's list still holds exactly what was lent."""
        caller, items = self.caller, self.items
        return bool(items) and len(caller) == len(items) and all(map(operator.is_, caller, items))

    @classmethod
    def of(cls, request: Mapping[str, Any], fitted: Fitted, policy: str, max_tokens: object) -> Lent:
        """What lending ``fitted`` (a trim of the request's messages, sent with ``max_tokens``) to them holds."""
        caller, window = request["messages"], fitted.report.window
        return cls(
            caller=caller,
            original=list(caller),
            fitted_input=record_of(window, policy, caller, max_tokens),
            output=record_of(window, policy, fitted.messages, fitted.max_tokens),
            report=fitted.report,
            trace_id=trace_id_of(request),
            items=tuple(fitted.messages),
        )


def trace_id_of(request: Any) -> str:
    trace_id = request.get("litellm_trace_id") if isinstance(request, Mapping) else None
    return trace_id if isinstance(trace_id, str) else ""


class LentLists:
    """The lent lists by call id, oldest first, scanned by trace id or list: only those between two hooks are here."""

    def __init__(self, max_lent: int = MAX_LENT) -> None:
        self._lent: dict[str, Lent] = {}  # dicts keep insertion order: the oldest first
        self._max_lent = max_lent
        self._lock = threading.Lock()

    def of(self, call_id: str) -> Lent | None:
        return self._lent.get(call_id) if call_id else None

    def lend(self, call_id: str, fitted: list[Any], lent: Lent) -> str | None:
        """Put ``fitted`` in the caller's list; returns the call the bound forgot (its list given back if untouched)."""
        if not call_id:
            return None
        with self._lock:
            self._lent.pop(call_id, None)
            self._lent[call_id] = lent
            stale_id = next(iter(self._lent)) if len(self._lent) > self._max_lent else None
            stale = self._lent.pop(stale_id) if stale_id is not None else None
        lent.caller[:] = fitted
        if stale is not None and stale.untouched():
            stale.caller[:] = stale.original
        return stale_id

    def reclaim(self, messages: list[Any]) -> str | None:
        """Give ``messages`` back if untouched, else forget them (the caller made them its own); returns their call."""
        if not self._lent:
            return None  # the common case: nothing is lent between two hooks
        with self._lock:
            call_id = next((key for key, lent in self._lent.items() if lent.caller is messages), None)
            lent = self._lent.pop(call_id) if call_id is not None else None
        if lent is not None and lent.untouched():
            messages[:] = lent.original
        return call_id

    def adopt(self, call_id: str, request: Mapping[str, Any], messages: list[Any]) -> tuple[str, Lent] | None:
        """
        Move to ``call_id`` the oldest list lent under the request's trace id whose trimmed messages have the
        fingerprint of ``messages``; the other id and the list. Nothing is read when none is lent (most calls).
        """
        trace_id = trace_id_of(request) if self._lent and call_id and call_id not in self._lent else ""
        if not trace_id:
            return None
        seen: int | None = None
        with self._lock:
            for other, lent in list(self._lent.items()):
                if lent.trace_id != trace_id:
                    continue
                seen = fingerprint(messages) if seen is None else seen
                if lent.output.fingerprint == seen:
                    del self._lent[other]
                    self._lent[call_id] = lent
                    return other, lent
        return None

    def give_back(self, call_id: str) -> Lent | None:
        """Restore the caller's list lent for ``call_id`` and return what was lent; ``None``: none was."""
        if not call_id:
            return None
        with self._lock:
            lent = self._lent.pop(call_id, None)
        if lent is not None:
            lent.caller[:] = lent.original
        return lent
