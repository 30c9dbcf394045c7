"""What cache truth and the cache hints cost, against one litellm.token_counter call of the same request.

Run: .venv/bin/python benchmarks/bench_cache.py [SESSION.json]   (numbers go to BENCHMARKS.md §7)

On the request's path: what the hooks do for cache truth (the fit notes the conversation key it
read on the call's record) and, when their settings are on, the hints: ``cache_breakpoints`` on
a request to a Claude deployment, passed through, or trimmed to 16k (where the plugin's words
are looked for); ``prompt_cache_key`` on one to OpenAI, with and without the key on the record.
Off it: the success callback's cache report (a hash and a size of every message sent, against
the conversation's previous request). The request is the largest shared session's last, JSON
round-tripped as the proxy hands it over, after the request before it.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
import structlog

from litellm_budget.adapter.hooks.cache_hints import hint_cache
from litellm_budget.adapter.records.calls import Calls
from litellm_budget.adapter.records.conversations import conversation_key
from litellm_budget.adapter.report.cache_observed import PromptHistory, observe_success
from litellm_budget.adapter.request.shapes import CHAT_SHAPE
from litellm_budget.adapter.request.targets import Target
from litellm_budget.core._fit import fit_request
from litellm_budget.core._fit_input import FitRequest
from litellm_budget.core._report import BudgetReport
from litellm_budget.core.budget._settings import BudgetSettings
from litellm_budget.core.formats._chat import CHAT
from litellm_budget.tools.sessions import load_conversation, requests_of

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "sessions" / "mini__django__django-14351.json"
RUNS = 41


def median_ms(work: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def success_kwargs(messages: list[dict[str, Any]], call_id: str, prompt: int) -> dict[str, Any]:
    usage = {"prompt_tokens": prompt, "prompt_tokens_details": {"cached_tokens": prompt // 2}}
    payload = {"call_type": "acompletion", "model": "openai/gpt-4o", "model_group": "g", "model_id": "d"}
    payload["metadata"] = {"usage_object": usage, "spend_logs_metadata": {}}
    return {"litellm_call_id": call_id, "messages": messages, "standard_logging_object": payload}


def main() -> None:
    structlog.configure(logger_factory=structlog.ReturnLoggerFactory())  # rendering is the application's
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    *_, before, last = requests_of(load_conversation(path).messages)
    before, last = json.loads(json.dumps(before)), json.loads(json.dumps(last))
    chars = len(json.dumps(last))
    counted = median_ms(lambda: litellm.token_counter(model="gpt-4o", messages=last), 11)
    report = BudgetReport(model="openai/gpt-4o", policy="auto", action="passthrough", messages_before=len(last))
    calls, key = Calls(), conversation_key("openai/gpt-4o", CHAT, last)
    calls.serve("c", report)
    calls.note_conversation("c", key)
    hinted = BudgetSettings(cache_breakpoints=True, prompt_cache_key=True)
    claude = Target(model="anthropic/claude-sonnet-4-5", group="g", window=None, settings=hinted)
    gpt = Target(model="openai/gpt-4o", group="g", window=None, settings=hinted)
    keyless, trimmed = Calls(), Calls()
    keyless.serve("c", report)
    fitted = fit_request(FitRequest(last, model="gpt-4o", window=16_000, settings=BudgetSettings()))
    trimmed.serve("c", fitted.report)

    rows = {
        "note_conversation (every fitted request)": median_ms(lambda: calls.note_conversation("c", key)),
        "cache_breakpoints, chat to Claude": median_ms(
            lambda: hint_cache({"messages": list(last)}, CHAT_SHAPE, claude, calls.get("c"))
        ),
        "cache_breakpoints, trimmed to 16k": median_ms(
            lambda: hint_cache({"messages": list(fitted.messages)}, CHAT_SHAPE, claude, trimmed.get("c"))
        ),
        "prompt_cache_key, key on the record": median_ms(
            lambda: hint_cache({"messages": list(last)}, CHAT_SHAPE, gpt, calls.get("c"))
        ),
        "prompt_cache_key, key read here": median_ms(
            lambda: hint_cache({"messages": list(last)}, CHAT_SHAPE, gpt, keyless.get("c"))
        ),
    }
    history, settings = PromptHistory(), BudgetSettings()

    def observe() -> None:
        observe_success(history, calls, success_kwargs(before, "c", 50_000), None, settings)
        observe_success(history, calls, success_kwargs(last, "c", 51_000), None, settings)

    off_path = median_ms(observe) / 2
    print(f"{path.stem}: its last request, {len(last)} messages, {chars:,} JSON characters")
    print(f"token_counter: {counted:.2f} ms")
    print(f"{'on the request path':45} {'ms':>8} {'x token_counter':>16}")
    for name, ms in rows.items():
        print(f"{name:45} {ms:8.4f} {ms / counted:16.4f}")
    print(f"{'off it: the cache report after the response':45} {off_path:8.4f} {off_path / counted:16.4f}")


if __name__ == "__main__":
    main()
