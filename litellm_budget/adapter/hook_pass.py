"""
One pass per hook: the request read once (shape, parts, target, call id), then the hook's steps, each run by
name inside the fail-open boundary (``failopen.py``): ``before`` (what other replicas and the summary model
know), ``fit``, ``write`` (the fit back into the request), ``after`` (share what was learned). ``GroupPass``,
``DeploymentPass`` and ``FilterPass`` are the three hooks. A fit is published once, whichever hook, retry or
fallback sees it (``calls.py`` remembers it); silent fits (the filter's, a ``trial``) publish and remember nothing.

Over the 300-line cap (``tests/test_layers.py`` says so): the three passes share every step, and
apart they would only send a reader between files for one request.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, ClassVar, TypeVar

from litellm_budget.core.api import Fitted, context_window_exceeded, fit_request, passed_through, unsent
from litellm_budget.logs import get_logger

from .calls import FitRecord, call_id_of, record_of, sent_record
from .context_management import apply_client_edits, read_compacted, serve_compaction
from .conversation_state import KnownKey, conversation_key
from .failopen import Guard
from .fallbacks import fallback_window, has_fallbacks, leads_to_bigger_window
from .later_counts import Counting, Where
from .lending import Lent
from .memory import Memory
from .publish import DEFERRED_KEY, log_failure_event, record_for_failure, record_in_metadata
from .request import metadata_of, resolved_provider
from .shapes import ANTHROPIC_SHAPE, CHAT_SHAPE, Parts, Shape
from .shared import shared_store
from .summarizer import SummaryOutcome, SummarySource
from .summary_step import summary_ahead
from .targets import Target

log = get_logger()

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
class Learned:
    """What ``before`` learned for the fit: the conversation key read, summaries known, what they cost."""

    conversation: KnownKey | None = None
    summaries: Mapping[str, str] | None = None
    summary: SummaryOutcome | None = None


NOTHING_LEARNED = Learned()
_Pass = TypeVar("_Pass", bound="HookPass")


@dataclasses.dataclass(slots=True, kw_only=True)
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
    #: Where the report goes in the request; ``None``: nowhere (silent fits).
    metadata: MutableMapping[str, Any] | None = None
    learned: Learned = NOTHING_LEARNED
    #: Nothing is published or remembered: the outcome is handed to a later hook that knows more.
    silent: bool = False

    @classmethod
    def reading(
        cls: type[_Pass],
        request: MutableMapping[str, Any],
        shape: Shape,
        target: Target,
        context: Context,
        guard: Guard,
    ) -> _Pass:
        """The pass over ``request``, read once; the settings its target left out are logged (once)."""
        context.memory.invalid.note(target.invalid)
        parts, call_id = shape.read(request), call_id_of(request)
        return cls(
            request=request, shape=shape, target=target, call_id=call_id, context=context, guard=guard, parts=parts
        )

    async def before(self) -> None:
        """Serve a client's compaction, adopt what other replicas learned, get the summary a fit wants."""
        await self.guard.run_async("before", self._before, ends_pass=False)

    def fit(self) -> Fitted | None:
        """This hook's fit of the request; ``None``: nothing to send differently."""
        return self.guard.run("fit", self._fit)

    def write(self, fitted: Fitted | None) -> Exception | None:
        """Put ``fitted`` into the request; for a fit that cannot be sent, the error that refuses it."""
        return None if fitted is None else self.guard.run("write", lambda: self._write(fitted))

    async def after(self) -> None:
        """Share the conversation edits remembered during the fit."""
        await self.guard.run_async("after", lambda: self.context.memory.conversations.flush(self.context.cache))

    def trial(self, parts: Parts) -> Fitted | None:
        """A silent fit of ``parts`` (``_trial_parts``), for the summary step to see what would drop: nothing kept."""
        return dataclasses.replace(self, parts=parts, metadata=None, silent=True)._fit_once()

    def _trial_parts(self) -> Parts:
        """The parts the summary step reads: the caller's own list where the filter hook lent it a trim."""
        lent = self.context.memory.lenders.of(self.call_id)
        if lent is None or not self.target.settings.summary_model:
            return self.parts
        return self.shape.read({**self.request, "messages": list(lent.original)})

    def _fit(self) -> Fitted | None:
        return self._fit_once()

    def _write(self, fitted: Fitted) -> Exception | None:
        self.shape.write(self.request, fitted)
        return None

    def _reread(self) -> None:
        """A step rewrote the request's messages: read the parts again."""
        self.parts = self.shape.read(self.request)

    async def _before(self) -> None:
        memory, cache = self.context.memory, self.context.cache
        settings, model = self.target.settings, self.target.model
        if self.shape is ANTHROPIC_SHAPE and self.request.get("context_management"):
            await self.guard.run_async("compaction", self._serve_compaction, ends_pass=False)
        if cache is not None and settings.calibrate and memory.calibration.due_for_refresh(model):
            await self.guard.run_async(
                "calibration", lambda: memory.calibration.refresh(cache, model, settings), ends_pass=False
            )
        refresh_state = settings.conversation_state and shared_store(cache) is not None
        if not refresh_state and settings.summary_model is None:
            return  # the common case: nothing to read the request for
        parts = self._trial_parts()  # once, for both steps below
        if refresh_state:
            refresh = functools.partial(self._refresh_state, parts.messages)
            known = await self.guard.run_async("conversation_state", refresh, ends_pass=False)
            self.learned = dataclasses.replace(self.learned, conversation=known)
        if settings.summary_model is not None:
            step = functools.partial(self._summary_step, parts)
            found = await self.guard.run_async("summary_step", step, ends_pass=False)
            summaries, outcome = found or (None, None)
            self.learned = dataclasses.replace(self.learned, summaries=summaries, summary=outcome)

    async def _serve_compaction(self) -> None:
        memory, target = self.context.memory, self.target
        try:
            served = await serve_compaction(
                memory.summarizer, self.request, target, router=self.context.router, cache=self.context.cache
            )
        finally:
            self._reread()  # the edit was taken out, and earlier compaction blocks were read as the API does
        if served:
            memory.calls.record_edits(self.call_id, served)

    async def _refresh_state(self, messages: Any) -> KnownKey | None:
        model, conversations = self.target.model, self.context.memory.conversations
        lifetime = self.target.settings.lifetime_for(model)
        return await conversations.refresh(self.context.cache, model, self.shape.format, messages, lifetime)

    async def _summary_step(self, parts: Parts) -> tuple[Mapping[str, str] | None, SummaryOutcome | None]:
        source = SummarySource.through(self.context.router, self.context.cache, self.target.settings)
        trial = self.trial(parts)
        return await summary_ahead(self.context.memory.summarizer, source, trial, parts.messages, self.shape.format)

    def _fit_once(self, *, defer: bool = False, bigger_window: int | None = None) -> Fitted | None:
        """
        Fit unless these messages are already this call's fitted output; publish a new outcome once.
        ``defer`` leaves a rejection to a later hook (a bigger deployment or a fallback may take it);
        with ``bigger_window`` (a fallback's) what does not fit untrimmed is ``deferred``, not trimmed.
        """
        parts, target, calls = self.parts, self.target, self.context.memory.calls
        if parts.unsupported is not None:
            self._pass_unsupported(parts.unsupported)
            return None
        wanted = record_of(target.window, target.settings.policy, parts.messages, parts.max_tokens)
        if calls.get(self.call_id).already_fitted(wanted):
            return None
        key = self._conversation_key()
        fitted = self._fitted(key)
        if self.silent:
            return fitted  # not sent (yet): whoever sends it keeps the state
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
            return None
        if key:
            self.context.memory.conversations.keep(target, self.shape.format, parts.messages, report, key=key)
        self._report_once(fitted, wanted._replace(window=report.window or 0))
        return fitted

    def _fitted(self, key: str | None) -> Fitted:
        parts, target, memory = self.parts, self.target, self.context.memory
        fitted = fit_request(
            parts.messages,
            model=target.model,
            window=target.window,
            tools=parts.tools,
            max_tokens=parts.max_tokens,
            settings=target.settings,
            ratio=memory.ratio(target),
            fmt=self.shape.format,
            previous=memory.conversations.recall(key, parts.messages) if key else None,
            summaries=self.learned.summaries,
            gate=target.settings.size_gate,
        )
        summary = self.learned.summary
        return fitted if summary is None else dataclasses.replace(fitted, report=summary.charged(fitted.report))

    def _conversation_key(self) -> str | None:
        """The conversation key of a stateful fit: the one ``before`` read for these messages, else read now."""
        if not self.target.settings.conversation_state:
            return None
        messages, model, known = self.parts.messages, self.target.model, self.learned.conversation
        return (known.of(messages, model) if known is not None else None) or conversation_key(
            model, self.shape.format, messages
        )

    def _pass_unsupported(self, reason: str) -> None:
        """A request this plugin will not fit goes as it came; its first sight is reported as such."""
        parts, target, calls = self.parts, self.target, self.context.memory.calls
        settings, fmt = target.settings, self.shape.format
        untouched = passed_through(
            parts.messages, model=target.model, settings=settings, fmt=fmt, max_tokens=parts.max_tokens, reason=reason
        )
        if not self.silent and not calls.get(self.call_id).served:
            self._publish(untouched.report, self.hook)
            calls.serve(self.call_id, untouched.report)  # what is sent: the request as it came

    def _report_once(self, fitted: Fitted, fitted_input: FitRecord) -> None:
        """Publish a new outcome, and remember what later hooks and attempts of this call must know."""
        calls, report = self.context.memory.calls, fitted.report
        if not calls.get(self.call_id).already_reported(fitted_input):
            self._publish(report, self.hook, fitted.keys)
        elif self.metadata is not None:
            record_in_metadata(self.metadata, report)  # a retry's fresh metadata still carries it
        if report.action == "deferred":
            calls.defer(self.call_id, report)
        elif report.action != "rejected":
            output = sent_record(fitted_input, fitted, self.parts.max_tokens)
            calls.remember_fit(self.call_id, fitted_input, output, report)
            deferred = calls.get(self.call_id).deferred
            if deferred is not None and self.metadata is not None:
                # The attempt a fallback now serves: its payload tells both outcomes.
                record_in_metadata(self.metadata, deferred, key=DEFERRED_KEY)

    def _publish(self, report: Any, hook: str, keys: Sequence[int] | None = None) -> None:
        where = Where(metadata=self.metadata, hook=hook, model_group=self.target.group, call_id=self.call_id)
        counting = Counting(self.parts, self.shape.format, self.target.settings, keys)
        self.context.memory.later.publish(report, where, counting)


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
        guard = Guard(self.hook)  # the answer is a refusal already: logging it can only be observed
        await guard.run_async("failure_event", lambda: log_failure_event(self.request, error))
        raise error


class DeploymentPass(HookPass):
    """The deployment hook (SDK, Router and proxy): fit the chosen deployment's window, or raise for fallbacks."""

    __slots__ = ()
    hook = DEPLOYMENT_HOOK

    async def before(self) -> None:
        """Adopt a list lent under another id of this call; a call fitted before skips Redis and the summarizer."""
        adopt = functools.partial(self.context.memory.lenders.adopt, self.call_id, self.request, self.parts.messages)
        self.guard.run("lent", adopt, ends_pass=False)
        if self.context.memory.calls.get(self.call_id).served is None:
            await super().before()

    def _fit(self) -> Fitted | None:
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
                self.context.memory.calls.reject(self.call_id, report, self.target.group)
            return context_window_exceeded(report, llm_provider=resolved_provider(self.request))
        return super()._write(fitted)

    def _given_back(self) -> bool:
        """
        Restore the caller's list the filter hook trimmed in place; ``True`` when that trim fits here,
        reported (and kept as the conversation's state) as what was sent. Else fit the caller's messages
        again, so that the report says all that changed.
        """
        memory, target, parts = self.context.memory, self.target, self.parts
        lent = memory.lenders.give_back(self.call_id)
        if lent is None:
            return False  # nothing was trimmed in place: the common case
        wanted = record_of(target.window, target.settings.policy, parts.messages, parts.max_tokens)
        summary = lent.report.summary_needed and target.settings.summary_model
        if lent.caller is self.request["messages"] or not lent.output.fits_in(wanted) or summary:
            self.request["messages"] = copy.deepcopy(lent.original)  # as LiteLLM hands this hook a copy
            self._reread()
            return False
        self._publish(lent.report, FILTER_HOOK)
        memory.calls.remember_fit(self.call_id, lent.fitted_input, lent.output, lent.report)
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
        one: FilterPass = cls.reading({**kwargs, "messages": messages}, CHAT_SHAPE, target, context, guard)
        one.silent = True
        return one

    def _write(self, fitted: Fitted) -> Exception | None:
        """Lend a trimmed fit: the caller's list now holds it, until the deployment hook gives it back."""
        if fitted.report.action == "trimmed":
            lent = Lent.of(self.request, fitted, self.target.settings.policy, self.parts.max_tokens)
            self.context.memory.lenders.lend(self.call_id, fitted.messages, lent)
        return None
