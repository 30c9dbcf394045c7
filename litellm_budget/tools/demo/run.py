"""The demo: the real LiteLLM proxy on loopback, a built-in agent session replayed through it."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, TextIO

import httpx
import yaml

from litellm_budget.tools.demo.agent import demo_session
from litellm_budget.tools.demo.proxy import running_proxy
from litellm_budget.tools.replay import Row, format_rows
from litellm_budget.tools.sessions import requests_of

#: How a LiteLLM config names an environment variable instead of a value.
ENV_PREFIX = "os.environ/"
LEGEND = (
    "elided and dropped count messages (x-litellm-budget-elided, x-litellm-budget-dropped), not units;\n"
    "why: how the edit differs from the request above, read from those counts (blank: the same counts).\n"
)
_ACTION_REASONS = MappingProxyType({"passthrough": "fits: sent untrimmed", "rejected": "rejected: does not fit"})


def run_demo(config: Path, *, model: str, steps: int, out: TextIO) -> int:
    """Start the proxy with ``config``, send every request of the built-in session, print a row each."""
    loaded = yaml.safe_load(config.read_text()) or {}
    check_model(loaded, model, config)
    key = master_key_of(loaded)
    requests = list(requests_of(demo_session(steps)))
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "proxy.log"
        out.write(f"starting the LiteLLM proxy with {config} (its log, removed when the demo ends: {log}) ...\n")
        out.flush()
        started = time.perf_counter()
        with (
            running_proxy(config, log) as base_url,
            httpx.Client(base_url=base_url, timeout=60, trust_env=False) as client,
        ):
            out.write(
                f"proxy ready on {base_url} after {time.perf_counter() - started:.1f}s; replaying {steps} agent "
                f"steps as {len(requests)} requests to {model} (one per assistant reply, each with the whole "
                "history before it)\n\n"
            )
            rows = [_send(client, key, model, number, request) for number, request in enumerate(requests, 1)]
        out.write(format_rows(rows, why=reasons(rows)) + "\n\n")
        out.write(LEGEND)
        trimmed = sum(row.action == "trimmed" for row in rows)
        out.write(f"\n{len(rows)} requests, {trimmed} trimmed, all answered; proxy stopped.\n")
    return 0


def master_key_of(config: dict[str, Any]) -> str:
    """The proxy's master key as the proxy reads it: ``os.environ/NAME`` means that variable."""
    key = str((config.get("general_settings") or {}).get("master_key") or "")
    return os.environ.get(key.removeprefix(ENV_PREFIX), "") if key.startswith(ENV_PREFIX) else key


def check_model(config: dict[str, Any], model: str, path: Path) -> None:
    """Refuse a ``--model`` the config has no ``model_name`` for before a proxy starts (a wildcard route takes any)."""
    names = [str(entry.get("model_name")) for entry in config.get("model_list") or [] if isinstance(entry, dict)]
    if names and model not in names and not any("*" in name for name in names):
        msg = f"--model {model!r} is not a model_name of {path}; its models: {', '.join(names)}"
        raise ValueError(msg)


def reasons(rows: Sequence[Row]) -> list[str]:
    """Why each row's edit differs from the row above, from its counts alone; blank when they are the same."""
    return [_reason(previous, row) for previous, row in zip([None, *rows], rows, strict=False)]


def _reason(previous: Row | None, row: Row) -> str:
    before = previous.action if previous else None
    if row.action != "trimmed":
        return "" if row.action == before else _ACTION_REASONS.get(row.action, row.action)
    if previous is None or before != "trimmed":
        done = [f"{count} {verb}" for count, verb in ((row.elided, "elided"), (row.dropped, "dropped")) if count]
        return f"over budget: {', '.join(done) or 'trimmed'}"
    return _change(previous, row)


def _change(previous: Row, row: Row) -> str:
    """Between two trimmed rows: a drop block that came, grew, shrank or went, else the elisions."""
    was, now, elided = previous.dropped, row.dropped, row.elided
    if now > was:
        return f"{'bigger' if was else 'new'} drop block: dropped {was} -> {now}"
    if now < was and now:
        return f"smaller drop block: dropped {was} -> {now}"
    if now < was:
        return f"drop released: eliding {elided} fits" if elided else "drop released"
    if elided != previous.elided:
        return f"{'more' if elided > previous.elided else 'fewer'} elided: {previous.elided} -> {elided}"
    return ""


def _send(client: httpx.Client, key: str, model: str, number: int, request: list[Any]) -> Row:
    started = time.perf_counter()
    response = client.post(
        "/v1/chat/completions", json={"model": model, "messages": request}, headers={"Authorization": f"Bearer {key}"}
    )
    if response.is_error:
        msg = f"the proxy answered request {number} to {model} with HTTP {response.status_code}: {_error_of(response)}"
        raise RuntimeError(msg)
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
        ms=(time.perf_counter() - started) * 1000,
    )


def _error_of(response: httpx.Response) -> str:
    """The first line of the error the proxy sent, short enough for one line of output."""
    try:
        error = response.json().get("error")
        text = str(error.get("message") if isinstance(error, dict) else error or response.text)
    except (ValueError, AttributeError):
        text = response.text
    line = (text.strip().splitlines() or ["(no body)"])[0]
    return line if len(line) <= 200 else line[:197] + "..."
