"""
Prompt processing on a real engine: agent sessions replayed, request by request, to a llama.cpp
server (llama-cpp-python 0.3.36, the tiny Llama 3 model the tests make, a template that keeps tool
results) in three arms, each on a fresh server:

- ``auto``: through LiteLLM's Router with the plugin, the deployment's window the server's;
- ``auto_learned``: the same with the deployment configured at twice the server's window, so the
  plugin learns the served one from the server's first refusal (and refits that request);
- ``trim_messages``: LiteLLM's ``trim_messages`` to the same window, then sent;
- ``none``: sent as they are; the server refuses what is over its ``--n_ctx``.

Each request asks for one token, so a request's time is its prompt processing: the seconds are the
answered requests' round trips on loopback, and the server's own ``prompt eval time`` (which
under-counts: near 0 on a cold start). From the server's ``prefix-match hit`` lines, the tokens it
evaluated and the share of each prompt its KV cache served. Needs ``.ci/llama``.

Run from a clone: LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python benchmarks/llama_prefill.py
[SESSION.json ...] [--window 8192] (default: examples/sessions). One row per arm; rerun for the spread.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the clone: tests.support makes the model

import litellm
import structlog

from litellm_budget import ContextBudget
from litellm_budget.tools.sessions import load_conversation, requests_of
from tests.support.llama_model import tiny_model, vocab_file
from tests.support.llama_server import llama_available, llama_server

REPO = Path(__file__).resolve().parents[1]
PREFIX_HIT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms")
REFUSED = '"POST /v1/chat/completions HTTP/1.1" 400'
MODEL = "openai/tiny-llama"


def sessions_of(paths: Sequence[str]) -> list[list[dict[str, Any]]]:
    """The sessions named, or every session of a folder named."""
    files: list[Path] = []
    for name in paths or [str(REPO / "examples" / "sessions")]:
        path = Path(name)
        files += sorted(path.glob("*.json")) if path.is_dir() else [path]
    return [load_conversation(path).messages for path in files]


async def run_arm(arm: str, sessions: list[list[dict[str, Any]]], window: int, folder: Path) -> dict[str, Any]:
    """Every request of every session through one arm, on a fresh server; the server's figures."""
    vocab = vocab_file(download=False)
    if vocab is None:
        sys.exit("no Llama 3 vocabulary: run .ci/llama first")
    log = folder / f"{arm}.log"
    log.unlink(missing_ok=True)  # the server appends: one run a file
    answered = failed = 0
    seconds = 0.0
    with llama_server(tiny_model(vocab, every_role=True), window, log_path=log) as base_url:
        send = _sender(arm, base_url, window)
        for messages in sessions:
            for request in requests_of(messages):
                sent = time.monotonic()
                try:
                    await send([dict(message) for message in request])
                except litellm.BadRequestError:  # the server's refusal, over its window
                    failed += 1
                else:
                    answered += 1
                    seconds += time.monotonic() - sent
    text = log.read_text(errors="replace")
    hits = [(int(hit), int(rest)) for hit, rest in PREFIX_HIT.findall(text)]
    evaluated, cached = sum(rest for _, rest in hits), sum(hit for hit, _ in hits)
    prompt_eval = sum(float(ms) for ms in PROMPT_EVAL.findall(text)) / 1000
    return {
        "arm": arm,
        "answered": answered,
        "refused": failed,
        "server_refusals": text.count(REFUSED),
        "answered_seconds": seconds,
        "prompt_eval_seconds": prompt_eval,
        "evaluated_tokens": evaluated,
        "kv_share": cached / (cached + evaluated) if cached + evaluated else 0.0,
    }


def _sender(arm: str, base_url: str, window: int) -> Callable[[list[dict[str, Any]]], Any]:
    params = {"model": MODEL, "api_base": base_url, "api_key": "sk-local", "max_tokens": 1, "temperature": 0}
    if arm in {"auto", "auto_learned"}:
        configured = window * 2 if arm == "auto_learned" else window
        model_info = {"id": f"{arm}-local", "max_input_tokens": configured}
        deployment = {"model_name": "local", "litellm_params": params, "model_info": model_info}
        refit = [{"local": [{"model": "local", "litellm_budget_refit": "local"}]}]
        router = litellm.Router(model_list=[deployment], context_window_fallbacks=refit)
        litellm.callbacks = [ContextBudget(router=router)]
        return lambda messages: router.acompletion(model="local", messages=messages)
    litellm.callbacks = []
    if arm == "trim_messages":
        return lambda messages: litellm.acompletion(
            messages=litellm.utils.trim_messages(messages, model=MODEL, max_tokens=window), **params
        )
    return lambda messages: litellm.acompletion(messages=messages, **params)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sessions", nargs="*", help="session files or folders (default: examples/sessions)")
    parser.add_argument("--window", type=int, default=8192, help="the server's --n_ctx and the deployment's window")
    parser.add_argument("--arms", default="auto,auto_learned,trim_messages,none")
    parser.add_argument("--out", type=Path, default=Path("bench-out") / "llama")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))  # the events: quiet
    if not llama_available():
        sys.exit("no llama.cpp server: run .ci/llama first")
    args.out.mkdir(parents=True, exist_ok=True)
    sessions = sessions_of(args.sessions)
    requests = sum(len(list(requests_of(session))) for session in sessions)
    print(f"{len(sessions)} sessions, {requests} requests, --n_ctx {args.window}")
    rows = [await run_arm(arm, sessions, args.window, args.out) for arm in args.arms.split(",")]
    print("| arm | answered | refused | answered in (s) | prompt eval (s) | tokens evaluated | KV-cache share |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['arm']} | {r['answered']} | {r['refused']} ({r['server_refusals']} by the server) | "
            f"{r['answered_seconds']:.1f} | {r['prompt_eval_seconds']:.1f} | {r['evaluated_tokens']} | "
            f"{r['kv_share']:.2f} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
