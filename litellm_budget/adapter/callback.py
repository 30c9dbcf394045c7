"""The LiteLLM adapter: extract, call the core, publish the report, return. Nothing more."""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, final

import structlog
from litellm.integrations.custom_logger import CustomLogger

from . import _litellm_request as req
from ._calibration import Calibration, reported_prompt_tokens
from ._errors import context_window_exceeded, provider_of
from ._fit import Fitted, fit_request
from ._lru import BoundedLRU
from ._observe import headers_for, publish, record_in_metadata, report_in
from ._once import DoneFits, FitRecord
from ._settings import BudgetSettings
from ._targets import Target, deployment_target, group_target, has_fallbacks, with_request_overrides

log = structlog.get_logger("litellm_budget")
_T = TypeVar("_T")


@final
class ContextBudget(CustomLogger):  # type: ignore[misc]  # litellm is untyped to mypy here
    """
    Keeps every chat request inside its model's window; register an instance as a callback.

    Keyword arguments are ``BudgetSettings`` knobs. They override the proxy's
    ``callback_settings: {litellm_budget: {...}}``, which override the defaults.
    The hooks are defined on this class itself, not inherited, because the proxy calls
    ``async_pre_call_hook`` and the headers hook only on classes that define them.
    """

    def __init__(self, **knobs: Any) -> None:
        super().__init__()
        self._knobs = knobs
        self._settings_for: tuple[dict[str, Any], BudgetSettings] = ({}, BudgetSettings().updated(knobs))
        self._done = DoneFits()
        # Caller lists trimmed in place for the Router's window check, restored before the call.
        self._lent: BoundedLRU[_Lent] = BoundedLRU(1024)
        self._calibration = Calibration()
        # The proxy's DualCache (Redis when configured), seen in the pre-call hook.
        self._shared_cache: Any = None

    @property
    def settings(self) -> BudgetSettings:
        """Defaults, then the proxy's ``callback_settings.litellm_budget``, then this instance's knobs."""
        import litellm

        from_config = (getattr(litellm, "callback_settings", None) or {}).get("litellm_budget") or {}
        seen, settings = self._settings_for
        if from_config != seen:
            settings = BudgetSettings().updated(from_config).updated(self._knobs)
            self._settings_for = (dict(from_config), settings)
        return settings

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        """Proxy, before routing: fit the group's smallest window, so routing sees the fitted request."""
        self._shared_cache = cache if cache is not None else self._shared_cache
        if req.is_chat(call_type) and isinstance(data.get("messages"), list):
            target = self._guarded("async_pre_call_hook", lambda: self._group_target(data), None)
            if target is not None:
                await self._refresh_ratio(cache, target)
                self._guarded("async_pre_call_hook", lambda: self._fit_group(data, target), None)
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
        if isinstance(messages, list) and messages:
            self._guarded(
                "async_filter_deployments",
                lambda: self._fit_in_place(model, healthy_deployments, messages, request_kwargs or {}),
                None,
            )
        return healthy_deployments

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> dict[str, Any] | None:
        """SDK, Router and proxy, after a deployment is chosen: fit its window, or raise for fallbacks."""
        if not req.is_chat(call_type) or not isinstance(kwargs.get("messages"), list):
            return None
        return self._guarded("async_pre_call_deployment_hook", lambda: self._fit_deployment(kwargs), None)

    async def async_post_call_response_headers_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: Any,
        response: Any,
        request_headers: dict[str, str] | None = None,
        litellm_call_info: dict[str, Any] | None = None,
    ) -> dict[str, str] | None:
        """Proxy: ``x-litellm-budget-*`` headers from the report the pre-call hooks left."""
        report = report_in(data.get("metadata")) or report_in(data.get("litellm_metadata"))
        return headers_for(report) if report is not None else None

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """Learn the provider's token ratio from the usage it reported; never raises."""
        if self.settings.calibrate:
            await self._guarded_async("async_log_success_event", self._learn_ratio(kwargs, response_obj))

    def _group_target(self, data: dict[str, Any]) -> Target | None:
        """The group's smallest known window; ``None`` leaves the work to the deployment hook."""
        group = str(data.get("model"))
        router = _proxy_router()
        deployments = (router.get_model_list(model_name=group) if router is not None else None) or []
        target = group_target(group, deployments, self.settings)
        return None if target is None else with_request_overrides(target, req.metadata_of(data))

    def _fit_group(self, data: dict[str, Any], target: Target) -> None:
        metadata = req.metadata_of(data)
        defer = has_fallbacks(target.group, data, _proxy_router())
        fitted = self._fit(data, target, hook="async_pre_call_hook", metadata=metadata, defer=defer)
        if fitted is None:
            return
        if fitted.report.action == "rejected":
            raise context_window_exceeded(fitted.report, llm_provider=provider_of(target.model))
        req.apply(data, fitted)

    def _fit_in_place(
        self, model: str, deployments: list[Any], messages: list[Any], request_kwargs: dict[str, Any]
    ) -> None:
        target = group_target(model, deployments, self.settings)
        if target is None:
            return
        metadata = request_kwargs.get("metadata")
        request = {**request_kwargs, "messages": messages}
        fitted = self._fit(
            request, target, hook="async_filter_deployments", metadata=_mutable(metadata), defer=True, quiet=True
        )
        if fitted is not None and fitted.report.action == "trimmed" and metadata is not None:
            # LiteLLM hands over the caller's own list and checks windows on it next, so it is
            # trimmed in place; the deployment hook of this request (found by its metadata
            # dict, shared between the two hooks) puts the caller's messages back.
            output = _record(target, fitted.messages, fitted.max_tokens, fitted.report.window)
            self._lent.put(id(metadata), _Lent(messages, list(messages), output))
            messages[:] = fitted.messages

    def _fit_deployment(self, kwargs: dict[str, Any]) -> dict[str, Any] | None:
        metadata = req.metadata_of(kwargs)
        target = deployment_target(kwargs, self.settings)
        if self._give_back(metadata, kwargs, target):
            return None
        fitted = self._fit(kwargs, target, hook="async_pre_call_deployment_hook", metadata=metadata)
        if fitted is None:
            return None
        if fitted.report.action == "rejected":
            raise context_window_exceeded(fitted.report, llm_provider=_provider(kwargs))
        req.apply(kwargs, fitted)
        return kwargs

    def _give_back(self, metadata: Mapping[str, Any], kwargs: Mapping[str, Any], target: Target) -> bool:
        """Restore a caller's list trimmed in place; ``True`` when these messages are that trimmed copy."""
        lent = self._lent.pop(id(metadata))
        if lent is None or lent.caller is kwargs["messages"]:
            return False
        lent.caller[:] = lent.original
        _, max_tokens = req.max_tokens_of(kwargs)
        wanted = _record(target, kwargs["messages"], max_tokens, target.window)
        return lent.output.same_messages(wanted) and lent.output.window <= (wanted.window or lent.output.window)

    def _fit(  # noqa: PLR0913 - keyword-only switches, one per hook that differs
        self,
        request: Mapping[str, Any],
        target: Target,
        *,
        hook: str,
        metadata: MutableMapping[str, Any] | None,
        defer: bool = False,
        quiet: bool = False,
    ) -> Fitted | None:
        """
        Fit unless these messages are already this request's fitted output; publish every
        new outcome once.

        With ``defer``, a rejection is left to a later hook (the chosen deployment may be
        bigger, or a fallback may take it): it is logged as deferred, and ``None`` returned.
        With ``quiet``, an untouched request is not reported here: a later hook reports it.
        """
        messages = request["messages"]
        call_id = str(request.get("litellm_call_id") or "")
        _, max_tokens = req.max_tokens_of(request)
        wanted = _record(target, messages, max_tokens, target.window)
        if self._done.already_fitted(call_id, wanted):
            return None
        fitted = fit_request(
            messages,
            model=target.model,
            window=target.window,
            tools=request.get("tools"),
            max_tokens=max_tokens,
            settings=target.settings,
            ratio=self._calibration.ratio(target.model) if target.settings.calibrate else 1.0,
        )
        report = fitted.report
        if target.refused:
            log.warning("request_override_refused", keys=list(target.refused), model_group=target.group, hook=hook)
        if defer and report.action == "rejected":
            log.info("rejection_deferred", hook=hook, model_group=target.group, window=report.window)
            return None
        fitted_input = wanted._replace(window=report.window or 0)
        if self._done.already_reported(call_id, fitted_input):
            if metadata is not None:
                record_in_metadata(metadata, report)  # a retry's fresh metadata still carries it
        elif not (quiet and report.action == "passthrough"):
            publish(report, metadata, hook=hook, model_group=target.group, litellm_call_id=call_id or None)
        if report.action != "rejected":
            output = _record(target, fitted.messages, fitted.max_tokens, report.window)
            self._done.remember(call_id, fitted_input, output)
        return fitted

    async def _refresh_ratio(self, cache: Any, target: Target) -> None:
        """Adopt the ratio other replicas learned for this model, at most every few seconds."""
        if cache is not None and target.settings.calibrate and self._calibration.due_for_refresh(target.model):
            refresh = self._calibration.refresh(cache, target.model, target.settings)
            await self._guarded_async("async_pre_call_hook", refresh)

    async def _learn_ratio(self, kwargs: dict[str, Any], response: Any) -> None:
        payload = kwargs.get("standard_logging_object") or {}
        report = report_in(payload.get("metadata")) or report_in((kwargs.get("litellm_params") or {}).get("metadata"))
        if report is not None and report.get("action") in {"passthrough", "trimmed"}:
            reported = reported_prompt_tokens(kwargs, response)
            await self._calibration.learn(report, reported, self.settings, self._shared_cache)

    async def _guarded_async(self, hook: str, work: Awaitable[_T]) -> _T | None:
        """Like ``_guarded``, for coroutines that only observe: a failure is logged and ignored."""
        try:
            return await work
        # Same reason as in _guarded: observing must never break a request.
        except Exception as exc:  # noqa: BLE001
            _log_failure(hook, exc)
            return None

    def _guarded(self, hook: str, work: Callable[[], _T], fallback: _T) -> _T:
        """Fail open: a bug of ours logs an error and forwards the request untouched."""
        import litellm

        try:
            return work()
        except litellm.ContextWindowExceededError:
            raise
        # The one broad except of the package: the plugin must never be why a request fails,
        # unless the operator asked for fail_closed.
        except Exception as exc:
            _log_failure(hook, exc)
            if self.settings.fail_closed:
                raise
            return fallback


def _proxy_router() -> Any:
    from litellm.proxy import proxy_server

    return proxy_server.llm_router


class _Lent(NamedTuple):
    """A caller's list trimmed in place: the list, what it held, and the fit it now holds."""

    caller: list[Any]
    original: list[Any]
    output: FitRecord


def _record(target: Target, messages: list[Any], max_tokens: object, window: int | None) -> FitRecord:
    return FitRecord(window or 0, target.settings.policy, req.fingerprint(messages), hash(max_tokens))


def _mutable(metadata: object) -> MutableMapping[str, Any] | None:
    return metadata if isinstance(metadata, MutableMapping) else None


def _provider(kwargs: Mapping[str, Any]) -> str | None:
    """The provider LiteLLM already resolved for this call, when the kwargs say."""
    provider = kwargs.get("custom_llm_provider")
    return provider if isinstance(provider, str) and provider else None


def _log_failure(hook: str, exc: BaseException) -> None:
    """The exception's type and ``file:line`` of its innermost frame: enough to find the bug,
    nothing from the request (an exception's message may quote it)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    log.error("hook_failed", hook=hook, error_type=type(exc).__name__, where=where)


#: The instance ``litellm_settings: {callbacks: ["litellm_budget.handler"]}`` resolves to.
handler = ContextBudget()
