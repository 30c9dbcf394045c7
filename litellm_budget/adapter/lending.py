"""Caller lists the Router's window check must see trimmed: trimmed in place, given back before the call."""

from __future__ import annotations

from typing import Any, NamedTuple

from litellm_budget.core.memo import BoundedDict

from .once import FitRecord


class _Lent(NamedTuple):
    """A caller's list trimmed in place: the list, what it held, and the fit it now holds."""

    caller: list[Any]
    original: list[Any]
    output: FitRecord


class Lending:
    """
    With ``enable_pre_call_checks``, the Router checks windows on the caller's own list right
    after ``async_filter_deployments``, before any hook can return a new request. So that list
    is trimmed in place, and the deployment hook of the same request (found by its
    ``litellm_call_id``, which outlives every copy of the kwargs) puts the messages back.
    """

    def __init__(self, max_requests: int = 1024) -> None:
        self._lent: BoundedDict[_Lent] = BoundedDict(max_requests)

    def lend(self, call_id: str, caller: list[Any], fitted: list[Any], output: FitRecord) -> None:
        """Put ``fitted`` into the caller's list, remembering what it held."""
        self._lent.put(call_id, _Lent(caller, list(caller), output))
        caller[:] = fitted

    def give_back(self, call_id: str, messages: object, wanted: FitRecord) -> bool:
        """
        Restore the caller's list of ``call_id``; ``True`` when ``messages`` (what the deployment
        hook sees) are the trimmed copy and already fit ``wanted``'s window.
        """
        lent = self._lent.pop(call_id) if call_id else None
        if lent is None or lent.caller is messages:
            return False
        lent.caller[:] = lent.original
        return lent.output.same_messages(wanted) and lent.output.window <= (wanted.window or lent.output.window)
