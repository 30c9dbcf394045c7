"""Load: the real proxy with the plugin on and off, agent-sized requests at concurrency 50.

Run: .venv/bin/python benchmarks/load_proxy.py [--requests 2000] [--concurrency 50]

A fake OpenAI-compatible upstream runs in its own process on 127.0.0.1; each proxy gets the same
requests (real agent sessions from ../shared/sessions when present, else the built-in one) with
a 16k window, so the plugin trims most of them. Prints errors, p50/p99 latency and their ratios,
and the proxy's resident memory along the run (every cache is bounded, so it must stay flat).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
import yaml

from litellm_budget.tools.demo_session import demo_session
from litellm_budget.tools.proxy_runner import running_proxy
from litellm_budget.tools.sessions import requests_of

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = ROOT.parent / "shared" / "sessions"
KEY = "sk-load-test-0000000000000000000000"


def agent_requests(count: int) -> list[list[dict[str, Any]]]:
    """``count`` requests drawn (with a fixed seed) from every request of the sessions."""
    pool: list[list[dict[str, Any]]] = []
    files = sorted(SESSIONS.glob("*.json")) if SESSIONS.is_dir() else []
    for path in files:
        pool += list(requests_of(json.loads(path.read_text())["messages"]))
    if not pool:
        pool = list(requests_of(demo_session(60)))
    rng = random.Random(42)  # noqa: S311 - a reproducible sample
    return [rng.choice(pool) for _ in range(count)]


def start_upstream() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(  # noqa: S603 - our own script
        [sys.executable, str(ROOT / "tests" / "support" / "fake_upstream.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline() if process.stdout else ""
    return process, line.strip().rsplit(" ", 1)[-1]


def write_config(folder: Path, upstream: str, *, plugin: bool) -> Path:
    config = {
        "model_list": [
            {
                "model_name": "agent",
                "litellm_params": {"model": "openai/gpt-4o", "api_base": upstream, "api_key": "sk-up"},
                "model_info": {"max_input_tokens": 16_000},
            }
        ],
        "litellm_settings": {"callbacks": ["litellm_budget.handler"] if plugin else []},
        "general_settings": {"master_key": KEY},
    }
    path = folder / ("on.yaml" if plugin else "off.yaml")
    path.write_text(yaml.safe_dump(config))
    return path


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and its children, from /proc."""
    total = 0
    for child in [pid, *_children(pid)]:
        status = Path(f"/proc/{child}/status")
        if status.exists():
            for line in status.read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def proxy_pid(port: int) -> int | None:
    """The PID listening on ``port`` (the proxy we started), read from /proc/net/tcp."""
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":
            inode = fields[9]
    if inode is None:
        return None
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if any(os.readlink(fd).endswith(f"[{inode}]") for fd in (proc / "fd").iterdir()):
                    return int(proc.name)
            except OSError:
                continue
    return None


async def drive(
    base_url: str, requests: list[list[dict[str, Any]]], concurrency: int
) -> tuple[list[float], int, list[float]]:
    """Send every request with at most ``concurrency`` in flight; latencies (ms), errors, RSS samples."""
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    errors = 0
    memory: list[float] = []
    pid = proxy_pid(int(base_url.rsplit(":", 1)[-1]))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=120, limits=limits, trust_env=False) as client:

        async def one(number: int, messages: list[dict[str, Any]]) -> None:
            nonlocal errors
            async with gate:
                started = time.perf_counter()
                response = await client.post(
                    "/v1/chat/completions",
                    json={"model": "agent", "messages": messages},
                    headers={"Authorization": f"Bearer {KEY}"},
                )
                latencies.append((time.perf_counter() - started) * 1000)
                errors += response.status_code != 200
                if pid and number % 250 == 0:
                    memory.append(rss_mib(pid))

        await asyncio.gather(*(one(n, m) for n, m in enumerate(requests)))
        if pid:
            memory.append(rss_mib(pid))
    return latencies, errors, memory


def run(config: Path, requests: list[list[dict[str, Any]]], concurrency: int, log: Path) -> dict[str, Any]:
    with running_proxy(config, log) as base_url:
        asyncio.run(drive(base_url, requests[:100], concurrency))  # warm-up, not measured
        started = time.perf_counter()
        latencies, errors, memory = asyncio.run(drive(base_url, requests, concurrency))
        seconds = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "errors": errors,
        "p50": statistics.median(ordered),
        "p99": ordered[int(len(ordered) * 0.99) - 1],
        "throughput": len(requests) / seconds,
        "memory": memory,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    args = parser.parse_args()
    requests = agent_requests(args.requests)
    chars = statistics.mean(len(json.dumps(r)) for r in requests)
    upstream, base = start_upstream()
    try:
        with tempfile.TemporaryDirectory() as folder:
            results = {
                name: run(
                    write_config(Path(folder), base, plugin=name == "on"),
                    requests,
                    args.concurrency,
                    Path(folder) / f"{name}.log",
                )
                for name in ("off", "on")
            }
    finally:
        upstream.terminate()
        upstream.wait(10)
    messages = statistics.mean(map(len, requests))
    sizes = f"mean {chars:,.0f} JSON chars, {messages:.0f} messages"
    print(f"{args.requests} requests ({sizes}), concurrency {args.concurrency}, 16k window")
    print(f"{'plugin':>6} {'errors':>6} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>7}  proxy RSS MiB along the run")
    for name, result in results.items():
        memory = " ".join(f"{m:.0f}" for m in result["memory"])
        latency = f"{result['p50']:>8.1f} {result['p99']:>8.1f}"
        print(f"{name:>6} {result['errors']:>6} {latency} {result['throughput']:>7.1f}  {memory}")
    on, off = results["on"], results["off"]
    print(f"\nadded latency: p50 x{on['p50'] / off['p50']:.2f}, p99 x{on['p99'] / off['p99']:.2f} (on / off)")
    return 0 if on["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
