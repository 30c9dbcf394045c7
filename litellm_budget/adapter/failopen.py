"""The plugin's one fail-open boundary: a bug of ours is logged and the request goes on untouched."""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import structlog

log = structlog.get_logger("litellm_budget")
_T = TypeVar("_T")


def guarded(hook: str, work: Callable[[], _T], fallback: _T, *, fail_closed: bool) -> _T:
    """Run ``work``; on a bug of ours log it and return ``fallback`` (raise with ``fail_closed``)."""
    import litellm

    try:
        return work()
    except litellm.ContextWindowExceededError:
        raise
    # The one broad except of the package: the plugin must never be why a request fails,
    # unless the operator asked for fail_closed.
    except Exception as exc:
        log_failure(hook, exc)
        if fail_closed:
            raise
        return fallback


async def guarded_async(hook: str, work: Awaitable[_T]) -> _T | None:
    """Like ``guarded``, for coroutines that only observe: a failure is logged and ignored."""
    try:
        return await work
    # Same reason as in guarded: observing must never break a request.
    except Exception as exc:  # noqa: BLE001
        log_failure(hook, exc)
        return None


def log_failure(hook: str, exc: BaseException) -> None:
    """The exception's type and ``file:line`` of its innermost frame: enough to find the bug,
    nothing from the request (an exception's message may quote it)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    log.error("hook_failed", hook=hook, error_type=type(exc).__name__, where=where)
