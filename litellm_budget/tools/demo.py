"""The demo: the real LiteLLM proxy on loopback, a built-in agent session replayed through it."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

import httpx
import yaml

from .demo_session import demo_session
from .proxy_runner import running_proxy
from .replay import Row, format_rows
from .sessions import requests_of


def run_demo(config: Path, *, model: str, steps: int, out: TextIO) -> int:
    """Start the proxy with ``config``, send every request of the built-in session, print a row each."""
    key = str((yaml.safe_load(config.read_text()) or {}).get("general_settings", {}).get("master_key", ""))
    session = demo_session(steps)
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "proxy.log"
        out.write(f"starting the LiteLLM proxy with {config} (log: {log}) ...\n")
        out.flush()
        started = time.perf_counter()
        with (
            running_proxy(config, log) as base_url,
            httpx.Client(base_url=base_url, timeout=60, trust_env=False) as client,
        ):
            out.write(
                f"proxy ready on {base_url} after {time.perf_counter() - started:.1f}s; "
                f"replaying {steps} agent steps\n\n"
            )
            rows = [
                _send(client, key, model, number, request) for number, request in enumerate(requests_of(session), 1)
            ]
        out.write(format_rows(rows) + "\n")
        trimmed = sum(row.action == "trimmed" for row in rows)
        out.write(f"\n{len(rows)} requests, {trimmed} trimmed, all answered; proxy stopped.\n")
    return 0


def _send(client: httpx.Client, key: str, model: str, number: int, request: list[Any]) -> Row:
    started = time.perf_counter()
    response = client.post(
        "/v1/chat/completions", json={"model": model, "messages": request}, headers={"Authorization": f"Bearer {key}"}
    )
    response.raise_for_status()
    header = response.headers.get
    return Row(
        session="demo",
        request=number,
        messages=len(request),
        tokens_before=int(header("x-litellm-budget-tokens-before", 0)),
        tokens_after=int(header("x-litellm-budget-tokens-after", 0)),
        action=header("x-litellm-budget-action", "?"),
        elided=int(header("x-litellm-budget-elided", 0)),
        dropped=int(header("x-litellm-budget-dropped", 0)),
        shared=0,
        new=0,
        overflow=False,
        invalid=False,
        ms=(time.perf_counter() - started) * 1000,
    )
