"""The hooks' work once the call was answered (each hook is documented in ``callback.py``): a failure is only logged."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, MutableMapping
from typing import Any

from litellm_budget.adapter.failopen import Guard
from litellm_budget.adapter.memory import Memory
from litellm_budget.adapter.recall.server import recalls_of
from litellm_budget.adapter.records.calls import call_id_of
from litellm_budget.adapter.report.cache_observed import observe_success
from litellm_budget.adapter.report.publish import headers_for, report_in, warn_resent
from litellm_budget.adapter.request.fallbacks import open_refit
from litellm_budget.adapter.request.kwargs import read_metadata
from litellm_budget.adapter.served_edits.context_management import respond_with_edits
from litellm_budget.adapter.served_edits.stream_edits import streamed_with_edits
from litellm_budget.adapter.windows.calibration import reported_prompt_tokens
from litellm_budget.adapter.windows.served_windows import Deployment
from litellm_budget.core.api import BudgetSettings

from .unfitted import report_unfitted


def headers(memory: Memory, data: MutableMapping[str, Any]) -> dict[str, str] | None:
    with Guard("async_post_call_response_headers_hook").step("headers"):
        served = memory.calls.get(call_id_of(data)).served
        report = served.as_dict() if served is not None else report_in(read_metadata(data))
        return headers_for(report, recalls_of(memory.recall, call_id_of(data))) if report is not None else None
    return None


def with_edits(memory: Memory, data: MutableMapping[str, Any], response: dict[str, Any]) -> Any:
    with Guard("async_post_call_success_hook").step("client_edits"):
        return respond_with_edits(response, memory.calls.take_edits(call_id_of(data)))
    return response


async def streamed(memory: Memory, response: Any, request_data: dict[str, Any]) -> AsyncIterator[Any]:
    guard = Guard("async_post_call_streaming_iterator_hook")
    applied = None
    with guard.step("client_edits"):
        applied = memory.calls.take_edits(call_id_of(request_data))

    def stream_step(work: Callable[[], Any]) -> Any:
        with guard.step("stream_edits"):
            return work()
        return None

    async for chunk in streamed_with_edits(response, applied, stream_step):
        yield chunk


async def learn(memory: Memory, settings: BudgetSettings, kwargs: dict[str, Any], response: Any, cache: Any) -> None:
    memory.later.settle()
    guard = Guard("async_log_success_event")
    with guard.step("cache_truth", ends_pass=False):
        observe_success(memory.prompts, memory.calls, kwargs, response, settings)
    record = memory.calls.get(call_id_of(kwargs))
    served = record.served
    truncated = False
    with guard.step("served_window", ends_pass=False):
        reported = reported_prompt_tokens(kwargs, response)
        deployment = Deployment.of(kwargs)
        truncated = await memory.served.from_usage(deployment, reported, served, settings, cache, record.conversation)
    if settings.calibrate and guard.ok and not truncated:  # a cut prompt says nothing of how the provider counts
        with guard.step("calibration"):
            await memory.calibration.learn_from(kwargs, response, settings, cache, served)


async def failed_attempt(
    memory: Memory, settings: BudgetSettings, request: Mapping[str, Any], error: Exception, cache: Any
) -> None:
    with Guard("async_post_call_failure_deployment_hook").step("served_window"):
        record = memory.calls.get(call_id_of(request))  # type: ignore[arg-type]  # read only
        learned = await memory.served.from_error(Deployment.of(request), error, record.served, settings, cache)
        if learned is not None and record.fallbacks is not None:
            open_refit(record.fallbacks[1], record.fallbacks[0])  # the Router reads it next, mapped or not


def unfitted(memory: Memory, settings: BudgetSettings, kwargs: dict[str, Any], router: Any) -> None:
    with Guard("async_log_failure_event").step("unfitted"):
        report_unfitted(kwargs, settings, router, memory.ratio)


def resent(memory: Memory, kwargs: MutableMapping[str, Any]) -> None:
    with Guard("log_pre_api_call").step("resent"):
        call_id = call_id_of(kwargs)
        found = memory.calls.resent_after_rejection(call_id)
        if found is not None:
            warn_resent(*found, call_id)
