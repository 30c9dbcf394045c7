"""How long the plugin holds the event loop while it fits cold long requests, fitted on it or off it.

Run: .venv/bin/python benchmarks/loop_lag.py [--requests 20] [--rounds 3]

In one process, the deployment hook (as ``litellm.acompletion`` calls it) fits ``--requests`` long
histories of about 200k characters, each new (nothing of it remembered), at a 128k window, while a
ticker beside it sleeps 1 ms at a time and records how late each wake-up comes: the time the loop
was held. Alternating, per round: the fit on the loop (``OFF_LOOP_BYTES`` set past every request)
and off it (the default). Prints the ticker's p50, p99 and worst lateness, and each fit's wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from litellm.types.utils import CallTypes
from responsive import long_request

from litellm_budget import ContextBudget
from litellm_budget.adapter.hooks import hook_pass

DEFAULT = hook_pass.OFF_LOOP_BYTES


async def one_run(budget: ContextBudget, first: int, count: int) -> tuple[list[float], float]:
    """The ticker's lateness (ms) while ``count`` new long requests are fitted one after another."""
    late: list[float] = []
    done = False

    async def ticker() -> None:
        while not done:
            started = time.perf_counter()
            await asyncio.sleep(0.001)
            late.append((time.perf_counter() - started) * 1000 - 1)

    async def fits() -> float:
        nonlocal done
        started = time.perf_counter()
        for number in range(first, first + count):
            kwargs = {"model": "openai/gpt-4o", "messages": long_request(number), "litellm_call_id": f"c{number}"}
            await budget.async_pre_call_deployment_hook(kwargs, CallTypes.acompletion)
            await asyncio.sleep(0.002)  # the ticker's turn between two requests, as a proxy's loop has
        done = True
        return time.perf_counter() - started

    _, seconds = await asyncio.gather(ticker(), fits())
    return late, seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    budget = ContextBudget(default_window=128_000)
    asyncio.run(one_run(budget, 10**6, 3))  # warm-up: encodings loaded, nothing measured
    rows: dict[str, list[tuple[float, float, float, float]]] = {"on the loop": [], "off the loop": []}
    number = 0
    for _ in range(args.rounds):
        for name, threshold in (("on the loop", 10**15), ("off the loop", DEFAULT)):
            hook_pass.OFF_LOOP_BYTES = threshold
            late, seconds = asyncio.run(one_run(budget, number, args.requests))
            number += args.requests
            ordered = sorted(late)
            p50, p99 = ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99) - 1]
            rows[name].append((p50, p99, ordered[-1], seconds * 1000 / args.requests))
    hook_pass.OFF_LOOP_BYTES = DEFAULT
    print(f"the loop held while {args.requests} new ~200k-character requests are fitted (ms; per round)")
    for name, cells in rows.items():
        text = "; ".join(f"p50 {m:.2f}, p99 {p:.1f}, worst {w:.1f}, {f:.1f} a fit" for m, p, w, f in cells)
        print(f"  {name:<13} {text}   (median p99 {statistics.median(c[1] for c in cells):.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
