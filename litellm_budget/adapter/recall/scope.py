"""Recall in a hook's pass (the scope, the fit with the tool counted, what it named stored) and each call's recalls."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from litellm_budget.adapter.records.calls import MAX_CALLS
from litellm_budget.bounded import BoundedLRU
from litellm_budget.core.api import Fitted, MessageFormat, RecallScope

from .offer import Scope, offerable, scope_of, with_tool
from .store import RecallStore

if TYPE_CHECKING:
    from litellm_budget.adapter.request.shapes import Parts, Shape
    from litellm_budget.adapter.request.targets import Target

#: Fits one request: its parts (the tools it counts) in a scope.
FitParts = Callable[["Parts", RecallScope], Fitted]


class PassView(Protocol):
    """What recall reads of a hook's pass (``hooks/hook_pass.py``), which it never imports."""

    @property
    def request(self) -> MutableMapping[str, Any]: ...
    @property
    def shape(self) -> Shape: ...
    @property
    def target(self) -> Target: ...
    @property
    def call_id(self) -> str: ...
    @property
    def parts(self) -> Parts: ...
    @property
    def silent(self) -> bool: ...
    @property
    def context(self) -> Any: ...


class Answered(NamedTuple):
    """One recall answered: its handle, how (``served``, ``expired``, ``unknown``, ``limit``), its bytes."""

    handle: str
    outcome: str
    answer_bytes: int

    def as_dict(self) -> dict[str, object]:
        return {"handle": self.handle, "outcome": self.outcome, "bytes": self.answer_bytes}


@dataclasses.dataclass(frozen=True, slots=True)
class CallRecall:
    """What one call knows of recall: its scope, its model group, the room its fit left, its recalls."""

    scope: Scope
    model_group: str
    lifetime: float
    room: int | None = None
    answered: tuple[Answered, ...] = ()

    @property
    def used(self) -> int:
        """The recalls that count against the limit: those answered with a text or a gone notice."""
        return sum(1 for one in self.answered if one.outcome != "limit")


class RecallState:
    """The stored texts and the calls' recall records: the plugin's memory of recall."""

    def __init__(self) -> None:
        self.store = RecallStore()
        self._calls: BoundedLRU[CallRecall] = BoundedLRU(MAX_CALLS)
        self._lock = threading.Lock()
        #: Called when a request is first offered the tool: the plugin registers what serves it.
        self.on_offer: Callable[[], None] = lambda: None

    def call(self, call_id: str) -> CallRecall | None:
        return self._calls.get(call_id) if call_id else None

    def update(self, call_id: str, change: Callable[[CallRecall], CallRecall]) -> CallRecall | None:
        with self._lock:
            found = self.call(call_id)
            if found is not None:
                found = change(found)
                self._calls.put(call_id, found)
            return found

    async def prepare(self, hook_pass: PassView) -> None:
        """Before a pass's fit: the request's scope, and whether another replica stored for its conversation."""
        call = self._record(hook_pass)
        if call is not None:
            await self.store.refresh(hook_pass.context.cache, call.scope.scope_id, call.lifetime)

    def step(self, hook_pass: PassView) -> RecallStep | None:
        """The recall step of a pass that may offer the tool (offered once the conversation has anything stored)."""
        call = self._record(hook_pass)
        if call is None:
            return None
        offered = self.store.offered(call.scope.scope_id)
        return RecallStep(self, hook_pass.call_id, call, hook_pass.shape.format, offered=offered)

    def _record(self, hook_pass: PassView) -> CallRecall | None:
        """The call's record, made once, so every hook and follow-up of the call names the same handles."""
        target, fmt = hook_pass.target, hook_pass.shape.format
        if hook_pass.silent or not target.settings.recall_tool or not offerable(hook_pass.request, fmt):
            return None
        known = self.call(hook_pass.call_id)
        if known is not None:
            return known
        scope = scope_of(hook_pass.request, target.model, fmt, hook_pass.parts.messages)
        if scope is None or not hook_pass.call_id:
            return None
        made = CallRecall(scope=scope, model_group=target.group, lifetime=target.settings.lifetime_for(target.model))
        with self._lock:
            self._calls.put(hook_pass.call_id, made)
        return made


@dataclasses.dataclass(slots=True)
class RecallStep:
    """One pass's recall: fit in the scope, store what the fit named, offer the tool."""

    state: RecallState
    call_id: str
    call: CallRecall
    fmt: MessageFormat
    offered: bool

    def fit(self, fit_parts: FitParts, parts: Parts) -> Fitted:
        """
        The fit to send, with the tool counted where it is offered; a fit that is the first to store is made again
        with it, so what is sent, tool included, is what was fitted.
        """
        scope = self.call.scope.scope
        if not self.offered:
            first = fit_parts(parts, scope)
            if not first.stored:
                return first
            self.offered = True
        fitted = fit_parts(dataclasses.replace(parts, tools=with_tool(parts.tools, self.fmt)), scope)
        if fitted.stored:
            self.state.store.keep(self.call.scope.scope_id, fitted.stored, self.call.lifetime)
        report = fitted.report
        if report.budget is not None and report.tokens_after is not None:
            room = report.budget - report.tokens_after
            self.state.update(self.call_id, lambda record: dataclasses.replace(record, room=room))
        return fitted

    def write(self, request: MutableMapping[str, Any]) -> None:
        if self.offered:
            request["tools"] = with_tool(request.get("tools"), self.fmt)
            self.state.on_offer()
