"""
The README's SDK quick start, as a new user runs it after ``pip install`` of the wheel alone.

Run: python sdk_quickstart.py   (offline: every call is answered by ``mock_response``)

It registers the plugin, then makes a plain and a streamed ``litellm.acompletion``, a
``litellm.Router.acompletion`` whose small deployment hands the request to a bigger one through
``context_window_fallbacks``, and a sync ``fit()``. Each must be answered and each must log its
report; afterwards LiteLLM's proxy server module must not be loaded (an SDK install has no proxy
extras, and the plugin must never need them). Exits non-zero, saying what failed, otherwise.
"""

from __future__ import annotations

import asyncio
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
from structlog.testing import capture_logs

from litellm_budget import ContextBudget, fit

#: The structlog events that carry a report.
REPORT_EVENTS = ("request_passed_through", "request_trimmed", "request_deferred", "request_rejected")


def agent_history(steps: int) -> list[dict[str, object]]:
    """A coding agent's history: each step a bash call and a long test log."""
    history: list[dict[str, object]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Make the test suite pass."},
    ]
    for step in range(steps):
        function = {"name": "bash", "arguments": '{"cmd": "pytest"}'}
        call = {"id": f"call_{step}", "type": "function", "function": function}
        history += [
            {"role": "assistant", "content": f"Step {step}: running the tests.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": f"test_{step} failed at line {step}\n" * 200},
        ]
    return history


def router() -> litellm.Router:
    """Two deployments of different windows; what cannot fit the small one goes to the big one."""
    return litellm.Router(
        model_list=[
            {
                "model_name": "small",
                "litellm_params": {"model": "openai/gpt-4o-mini", "mock_response": "small model here"},
                "model_info": {"max_input_tokens": 4000},
            },
            {
                "model_name": "big",
                "litellm_params": {"model": "openai/gpt-4o", "mock_response": "big model here"},
                "model_info": {"max_input_tokens": 100_000},
            },
        ],
        context_window_fallbacks=[{"small": ["big"]}],
    )


def check(ok: bool, what: str) -> None:
    if not ok:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)


async def main() -> None:
    history = agent_history(40)  # about 12k tokens
    router_ = router()
    litellm.callbacks = [ContextBudget(router=router_)]
    answers = []
    with capture_logs() as logs:
        plain = await litellm.acompletion(model="openai/gpt-4o", messages=history, mock_response="plain answer")
        answers.append(plain.choices[0].message.content)
        stream = await litellm.acompletion(
            model="openai/gpt-4o", messages=history, mock_response="streamed answer", stream=True
        )
        answers.append("".join([chunk.choices[0].delta.content or "" async for chunk in stream]))
        routed = await router_.acompletion(model="small", messages=history)
        answers.append(routed.choices[0].message.content)
        fitted = fit(history, model="gpt-4o-mini", window=4000)
    reports = [log for log in logs if log["event"] in REPORT_EVENTS]
    check(answers == ["plain answer", "streamed answer", "big model here"], f"answers {answers}")
    events = [log["event"] for log in reports]
    # plain and streamed pass (128k window); the Router's small deployment defers to the big one, which passes.
    check(
        events == ["request_passed_through", "request_passed_through", "request_deferred", "request_passed_through"],
        f"report events {events}",
    )
    check(fitted.report.action == "trimmed" and fitted.report.tokens_after <= 4000, f"fit() {fitted.report.action}")
    check("litellm.proxy.proxy_server" not in sys.modules, "the SDK run loaded litellm.proxy.proxy_server")
    failed = [log for log in logs if log["event"] == "hook_failed"]
    check(not failed, f"hook_failed events {failed}")
    version = getattr(litellm, "__version__", None) or _installed_version()
    print(f"sdk quick start: litellm {version}: {len(answers)} answers, {len(reports)} reports, fit() trimmed: ok")


def _installed_version() -> str:
    from importlib.metadata import version

    return version("litellm")


if __name__ == "__main__":
    asyncio.run(main())
