"""
Instructions the deployment hook runs on the last 40 requests of a growing session, counted by
valgrind's callgrind: the same figure every run, where timings on a shared machine move by 10 to
20% between rounds. Compare two commits by running it from each tree with the same venv:

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=cut.out \\
        .venv/bin/python benchmarks/hook_instructions.py cut
    grep totals cut.out

Workloads: ``cut`` (the longest shared session's first 100 messages), ``full`` (all of it),
``synthetic100`` (50 steps of 4,000 characters); ``--window`` (16k by default), ``--set KEY=VALUE``
as ``bench_fit.py`` takes it. To count an older commit, copy this file into its ``benchmarks/``
(it reads that tree's ``bench_fit.py``; ``--set`` needs one that takes it). Instrumentation is
switched on around each timed hook only, through ``callgrind_control``; the switching itself
costs about 10 million instructions for the 40 hooks (``--no-hook`` counts it), to subtract
before taking a ratio. Each request is one run of the hook, warm as a proxy holds it: the whole
session runs once uncounted first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_fit
import structlog

from litellm_budget import ContextBudget

#: valgrind's tool that switches callgrind's counting on and off in a running process.
CONTROL = shutil.which("callgrind_control") or "/usr/bin/callgrind_control"


def requests_for(workload: str) -> list[list[dict[str, Any]]]:
    """
    Every request of the workload's session, in order: the sessions ``bench_fit.sessions`` times,
    built here from the helpers every ``bench_fit.py`` has had, so the file counts older trees too.
    """
    if workload == "synthetic100":
        steps = [*bench_fit.agent_request(102, 50 * 4000, seed=3), {"role": "assistant", "content": "done"}]
        return list(bench_fit.requests_of(steps))
    conversations = [bench_fit.load_conversation(path) for path in bench_fit.session_files([bench_fit.SESSIONS])]
    longest = max(conversations, key=lambda c: len(json.dumps(c.messages)))
    return list(bench_fit.requests_of(longest.messages[:100] if workload == "cut" else longest.messages))


def _instrument(on: bool) -> None:
    # A fixed command on this process's own pid: nothing from outside reaches it.
    command = [CONTROL, "-i", "on" if on else "off", str(os.getpid())]
    subprocess.run(command, capture_output=True, check=False)  # noqa: S603


async def _session(wires: list[str], window: int, tag: str, *, counted: bool, hook: bool) -> None:
    bench_fit._forget_counts()
    budget = ContextBudget(**getattr(bench_fit, "KNOBS", {}))
    for number, wire in enumerate(wires):
        kwargs = bench_fit._kwargs(json.loads(wire), window, f"{tag}-{number}")
        timed = counted and number >= len(wires) - bench_fit.LAST
        if timed:
            _instrument(True)
        if hook:
            await bench_fit._hook(budget, kwargs)
        if timed:
            _instrument(False)
        await asyncio.sleep(0)  # the gate's count, off the path and uncounted, as bench_fit times it


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("workload", choices=["cut", "full", "synthetic100"])
    parser.add_argument("--window", type=int, default=bench_fit.SMALL)
    parser.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--no-hook", action="store_true", help="count only the switching (the baseline)")
    args = parser.parse_args()
    if args.assignments:
        bench_fit.KNOBS.update(bench_fit.knobs_from(args.assignments))
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.JSONRenderer()],
        logger_factory=structlog.ReturnLoggerFactory(),
    )
    wires = [json.dumps(request) for request in requests_for(args.workload)]
    asyncio.run(_session(wires, args.window, "warm", counted=False, hook=True))
    asyncio.run(_session(wires, args.window, "counted", counted=True, hook=not args.no_hook))
    return 0


if __name__ == "__main__":
    sys.exit(main())
