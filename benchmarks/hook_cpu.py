"""The plugin's CPU inside the real proxy, by hook: ``load_proxy.py --hook-cpu`` runs the plugin-on
proxy with ``hook_cpu.handler`` (this folder on its ``PYTHONPATH``) in place of ``litellm_budget.handler``.

Latency ratios say how much the plugin adds under load, but on two shared cores they move by 0.1
between rounds; the CPU a hook spends does not. Each hook of ``ContextBudget``, and each later
count (run on the event loop's next turn, outside any hook), is timed in the event loop thread's
CPU time (``time.thread_time``), so time the thread spent waiting (for the GIL, for a socket) is
not counted. A hook that awaits real I/O would also count what other requests ran meanwhile:
read it without ``--redis``. A later count made inside a hook (the success callback settles what
is queued) is that hook's time; ``later_count`` holds those run on their own loop turn. A garbage
collection of the proxy's heap runs in whatever call allocated last: the part of the timed calls'
time it took is also added up apart (``gc_inside_timed_calls``), as it moves a round's figures by
0.1 ms a request whether or not the plugin caused it. The totals go to ``$HOOK_CPU_FILE`` as JSON
(hook: calls, seconds) every ``WRITE_EVERY`` timed calls; the proxy is stopped with SIGTERM, so the
last few calls may be missing.
"""

from __future__ import annotations

import gc
import json
import os
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from litellm_budget.adapter.callback import ContextBudget

#: The hooks timed: every one the proxy calls on a chat request.
HOOKS = (
    "async_pre_call_hook",
    "async_filter_deployments",
    "async_pre_call_deployment_hook",
    "async_post_call_response_headers_hook",
    "async_post_call_success_hook",
    "async_post_call_success_deployment_hook",
    "async_log_success_event",
)
WRITE_EVERY = 100


#: The garbage collections of the whole proxy that ran inside a timed call: already in that call's time.
COLLECTIONS = "gc_inside_timed_calls"


class _Totals:
    def __init__(self, path: str | None) -> None:
        self.path, self.calls, self.seconds, self.timed = path, Counter[str](), Counter[str](), 0
        #: Hooks running now: a later count made inside one (the success callback settles them) is its time.
        self.inside = 0
        #: Timed calls running now (hooks and later counts), and when the collection running now began.
        self.timing = 0
        self.collecting: float | None = None

    def collection(self, phase: str, _info: dict[str, Any]) -> None:
        """
        ``gc.callbacks``: a collection (a full one of the proxy's heap takes about 0.2 s) lands in
        whatever call allocated last, a hook of this plugin as often as LiteLLM's own code; what
        landed in a timed call is added up apart, so the plugin's own CPU can be read without it.
        """
        if phase == "start":
            self.collecting = time.thread_time() if self.timing else None
        elif self.collecting is not None:
            self.add(COLLECTIONS, time.thread_time() - self.collecting)
            self.collecting = None

    def add(self, name: str, seconds: float) -> None:
        self.calls[name] += 1
        self.seconds[name] += seconds
        self.timed += 1
        if self.path and self.timed % WRITE_EVERY == 0:
            table = {key: {"calls": self.calls[key], "seconds": round(self.seconds[key], 6)} for key in self.calls}
            with open(self.path, "w", encoding="utf-8") as file:
                json.dump(table, file)


TOTALS = _Totals(os.environ.get("HOOK_CPU_FILE"))


def _timed_async(name: str) -> Callable[..., Any]:
    hook = getattr(ContextBudget, name)

    async def timed(self: ContextBudget, *args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        TOTALS.inside += 1
        TOTALS.timing += 1
        try:
            return await hook(self, *args, **kwargs)
        finally:
            TOTALS.inside -= 1
            TOTALS.timing -= 1
            TOTALS.add(name, time.thread_time() - started)

    return timed


class TimedBudget(ContextBudget):
    """``ContextBudget`` whose hooks and later counts add their thread CPU time to ``TOTALS``."""

    def __init__(self, **knobs: Any) -> None:
        super().__init__(**knobs)
        later = self._memory.later
        count_next = later._count_next

        def timed_count() -> bool:
            if TOTALS.inside:
                return count_next()
            started = time.thread_time()
            TOTALS.timing += 1
            try:
                counted = count_next()
            finally:
                TOTALS.timing -= 1
            if counted:
                TOTALS.add("later_count", time.thread_time() - started)
            return counted

        later._count_next = timed_count  # type: ignore[method-assign]


for _name in HOOKS:
    setattr(TimedBudget, _name, _timed_async(_name))

gc.callbacks.append(TOTALS.collection)
handler = TimedBudget()
