"""The first SDK request's hook time against later cold requests of the same size, in fresh processes.

Run: .venv/bin/python benchmarks/first_request.py [--runs 5]

Each run is a fresh interpreter that registers the plugin as the README's SDK quick start does,
then sends four ``litellm.acompletion`` calls (``mock_response``) of agent histories of the same
size and shape but different text, so none is memoized: the first, then three later cold ones.
The plugin's deployment hook is timed around its ``await``. Printed: each run's first and later
hook times, and the median over runs of first / median(later).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

#: What one fresh process runs; it prints one JSON line.
CHILD = r"""
import asyncio, json, os, time
import litellm, structlog
structlog.configure(processors=[structlog.processors.JSONRenderer()], logger_factory=structlog.ReturnLoggerFactory())
started = time.perf_counter()
from litellm_budget import ContextBudget
budget = ContextBudget()
registered = time.perf_counter() - started
hook = budget.async_pre_call_deployment_hook
times = []

async def timed(kwargs, call_type):
    began = time.perf_counter()
    try:
        return await hook(kwargs, call_type)
    finally:
        times.append((time.perf_counter() - began) * 1000)

budget.async_pre_call_deployment_hook = timed
litellm.callbacks = [budget]

def history(seed, steps=40):
    out = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": f"Task {seed}."}]
    for step in range(steps):
        call = {"id": f"call_{seed}_{step}", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"cmd": f"pytest -k t{seed}_{step}"})}}
        out += [{"role": "assistant", "content": f"Step {step} of {seed}", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"],
                 "content": " ".join(f"w{seed}x{step}y{i}" for i in range(300))}]
    return out

async def main():
    for seed in range(4):
        await litellm.acompletion(model="openai/gpt-4o", messages=history(seed), mock_response="ok")
    print(json.dumps({"registered_s": round(registered, 3), "hook_ms": [round(t, 2) for t in times]}))

asyncio.run(main())
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    ratios = []
    for run in range(args.runs):
        done = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
            [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=300
        )
        line = json.loads(done.stdout.strip().splitlines()[-1])
        first, later = line["hook_ms"][0], line["hook_ms"][1:]
        ratio = first / statistics.median(later)
        ratios.append(ratio)
        print(
            f"run {run + 1}: registration {line['registered_s']:.2f} s; hook first {first:.2f} ms, "
            f"later cold {', '.join(f'{t:.2f}' for t in later)} ms; first / later {ratio:.2f}x"
        )
        time.sleep(0.2)
    print(
        f"first request / later cold request: median {statistics.median(ratios):.2f}x "
        f"(runs {min(ratios):.2f}x to {max(ratios):.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
