"""The plugin's CPU per request by hook, in one process, as the proxy calls its hooks.

``load_proxy.py --hook-cpu`` reads the same inside the real proxy, but there a round's figures move
by 0.1 ms a request with the load (and with the proxy's garbage collections that land in a hook).
Here nothing else runs: ``hook_cpu.TimedBudget`` on a ``litellm.Router`` whose deployment answers
with ``mock_response``, each request first through the proxy's ``async_pre_call_hook``, then the
Router's call (the filter and deployment hooks, the success callback), then one loop turn (the
later count). The requests are ``load_proxy.py``'s (drawn from every session with its seed), after
its 100 warm-up requests; reruns agree within about 2%, so a change of a few percent shows.

Run: .venv/bin/python benchmarks/router_cpu.py [--requests 2000] [--window 128000] [--sessions all]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
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


async def _one(budget: TimedBudget, router: litellm.Router, messages: list[dict[str, Any]]) -> None:
    data: dict[str, Any] = {"model": "agent", "messages": messages, "litellm_call_id": str(uuid.uuid4())}
    data = await budget.async_pre_call_hook(None, None, data, "completion") or data
    await router.acompletion(**data)
    await asyncio.sleep(0)  # the loop's next turn: a count the size gate left for later


async def _run(args: argparse.Namespace) -> list[str]:
    """Warm up, then time every request: the lines to print."""
    deployment = {"model": "openai/gpt-4o", "api_key": "sk-none", "mock_response": "ok"}
    model_info = {"max_input_tokens": args.window}
    router = litellm.Router(
        model_list=[{"model_name": "agent", "litellm_params": deployment, "model_info": model_info}]
    )
    budget = TimedBudget(router=router)
    litellm.callbacks = [budget]
    for conversation in agent_conversations(min(100, args.requests), args.sessions, tag="warm-up "):
        for messages in conversation:
            await _one(budget, router, messages)
    await asyncio.sleep(SETTLE)  # the warm-up's success callbacks (LiteLLM runs them as tasks) run before the timing
    TOTALS.calls.clear()
    TOTALS.seconds.clear()
    sent = 0
    for conversation in agent_conversations(args.requests, args.sessions):
        for messages in conversation:
            await _one(budget, router, messages)
            sent += 1
    await asyncio.sleep(SETTLE)  # and the last requests' ones before the totals are read
    lines = [f"{sent} requests, {args.window:,}-token window, ms of CPU per call (calls):"]
    for name in sorted(TOTALS.calls):
        mean = 1000 * TOTALS.seconds[name] / TOTALS.calls[name]
        lines.append(f"  {name:42} {mean:.4f} ({TOTALS.calls[name]})")
    timed = sum(seconds for name, seconds in TOTALS.seconds.items() if name != COLLECTIONS)
    lines.append(f"  all of it, per request: {1000 * timed / sent:.4f} ms")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--window", type=int, default=128_000)
    parser.add_argument("--sessions", choices=["all", "longest", "in-order"], default="all")
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
