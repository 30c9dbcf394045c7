"""
Wait for an event, never for a while: poll a condition until it holds, else fail the test naming
what never happened. A fixed sleep is either too short on a loaded machine or wasted on an idle one.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

_T = TypeVar("_T")

#: How long a test waits for what is due by default: far longer than any event takes on an idle machine.
TIMEOUT = 10.0
#: How often the condition is read again.
INTERVAL = 0.02


def wait_for(condition: Callable[[], _T], *, what: str, timeout: float = TIMEOUT) -> _T:
    """``condition()`` once it returns something truthy (returned); fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() >= deadline:
            pytest.fail(f"{what}: not within {timeout:g}s")
        time.sleep(INTERVAL)


async def wait_for_async(condition: Callable[[], _T | Awaitable[_T]], *, what: str, timeout: float = TIMEOUT) -> _T:
    """
    ``wait_for`` in a running event loop, for what the loop's own tasks do (LiteLLM logs in
    background tasks): it sleeps with ``asyncio.sleep``, and ``condition`` may be a coroutine function.
    """
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if inspect.isawaitable(found):
            found = await found
        if found:
            return found  # type: ignore[return-value]  # awaited above when it was an awaitable
        if time.monotonic() >= deadline:
            pytest.fail(f"{what}: not within {timeout:g}s")
        await asyncio.sleep(INTERVAL)
