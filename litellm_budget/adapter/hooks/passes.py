"""
What each hook's pass does differently (``hook_pass.HookPass`` holds the steps they share): the
proxy's pre-call hook fits the group's largest window (``GroupPass``), the deployment hook the
chosen deployment's (``DeploymentPass``), and the Router's filter hook lends a trimmed list in
place until the deployment hook gives it back (``FilterPass``).
"""

from __future__ import annotations

import copy
from collections.abc import MutableMapping
from typing import Any

from litellm_budget.adapter.failopen import Guard
from litellm_budget.adapter.records.calls import call_id_of
from litellm_budget.adapter.records.fit_records import record_of
from litellm_budget.adapter.records.lending import Lent
from litellm_budget.adapter.report.publish import log_failure_event, record_for_failure
from litellm_budget.adapter.request.fallbacks import fallback_window, has_fallbacks, leads_to_bigger_window
from litellm_budget.adapter.request.kwargs import metadata_of, resolved_provider
from litellm_budget.adapter.request.shapes import ANTHROPIC_SHAPE, CHAT_SHAPE
from litellm_budget.adapter.request.targets import Target
from litellm_budget.adapter.served_edits.context_management import apply_client_edits, read_compacted
from litellm_budget.adapter.windows.served_windows import deployment_of
from litellm_budget.core.api import Fitted, context_window_exceeded

from .hook_pass import DEPLOYMENT_HOOK, FILTER_HOOK, PRE_CALL_HOOK, Context, HookPass


class GroupPass(HookPass):
    """The proxy's pre-call hook, before routing: fit the group's largest window (what any deployment needs)."""

    __slots__ = ()
    hook = PRE_CALL_HOOK

    def _fit(self) -> Fitted | None:
        request, router = self.request, self.context.router
        if leads_to_bigger_window(self.target, request, router):
            return None  # whatever does not fit goes to the bigger fallback untrimmed
        if self.shape is ANTHROPIC_SHAPE and request.get("context_management"):
            return None  # the client's own edits come first, once the deployment (its provider) is known
        defer = has_fallbacks(self.target.group, request, router)
        self.metadata = metadata_of(request, self.shape.metadata_key)
        return self._fit_once(defer=defer)

    def _write(self, fitted: Fitted) -> Exception | None:
        if fitted.report.action == "rejected":
            record_for_failure(self.request, fitted.report)
            return context_window_exceeded(fitted.report)
        return super()._write(fitted)

    async def refuse(self, error: Exception) -> None:
        """Raise the rejection, after LiteLLM's failure event (the proxy sends none for a pre-call hook's error)."""
        with Guard(self.hook).step("failure_event"):  # the answer is a refusal already: this only observes
            await log_failure_event(self.request, error)
        raise error


class DeploymentPass(HookPass):
    """The deployment hook (SDK, Router and proxy): fit the chosen deployment's window, or raise for fallbacks."""

    __slots__ = ()
    hook = DEPLOYMENT_HOOK

    async def before(self) -> None:
        """Adopt a list lent under another id of this call; a call fitted before skips Redis and the summarizer."""
        with self.guard.step("lent", ends_pass=False):
            self.context.memory.calls.adopt(self.call_id, self.request, self.parts.messages)
        if self.context.memory.calls.get(self.call_id).served is None:
            if self.context.cache is not None:
                with self.guard.step("served_window", ends_pass=False):
                    await self.context.memory.served.refresh(self.context.cache, deployment_of(self.request))
            await super().before()

    def _fit(self) -> Fitted | None:
        # The window the deployment's backend showed it holds, where that is less than configured.
        self.target = self.context.memory.served.applied(self.target, deployment_of(self.request))
        calls, shape = self.context.memory.calls, self.shape
        self.metadata = metadata_of(self.request, shape.metadata_key)
        served = calls.get(self.call_id).served
        if served is not None and served.format != shape.format.name:
            return None  # LiteLLM bridged a request fitted in its own format (/v1/messages to Responses)
        if shape is CHAT_SHAPE and self._given_back():
            return None
        if shape is ANTHROPIC_SHAPE:
            applied = apply_client_edits(self.request, self.target.model)
            if applied is not None:
                calls.record_edits(self.call_id, applied)
            if read_compacted(self.request, self.target.model) or applied is not None:
                self._reread()
        return self._fit_once(bigger_window=fallback_window(self.target, self.request, self.context.router))

    def _write(self, fitted: Fitted) -> Exception | None:
        report = fitted.report
        if report.action in {"rejected", "deferred"}:
            # Raised inside LiteLLM's call: its failure event logs it, and the router falls back.
            record_for_failure(self.request, report)
            if report.action == "rejected":
                self.context.memory.calls.refused(self.call_id, report, self.target.group)
            return context_window_exceeded(report, llm_provider=resolved_provider(self.request))
        return super()._write(fitted)

    def _given_back(self) -> bool:
        """
        Restore the caller's list the filter hook trimmed in place; ``True`` when that trim fits here,
        reported (and kept as the conversation's state) as what was sent. Else fit the caller's messages
        again, so that the report says all that changed.
        """
        memory, target, parts = self.context.memory, self.target, self.parts
        lent = memory.calls.give_back(self.call_id)
        if lent is None:
            return False  # nothing was trimmed in place: the common case
        wanted = record_of(target.window, target.settings.policy, parts.messages, parts.max_tokens)
        # A trim lent without recall handles, or one whose summary is still wanted, is made again here.
        again = (lent.report.summary_needed and target.settings.summary_model) or target.settings.recall_tool
        if lent.caller is self.request["messages"] or not lent.output.fits_in(wanted) or again:
            self.request["messages"] = copy.deepcopy(lent.original)  # as LiteLLM hands this hook a copy
            self._reread()
            return False
        self._publish(lent.report, FILTER_HOOK)
        memory.calls.fitted(self.call_id, lent.fitted_input, lent.output, lent.report)
        memory.conversations.keep(target, CHAT_SHAPE.format, lent.original, lent.report)
        return True


class FilterPass(HookPass):
    """
    The Router's filter hook. With ``enable_pre_call_checks`` the Router checks windows on the
    caller's own list right after it, before a hook can return a new request: so the list is
    trimmed in place (lent) until the same call's deployment hook gives it back. It cannot tell a
    chat request from a text completion turned into messages: the deployment hook reports.
    """

    __slots__ = ()
    hook = FILTER_HOOK

    @classmethod
    def lending(
        cls, kwargs: MutableMapping[str, Any], messages: list[Any], target: Target, context: Context, guard: Guard
    ) -> FilterPass | None:
        """The pass over the caller's ``messages``; ``None`` when a bigger fallback takes them untrimmed."""
        if leads_to_bigger_window(target, kwargs, context.router):
            return None
        call_id_of(kwargs, mint=True)  # the deployment hook finds the lent list by it
        hook_pass: FilterPass = cls.reading({**kwargs, "messages": messages}, CHAT_SHAPE, target, context, guard)
        hook_pass.silent = True
        return hook_pass

    def _write(self, fitted: Fitted) -> Exception | None:
        """Lend a trimmed fit: the caller's list now holds it, until the deployment hook gives it back."""
        if fitted.report.action == "trimmed":
            lent = Lent.of(self.request, fitted, self.target.settings.policy, self.parts.max_tokens)
            self.context.memory.calls.lend(self.call_id, fitted.messages, lent)
        return None
