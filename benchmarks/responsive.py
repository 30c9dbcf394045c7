"""Responsiveness: small requests' latency through the real proxy while cold long histories flow.

Run: .venv/bin/python benchmarks/responsive.py [--small 400] [--rounds 2] [--tree PATH ...]

A fake OpenAI-compatible upstream answers at once. Each round starts one proxy per variant, in
turn: the plugin off, the plugin on (this tree), and the plugin on from each ``--tree`` (another
checkout, put first on the proxy's ``PYTHONPATH``: the commit before a change). In each, 8 clients
send small chat requests (6 messages, about 2k characters) while 2 clients send long histories of
about 200k characters, each new (no count of it is remembered), that fit a 128k window but are over
what the size gate can pass uncounted: the plugin counts them in full. Prints p50 and p99 of the
small requests per variant, and p99 against the plugin off.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from load_proxy import KEY, start_upstream, write_config

from litellm_budget.tools.demo.proxy import running_proxy

WINDOW = 128_000
SMALL_CLIENTS, LONG_CLIENTS = 8, 2
WORDS = "alpha beta gamma delta epsilon value result config parser handler buffer window index cache".split()


def small_request(number: int) -> list[dict[str, Any]]:
    turns = [{"role": "system", "content": "You are a helpful assistant."}]
    for turn in range(2):
        turns.append({"role": "user", "content": f"question {number}.{turn}: " + "tell me more " * 40})
        turns.append({"role": "assistant", "content": "an answer " * 40})
    return [*turns, {"role": "user", "content": f"and then {number}?"}]


def long_request(number: int, chars: int = 200_000) -> list[dict[str, Any]]:
    """An agent-like history of about ``chars`` characters, different for every ``number``."""
    rng = random.Random(number)  # noqa: S311 - reproducible text, not a secret
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    messages.append({"role": "user", "content": f"task {number}: fix the failing test"})
    size = 0
    while size < chars:
        output = " ".join(rng.choice(WORDS) + str(rng.randint(0, 999)) for _ in range(900))
        messages.append({"role": "assistant", "content": f"step {len(messages)}: looking further"})
        messages.append({"role": "user", "content": output})
        size += len(output) + 40
    return [*messages, {"role": "user", "content": "what now?"}]


async def drive(base_url: str, small_count: int) -> list[float]:
    """Small requests' latencies (ms) while long ones flow; the first 10% are a warm-up, not kept."""
    latencies: list[float] = []
    done = asyncio.Event()
    counter = iter(range(10**9))
    headers = {"Authorization": f"Bearer {KEY}"}
    limits = httpx.Limits(max_connections=SMALL_CLIENTS + LONG_CLIENTS)
    async with httpx.AsyncClient(base_url=base_url, timeout=300, limits=limits, trust_env=False) as client:

        async def send(messages: list[dict[str, Any]]) -> float:
            started = time.perf_counter()
            response = await client.post(
                "/v1/chat/completions", json={"model": "agent", "messages": messages}, headers=headers
            )
            response.raise_for_status()
            return (time.perf_counter() - started) * 1000

        async def small_client() -> None:
            while len(latencies) < small_count:
                latencies.append(await send(small_request(next(counter))))
            done.set()

        async def long_client() -> None:
            while not done.is_set():
                await send(long_request(next(counter)))

        await asyncio.gather(
            *(small_client() for _ in range(SMALL_CLIENTS)), *(long_client() for _ in range(LONG_CLIENTS))
        )
    return latencies[len(latencies) // 10 :]


def measure(name: str, upstream: str, folder: Path, small: int, *, plugin: bool, tree: str | None) -> list[float]:
    config = write_config(folder, upstream, plugin=plugin, window=WINDOW)
    env = {"PYTHONPATH": tree} if tree else None
    with running_proxy(config, folder / f"{name}.log", extra_env=env) as base_url:
        return asyncio.run(drive(base_url, small))


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=400, help="small requests per variant and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tree", action="append", default=[], help="another checkout's root, run as a variant")
    args = parser.parse_args()
    variants = [("off", False, None), ("on", True, None), *((f"on@{Path(t).name}", True, t) for t in args.tree)]
    upstream_process, upstream = start_upstream()
    results: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in variants}
    try:
        with tempfile.TemporaryDirectory() as folder:
            for _ in range(args.rounds):
                for name, plugin, tree in variants:
                    latencies = measure(name, upstream, Path(folder), args.small, plugin=plugin, tree=tree)
                    results[name].append((statistics.median(latencies), p99(latencies)))
    finally:
        upstream_process.terminate()
    print(f"small requests' latency (ms) at a {WINDOW:,}-token window, {LONG_CLIENTS} clients sending ~200k-char")
    print(f"histories beside {SMALL_CLIENTS} sending small ones; per round: p50 / p99, then p99 over the plugin off")
    for name, _, _ in variants:
        rounds = results[name]
        ratios = [on[1] / off[1] for on, off in zip(rounds, results["off"], strict=True)]
        cells = "; ".join(f"{p50:.1f} / {q99:.1f}" for p50, q99 in rounds)
        print(f"  {name:<14} {cells}   p99 / off: {', '.join(f'{r:.2f}' for r in ratios)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
