"""The LiteLLM adapter's hooks: each reads its request once (a pass, ``hook_pass.py``) and takes its steps."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, final

from litellm.integrations.custom_logger import CustomLogger

from litellm_budget.core.api import BudgetSettings, preload_counters

from .failopen import Guard
from .hooks import observers
from .hooks.chain import through
from .hooks.hook_pass import DEPLOYMENT_HOOK, FILTER_HOOK, PRE_CALL_HOOK, Context
from .hooks.passes import DEPLOYMENT_STEPS, FILTER_STEPS, GROUP_STEPS, DeploymentPass, FilterPass, GroupPass
from .memory import Memory
from .recall.offer import loop_depth
from .recall.server import RecallServer
from .records.calls import call_id_of
from .report.metrics import prepare_metrics
from .request.fallbacks import FALLBACK_KEYS, is_refit_of, refit_on_any_error, refit_refused, with_refit
from .request.kwargs import read_metadata
from .request.shapes import CHAT_SHAPE, shape_for
from .request.targets import deployment_target, group_target, pre_call_target
from .settings.config import ConfiguredSettings, compression_registered
from .settings.invalid import check_at_start
from .summaries.summarizer import is_summary_call
from .windows.served_windows import deployment_of

if TYPE_CHECKING:  # LiteLLM's own types of its hooks' arguments (SDK modules: no proxy extras needed)
    from litellm.caching.caching import DualCache
    from litellm.types.llms.openai import AllMessageValues
    from litellm.types.proxy.auth.user_api_key_auth import UserAPIKeyAuth
    from litellm.types.utils import CallTypes, CallTypesLiteral, LLMResponseTypes, ModelResponseStream


@final
class ContextBudget(CustomLogger):  # type: ignore[misc]  # litellm is untyped to mypy here
    """
    Keeps every request inside its model's window (chat completions, Anthropic Messages, OpenAI Responses); register an
    instance as a callback. Keyword arguments are ``BudgetSettings`` knobs, over the proxy's ``callback_settings``;
    ``router`` is the SDK's ``litellm.Router``, whose fallbacks come first (the proxy's is found). Every setting (the
    knobs, ``callback_settings``, the ``model_info`` of ``router``'s deployments or of a proxy config's ``model_list``)
    is checked: a wrong one raises ``ValueError`` naming key, value and deployment. The hooks are defined here, not
    inherited: the proxy calls ``async_pre_call_hook`` and the headers hook only on classes that define them.
    """

    def __init__(self, *, router: Any = None, **knobs: Any) -> None:
        super().__init__()
        self._memory = Memory()
        self._config = ConfiguredSettings(knobs, self._memory.invalid)
        check_at_start(self._config.found_at_start, router, self._config.current())
        self._memory.invalid.checked(router)
        # One-time set-up happens at registration, so the first request costs what later ones do.
        preload_counters()
        prepare_metrics()
        compression_registered()  # said at start when it is there already (else at its first request)
        self._router = router
        self._shared_cache: Any = None  # the proxy's DualCache (Redis when configured), seen in the pre-call hook
        server = RecallServer(self._memory.recall, lambda: self.settings, lambda: self._shared_cache)
        self._memory.recall.on_offer = server.register

    @property
    def settings(self) -> BudgetSettings:
        """Defaults, then ``callback_settings.litellm_budget``, then the knobs; less any turned invalid since start."""
        return self._config.current()

    async def async_pre_call_hook(
        self,
        user_api_key_dict: UserAPIKeyAuth,
        cache: DualCache | None,
        data: dict[str, Any],
        call_type: CallTypesLiteral,
    ) -> dict[str, Any]:
        """Proxy, before routing: fit the group's largest window (what any deployment needs)."""
        self._shared_cache = cache if cache is not None else self._shared_cache
        settings = self.settings
        guard, hook_pass = Guard(PRE_CALL_HOOK, fail_closed=settings.fail_closed), None
        with guard.step("refit_fallback", ends_pass=False):
            self._refit_first(data, call_type)
        with guard.step("read"):
            hook_pass = self._group_pass(data, call_type, settings, guard)
        if hook_pass is not None:
            done = await through(hook_pass, GROUP_STEPS)
            if done.refusal is not None:
                await done.refuse(done.refusal)
        return data

    async def async_filter_deployments(
        self,
        model: str,
        healthy_deployments: list[Any],
        messages: list[AllMessageValues] | None,
        request_kwargs: dict[str, Any] | None = None,
        parent_otel_span: Any = None,
    ) -> list[Any]:
        """Router, before its own window check: fit in place, so ``enable_pre_call_checks`` keeps deployments."""
        kwargs, settings = request_kwargs or {}, self.settings
        guard, hook_pass = Guard(FILTER_HOOK, fail_closed=settings.fail_closed), None
        with guard.step("read"):
            if isinstance(messages, list) and messages and self._may_be_chat(kwargs):
                self._memory.calls.reclaim(messages)  # still lent: its call failed between the hooks
                target = group_target(model, healthy_deployments, settings)
                if target is not None:
                    hook_pass = FilterPass.lending(kwargs, messages, target, self._context(settings), guard)
        if hook_pass is not None:
            await through(hook_pass, FILTER_STEPS)
        return healthy_deployments

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: CallTypes | None
    ) -> dict[str, Any] | None:
        """SDK, Router and proxy, after a deployment is chosen: fit its window, or raise for fallbacks."""
        group = read_metadata(kwargs).get("model_group")
        if is_refit_of(kwargs, str(group)) and self._memory.served.learned(deployment_of(kwargs)) is None:
            raise refit_refused(kwargs)  # the error taught no window: on to the operator's fallbacks
        settings = self.settings
        guard, hook_pass = Guard(DEPLOYMENT_HOOK, fail_closed=settings.fail_closed), None
        with guard.step("read"):
            hook_pass = self._deployment_pass(kwargs, call_type, settings, guard)
        if hook_pass is None:
            return None
        done = await through(hook_pass, DEPLOYMENT_STEPS)
        if done.refusal is not None:
            raise done.refusal
        return kwargs if done.changed else None

    async def async_post_call_response_headers_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: UserAPIKeyAuth,
        response: object,
        request_headers: dict[str, str] | None = None,
        litellm_call_info: dict[str, Any] | None = None,
    ) -> dict[str, str] | None:
        """Proxy: ``x-litellm-budget-*`` headers of what was sent (after a fallback: the fallback's fit)."""
        return observers.headers(self._memory, data)

    async def async_post_call_success_hook(
        self, data: dict[str, Any], user_api_key_dict: UserAPIKeyAuth | None, response: LLMResponseTypes
    ) -> Any:
        """Proxy: a response to a request whose context_management was served here says so, as Anthropic's does."""
        if not isinstance(response, dict):
            return response  # not the Messages response (a bridged call's inner one): it is not ours to answer
        return observers.with_edits(self._memory, data, response)

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: UserAPIKeyAuth, response: Any, request_data: dict[str, Any]
    ) -> AsyncIterator[ModelResponseStream]:
        """Proxy, streams: the same for a streamed answer, in its events (``stream_edits.py``)."""
        async for chunk in observers.streamed(self._memory, response, request_data):
            yield chunk

    async def async_post_call_success_deployment_hook(
        self, request_data: dict[str, Any], response: LLMResponseTypes, call_type: CallTypes | None
    ) -> Any:
        """SDK and Router (``litellm.anthropic.messages.acreate``): the same, where no proxy hook runs."""
        return await self.async_post_call_success_hook(request_data, None, response)

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """The provider's usage: what its prompt cache did and, from exact counts, its token ratio; never raises."""
        await observers.learn(self._memory, self.settings, kwargs, response_obj, self._shared_cache)

    async def async_post_call_failure_deployment_hook(
        self,
        request_data: Mapping[str, Any],
        exception: Exception,
        call_type: CallTypes | None,
        fallback_depth: int | None = None,
    ) -> None:
        """Every failed attempt, before the Router falls back: a context-length error teaches the refit its window."""
        await observers.failed_attempt(self._memory, self.settings, request_data, exception, self._shared_cache)

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """A request LiteLLM's own pre-call checks refused before the plugin fitted it: what it would have sent."""
        observers.unfitted(self._memory, self.settings, kwargs, self._router_in_use())

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: dict[str, Any]) -> None:
        """Every call, just before it goes out: a request rejected here is being re-sent past the hooks."""
        observers.resent(self._memory, kwargs)

    def _refit_first(self, data: dict[str, Any], call_type: Any) -> None:
        """The refit first among the call's own copy of its fallbacks (``request/fallbacks.py``)."""
        if shape_for(call_type, data) is not None and isinstance(data.get("model"), str):
            data[FALLBACK_KEYS[0]] = with_refit(data["model"], data, self._router_in_use())
            generic = refit_on_any_error(data, self._router_in_use())
            if generic is not None:
                data[FALLBACK_KEYS[1]] = generic
                self._memory.calls.gave_fallbacks(call_id_of(data), data["model"], generic)

    def _group_pass(
        self, data: dict[str, Any], call_type: Any, settings: BudgetSettings, guard: Guard
    ) -> GroupPass | None:
        shape = shape_for(call_type, data)
        if shape is not CHAT_SHAPE:  # the Router's filter hook sees any call type's messages as chat: not these
            self._memory.calls.not_chat(call_id_of(data))
        if shape is None or is_summary_call(data):
            return None
        context = self._context(settings)
        target = pre_call_target(data, settings, context.router)
        return None if target is None else GroupPass.reading(data, shape, target, context, guard)

    def _deployment_pass(
        self, kwargs: dict[str, Any], call_type: Any, settings: BudgetSettings, guard: Guard
    ) -> DeploymentPass | None:
        shape = shape_for(call_type, kwargs)
        if shape is None or is_summary_call(kwargs):
            return None
        target, context = deployment_target(kwargs, settings), self._context(settings)
        # LiteLLM's follow-up after a recall is silent: the call was reported.
        return DeploymentPass.reading(kwargs, shape, target, context, guard, silent=loop_depth(kwargs) > 0)

    def _context(self, settings: BudgetSettings) -> Context:
        """What a pass works with; a router first met here (the proxy's) has its deployments' settings checked."""
        router = self._router_in_use()
        self._memory.invalid.check_router(router, settings)
        return Context(self._memory, router, self._shared_cache)

    def _router_in_use(self) -> Any:
        if self._router is not None:
            return self._router
        # Else a running proxy's router, if any: importing its server module here would load the whole proxy into an
        # SDK user's process, and fail where the proxy extras are not installed.
        return getattr(sys.modules.get("litellm.proxy.proxy_server"), "llm_router", None)

    def _may_be_chat(self, request_kwargs: MutableMapping[str, Any]) -> bool:
        return self._memory.calls.get(call_id_of(request_kwargs)).chat and not is_summary_call(request_kwargs)


if TYPE_CHECKING:
    #: The instance ``litellm_settings: {callbacks: ["litellm_budget.handler"]}`` resolves to.
    handler: ContextBudget


def __getattr__(name: str) -> Any:
    # ``handler`` is made when first asked for, not on import: the guardrail form imports this module too, and a second
    # plugin's start-up checks, failing inside LiteLLM's guardrail loader, would let the proxy start with no plugin.
    if name == "handler":
        return globals().setdefault("handler", ContextBudget())
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
