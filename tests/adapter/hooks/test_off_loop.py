"""A long request is fitted off the event loop, so the proxy's other requests are not held behind its count."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from litellm.types.utils import CallTypes

from litellm_budget import ContextBudget
from litellm_budget.adapter.hooks import hook_pass
from tests.support.builders import agent_session, text, user
from tests.support.waiting import wait_for_async


def kwargs_for(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "openai/acme-x", "messages": messages, "litellm_call_id": f"call-{id(messages)}"}


def fitted_on(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread each fit ran on."""
    threads: list[int] = []
    fit = hook_pass.fit_request

    def spied(request: Any) -> Any:
        threads.append(threading.get_ident())
        return fit(request)

    monkeypatch.setattr(hook_pass, "fit_request", spied)
    return threads


@pytest.mark.asyncio
async def test_only_a_long_request_is_fitted_in_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = fitted_on(monkeypatch)
    budget = ContextBudget(default_window=128_000)
    small = agent_session(4, 50)
    long = [user(text(30_000)), *agent_session(4, 50)[1:]]

    await budget.async_pre_call_deployment_hook(kwargs_for(small), CallTypes.acompletion)
    await budget.async_pre_call_deployment_hook(kwargs_for(long), CallTypes.acompletion)

    loop_thread = threading.get_ident()
    assert threads[0] == loop_thread
    assert threads[1] != loop_thread


@pytest.mark.asyncio
async def test_the_loop_serves_others_while_a_long_request_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """While the long fit runs, a coroutine beside it keeps ticking: the count does not hold the loop."""
    started, release = threading.Event(), threading.Event()
    fit = hook_pass.fit_request
    released: list[bool] = []

    def slow(request: Any) -> Any:
        started.set()
        released.append(release.wait(2))  # the count, held until the ticker has run (on the loop: never)
        return fit(request)

    monkeypatch.setattr(hook_pass, "fit_request", slow)
    budget = ContextBudget(default_window=128_000)
    long = [user(text(30_000)), *agent_session(4, 50)[1:]]
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        await wait_for_async(started.is_set, what="the long count to start")
        for _ in range(5):
            ticks += 1
            await asyncio.sleep(0.001)  # a tick: hands the loop back, as any coroutine beside the count does
        release.set()

    await asyncio.gather(budget.async_pre_call_deployment_hook(kwargs_for(long), CallTypes.acompletion), ticker())

    assert released == [True]
    assert ticks == 5
