"""Overhead of the plugin's hook against litellm.token_counter and trim_messages, in one run.

Run: .venv/bin/python benchmarks/bench_fit.py [--quick]   (prints tables; numbers go to BENCHMARKS.md §2)

Every request is JSON round-tripped before it is timed, as the proxy hands the plugin freshly
parsed strings: a memo keyed by string must still hash every character it looks up. Every ratio
is taken side by side with ``token_counter`` on the same request in the same run, alternating, so
a busy machine slows both alike; each figure is given with its spread over the repetitions.

1. Synthetic agent requests (system, task, bash calls and outputs of random words): the hook cold,
   warm (all but the newest step seen) and trimming, at a 128k window and at 16k.
2. The size gate: cold requests (nothing memoized) that fit their window, the hook against one
   ``token_counter`` call, and the count the gate moves off the path, timed apart.
3. Growing sessions: every request of a session in order through one plugin (memos and
   conversation state as a proxy holds them), the hook on each of the last 40 timed against
   ``token_counter`` on the same request: the longest real session (``../shared/sessions``, by
   characters) at 16k and 128k, the same session cut at 100 messages, and synthetic sessions of
   100 and 290 messages (the growth of the hook's cost with the history).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import dataclasses
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
import structlog
from litellm.types.utils import CallTypes
from litellm.utils import trim_messages

from litellm_budget import ContextBudget, logs
from litellm_budget.core._fit import fit_request
from litellm_budget.core._fit_input import FitRequest
from litellm_budget.core.budget._settings import BudgetSettings
from litellm_budget.core.counting import _tokens
from litellm_budget.tools.sessions import load_conversation, requests_of, session_files
from litellm_budget.tools.settings_args import settings_from

SIZES = [(10, 50_000), (100, 200_000), (500, 1_000_000)]
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()
SESSIONS = Path(__file__).resolve().parents[2] / "shared" / "sessions"
LARGE, SMALL = 128_000, 16_000
#: The last requests of a growing session that are timed.
LAST = 40
#: Settings over the defaults every plugin here runs with (``--set``): to compare like work with a
#: commit whose defaults differ.
KNOBS: dict[str, Any] = {}


def agent_request(messages: int, chars: int, seed: int = 0) -> list[dict[str, Any]]:
    """System, task, then assistant tool calls and tool results sharing ``chars`` characters."""
    steps = max(1, (messages - 2) // 2)
    per_output = chars // steps
    request: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test."},
    ]
    for step in range(steps):
        call_id = f"call_{seed}_{step}"
        rng = random.Random(f"{seed}-{step}")  # noqa: S311 - sample text
        body = " ".join(rng.choice(WORDS) + str(rng.randrange(1000)) for _ in range(per_output // 8))
        request += [
            {
                "role": "assistant",
                "content": f"Step {step}.",
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": body[:per_output]},
        ]
    return request


def fresh(request: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the proxy parses from the wire: new objects, no cached string hashes."""
    return json.loads(json.dumps(request))


def timed(work: Callable[[], Any], repeat: int) -> float:
    """Median milliseconds of ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def counter_ms(wire: str) -> float:
    """One ``token_counter`` call on the request, parsed from ``wire`` first (the parse is not timed)."""
    messages = json.loads(wire)
    started = time.perf_counter()
    litellm.token_counter(model="gpt-4o", messages=messages)
    return (time.perf_counter() - started) * 1000


def spread(values: Sequence[float], digits: int = 3) -> str:
    """``median (min-max)``."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def hook_ms(budget: ContextBudget, request: list[dict[str, Any]], window: int, *, warm: bool, repeat: int) -> float:
    """
    The plugin's deployment hook on ``request``: cold (nothing memoized) or warm (all but the
    newest step seen). Timed around the ``await`` inside one running loop, as the proxy calls it:
    starting a loop or a task per call would cost more than the hook.
    """

    async def timed_hooks() -> list[float]:
        results = []
        for attempt in range(repeat):
            _forget_counts()
            if warm:
                await _hook(budget, _kwargs(fresh(request[:-2]), window, f"w{attempt}"))
                await asyncio.sleep(0)  # the gate's count of that request, off the path
            kwargs = _kwargs(fresh(request), window, f"c{attempt}")
            started = time.perf_counter()
            await _hook(budget, kwargs)
            results.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0)
        return results

    return statistics.median(asyncio.run(timed_hooks()))


async def _hook(budget: ContextBudget, kwargs: dict[str, Any]) -> None:
    await budget.async_pre_call_deployment_hook(kwargs, CallTypes.acompletion)


def _forget_counts() -> None:
    # New counters with empty memos, and every fact remembered by content; the encodings stay loaded.
    _tokens.forget_counts()


def fit_ms(request: list[dict[str, Any]], window: int, repeat: int) -> float:
    """``fit()`` itself, warm: the request minus its newest step was fitted before."""
    results = []
    for _ in range(repeat):
        _forget_counts()
        settings = BudgetSettings(**KNOBS)
        fit_request(FitRequest(fresh(request[:-2]), model="gpt-4o", window=window, settings=settings))
        messages = fresh(request)
        started = time.perf_counter()
        fit_request(FitRequest(messages, model="gpt-4o", window=window, settings=settings))
        results.append((time.perf_counter() - started) * 1000)
    return statistics.median(results)


def _kwargs(messages: list[dict[str, Any]], window: int, call_id: str) -> dict[str, Any]:
    return {
        "model": "gpt-4o",
        "messages": messages,
        "model_info": {"max_input_tokens": window},
        "litellm_call_id": call_id,
    }


def synthetic(budget: ContextBudget, quick: bool) -> None:
    """Section 1: the table of synthetic requests."""
    header = (
        f"{'messages':>8} {'chars':>9} {'tokens':>7} | {'token_counter':>13} {'trim_messages':>13} | "
        f"{'fit warm 16k':>12} {'cold 128k':>9} {'warm 128k':>9} {'trims 16k':>9} | "
        f"{'fit/tc':>6} {'cold/tc':>7} {'warm/tc':>7} {'trims/tc':>8} {'trim_msgs/tc':>12} | gated at 128k"
    )
    print("\n1. synthetic agent requests (medians in ms; ratios against token_counter on the same request)")
    print(header)
    print("-" * len(header))
    for messages, chars in SIZES[:2] if quick else SIZES:
        request = agent_request(messages, chars)
        tokens = litellm.token_counter(model="gpt-4o", messages=request)
        repeat = 21 if chars <= 200_000 else 5
        wire = json.dumps(request)
        counter = statistics.median(counter_ms(wire) for _ in range(repeat))
        trims = 1 if chars > 200_000 else 3
        trim_ms = timed(
            lambda r=request, t=tokens: trim_messages(copy.deepcopy(r), model="gpt-4o", max_tokens=t // 2), trims
        )
        fit_warm = fit_ms(request, SMALL, repeat)
        cold = hook_ms(budget, request, LARGE, warm=False, repeat=repeat)
        warm = hook_ms(budget, request, LARGE, warm=True, repeat=repeat)
        warm_trim = hook_ms(budget, request, SMALL, warm=True, repeat=repeat)
        gated = fit_request(FitRequest(request, model="gpt-4o", window=LARGE, gate=True)).report
        print(
            f"{messages:>8} {chars:>9,} {tokens:>7,} | {counter:>13.2f} {trim_ms:>13.1f} | "
            f"{fit_warm:>12.2f} {cold:>9.2f} {warm:>9.2f} {warm_trim:>9.2f} | "
            f"{fit_warm / counter:>6.3f} {cold / counter:>7.3f} {warm / counter:>7.3f} {warm_trim / counter:>8.3f} "
            f"{trim_ms / counter:>12.1f} | {'yes' if gated.size_gate else f'no ({gated.action})'}"
        )


def gate(quick: bool) -> None:
    """Section 2: cold requests that fit, the hook against one token_counter call, alternating."""
    print("\n2. the size gate: cold requests that fit their window (nothing memoized), alternating with token_counter")
    cases = [(50, 100_000, LARGE), (100, 200_000, LARGE), (100, 200_000, 256_000)]
    runs = 5 if quick else 11
    for messages, chars, window in cases:
        request = agent_request(messages, chars, seed=7)
        wire = json.dumps(request)
        for gate_on in (True, False):
            budget = ContextBudget(**{**KNOBS, "size_gate": gate_on})
            hooks, counters, afters, ratios = [], [], [], []
            for run in range(runs):
                counter = counter_ms(wire) if run % 2 else None
                hook, after = asyncio.run(cold_hook(budget, wire, window))
                counter = counter if counter is not None else counter_ms(wire)
                hooks.append(hook)
                afters.append(after)
                counters.append(counter)
                ratios.append(hook / counter)
            _forget_counts()  # what the gate did with the cold request: remembered counts would tighten its bound
            gated = fit_request(FitRequest(request, model="gpt-4o", window=window, gate=gate_on)).report
            print(
                f"  {chars:>9,} chars, {window // 1000}k window, gate {'on ' if gate_on else 'off'} "
                f"({'passed' if gated.size_gate else 'counted'}; bound {gated.tokens_bound or '-'}, budget "
                f"{gated.budget}): hook {spread(hooks, 3)} ms, token_counter {spread(counters, 2)} ms, "
                f"hook / tc {spread(ratios, 4)}; counted after the request left: {spread(afters, 2)} ms"
            )


async def cold_hook(budget: ContextBudget, wire: str, window: int) -> tuple[float, float]:
    """The hook on a request nothing is memoized of, and the count the gate moved off the path, timed apart."""
    _forget_counts()
    kwargs = _kwargs(json.loads(wire), window, f"g{time.perf_counter_ns()}")
    started = time.perf_counter()
    await _hook(budget, kwargs)
    hook = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    budget._memory.later.settle()
    return hook, (time.perf_counter() - started) * 1000


def growing(
    requests: Sequence[list[dict[str, Any]]], window: int, *, reps: int, gate_on: bool = True
) -> list[dict[str, float]]:
    """
    Every request in order through one plugin (the memos reset first, then warm as a proxy holds
    them), the hook on each of the last ``LAST`` timed beside ``token_counter`` on the same request.
    One row per repetition: median per-request ratio, ratio of the sums, median and mean hook ms.
    """
    wires = [json.dumps(request) for request in requests]

    async def one(rep: int) -> list[tuple[float, float]]:
        _forget_counts()
        budget = ContextBudget(**{**KNOBS, "size_gate": gate_on})
        rows = []
        for number, wire in enumerate(wires):
            measured = number >= len(wires) - LAST
            counter = counter_ms(wire) if measured and number % 2 else None
            kwargs = _kwargs(json.loads(wire), window, f"s{rep}-{number}")
            started = time.perf_counter()
            await _hook(budget, kwargs)
            hook = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            await asyncio.sleep(0)  # a loop turn: the gate's count, off the path
            later = (time.perf_counter() - started) * 1000
            if measured:
                rows.append((hook, counter if counter is not None else counter_ms(wire), later))
        return rows

    results = []
    for rep in range(reps):
        rows = asyncio.run(one(rep))
        hooks = [hook for hook, _, _ in rows]
        results.append(
            {
                "ratio": statistics.median(hook / counter for hook, counter, _ in rows),
                "sums": sum(hooks) / sum(counter for _, counter, _ in rows),
                "hook": statistics.median(hooks),
                "mean": statistics.mean(hooks),
                "counter": statistics.median(counter for _, counter, _ in rows),
                # The CPU a request costs in all, its later count included (not on its path).
                "with_count": statistics.median((hook + later) / counter for hook, counter, later in rows),
            }
        )
    return results


def print_growing(label: str, results: list[dict[str, float]]) -> None:
    each = "; ".join(f"{r['ratio']:.3f}/{r['sums']:.3f}" for r in results)
    print(
        f"  {label}: hook / tc per request {spread([r['ratio'] for r in results])}, "
        f"sum of hooks / sum of tc {spread([r['sums'] for r in results])}; hook median "
        f"{spread([r['hook'] for r in results], 3)} ms, mean {spread([r['mean'] for r in results], 3)} ms; "
        f"token_counter median {spread([r['counter'] for r in results], 2)} ms; with the later count, "
        f"per request {spread([r['with_count'] for r in results])}  [reps: {each}]"
    )


def sessions(quick: bool) -> None:
    """Section 3: growing sessions, real and synthetic."""
    reps = 2 if quick else 3
    print(
        f"\n3. growing sessions: the hook on each of the last {LAST} requests beside token_counter, {reps} repetitions"
    )
    if SESSIONS.is_dir():
        conversations = [load_conversation(path) for path in session_files([SESSIONS])]
        longest = max(conversations, key=lambda c: len(json.dumps(c.messages)))
        full = list(requests_of(longest.messages))
        cut = list(requests_of(longest.messages[:100]))
        print(
            f"  longest real session {longest.name}: {len(longest.messages)} messages, "
            f"{len(json.dumps(longest.messages)):,} JSON chars; its last {LAST} requests hold "
            f"{len(full[-LAST])} to {len(full[-1])} messages (cut at 100: {len(cut[-LAST])} to {len(cut[-1])})"
        )
        full_small = growing(full, SMALL, reps=reps)
        print_growing("full length, 16k (trims)", full_small)
        cut_small = growing(cut, SMALL, reps=reps)
        print_growing("cut at 100 messages, 16k", cut_small)
        growth = [a["hook"] / b["hook"] for a, b in zip(full_small, cut_small, strict=True)]
        print(f"  growth at 16k, hook median full / cut at 100: {spread(growth)}")
        print_growing("full length, 128k (most pass)", growing(full, LARGE, reps=reps))
        print_growing("full length, 128k, gate off", growing(full, LARGE, reps=reps, gate_on=False))
    else:
        print(f"  (no {SESSIONS}: the real sessions are skipped)")
    per_step = 4000
    short = list(requests_of([*agent_request(102, 50 * per_step, seed=3), {"role": "assistant", "content": "done"}]))
    long = list(requests_of([*agent_request(292, 145 * per_step, seed=3), {"role": "assistant", "content": "done"}]))
    short_small = growing(short, SMALL, reps=reps)
    long_small = growing(long, SMALL, reps=reps)
    print_growing(f"synthetic 100 messages ({per_step:,} chars a step), 16k", short_small)
    print_growing(f"synthetic 290 messages ({per_step:,} chars a step), 16k", long_small)
    growth = [a["hook"] / b["hook"] for a, b in zip(long_small, short_small, strict=True)]
    print(f"  growth at 16k, hook median 290 / 100 messages: {spread(growth)}")


class _Terminal:
    """A stream that says it is a terminal and discards what it gets."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink

    def write(self, text: str) -> int:
        return self.sink.write(text)

    def flush(self) -> None:
        self.sink.flush()

    def isatty(self) -> bool:
        return True


def rendering(quick: bool) -> None:
    """Section 4: one report event through the plugin's logger as a proxy runs it, and as JSON lines."""
    report = fit_request(FitRequest(agent_request(60, 120_000), model="gpt-4o", window=SMALL)).report.as_dict()
    repeat = 500 if quick else 3000
    print(f"\n4. one report event ({len(report)} fields), written and discarded, median of {repeat}")
    structlog.reset_defaults()  # as in a proxy: nothing configured structlog
    plugin_log = logs.get_logger()
    real = sys.stdout
    with open(os.devnull, "w", encoding="utf-8") as sink:
        for label, stream in (
            ("unconfigured, stdout a log file (the plugin's console lines without colours)", sink),
            ("unconfigured, stdout a terminal (structlog's default console renderer)", _Terminal(sink)),
        ):
            sys.stdout = stream
            try:
                ms = timed(lambda: plugin_log.info("request_trimmed", **report), repeat)
            finally:
                sys.stdout = real
            print(f"  {label}: {ms:.4f} ms")
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.JSONRenderer()],
        logger_factory=structlog.ReturnLoggerFactory(),
    )
    log = structlog.get_logger("litellm_budget")
    ms = timed(lambda: log.info("request_trimmed", **report), repeat)
    print(f"  JSON lines, structlog configured (docs/reports.md): {ms:.4f} ms")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repetitions (a smoke run)")
    parser.add_argument("--only", choices=["synthetic", "gate", "sessions", "logging"], help="run one section")
    parser.add_argument(
        "--set",
        dest="assignments",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting over the defaults (repeat it), as the replay's --set: --set digest_share=0.10",
    )
    args = parser.parse_args()
    KNOBS.update(knobs_from(args.assignments))
    # Library logging as an operator would run it: JSON lines (rendered, then discarded).
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.JSONRenderer()],
        logger_factory=structlog.ReturnLoggerFactory(),
    )
    budget = ContextBudget(**KNOBS)
    asyncio.run(_hook(budget, _kwargs(agent_request(4, 1000), LARGE, "x")))
    litellm.token_counter(model="gpt-4o", messages=agent_request(4, 1000))
    print(f"python {sys.version.split()[0]}, litellm {_version()}, model gpt-4o (o200k_base), medians in ms")
    if KNOBS:
        print(f"settings over the defaults: {KNOBS}")
    if args.only in (None, "synthetic"):
        synthetic(budget, args.quick)
    if args.only in (None, "gate"):
        gate(args.quick)
    if args.only in (None, "sessions"):
        sessions(args.quick)
    if args.only in (None, "logging"):
        rendering(args.quick)
    return 0


def knobs_from(assignments: Sequence[str]) -> dict[str, Any]:
    """The settings ``--set`` changes from the defaults, as ``ContextBudget`` takes them."""
    chosen, defaults = settings_from(None, assignments), BudgetSettings()
    return {
        field.name: getattr(chosen, field.name)
        for field in dataclasses.fields(chosen)
        if getattr(chosen, field.name) != getattr(defaults, field.name)
    }


def _version() -> str:
    from importlib.metadata import version

    return version("litellm")


if __name__ == "__main__":
    raise SystemExit(main())
