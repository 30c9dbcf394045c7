"""Caller lists the Router's window check must see trimmed: trimmed in place, given back before the call."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, NamedTuple

from litellm_budget.core.memo import BoundedDict
from litellm_budget.core.report import BudgetReport

from .conversations import Conversations
from .fitting import keep_state
from .once import DoneFits, FitRecord, record_of
from .publish import publish
from .request import chat_messages, max_tokens_of
from .shapes import CHAT_SHAPE
from .targets import Target


class Lent(NamedTuple):
    """A caller's list trimmed in place: the list and what it held, the fit's records and its report."""

    caller: list[Any]
    original: list[Any]
    fitted_input: FitRecord
    output: FitRecord
    report: BudgetReport


class Lending:
    """
    With ``enable_pre_call_checks``, the Router checks windows on the caller's own list right
    after ``async_filter_deployments``, before any hook can return a new request. So that list
    is trimmed in place, and the deployment hook of the same request (found by its
    ``litellm_call_id``, which outlives every copy of the kwargs) puts the messages back.
    The filter hook cannot tell a chat request from a text completion the Router turned into
    messages, so it reports nothing: the deployment hook, which can, publishes the report.
    """

    def __init__(self, max_requests: int = 1024) -> None:
        self._lent: BoundedDict[Lent] = BoundedDict(max_requests)

    def lend(self, call_id: str, fitted: list[Any], lent: Lent) -> None:
        """Put ``fitted`` into the caller's list, remembering what it held."""
        self._lent.put(call_id, lent)
        lent.caller[:] = fitted

    def lent(self, call_id: str) -> bool:
        """Whether the caller's list of ``call_id`` is trimmed in place now."""
        return bool(call_id) and self._lent.get(call_id) is not None

    def original(self, call_id: str) -> list[Any] | None:
        """What the caller's list of ``call_id`` held before it was trimmed in place, if it was."""
        lent = self._lent.get(call_id) if call_id else None
        return list(lent.original) if lent is not None else None

    def give_back(self, call_id: str, messages: object, wanted: FitRecord) -> Lent | None:
        """
        Restore the caller's list of ``call_id``. When ``messages`` (what the deployment hook
        sees) are the trimmed copy and already fit ``wanted``'s window, return what was lent,
        for the deployment hook to report; else ``None``: fit again.
        """
        lent = self._lent.pop(call_id) if call_id else None
        if lent is None or lent.caller is messages:
            return None
        lent.caller[:] = lent.original
        fits = lent.output.same_messages(wanted) and lent.output.window <= (wanted.window or lent.output.window)
        return lent if fits else None


def give_back(  # noqa: PLR0913 - the deployment hook's view of one request
    lending: Lending,
    done: DoneFits,
    conversations: Conversations,
    kwargs: dict[str, Any],
    *,
    target: Target,
    metadata: MutableMapping[str, Any],
) -> bool:
    """
    The deployment hook's side of lending: restore the caller's list the filter hook trimmed;
    ``True`` when that trim already fits here, and is then reported (and kept as the
    conversation's state) as what was sent.
    """
    call_id = str(kwargs.get("litellm_call_id") or "")
    if not lending.lent(call_id):
        return False  # nothing was trimmed in place: the common case, and no fingerprint to take
    _, max_tokens = max_tokens_of(kwargs)
    wanted = record_of(target.window, target.settings.policy, chat_messages(kwargs["messages"]), max_tokens)
    lent = lending.give_back(call_id, kwargs["messages"], wanted)
    if lent is None:
        return False
    if lent.report.summary_needed and target.settings.summary_model:
        kwargs["messages"] = list(lent.original)  # refit from the original, with its summary
        return False
    # The filter hook trimmed these messages for this deployment's window; report it here.
    hook = "async_filter_deployments"
    publish(lent.report, metadata, hook=hook, model_group=target.group, litellm_call_id=call_id)
    done.remember(call_id, lent.fitted_input, lent.output)
    done.serve(call_id, lent.report)
    keep_state(conversations, target, CHAT_SHAPE, lent.original, lent.report)
    return True
