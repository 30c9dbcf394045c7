"""
The fail-open boundary of every hook: each step of a hook runs through its ``Guard``, so a bug
of ours is logged as ``hook_failed`` (naming the hook and the step) and the request goes on as it
is; with ``fail_closed`` it is refused instead, with an error that says so. The plugin's own
``ContextWindowExceededError`` is its answer, not a bug: it always passes through. (The package's
other broad excepts each stand around a foreign call, the model map, Redis or the summary model,
and say why where they are.)
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import litellm

from litellm_budget.logs import get_logger

log = get_logger()
_T = TypeVar("_T")


class HookFailedError(RuntimeError):
    """A bug of ours in a hook, with ``fail_closed``: the request is refused rather than sent unfitted."""


class Guard:
    """
    The boundary of one hook call. A failed step ends the pass (later steps do nothing, the
    request goes on as it is), unless it only learns (``ends_pass=False``: the fit goes on
    without what it would have learned). Hooks that run after the call was answered observe
    only: there a failure is logged, whatever ``fail_closed`` says.
    """

    __slots__ = ("fail_closed", "failed", "hook")

    def __init__(self, hook: str, *, fail_closed: bool = False) -> None:
        self.hook = hook
        self.fail_closed = fail_closed
        self.failed = False

    def run(self, step: str, work: Callable[[], _T], *, ends_pass: bool = True) -> _T | None:
        """``work()``, or ``None`` when it fails (or an earlier step did)."""
        if self.failed:
            return None
        try:
            return work()
        except (litellm.ContextWindowExceededError, HookFailedError):
            raise  # the plugin's answer, or an inner step's refusal: neither is a new failure
        # The boundary: the plugin must never be why a request fails, unless the operator asked.
        except Exception as exc:  # noqa: BLE001
            self._failed(step, exc, ends_pass=ends_pass)
        return None

    async def run_async(self, step: str, work: Callable[[], Awaitable[_T]], *, ends_pass: bool = True) -> _T | None:
        """``await work()``, or ``None`` when it fails (or an earlier step did)."""
        if self.failed:
            return None
        try:
            return await work()
        except (litellm.ContextWindowExceededError, HookFailedError):
            raise
        except Exception as exc:  # noqa: BLE001 - the same boundary, for a step that awaits
            self._failed(step, exc, ends_pass=ends_pass)
        return None

    def _failed(self, step: str, exc: Exception, *, ends_pass: bool) -> None:
        where = log_failure(self.hook, step, exc)
        if self.fail_closed:
            msg = (
                f"litellm_budget failed in {self.hook} at its {step} step ({type(exc).__name__} at {where}); "
                "fail_closed is set, so the request is refused instead of sent unfitted"
            )
            raise HookFailedError(msg) from exc
        self.failed = self.failed or ends_pass


def log_failure(hook: str, step: str, exc: BaseException) -> str:
    """
    Log the exception's type and ``file:line`` of its innermost frame: enough to find the bug,
    nothing from the request (an exception's message may quote it). Returns the ``file:line``.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    log.error("hook_failed", hook=hook, step=step, error_type=type(exc).__name__, where=where)
    return where
