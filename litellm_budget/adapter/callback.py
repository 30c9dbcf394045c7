"""The LiteLLM adapter: extract, call the core, publish the report, return. Nothing more."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, final

from litellm.integrations.custom_logger import CustomLogger

from litellm_budget.core.errors import context_window_exceeded, provider_of
from litellm_budget.core.fit import Fitted
from litellm_budget.core.memo import BoundedDict
from litellm_budget.core.settings import BudgetSettings
from litellm_budget.core.tokens import preload_counters

from . import request as req
from .client_edits import apply_client_edits
from .compaction import respond_with_edits
from .config import ConfiguredSettings
from .failopen import guarded, guarded_async
from .fallbacks import fallback_window, has_fallbacks, leads_to_bigger_window
from .fitting import fit_once
from .lending import Lending, Lent, give_back
from .memory import Memory
from .metrics import prepare_metrics
from .once import DoneFits, record_of
from .publish import headers_for, log_failure_event, record_for_failure, report_in, warn_resent
from .shapes import ANTHROPIC_SHAPE, CHAT_SHAPE, Shape, shape_for
from .summarizer import is_summary_call
from .targets import Target, deployment_target, group_target, with_request_overrides

_T = TypeVar("_T")


@final
class ContextBudget(CustomLogger):  # type: ignore[misc]  # litellm is untyped to mypy here
    """
    Keeps every request inside its model's window (chat completions, Anthropic Messages, OpenAI
    Responses); register an instance as a callback.

    Keyword arguments are ``BudgetSettings`` knobs. They override the proxy's
    ``callback_settings: {litellm_budget: {...}}``, which override the defaults. ``router``
    is the SDK's ``litellm.Router`` whose fallbacks come first (the proxy's is found by itself).
    The hooks are defined on this class itself, not inherited, because the proxy calls
    ``async_pre_call_hook`` and the headers hook only on classes that define them.
    """

    def __init__(self, *, router: Any = None, **knobs: Any) -> None:
        super().__init__()
        self._config = ConfiguredSettings(knobs)
        # One-time set-up happens at registration, so the first request costs what later ones do.
        preload_counters()
        prepare_metrics()
        self._router = router
        self._done = DoneFits()
        self._lending = Lending()
        # Requests the proxy's first hook saw as another call type than chat, by call id.
        self._not_chat: BoundedDict[bool] = BoundedDict(4096)
        self._memory = Memory()
        # The proxy's DualCache (Redis when configured), seen in the pre-call hook.
        self._shared_cache: Any = None

    @property
    def settings(self) -> BudgetSettings | None:
        """
        Defaults, then the proxy's ``callback_settings.litellm_budget``, then this instance's
        knobs; ``None`` while the configured settings are invalid (requests then pass through).
        """
        return self._config.current()

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        """Proxy, before routing: fit the group's largest window (what any deployment needs)."""
        self._shared_cache = cache if cache is not None else self._shared_cache
        shape = shape_for(call_type, data)
        if shape is not CHAT_SHAPE:
            # The Router's filter hook sees other call types' messages (a text completion's
            # prompt, Anthropic's blocks) as chat: it must leave them alone.
            call_id = data.get("litellm_call_id")
            if isinstance(call_id, str) and call_id:
                self._not_chat.put(call_id, True)
        settings = self.settings
        if settings is not None and shape is not None and not is_summary_call(data):
            hook = "async_pre_call_hook"
            target = self._guarded(hook, settings, lambda: self._group_target(data, settings))
            if target is not None:
                summary = await self._before_fit(cache, data, target, shape)
                rejection = self._guarded(hook, settings, lambda: self._fit_group(data, target, shape, summary))
                await self._memory.after_fit(cache)
                if rejection is not None:
                    await guarded_async(hook, log_failure_event(data, rejection))
                    raise rejection
        return data

    async def async_filter_deployments(
        self,
        model: str,
        healthy_deployments: list[Any],
        messages: list[Any] | None,
        request_kwargs: dict[str, Any] | None = None,
        parent_otel_span: Any = None,
    ) -> list[Any]:
        """Router, before its own window check: fit in place, so ``enable_pre_call_checks`` keeps deployments."""
        settings = self.settings
        if settings is not None and isinstance(messages, list) and messages and self._may_be_chat(request_kwargs or {}):
            self._guarded(
                "async_filter_deployments",
                settings,
                lambda: self._fit_in_place(model, healthy_deployments, messages, request_kwargs or {}, settings),
            )
        return healthy_deployments

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> dict[str, Any] | None:
        """SDK, Router and proxy, after a deployment is chosen: fit its window, or raise for fallbacks."""
        settings = self.settings
        shape = shape_for(call_type, kwargs)
        if settings is None or shape is None or is_summary_call(kwargs):
            return None
        hook, cache = "async_pre_call_deployment_hook", self._shared_cache
        target = self._guarded(hook, settings, lambda: deployment_target(kwargs, settings))
        fitted_before = self._done.served(str(kwargs.get("litellm_call_id") or "")) is not None
        # A request the pre-call hook fitted needs no second look at Redis or the summarizer.
        summary = await self._before_fit(cache, kwargs, target, shape) if target and not fitted_before else {}
        fitted = self._guarded(hook, settings, lambda: self._fit_deployment(kwargs, settings, shape, summary))
        await self._memory.after_fit(cache)
        return fitted

    async def async_post_call_response_headers_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: Any,
        response: Any,
        request_headers: dict[str, str] | None = None,
        litellm_call_info: dict[str, Any] | None = None,
    ) -> dict[str, str] | None:
        """Proxy: ``x-litellm-budget-*`` headers of what was sent (after a fallback: the fallback's fit)."""
        served = self._done.served(str(data.get("litellm_call_id") or ""))
        report = served.as_dict() if served is not None else report_in(req.read_metadata(data))
        return headers_for(report) if report is not None else None

    async def async_post_call_success_hook(self, data: dict[str, Any], user_api_key_dict: Any, response: Any) -> Any:
        """Proxy: a response to a request whose context_management was served here says so, as Anthropic's does."""
        if not isinstance(response, dict):
            return response  # not the Messages response (a bridged call's inner one): it is not ours to answer
        return respond_with_edits(response, self._memory.client_edits.pop(str(data.get("litellm_call_id") or "")))

    async def async_post_call_success_deployment_hook(self, request_data: Any, response: Any, call_type: Any) -> Any:
        """SDK and Router (``litellm.anthropic.messages.acreate``): the same, where no proxy hook runs."""
        return await self.async_post_call_success_hook(request_data, None, response)

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """Learn the provider's token ratio from the usage it reported; never raises."""
        settings = self.settings
        if settings is not None and settings.calibrate:
            learning = self._memory.calibration.learn_from(kwargs, response_obj, settings, self._shared_cache)
            await guarded_async("async_log_success_event", learning)

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: dict[str, Any]) -> None:
        """Every call, just before it goes out: a request rejected here is being re-sent past the hooks."""
        call_id = str(kwargs.get("litellm_call_id") or "")
        resent = self._done.resent_after_rejection(call_id)
        if resent is not None:
            warn_resent(*resent, call_id)

    def _group_target(self, data: dict[str, Any], settings: BudgetSettings) -> Target | None:
        """The group's largest known window; ``None`` leaves the work to the deployment hook."""
        group = str(data.get("model"))
        router = self._router_in_use()
        deployments = (router.get_model_list(model_name=group) if router is not None else None) or []
        target = group_target(group, deployments, settings)
        return None if target is None else with_request_overrides(target, req.read_metadata(data))

    def _fit_group(self, data: dict[str, Any], target: Target, shape: Shape, summary: Any) -> Exception | None:
        """Fit before routing; the error to raise when it cannot fit and no fallback may take it."""
        if leads_to_bigger_window(target, data, self._router_in_use()):
            return None  # whatever does not fit goes to the bigger fallback untrimmed
        if shape is ANTHROPIC_SHAPE and data.get("context_management"):
            return None  # the client's own edits come first, once the deployment (its provider) is known
        defer = has_fallbacks(target.group, data, self._router_in_use())
        metadata = req.metadata_of(data, shape.metadata_key)
        hook = "async_pre_call_hook"
        fitted = self._fit_once(data, target, hook=hook, metadata=metadata, defer=defer, shape=shape, **summary)
        if fitted is None:
            return None
        if fitted.report.action == "rejected":
            record_for_failure(data, fitted.report)
            return context_window_exceeded(fitted.report, llm_provider=provider_of(target.model))
        shape.write(data, fitted)
        return None

    def _fit_in_place(
        self,
        model: str,
        deployments: list[Any],
        messages: list[Any],
        request_kwargs: dict[str, Any],
        settings: BudgetSettings,
    ) -> None:
        target = group_target(model, deployments, settings)
        if target is None or leads_to_bigger_window(target, request_kwargs, self._router_in_use()):
            return
        call_id = req.call_id_of(request_kwargs)
        request = {**request_kwargs, "messages": messages}
        fitted = self._fit_once(request, target, hook="async_filter_deployments", metadata=None, silent=True)
        if fitted is not None and fitted.report.action == "trimmed":
            policy, report = target.settings.policy, fitted.report
            _, max_tokens = req.max_tokens_of(request_kwargs)
            lent = Lent(
                caller=messages,
                original=list(messages),
                fitted_input=record_of(report.window, policy, messages, max_tokens),
                output=record_of(report.window, policy, fitted.messages, fitted.max_tokens),
                report=report,
            )
            self._lending.lend(call_id, fitted.messages, lent)

    def _fit_deployment(
        self, kwargs: dict[str, Any], settings: BudgetSettings, shape: Shape, summary: Any
    ) -> dict[str, Any] | None:
        metadata = req.metadata_of(kwargs, shape.metadata_key)
        target = deployment_target(kwargs, settings)
        call_id = str(kwargs.get("litellm_call_id") or "")
        served = self._done.served(call_id)
        if served is not None and served.format != shape.format.name:
            return None  # LiteLLM bridged a request fitted in its own format (/v1/messages to Responses)
        lending, conversations = self._lending, self._memory.conversations
        if shape is CHAT_SHAPE and give_back(
            lending, self._done, conversations, kwargs, target=target, metadata=metadata
        ):
            return None
        if shape is ANTHROPIC_SHAPE:
            applied = apply_client_edits(kwargs, target.model)
            if applied is not None:
                self._memory.record_edits(call_id, applied)
        bigger = fallback_window(target, kwargs, self._router_in_use())
        hook = "async_pre_call_deployment_hook"
        fitted = self._fit_once(
            kwargs, target, hook=hook, metadata=metadata, bigger_window=bigger, shape=shape, **summary
        )
        if fitted is None:
            return None
        if fitted.report.action in {"rejected", "deferred"}:
            # Raised inside LiteLLM's call: its failure event logs it, and the router falls back.
            record_for_failure(kwargs, fitted.report)
            if fitted.report.action == "rejected":
                self._done.reject(call_id, fitted.report, target.group)
            raise context_window_exceeded(fitted.report, llm_provider=req.provider_of(kwargs))
        shape.write(kwargs, fitted)
        return kwargs

    async def _before_fit(self, cache: Any, request: Any, target: Target, shape: Shape) -> dict[str, Any]:
        """What other replicas learned, and the summary a silent trial fit wants: ``fit_once`` keywords."""
        original = self._lending.original(str(request.get("litellm_call_id") or ""))
        if original is not None and target.settings.summary_model:
            request = {**request, "messages": original}  # the filter hook's trim is given back for this fit

        trial = functools.partial(
            self._fit_once, request, target, hook="summary_step", metadata=None, silent=True, shape=shape
        )
        guarded_trial = functools.partial(self._guarded, "summary_step", target.settings, trial)
        router = self._router_in_use()
        return await self._memory.before_fit(cache, request, target, shape, trial=guarded_trial, router=router)

    def _router_in_use(self) -> Any:
        return self._router if self._router is not None else _proxy_router()

    def _may_be_chat(self, request_kwargs: dict[str, Any]) -> bool:
        call_id = request_kwargs.get("litellm_call_id")
        return not (isinstance(call_id, str) and self._not_chat.get(call_id)) and not is_summary_call(request_kwargs)

    def _fit_once(self, request: Mapping[str, Any], target: Target, **how: Any) -> Fitted | None:
        ratio, conversations = self._memory.ratio(target), self._memory.conversations
        return fit_once(request, target, self._done, ratio=ratio, conversations=conversations, **how)

    @staticmethod
    def _guarded(hook: str, settings: BudgetSettings, work: Callable[[], _T]) -> _T | None:
        return guarded(hook, work, None, fail_closed=settings.fail_closed)


def _proxy_router() -> Any:
    """
    The router of a proxy running in this process; ``None`` in an SDK process. Only a proxy
    that is already running has loaded its server module: importing it here would load the
    whole proxy into an SDK user's process, and fail where the proxy extras are not installed.
    """
    server = sys.modules.get("litellm.proxy.proxy_server")
    return getattr(server, "llm_router", None)


#: The instance ``litellm_settings: {callbacks: ["litellm_budget.handler"]}`` resolves to.
handler = ContextBudget()
