"""What each hook's pass does differently (``HookPass`` holds the steps they share), and each hook's chain of steps."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import MutableMapping
from typing import Any

from litellm_budget.adapter.failopen import Guard
from litellm_budget.adapter.records.calls import call_id_of
from litellm_budget.adapter.records.fit_records import record_of
from litellm_budget.adapter.records.lending import Lent
from litellm_budget.adapter.replicas.shared import shared_store
from litellm_budget.adapter.report.publish import log_failure_event, record_for_failure
from litellm_budget.adapter.request.fallbacks import fallback_window, has_fallbacks, leads_to_bigger_window
from litellm_budget.adapter.request.kwargs import metadata_of, resolved_provider
from litellm_budget.adapter.request.shapes import ANTHROPIC_SHAPE, CHAT_SHAPE
from litellm_budget.adapter.request.targets import Target
from litellm_budget.adapter.served_edits.context_management import apply_client_edits, read_compacted
from litellm_budget.adapter.windows.served_windows import deployment_of
from litellm_budget.core.api import Fitted, context_window_exceeded

from .cache_hints import hint_cache
from .chain import Step, always
from .hook_pass import DEPLOYMENT_HOOK, FILTER_HOOK, PRE_CALL_HOOK, Context, HookPass


def _compacting(hook_pass: HookPass) -> bool:
    return hook_pass.shape is ANTHROPIC_SHAPE and bool(hook_pass.request.get("context_management"))


class GroupPass(HookPass):
    """The proxy's pre-call hook, before routing: fit the group's largest window (what any deployment needs)."""

    __slots__ = ()
    hook = PRE_CALL_HOOK

    def _fit(self) -> GroupPass:
        request, router = self.request, self.context.router
        if leads_to_bigger_window(self.target, request, router):
            return self  # whatever does not fit goes to the bigger fallback untrimmed
        if _compacting(self):
            return self  # the client's own edits come first, once the deployment (its provider) is known
        defer = has_fallbacks(self.target.group, request, router)
        with_report = dataclasses.replace(self, metadata=metadata_of(request, self.shape.metadata_key))
        return with_report._fit_once(defer=defer)

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

    def adopt_lent(self) -> DeploymentPass:
        """A list lent under another id of this call, adopted as this call's."""
        self.context.memory.calls.adopt(self.call_id, self.request, self.parts.messages)
        return self

    async def refresh_served_window(self) -> DeploymentPass:
        """The window other replicas learned this deployment's backend holds."""
        await self.context.memory.served.refresh(self.context.cache, deployment_of(self.request))
        return self

    def _fit(self) -> DeploymentPass:
        memory = self.context.memory
        # The window the deployment's backend showed it holds, where that is less than configured.
        target = memory.served.applied(self.target, deployment_of(self.request))
        metadata = metadata_of(self.request, self.shape.metadata_key)
        hook_pass = dataclasses.replace(self, target=target, metadata=metadata)
        served, shape = memory.calls.get(self.call_id).served, self.shape
        if served is not None and served.format != shape.format.name:
            return hook_pass  # LiteLLM bridged a request fitted in its own format (/v1/messages to Responses)
        if shape is CHAT_SHAPE:
            to_fit = hook_pass._given_back()
            if to_fit is None:
                return hook_pass
            hook_pass = to_fit
        if shape is ANTHROPIC_SHAPE:
            applied = apply_client_edits(self.request, hook_pass.target.model)
            if applied is not None:
                memory.calls.record_edits(self.call_id, applied)
            if read_compacted(self.request, hook_pass.target.model) or applied is not None:
                hook_pass = hook_pass.reread()
        return hook_pass._fit_once(bigger_window=fallback_window(hook_pass.target, self.request, self.context.router))

    def hint_cache(self) -> DeploymentPass:
        """The cache hints the settings ask for, in the request this deployment is about to get."""
        hinted = hint_cache(self.request, self.shape, self.target, self.context.memory.calls.get(self.call_id))
        return dataclasses.replace(self, changed=True) if hinted else self

    def _write(self, fitted: Fitted) -> Exception | None:
        report = fitted.report
        if report.action in {"rejected", "deferred"}:
            # Raised inside LiteLLM's call: its failure event logs it, and the router falls back.
            record_for_failure(self.request, report)
            if report.action == "rejected":
                self.context.memory.calls.refused(self.call_id, report, self.target.group)
            return context_window_exceeded(report, llm_provider=resolved_provider(self.request))
        return super()._write(fitted)

    def _given_back(self) -> DeploymentPass | None:
        """
        Restore the caller's list the filter hook trimmed in place; ``None`` when that trim fits here, reported (and
        kept as the conversation's state) as what was sent. Else the pass to fit over the caller's messages again.
        """
        memory, target, parts = self.context.memory, self.target, self.parts
        lent = memory.calls.give_back(self.call_id)
        if lent is None:
            return self  # nothing was trimmed in place: the common case
        wanted = record_of(target.window, target.settings.policy, parts.messages, parts.max_tokens)
        # A trim lent without recall handles, or one whose summary is still wanted, is made again here.
        again = (lent.report.summary_needed and target.settings.summary_model) or target.settings.recall_tool
        if lent.caller is self.request["messages"] or not lent.output.fits_in(wanted) or again:
            self.request["messages"] = copy.deepcopy(lent.original)  # as LiteLLM hands this hook a copy
            return self.reread()
        self._publish(lent.report, FILTER_HOOK)
        memory.calls.fitted(self.call_id, lent.fitted_input, lent.output, lent.report)
        memory.conversations.keep(target, CHAT_SHAPE.format, lent.original, lent.report)
        return None


class FilterPass(HookPass):
    """
    The Router's filter hook. With ``enable_pre_call_checks`` the Router checks windows on the caller's own list
    right after it, before a hook can return a new request: so the list is trimmed in place (lent) until the call's
    deployment hook gives it back. That hook reports: this one cannot tell chat from a text completion's messages.
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
        return cls.reading({**kwargs, "messages": messages}, CHAT_SHAPE, target, context, guard, silent=True)

    def _write(self, fitted: Fitted) -> Exception | None:
        """Lend a trimmed fit: the caller's list now holds it, until the deployment hook gives it back."""
        if fitted.report.action == "trimmed":
            lent = Lent.of(self.request, fitted, self.target.settings.policy, self.parts.max_tokens)
            self.context.memory.calls.lend(self.call_id, fitted.messages, lent)
        return None


def _has_cache(hook_pass: HookPass) -> bool:
    return hook_pass.context.cache is not None


def _calibration_due(hook_pass: HookPass) -> bool:
    memory, settings = hook_pass.context.memory, hook_pass.target.settings
    return _has_cache(hook_pass) and settings.calibrate and memory.calibration.due_for_refresh(hook_pass.target.model)


def _state_shared(hook_pass: HookPass) -> bool:
    return hook_pass.target.settings.conversation_state and shared_store(hook_pass.context.cache) is not None


def _summarizing(hook_pass: HookPass) -> bool:
    return hook_pass.target.settings.summary_model is not None


#: What the fit needs, prepared first (every chain but the filter's); a failure only loses what it would learn.
BEFORE = (
    Step("compaction", _compacting, HookPass.served_compaction, ends_pass=False, rewrites=True),
    Step("calibration", _calibration_due, HookPass.refresh_calibration, ends_pass=False),
    Step("recall", lambda hook_pass: hook_pass.target.settings.recall_tool, HookPass.prepare_recall, ends_pass=False),
    Step("conversation_state", _state_shared, HookPass.read_conversation, ends_pass=False),
    Step("summary_step", _summarizing, HookPass.ask_summary, ends_pass=False),
)
FIT = Step("fit", always, HookPass.fit_in_turn)
WRITE = Step("write", lambda hook_pass: hook_pass.fitted is not None, HookPass.write)
#: What the fit learned, shared with other replicas once the request is written.
AFTER = (
    Step("after", always, HookPass.share_edits),
    Step("recall_store", lambda hook_pass: hook_pass.recall is not None, HookPass.store_recalled),
)


def _first_attempt(hook_pass: HookPass) -> bool:
    """A call fitted before (a retry, a fallback) skips Redis and the summarizer."""
    return hook_pass.context.memory.calls.get(hook_pass.call_id).served is None


#: Each hook's way, step by step (``chain.through`` runs it).
GROUP_STEPS = (*BEFORE, FIT, WRITE, *AFTER)
DEPLOYMENT_STEPS = (
    Step("lent", always, DeploymentPass.adopt_lent, ends_pass=False),
    *(
        step.only_if(_first_attempt)
        for step in (Step("served_window", _has_cache, DeploymentPass.refresh_served_window, ends_pass=False), *BEFORE)
    ),
    FIT,
    WRITE,
    Step("cache_hints", lambda hook_pass: hook_pass.refusal is None, DeploymentPass.hint_cache),
    *AFTER,
)
FILTER_STEPS = (FIT, WRITE)
