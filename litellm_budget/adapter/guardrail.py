"""
The plugin as a LiteLLM guardrail (``guardrail: litellm_budget.BudgetGuardrail``, ``mode: pre_call``): the callback's
fit, only where LiteLLM's guardrail rules say (``default_on``, a request's ``guardrails``, a key's or team's opt-out).
LiteLLM applies them only before the pre-call hook, so each other hook that fits asks ``should_run_guardrail`` itself.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, TypeVar, final

import litellm
from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.litellm_core_utils.core_helpers import get_or_create_metadata_bucket
from litellm.types.guardrails import GuardrailEventHooks

from litellm_budget.core.api import BudgetSettings

from .callback import ContextBudget
from .failopen import Guard
from .guardrail_start import StartRefusedError, check_guardrail_start, settings_in
from .hooks.hook_pass import DEPLOYMENT_HOOK, FILTER_HOOK, PRE_CALL_HOOK
from .report.publish import REPORT_KEY, report_in, saved_by

if TYPE_CHECKING:
    from litellm.caching.caching import DualCache
    from litellm.types.llms.openai import AllMessageValues
    from litellm.types.proxy.auth.user_api_key_auth import UserAPIKeyAuth
    from litellm.types.utils import CallTypes, CallTypesLiteral, LLMResponseTypes, ModelResponseStream

_T = TypeVar("_T")
#: How the guardrail's records name who wrote them (LiteLLM's usage views count only its own kinds).
GUARDRAIL_PROVIDER = REPORT_KEY
_INFO_KEY = "standard_logging_guardrail_information"
_APPLIED_KEY = "applied_guardrails"
#: LiteLLM's guardrail status of each action: a trim or a refusal is an intervention.
_INTERVENED = frozenset({"trimmed", "rejected"})


@final
class BudgetGuardrail(CustomGuardrail):  # type: ignore[misc]  # litellm is untyped to mypy here
    """
    ``ContextBudget`` as a guardrail, created by LiteLLM from a ``guardrails:`` entry: keys of its ``litellm_params``
    that are no LiteLLM parameter are settings (``policy: plan``), over ``callback_settings.litellm_budget``. A second
    registration, a ``mode`` other than ``pre_call`` or a bad setting fails the proxy's start (``StartRefusedError``).
    The hooks are defined here, not inherited, as LiteLLM calls some only on classes that define them.
    """

    def __init__(self, **kwargs: Any) -> None:
        knobs = settings_in(kwargs)
        name = kwargs.get("guardrail_name")
        check_guardrail_start(name, kwargs.get("event_hook"), knobs, litellm.callbacks)
        try:
            plugin = ContextBudget(**knobs)
        except ValueError as exc:  # the same checks as the callback's, refused as a guardrail must be
            raise StartRefusedError(str(exc)) from exc
        super().__init__(**{key: value for key, value in kwargs.items() if key not in knobs})
        self._plugin = plugin

    @property
    def settings(self) -> BudgetSettings:
        """The settings in force: defaults, ``callback_settings.litellm_budget``, then this guardrail's own."""
        return self._plugin.settings

    async def async_pre_call_hook(
        self,
        user_api_key_dict: UserAPIKeyAuth,
        cache: DualCache | None,
        data: dict[str, Any],
        call_type: CallTypesLiteral,
    ) -> dict[str, Any]:
        """Proxy, before routing (LiteLLM asked ``should_run_guardrail`` already; asked again, it agrees)."""
        if not self._runs(PRE_CALL_HOOK, data):
            return data
        return await self._recorded(
            PRE_CALL_HOOK, data, self._plugin.async_pre_call_hook(user_api_key_dict, cache, data, call_type)
        )

    async def async_filter_deployments(
        self,
        model: str,
        healthy_deployments: list[Any],
        messages: list[AllMessageValues] | None,
        request_kwargs: dict[str, Any] | None = None,
        parent_otel_span: Any = None,
    ) -> list[Any]:
        """Router, before its window check: the callback's lending, where the guardrail runs."""
        if not self._runs(FILTER_HOOK, request_kwargs or {}):
            return healthy_deployments
        return await self._plugin.async_filter_deployments(
            model, healthy_deployments, messages, request_kwargs, parent_otel_span
        )

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: CallTypes | None
    ) -> dict[str, Any] | None:
        """After a deployment is chosen: LiteLLM calls it on every request, so the guardrail's rules are asked here."""
        if not self._runs(DEPLOYMENT_HOOK, kwargs):
            return None
        return await self._recorded(
            DEPLOYMENT_HOOK, kwargs, self._plugin.async_pre_call_deployment_hook(kwargs, call_type)
        )

    async def async_post_call_response_headers_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: UserAPIKeyAuth,
        response: object,
        request_headers: dict[str, str] | None = None,
        litellm_call_info: dict[str, Any] | None = None,
    ) -> dict[str, str] | None:
        """The ``x-litellm-budget-*`` headers of a request the guardrail fitted (none where it did not run)."""
        return await self._plugin.async_post_call_response_headers_hook(
            data, user_api_key_dict, response, request_headers, litellm_call_info
        )

    async def async_post_call_success_hook(
        self, data: dict[str, Any], user_api_key_dict: UserAPIKeyAuth | None, response: LLMResponseTypes
    ) -> Any:
        """The client's served context edits, in the answer (LiteLLM calls it only for a ``post_call`` mode)."""
        return await self._plugin.async_post_call_success_hook(data, user_api_key_dict, response)

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: UserAPIKeyAuth, response: Any, request_data: dict[str, Any]
    ) -> AsyncIterator[ModelResponseStream]:
        """The same, streamed (LiteLLM calls it only for a ``post_call`` mode)."""
        async for chunk in self._plugin.async_post_call_streaming_iterator_hook(
            user_api_key_dict, response, request_data
        ):
            yield chunk

    async def async_post_call_success_deployment_hook(
        self, request_data: dict[str, Any], response: LLMResponseTypes, call_type: CallTypes | None
    ) -> Any:
        """SDK and Router: the served context edits, for a call this guardrail fitted."""
        return await self._plugin.async_post_call_success_deployment_hook(request_data, response, call_type)

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """What the provider's usage teaches (its token ratio, its cache), as the callback learns it."""
        await self._plugin.async_log_success_event(kwargs, response_obj, start_time, end_time)

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """A request LiteLLM's checks refused before the fit: reported only where the guardrail would have run."""
        params = kwargs.get("litellm_params")
        if self._runs("async_log_failure_event", params if isinstance(params, dict) else {}):
            await self._plugin.async_log_failure_event(kwargs, response_obj, start_time, end_time)

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: dict[str, Any]) -> None:
        """A request the guardrail refused, being sent anyway: said so."""
        self._plugin.log_pre_api_call(model, messages, kwargs)

    def _runs(self, hook: str, data: Mapping[str, Any]) -> bool:
        """LiteLLM's own rules for this guardrail on this request; an error in them runs nothing."""
        with Guard(hook).step("guardrail_rules"):
            return self.should_run_guardrail(data, GuardrailEventHooks.pre_call) is True
        return False

    async def _recorded(self, hook: str, request: dict[str, Any], fitting: Awaitable[_T]) -> _T:
        """Await the plugin's hook, then record what it did as this guardrail's work, a refusal too."""
        started = time.time()
        try:
            return await fitting
        finally:
            with Guard(hook).step("guardrail_information"):
                self._record(request, started)

    def _record(self, request: dict[str, Any], started: float) -> None:
        """
        The report as this guardrail's ``guardrail_information``, and its name in the applied-guardrails header. One
        record per request, updated in place by a later hook's fit: LiteLLM shares it with the logging object.
        """
        _, bucket = get_or_create_metadata_bucket(request)
        report = report_in(bucket)
        if report is None:
            return  # nothing fitted here (left to the deployment hook, or not a request this plugin fits)
        applied = bucket.get(_APPLIED_KEY)
        if not isinstance(applied, list):
            applied = bucket[_APPLIED_KEY] = []
        if self.guardrail_name not in applied:
            applied.append(self.guardrail_name)
        ended = time.time()
        status = "guardrail_intervened" if report.get("action") in _INTERVENED else "success"
        # The spend logs keep only its counts (unless they store prompts); other loggers, the whole report.
        response = {**report, "tokens_saved": saved_by(report)}
        found = self._own_record(bucket)
        if found is not None:
            found.update(guardrail_response=response, guardrail_status=status, end_time=ended)
            return
        self.add_standard_logging_guardrail_information_to_request_data(
            guardrail_json_response=response,
            request_data=request,
            guardrail_status=status,
            start_time=started,
            end_time=ended,
            duration=ended - started,
            guardrail_provider=GUARDRAIL_PROVIDER,
            event_type=GuardrailEventHooks.pre_call,
        )

    def _own_record(self, bucket: Mapping[str, Any]) -> MutableMapping[str, Any] | None:
        records = bucket.get(_INFO_KEY)
        for record in records if isinstance(records, list) else ():
            ours = isinstance(record, MutableMapping) and record.get("guardrail_provider") == GUARDRAIL_PROVIDER
            if ours and record.get("guardrail_name") == self.guardrail_name:
                return record  # type: ignore[no-any-return]
        return None
