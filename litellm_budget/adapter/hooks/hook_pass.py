"""
One pass per hook: the request read once, then a chain of named steps. A pass is frozen: a step that learns or
changes something returns the next pass. Each fit is published once, whichever hook, retry or fallback sees it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, ClassVar, TypeVar

from litellm_budget.adapter.failopen import Guard
from litellm_budget.adapter.memory import Memory
from litellm_budget.adapter.recall.scope import RecallStep
from litellm_budget.adapter.records.calls import call_id_of
from litellm_budget.adapter.records.conversations import KnownKey, conversation_key
from litellm_budget.adapter.records.fit_records import FitRecord, record_of, sent_record
from litellm_budget.adapter.report.later_counts import PendingCount, ReportTo
from litellm_budget.adapter.report.publish import DEFERRED_KEY, record_in_metadata
from litellm_budget.adapter.request.shapes import Parts, Shape
from litellm_budget.adapter.request.targets import Target
from litellm_budget.adapter.served_edits.context_management import serve_compaction
from litellm_budget.adapter.summaries.summarizer import SummaryOutcome, SummarySource, summary_ahead
from litellm_budget.core.api import Fitted, RecallScope, fit_request, new_bytes, passed_through, unsent
from litellm_budget.logs import get_logger

log = get_logger()

#: From this many bytes new to the conversation (about 100k characters), a fit runs off the event loop.
OFF_LOOP_BYTES = 100_000

PRE_CALL_HOOK = "async_pre_call_hook"
FILTER_HOOK = "async_filter_deployments"
DEPLOYMENT_HOOK = "async_pre_call_deployment_hook"


@dataclasses.dataclass(frozen=True, slots=True)
class Context:
    """What a pass works with besides its request: the plugin's memory, the router in use, the proxy's shared cache."""

    memory: Memory
    router: Any
    cache: Any


@dataclasses.dataclass(frozen=True, slots=True)
class Prepared:
    """What the preparing steps made for the fit: the conversation key read, summaries known, what they cost."""

    conversation: KnownKey | None = None
    summaries: Mapping[str, str] | None = None
    summary: SummaryOutcome | None = None
    #: The parts a trial fit reads (``HookPass._trial_parts``), read once for both steps that need them.
    trial: Parts | None = None


_Pass = TypeVar("_Pass", bound="HookPass")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HookPass:
    """One hook's pass over one request; the subclasses are the hooks."""

    hook: ClassVar[str]
    request: MutableMapping[str, Any]
    shape: Shape
    target: Target
    call_id: str
    context: Context
    guard: Guard
    #: The request as the core fits it, read once (and again only after a step rewrote its messages).
    parts: Parts
    #: Nothing is published or remembered: the outcome is handed to a later hook that knows more.
    silent: bool = False
    #: Where the report goes in the request; ``None``: nowhere (silent fits).
    metadata: MutableMapping[str, Any] | None = None
    prepared: Prepared = Prepared()
    #: The fit's recall step, where the request may be offered the recall tool (``recall/scope.py``).
    recall: RecallStep | None = None
    #: What the fit step made; ``None``: nothing to send differently.
    fitted: Fitted | None = None
    #: The error that refuses a fit that cannot be sent (the write step's).
    refusal: Exception | None = None
    #: Whether a step changed the request (the deployment hook returns it then).
    changed: bool = False

    @classmethod
    def reading(
        cls: type[_Pass],
        request: MutableMapping[str, Any],
        shape: Shape,
        target: Target,
        context: Context,
        guard: Guard,
        *,
        silent: bool = False,
    ) -> _Pass:
        """The pass over ``request``, read once; the settings its target left out are logged (once)."""
        context.memory.invalid.note(target.invalid)
        return cls(
            request=request,
            shape=shape,
            target=target,
            call_id=call_id_of(request),
            context=context,
            guard=guard,
            parts=shape.read(request),
            silent=silent,
        )

    def reread(self: _Pass) -> _Pass:
        """The pass with its parts read again: a step rewrote the request's messages."""
        return dataclasses.replace(self, parts=self.shape.read(self.request))

    # The steps every hook shares (``passes.py`` chains them), in their order.

    async def served_compaction(self) -> HookPass:
        """A client's ``compact`` edit served here (Anthropic Messages, where the provider does not)."""
        memory, target = self.context.memory, self.target
        served = await serve_compaction(
            memory.summarizer, self.request, target, router=self.context.router, cache=self.context.cache
        )
        if served:
            memory.calls.record_edits(self.call_id, served)
        return self

    async def refresh_calibration(self) -> HookPass:
        """The token ratios other replicas learned for this model."""
        await self.context.memory.calibration.refresh(self.context.cache, self.target.model, self.target.settings)
        return self

    async def prepare_recall(self) -> HookPass:
        """The request's recall scope, and what another replica stored for its conversation."""
        await self.context.memory.recall.prepare(self)
        return self

    async def read_conversation(self) -> HookPass:
        """The conversation's edits other replicas kept (``Prepared.conversation``)."""
        target, conversations, parts = self.target, self.context.memory.conversations, self._trial_parts()
        lifetime, cache = target.settings.lifetime_for(target.model), self.context.cache
        known = await conversations.refresh(cache, target.fit_scope, self.shape.format, parts.messages, lifetime)
        return dataclasses.replace(self, prepared=dataclasses.replace(self.prepared, conversation=known, trial=parts))

    async def ask_summary(self) -> HookPass:
        """The summaries of what a fit would drop, from the summary model (``Prepared.summaries``)."""
        parts = self._trial_parts()
        source = SummarySource.through(self.context.router, self.context.cache, self.target.settings)
        summarizer, trial = self.context.memory.summarizer, self.trial(parts)
        summaries, outcome = await summary_ahead(summarizer, source, trial, parts.messages, self.shape.format)
        prepared = dataclasses.replace(self.prepared, summaries=summaries, summary=outcome)
        return dataclasses.replace(self, prepared=prepared)

    async def fit_in_turn(self) -> HookPass:
        """The fit, in a thread past ``OFF_LOOP_BYTES`` new bytes: tiktoken releases the GIL, so the loop goes on."""
        off_loop = new_bytes(self.parts.messages, self.shape.format, above=OFF_LOOP_BYTES) >= OFF_LOOP_BYTES
        return await asyncio.to_thread(self._fit) if off_loop else self._fit()

    def write(self) -> HookPass:
        """The fit put into the request; a fit that cannot be sent leaves the error that refuses it."""
        if self.fitted is None:
            return self
        return dataclasses.replace(self, refusal=self._write(self.fitted), changed=True)

    async def share_edits(self) -> HookPass:
        """The conversation edits remembered during the fit, shared with other replicas."""
        await self.context.memory.conversations.flush(self.context.cache)
        return self

    async def store_recalled(self) -> HookPass:
        """What the fit stored for recall, shared with other replicas."""
        await self.context.memory.recall.store.flush(self.context.cache)
        return self

    def trial(self, parts: Parts) -> Fitted | None:
        """A silent fit of ``parts`` (``_trial_parts``), for the summary step to see what would drop: nothing kept."""
        return dataclasses.replace(self, parts=parts, metadata=None, silent=True)._fit_once().fitted

    def _trial_parts(self) -> Parts:
        """The parts the summary step reads: the caller's own list where the filter hook lent it a trim."""
        if self.prepared.trial is not None:
            return self.prepared.trial
        lent = self.context.memory.calls.lent_of(self.call_id)
        if lent is None or not self.target.settings.summary_model:
            return self.parts
        return self.shape.read({**self.request, "messages": list(lent.original)})

    def _fit(self: _Pass) -> _Pass:
        return self._fit_once()

    def _write(self, fitted: Fitted) -> Exception | None:
        self.shape.write(self.request, fitted)
        if self.recall is not None:
            self.recall.write(self.request)
        return None

    def _fit_once(self: _Pass, *, defer: bool = False, bigger_window: int | None = None) -> _Pass:
        """
        The pass with its fit, unless these messages are already this call's fitted output; a new outcome is published
        once. ``defer`` leaves a rejection to a later hook (a bigger deployment or a fallback may take it); with
        ``bigger_window`` (a fallback's), what does not fit untrimmed is ``deferred``, not trimmed.
        """
        parts, target, calls = self.parts, self.target, self.context.memory.calls
        if parts.unsupported is not None:
            self._pass_unsupported(parts.unsupported)
            return self
        wanted = record_of(target.window, target.settings.policy, parts.messages, parts.max_tokens)
        if calls.get(self.call_id).already_fitted(wanted):
            return self
        key = self._conversation_key()
        fitted, recall = self._fitted(key)
        if self.silent:
            return dataclasses.replace(self, fitted=fitted)  # not sent (yet): whoever sends it keeps the state
        calls.note_conversation(self.call_id, key)
        report = fitted.report
        bigger = bigger_window is not None and (report.window or 0) < bigger_window
        if bigger and report.action in {"trimmed", "rejected"}:
            report = unsent(report, "deferred", f"a router fallback has a {bigger_window}-token window")
            fitted = Fitted(messages=list(parts.messages), max_tokens=parts.max_tokens, report=report)
        if target.refused:
            log.warning("request_override_refused", keys=list(target.refused), model_group=target.group, hook=self.hook)
        if defer and report.action == "rejected":
            log.info("rejection_deferred", hook=self.hook, model_group=target.group, window=report.window)
            return dataclasses.replace(self, recall=recall)
        if key:
            self.context.memory.conversations.keep(target, self.shape.format, parts.messages, report, key=key)
        self._report_once(fitted, wanted._replace(window=report.window or 0))
        return dataclasses.replace(self, fitted=fitted, recall=recall)

    def _fitted(self, key: str | None) -> tuple[Fitted, RecallStep | None]:
        parts, target, memory = self.parts, self.target, self.context.memory
        previous = memory.conversations.recall(key, parts.messages) if key else None
        known = {"previous": previous, "summaries": self.prepared.summaries, "gate": target.settings.size_gate}
        ratio, fmt = memory.ratio(target), self.shape.format

        def fit_parts(parts: Parts, scope: RecallScope | None) -> Fitted:
            return fit_request(target.fit_request(parts, fmt, ratio, recall=scope, **known))

        recall = memory.recall.step(self) if target.settings.recall_tool else None
        fitted = fit_parts(parts, None) if recall is None else recall.fit(fit_parts, parts)
        summary = self.prepared.summary
        if summary is not None:
            fitted = dataclasses.replace(fitted, report=summary.charged(fitted.report))
        return fitted, recall

    def _conversation_key(self) -> str | None:
        """The conversation key of a stateful fit: the one the ``conversation_state`` step read, else read now."""
        if not self.target.settings.conversation_state:
            return None
        messages, scope, known = self.parts.messages, self.target.fit_scope, self.prepared.conversation
        read = known.of(messages, scope) if known is not None else None
        return read or conversation_key(scope, self.shape.format, messages)

    def _pass_unsupported(self, reason: str) -> None:
        """A request this plugin will not fit goes as it came; its first sight is reported as such."""
        parts, target, calls = self.parts, self.target, self.context.memory.calls
        settings, fmt = target.settings, self.shape.format
        untouched = passed_through(
            parts.messages, model=target.model, settings=settings, fmt=fmt, max_tokens=parts.max_tokens, reason=reason
        )
        if not self.silent and not calls.get(self.call_id).served:
            self._publish(untouched.report, self.hook)
            calls.sent_as_it_came(self.call_id, untouched.report)  # what is sent: the request as it came

    def _report_once(self, fitted: Fitted, fitted_input: FitRecord) -> None:
        """Publish a new outcome, and remember what later hooks and attempts of this call must know."""
        calls, report = self.context.memory.calls, fitted.report
        if not calls.get(self.call_id).already_reported(fitted_input):
            self._publish(report, self.hook, fitted.keys)
        elif self.metadata is not None:
            record_in_metadata(self.metadata, report)  # a retry's fresh metadata still carries it
        if report.action == "deferred":
            calls.deferred(self.call_id, report)
        elif report.action != "rejected":
            output = sent_record(fitted_input, fitted, self.parts.max_tokens)
            calls.fitted(self.call_id, fitted_input, output, report)
            deferred = calls.get(self.call_id).deferred
            if deferred is not None and self.metadata is not None:
                # The attempt a fallback now serves: its payload tells both outcomes.
                record_in_metadata(self.metadata, deferred, key=DEFERRED_KEY)

    def _publish(self, report: Any, hook: str, keys: Sequence[int] | None = None) -> None:
        to = ReportTo(metadata=self.metadata, hook=hook, model_group=self.target.group, call_id=self.call_id)
        pending = PendingCount(self.parts, self.shape.format, self.target.settings, keys)
        self.context.memory.later.publish(report, to, pending)
