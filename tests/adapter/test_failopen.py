"""
Every step of every hook inside the fail-open boundary: a failure injected into each adapter call a
hook makes is logged as ``hook_failed`` naming the hook and the step, and the request goes on; with
``fail_closed`` the request is refused instead, with an error that names the step.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import litellm
import pytest
from structlog.testing import capture_logs

from litellm_budget import ContextBudget
from litellm_budget.adapter.failopen import HookFailedError
from litellm_budget.core.formats import anthropic_from_chat as from_chat
from tests.support.builders import agent_session, compact_asked, system, text, user
from tests.support.fake_router import FakeRouter
from tests.support.memory_redis import shared_cache

pytestmark = pytest.mark.asyncio
WINDOW = 4000


class GroupRouter(FakeRouter):
    """A router with one model group of a 4k window, and the summary model's ``acompletion``."""

    def get_model_list(self, model_name: str | None = None) -> list[dict[str, Any]]:
        params = {"model": "openai/gpt-4o"}
        return [{"model_name": model_name, "litellm_params": params, "model_info": {"max_input_tokens": WINDOW}}]


@dataclasses.dataclass(frozen=True)
class Case:
    """One step of one hook: what to break, and the request that reaches that step."""

    hook: str
    step: str
    #: The adapter call that fails, as ``monkeypatch.setattr`` names it.
    breaks: str
    #: Runs the hook on a request that reaches the step; returns what the hook returned.
    run: Callable[[ContextBudget], Awaitable[Any]]
    #: Whether the hook still fits (the step only learns) or leaves the request as it is.
    still_fits: bool = False
    #: The plugin's knobs besides the window: a summary model only where the step needs one.
    knobs: tuple[tuple[str, Any], ...] = ()
    #: Whether the request may be refused for it (a step before the call) or the step only observes.
    refuses: bool = True


def chat(call_id: str, **extra: Any) -> dict[str, Any]:
    """A chat request over the 4k window: the plugin trims it."""
    return {"model": "group", "messages": agent_session(20, 900), "litellm_call_id": call_id, "metadata": {}, **extra}


def anthropic_compacting(call_id: str) -> dict[str, Any]:
    system_prompt, messages = from_chat(agent_session(20, 900))
    edits = {"edits": [compact_asked(1000)]}
    return {
        "model": "group",
        "messages": messages,
        "system": system_prompt,
        "max_tokens": 512,
        "litellm_call_id": call_id,
        "litellm_metadata": {},
        "context_management": edits,
        "proxy_server_request": {"url": "http://proxy/v1/messages"},
    }


async def pre_call(budget: ContextBudget, request: dict[str, Any] | None = None, call_type: str = "acompletion") -> Any:
    request = request or chat("pre")
    sent = copy.deepcopy(request["messages"])
    await budget.async_pre_call_hook(None, shared_cache(), request, call_type)
    return sent, request


async def deployment(budget: ContextBudget) -> Any:
    budget._shared_cache = shared_cache()  # what the proxy's pre-call hook left for the deployment hook
    kwargs = chat("deployment", model="openai/gpt-4o", model_info={"max_input_tokens": WINDOW})
    sent = copy.deepcopy(kwargs["messages"])
    await budget.async_pre_call_deployment_hook(kwargs, "acompletion")
    return sent, kwargs


async def filtering(budget: ContextBudget) -> Any:
    deployments, messages = GroupRouter().get_model_list("group"), agent_session(20, 900)
    sent = copy.deepcopy(messages)
    await budget.async_filter_deployments("group", deployments, messages, {"metadata": {}})
    return sent, {"messages": messages}


async def rejected_pre_call(budget: ContextBudget) -> Any:
    with pytest.raises(litellm.ContextWindowExceededError):
        await pre_call(budget, {**chat("rejected"), "messages": [system(text(5000)), user("x")]})


async def headers(budget: ContextBudget) -> Any:
    reported = {"spend_logs_metadata": {"litellm_budget": {"action": "trimmed"}}}
    return await budget.async_post_call_response_headers_hook(
        {"litellm_call_id": "c", "metadata": reported}, None, None
    )


async def success_hook(budget: ContextBudget) -> Any:
    return await budget.async_post_call_success_hook({"litellm_call_id": "c"}, None, {"content": []})


async def success_event(budget: ContextBudget) -> Any:
    return await budget.async_log_success_event({"standard_logging_object": {}}, None, None, None)


async def pre_api_call(budget: ContextBudget) -> Any:
    return budget.log_pre_api_call("m", [], {"litellm_call_id": "c"})


HOOK_PASS = "litellm_budget.adapter.hooks.hook_pass"
PRE, FILTER, DEPLOYMENT = "async_pre_call_hook", "async_filter_deployments", "async_pre_call_deployment_hook"
#: What each step calls that is made to fail.
READ = "litellm_budget.adapter.request.shapes.Shape.read"
REFRESH = "litellm_budget.adapter.windows.calibration.Calibration.refresh"
DUE = "litellm_budget.adapter.windows.calibration.Calibration.due_for_refresh"
STATE = "litellm_budget.adapter.records.conversations.Conversations.refresh"
FLUSH = "litellm_budget.adapter.records.conversations.Conversations.flush"
WRITE = "litellm_budget.adapter.request.shapes.Shape.write"


async def compacting(budget: ContextBudget) -> Any:
    return await pre_call(budget, anthropic_compacting("c"), "anthropic_messages")


SUMMARY = (("summary_model", "cheap"),)
CASES = [
    Case(PRE, "read", READ, pre_call),
    # The client's edits are still asked for: the pre-call hook leaves the request to the deployment hook.
    Case(PRE, "compaction", f"{HOOK_PASS}.serve_compaction", compacting),
    Case(PRE, "calibration", REFRESH, pre_call, still_fits=True),
    Case(PRE, "conversation_state", STATE, pre_call, still_fits=True),
    Case(PRE, "summary_step", f"{HOOK_PASS}.summary_ahead", pre_call, still_fits=True, knobs=SUMMARY),
    # A step's condition runs inside its boundary too.
    Case(PRE, "calibration", DUE, pre_call, still_fits=True),
    Case(PRE, "fit", f"{HOOK_PASS}.fit_request", pre_call),
    Case(PRE, "write", WRITE, pre_call),
    Case(PRE, "after", FLUSH, pre_call, still_fits=True),
    Case(
        PRE, "failure_event", "litellm_budget.adapter.hooks.passes.log_failure_event", rejected_pre_call, refuses=False
    ),
    Case(FILTER, "read", READ, filtering),
    Case(FILTER, "fit", f"{HOOK_PASS}.fit_request", filtering),
    Case(FILTER, "write", "litellm_budget.adapter.records.lending.LentLists.lend", filtering),
    Case(DEPLOYMENT, "read", READ, deployment),
    Case(DEPLOYMENT, "lent", "litellm_budget.adapter.records.lending.LentLists.adopt", deployment, still_fits=True),
    Case(DEPLOYMENT, "calibration", REFRESH, deployment, still_fits=True),
    Case(DEPLOYMENT, "conversation_state", STATE, deployment, still_fits=True),
    Case(DEPLOYMENT, "summary_step", f"{HOOK_PASS}.summary_ahead", deployment, still_fits=True, knobs=SUMMARY),
    Case(DEPLOYMENT, "calibration", DUE, deployment, still_fits=True),
    Case(DEPLOYMENT, "fit", f"{HOOK_PASS}.fit_request", deployment),
    Case(DEPLOYMENT, "write", WRITE, deployment),
    Case(DEPLOYMENT, "after", FLUSH, deployment, still_fits=True),
    Case(
        "async_post_call_response_headers_hook",
        "headers",
        "litellm_budget.adapter.hooks.observers.headers_for",
        headers,
    ),
    Case(
        "async_post_call_success_hook",
        "client_edits",
        "litellm_budget.adapter.hooks.observers.respond_with_edits",
        success_hook,
    ),
    Case(
        "async_log_success_event",
        "calibration",
        "litellm_budget.adapter.windows.calibration.Calibration.learn_from",
        success_event,
    ),
    Case(
        "log_pre_api_call", "resent", "litellm_budget.adapter.records.calls.Calls.resent_after_rejection", pre_api_call
    ),
]
#: The hooks that run after the call was answered only observe: they never refuse.
OBSERVERS = {
    "async_post_call_response_headers_hook",
    "async_post_call_success_hook",
    "async_log_success_event",
    "log_pre_api_call",
}


def budget(case: Case, **knobs: Any) -> ContextBudget:
    return ContextBudget(router=GroupRouter(), default_window=WINDOW, **dict(case.knobs), **knobs)


def broken(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a bug, with a secret from the request that must not be logged")


def ids(case: Case) -> str:
    return f"{case.hook}-{case.step}"


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_a_failed_step_is_logged_by_name_and_the_request_goes_on(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook goes on as if the step were not there; ``hook_failed`` names the hook and the step, not the request."""
    monkeypatch.setattr(case.breaks, broken)

    with capture_logs() as logs:
        ran = await case.run(budget(case))

    failed = [log for log in logs if log["event"] == "hook_failed"]
    assert [(log["hook"], log["step"], log["error_type"]) for log in failed] == [(case.hook, case.step, "RuntimeError")]
    assert "secret" not in str(logs)
    if case.hook in {PRE, FILTER, DEPLOYMENT} and case.step != "failure_event":
        sent, request = ran
        assert (request["messages"] != sent) is case.still_fits


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_with_fail_closed_a_failed_step_refuses_the_request(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the call, the request is refused with an error naming the step; after it, the failure is only logged."""
    monkeypatch.setattr(case.breaks, broken)

    with capture_logs() as logs:
        if case.refuses and case.hook not in OBSERVERS:
            with pytest.raises(HookFailedError, match=f"in {case.hook} at its {case.step} step") as refused:
                await case.run(budget(case, fail_closed=True))
            assert "secret" not in str(refused.value)
        else:
            await case.run(budget(case, fail_closed=True))

    assert [(log["hook"], log["step"]) for log in logs if log["event"] == "hook_failed"] == [(case.hook, case.step)]


async def test_the_answer_still_comes_when_the_fit_fails_through_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``litellm.acompletion`` (a mock answer): a failing fit leaves the request as it came; it is answered."""
    monkeypatch.setattr(f"{HOOK_PASS}.fit_request", broken)
    messages = agent_session(20, 900)
    sent = copy.deepcopy(messages)
    saved = litellm.callbacks
    litellm.callbacks = [ContextBudget(default_window=WINDOW)]
    try:
        with capture_logs() as logs:
            response = await litellm.acompletion(model="gpt-4o", messages=messages, mock_response="ok")
    finally:
        litellm.callbacks = saved

    assert response.choices[0].message.content == "ok"
    assert messages == sent
    assert [(log["hook"], log["step"]) for log in logs if log["event"] == "hook_failed"] == [(DEPLOYMENT, "fit")]
