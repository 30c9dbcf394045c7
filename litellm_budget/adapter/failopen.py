"""
The fail-open boundary of every hook step: a bug of ours is logged as ``hook_failed`` and the request goes on as it
is (with ``fail_closed``, it is refused, saying so); the plugin's own ``ContextWindowExceededError`` always passes.
The package's other broad excepts each stand around a foreign call (model map, Redis, summary model) and say why.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from types import TracebackType

import litellm

from litellm_budget.logs import get_logger

log = get_logger()


class HookFailedError(RuntimeError):
    """A bug of ours in a hook, with ``fail_closed``: the request is refused rather than sent unfitted."""


#: What a step lets through: the plugin's own refusal, and an inner step's under ``fail_closed``.
_ANSWERS = (litellm.ContextWindowExceededError, HookFailedError)


class Guard:
    """
    The boundary of one hook call. A failed step ends the pass (``ok`` turns false, the request goes on as it is),
    unless it only learns (``ends_pass=False``: the fit goes on without it). Hooks that run after the call was
    answered only observe: there a failure is logged, whatever ``fail_closed`` says.
    """

    __slots__ = ("fail_closed", "failed", "hook")

    def __init__(self, hook: str, *, fail_closed: bool = False) -> None:
        self.hook, self.fail_closed, self.failed = hook, fail_closed, False

    @property
    def ok(self) -> bool:
        """Whether the pass goes on: no step that ends it has failed."""
        return not self.failed

    def step(self, step: str, *, ends_pass: bool = True) -> _Step:
        """One step's boundary, as a ``with`` block logging its exception; a block after a failed step still runs."""
        return _Step(self, step, ends_pass=ends_pass)

    def _failed(self, step: str, exc: Exception, *, ends_pass: bool) -> None:
        where = log_failure(self.hook, step, exc)
        if self.fail_closed:
            msg = (
                f"litellm_budget failed in {self.hook} at its {step} step ({type(exc).__name__} at {where}); "
                "fail_closed is set, so the request is refused instead of sent unfitted"
            )
            raise HookFailedError(msg) from exc
        self.failed = self.failed or ends_pass


class _Step:
    __slots__ = ("ends_pass", "guard", "name")

    def __init__(self, guard: Guard, name: str, *, ends_pass: bool) -> None:
        self.guard, self.name, self.ends_pass = guard, name, ends_pass

    def __enter__(self) -> _Step:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> bool:
        # The plugin's answer and an inner step's refusal pass, as does what is no error (a cancellation).
        if exc is None or not isinstance(exc, Exception) or isinstance(exc, _ANSWERS):
            return False
        self.guard._failed(self.name, exc, ends_pass=self.ends_pass)
        return True


def log_failure(hook: str, step: str, exc: BaseException) -> str:
    """Log the exception's type and innermost ``file:line`` (returned), not the request, which its message may quote."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    log.error("hook_failed", hook=hook, step=step, error_type=type(exc).__name__, where=where)
    return where
