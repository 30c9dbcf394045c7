"""Shared pieces for tests that go through litellm.acompletion and Router."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import litellm
from litellm.integrations.custom_logger import CustomLogger
from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

# LiteLLM copies `litellm.callbacks` into these lists on each call and de-duplicates by
# type, so a test's fresh instances only take effect when all of them are reset together.
_CALLBACK_LISTS = (
    "callbacks",
    "input_callback",
    "success_callback",
    "failure_callback",
    "_async_success_callback",
    "_async_failure_callback",
    "_async_input_callback",
    "service_callback",
)


@contextmanager
def only_callbacks(*callbacks: Any) -> Iterator[None]:
    """Run with exactly these LiteLLM callbacks, restoring every derived list afterwards."""
    saved = {name: list(getattr(litellm, name, [])) for name in _CALLBACK_LISTS}
    for name in _CALLBACK_LISTS:
        if hasattr(litellm, name):
            setattr(litellm, name, [])
    litellm.callbacks = list(callbacks)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(litellm, name, value)


class PayloadSpy(CustomLogger):  # type: ignore[misc]
    """A second logger, as any LiteLLM user would add: it keeps each StandardLoggingPayload."""

    def __init__(self) -> None:
        super().__init__()
        self.payloads: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []
        # LiteLLM hands a queued event to the callbacks installed when it is handled: one of a call
        # an earlier test made (started before this spy) is not this test's.
        self._since = datetime.datetime.now()

    def _ours(self, start_time: Any) -> bool:
        if not isinstance(start_time, datetime.datetime):
            return True
        return start_time >= (self._since if start_time.tzinfo is None else self._since.astimezone())

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        if self._ours(start_time):
            self.payloads.append(kwargs.get("standard_logging_object") or {})

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        if self._ours(start_time):
            self.failures.append(kwargs.get("standard_logging_object") or {})

    async def wait(self, count: int = 1, timeout: float = 5.0) -> list[dict[str, Any]]:
        """LiteLLM logs success in a background task: wait for it in the same event loop."""
        for _ in range(int(timeout / 0.02)):
            if len(self.payloads) >= count:
                break
            await asyncio.sleep(0.02)
        return self.payloads


async def logging_settled() -> None:
    """
    Until LiteLLM's logging worker (1.108.5) has nothing queued or running, twice in a row: an
    earlier test's success event still queued would reach this test's callbacks (those installed
    when the event is handled) and read as this test's own.
    """
    worker = GLOBAL_LOGGING_WORKER
    idle = 0
    for _ in range(250):
        queue = worker._queue
        busy = (queue is not None and not queue.empty()) or worker._running_tasks or worker._dequeued_tasks
        idle = 0 if busy else idle + 1
        if idle >= 2:
            return
        await asyncio.sleep(0.02)
