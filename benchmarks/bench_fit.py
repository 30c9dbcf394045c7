"""Overhead of the plugin's hook against litellm.token_counter and trim_messages, in one run.

Run: .venv/bin/python benchmarks/bench_fit.py   (prints a table; numbers go to BENCHMARKS.md)

Every request is JSON round-tripped before it is timed, as the proxy hands the plugin freshly
parsed strings: a memo keyed by string must still hash every character it looks up.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
import structlog
from litellm.types.utils import CallTypes
from litellm.utils import trim_messages

from litellm_budget import ContextBudget
from litellm_budget.core import tokens as _tokens
from litellm_budget.core.fit import fit_request

SIZES = [(10, 50_000), (100, 200_000), (500, 1_000_000)]
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()


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
            kwargs = _kwargs(fresh(request), window, f"c{attempt}")
            started = time.perf_counter()
            await _hook(budget, kwargs)
            results.append((time.perf_counter() - started) * 1000)
        return results

    return statistics.median(asyncio.run(timed_hooks()))


async def _hook(budget: ContextBudget, kwargs: dict[str, Any]) -> None:
    await budget.async_pre_call_deployment_hook(kwargs, CallTypes.acompletion)


def _forget_counts() -> None:
    # New counters with empty memos; the encodings stay loaded (they are cached apart).
    _tokens.reset_counters()


def fit_ms(request: list[dict[str, Any]], window: int, repeat: int) -> float:
    """``fit()`` itself, warm: the request minus its newest step was fitted before."""
    results = []
    for _ in range(repeat):
        _forget_counts()
        fit_request(fresh(request[:-2]), model="gpt-4o", window=window)
        messages = fresh(request)
        started = time.perf_counter()
        fit_request(messages, model="gpt-4o", window=window)
        results.append((time.perf_counter() - started) * 1000)
    return statistics.median(results)


def _kwargs(messages: list[dict[str, Any]], window: int, call_id: str) -> dict[str, Any]:
    return {
        "model": "gpt-4o",
        "messages": messages,
        "model_info": {"max_input_tokens": window},
        "litellm_call_id": call_id,
    }


def main() -> int:
    # Library logging as an operator would run it: JSON lines (rendered, then discarded).
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.JSONRenderer()],
        logger_factory=structlog.ReturnLoggerFactory(),
    )
    budget = ContextBudget()
    asyncio.run(_hook(budget, _kwargs(agent_request(4, 1000), 128_000, "x")))
    print(f"python {sys.version.split()[0]}, litellm 1.108.5, model gpt-4o (o200k_base), medians in ms")
    header = (
        f"{'messages':>8} {'chars':>9} {'tokens':>7} | {'token_counter':>13} {'trim_messages':>13} | "
        f"{'fit warm':>8} {'hook cold':>9} {'hook warm':>9} {'hook trims':>10} | "
        f"{'fit/tc':>6} {'warm/tc':>7} {'trims/tc':>8} {'trim_msgs/tc':>12} | {'cold ms/100k chars':>18}"
    )
    print(header)
    print("-" * len(header))
    for messages, chars in SIZES:
        request = agent_request(messages, chars)
        tokens = litellm.token_counter(model="gpt-4o", messages=request)
        repeat = 21 if chars <= 200_000 else 5
        counter_ms = timed(lambda r=request: litellm.token_counter(model="gpt-4o", messages=fresh(r)), repeat)
        counter_ms -= timed(lambda r=request: fresh(r), repeat)  # the JSON round trip is not the counter's cost
        trims = 1 if chars > 200_000 else 3
        trim_ms = timed(
            lambda r=request, t=tokens: trim_messages(copy.deepcopy(r), model="gpt-4o", max_tokens=t // 2), trims
        )
        fit_warm = fit_ms(request, 16_000, repeat)
        cold = hook_ms(budget, request, 1_000_000, warm=False, repeat=repeat)
        warm = hook_ms(budget, request, 1_000_000, warm=True, repeat=repeat)
        warm_trim = hook_ms(budget, request, 16_000, warm=True, repeat=repeat)
        print(
            f"{messages:>8} {chars:>9,} {tokens:>7,} | {counter_ms:>13.2f} {trim_ms:>13.1f} | "
            f"{fit_warm:>8.2f} {cold:>9.2f} {warm:>9.2f} {warm_trim:>10.2f} | "
            f"{fit_warm / counter_ms:>6.3f} {warm / counter_ms:>7.3f} {warm_trim / counter_ms:>8.3f} "
            f"{trim_ms / counter_ms:>12.1f} | {cold / (chars / 100_000):>18.2f}"
        )
    print("\nfit warm / hook trims: a 16k window, so the policy runs; hook cold / warm: the request fits.")
    print("warm = all but the newest step seen before (a growing session); ratios are against token_counter.")
    _longest_session(budget)
    return 0


def _longest_session(budget: ContextBudget) -> None:
    """The largest real session (in characters), its last request, a warm trimming hook, side by side."""
    from litellm_budget.tools.sessions import load_conversation, requests_of, session_files

    sessions = Path(__file__).resolve().parents[2] / "shared" / "sessions"
    if not sessions.is_dir():
        print(f"\n(no {sessions}: the real-session row is skipped)")
        return
    conversations = [load_conversation(path) for path in session_files([sessions])]
    longest = max(conversations, key=lambda c: len(json.dumps(c.messages)))
    request = list(requests_of(longest.messages))[-1]
    chars = len(json.dumps(request))
    repeat = 21
    counter_ms = timed(lambda: litellm.token_counter(model="gpt-4o", messages=fresh(request)), repeat)
    counter_ms -= timed(lambda: fresh(request), repeat)
    # Side by side, alternating, so a busy machine slows both alike.
    ratios = []
    for _ in range(5):
        tc = timed(lambda: litellm.token_counter(model="gpt-4o", messages=fresh(request)), 5) - timed(
            lambda: fresh(request), 5
        )
        ratios.append(hook_ms(budget, request, 16_000, warm=True, repeat=5) / tc)
    print(
        f"\nlongest real session {longest.name}: {len(request)} messages, {chars:,} JSON chars; "
        f"token_counter {counter_ms:.2f} ms; warm trimming hook (16k) / token_counter: "
        f"median {statistics.median(ratios):.3f}x (runs: {', '.join(f'{r:.3f}' for r in ratios)})"
    )


if __name__ == "__main__":
    raise SystemExit(main())
