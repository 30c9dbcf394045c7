"""The plugin's CPU per request by hook, in one process, as the proxy calls its hooks.

``load_proxy.py --hook-cpu`` reads the same inside the real proxy, but there a round's figures move
by 0.1 ms a request with the load (and with the proxy's garbage collections that land in a hook).
Here nothing else runs: ``hook_cpu.TimedBudget`` on a ``litellm.Router`` whose deployment answers
with ``mock_response``, each request first through the proxy's ``async_pre_call_hook``, then the
Router's call (the filter and deployment hooks, the success callback), then one loop turn (the
later count). The requests are ``load_proxy.py``'s (drawn from every session with its seed), after
its 100 warm-up requests; reruns agree within about 2%, so a change of a few percent shows.

With ``--prometheus``, LiteLLM's own ``prometheus`` callback (``PrometheusLogger``, as
``callbacks: ["prometheus"]`` registers it) runs beside the plugin and its hooks are timed the same
way, the proxy's success hook called as the proxy calls it: a reader sees the plugin's CPU per
request next to that of a callback most proxies already run. At 128k the plugin passes all but a
few requests untouched (the last line counts them), so its line is what it adds to a request it
does not change.

Run: .venv/bin/python benchmarks/router_cpu.py [--requests 2000] [--window 128000] [--sessions all] [--prometheus]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import litellm
from hook_cpu import COLLECTIONS, TOTALS, TimedBudget
from load_proxy import agent_conversations

#: Seconds the loop is left to run LiteLLM's success callbacks (tasks of their own) before a total is read.
SETTLE = 0.2
#: The name prefix of the Prometheus callback's timed hooks in ``TOTALS``.
PROMETHEUS = "prometheus "
#: The hooks of LiteLLM's Prometheus callback a successful chat request runs in the proxy.
PROMETHEUS_HOOKS = ("async_log_success_event", "async_post_call_success_hook")


class _OwnSteps:
    """
    Await ``coroutine``, adding to ``TOTALS`` the loop thread's CPU of its own steps only: the
    Prometheus callback awaits inside its hook, and whatever the loop runs meanwhile (the other
    callbacks' logging tasks) is not its cost.
    """

    def __init__(self, name: str, coroutine: Any) -> None:
        self.name, self.coroutine = name, coroutine

    def __await__(self) -> Any:
        spent, sent, thrown = 0.0, None, None
        try:
            while True:
                started = time.thread_time()
                try:
                    step = self.coroutine.send(sent) if thrown is None else self.coroutine.throw(thrown)
                except StopIteration as done:
                    return done.value
                finally:
                    spent += time.thread_time() - started
                try:
                    sent, thrown = (yield step), None
                except BaseException as exc:  # noqa: BLE001 - handed on to the coroutine, as await does
                    sent, thrown = None, exc
        finally:
            TOTALS.add(PROMETHEUS + self.name, spent)


def _timed_prometheus() -> Any:
    """LiteLLM's ``PrometheusLogger``, its hooks' own steps timed in the loop thread's CPU."""
    from litellm.integrations.prometheus import PrometheusLogger

    def timed(name: str) -> Any:
        hook = getattr(PrometheusLogger, name)

        async def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            return await _OwnSteps(name, hook(self, *args, **kwargs))

        return run

    timed_class = type("TimedPrometheus", (PrometheusLogger,), {name: timed(name) for name in PROMETHEUS_HOOKS})
    return timed_class()


async def _one(budget: TimedBudget, router: litellm.Router, messages: list[dict[str, Any]], prometheus: Any) -> str:
    """One request as the proxy runs it; the plugin's action on it."""
    data: dict[str, Any] = {"model": "agent", "messages": messages, "litellm_call_id": str(uuid.uuid4())}
    data = await budget.async_pre_call_hook(None, None, data, "completion") or data
    response = await router.acompletion(**data)
    if prometheus is not None:
        from litellm.proxy._types import UserAPIKeyAuth

        await prometheus.async_post_call_success_hook(data, UserAPIKeyAuth(), response)
    await asyncio.sleep(0)  # the loop's next turn: a count the size gate left for later
    report = (data.get("metadata") or {}).get("spend_logs_metadata", {}).get("litellm_budget") or {}
    return str(report.get("action"))


async def _run(args: argparse.Namespace) -> list[str]:
    """Warm up, then time every request: the lines to print."""
    deployment = {"model": "openai/gpt-4o", "api_key": "sk-none", "mock_response": "ok"}
    model_info = {"max_input_tokens": args.window}
    router = litellm.Router(
        model_list=[{"model_name": "agent", "litellm_params": deployment, "model_info": model_info}]
    )
    budget = TimedBudget(router=router)
    prometheus = _timed_prometheus() if args.prometheus else None
    litellm.callbacks = [budget] if prometheus is None else [budget, prometheus]
    for conversation in agent_conversations(min(100, args.requests), args.sessions, tag="warm-up "):
        for messages in conversation:
            await _one(budget, router, messages, prometheus)
    await asyncio.sleep(SETTLE)  # the warm-up's success callbacks (LiteLLM runs them as tasks) run before the timing
    TOTALS.calls.clear()
    TOTALS.seconds.clear()
    actions: list[str] = []
    process_started = time.process_time()
    for conversation in agent_conversations(args.requests, args.sessions):
        for messages in conversation:
            actions.append(await _one(budget, router, messages, prometheus))
    await asyncio.sleep(SETTLE)  # and the last requests' ones before the totals are read
    process = time.process_time() - process_started
    sent = len(actions)
    lines = [f"{sent} requests, {args.window:,}-token window, ms of CPU per call (calls):"]
    for name in sorted(TOTALS.calls):
        mean = 1000 * TOTALS.seconds[name] / TOTALS.calls[name]
        lines.append(f"  {name:42} {mean:.4f} ({TOTALS.calls[name]})")
    ours = sum(seconds for name, seconds in TOTALS.seconds.items() if name != COLLECTIONS and PROMETHEUS not in name)
    lines.append(f"  all of it, per request: {1000 * ours / sent:.4f} ms")
    if prometheus is not None:
        theirs = sum(seconds for name, seconds in TOTALS.seconds.items() if name.startswith(PROMETHEUS))
        lines.append(f"  LiteLLM's prometheus callback, per request: {1000 * theirs / sent:.4f} ms")
    # The check of the lines above: a run without --prometheus shows what the callback adds here.
    lines.append(
        f"  the whole process (LiteLLM's Router, mock answers, both), per request: {1000 * process / sent:.4f} ms"
    )
    passed = actions.count("passthrough")
    lines.append(f"  passed untouched: {passed} of {sent} requests")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--window", type=int, default=128_000)
    parser.add_argument("--sessions", choices=["all", "longest", "in-order"], default="all")
    parser.add_argument("--prometheus", action="store_true", help="time LiteLLM's prometheus callback beside it")
    args = parser.parse_args()
    terminal = sys.stdout
    with open(os.devnull, "w", encoding="utf-8") as log_file:
        sys.stdout = log_file  # the plugin writes its report lines where a proxy's log file would get them
        try:
            lines = asyncio.run(_run(args))
        finally:
            sys.stdout = terminal
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
