"""A pass's way as a chain of named steps, each run with its condition inside its ``guard.step(name)`` boundary."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    from .hook_pass import HookPass

_P = TypeVar("_P", bound="HookPass")


class Step(NamedTuple):
    """One named step of a pass: its boundary's name, when it applies, and what it makes of the pass."""

    name: str
    applies: Callable[[Any], bool]
    #: The pass after the step (or an awaitable of it).
    run: Callable[[Any], Any]
    #: A failure ends the pass and the request goes on as it is; ``False``: the fit goes on without what it learned.
    ends_pass: bool = True
    #: It may rewrite the request's messages: the parts are read again after it, even when it failed.
    rewrites: bool = False

    def only_if(self, condition: Callable[[Any], bool]) -> Step:
        applies = self.applies
        return self._replace(applies=lambda hook_pass: condition(hook_pass) and applies(hook_pass))


def always(_hook_pass: object) -> bool:
    return True


async def through(hook_pass: _P, steps: Sequence[Step]) -> _P:
    """The pass after each of ``steps`` that applies, in order; none runs once a step ended the pass."""
    for step in steps:
        if not hook_pass.guard.ok:
            break
        with hook_pass.guard.step(step.name, ends_pass=step.ends_pass):
            try:
                if step.applies(hook_pass):
                    after = step.run(hook_pass)
                    hook_pass = await after if inspect.isawaitable(after) else after
            finally:
                if step.rewrites:
                    hook_pass = hook_pass.reread()
    return hook_pass
