"""Async SDK: register the plugin once and every `litellm.acompletion` fits its model's window.

Run: python examples/sdk_async.py   (offline: the call is answered by `mock_response`)
"""

from __future__ import annotations

import asyncio
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
import structlog

from litellm_budget import ContextBudget


def agent_history(steps: int) -> list[dict[str, object]]:
    """A coding agent's history: each step a bash call and a long test log."""
    history: list[dict[str, object]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Make the test suite pass."},
    ]
    for step in range(steps):
        call = {
            "id": f"call_{step}",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"cmd": "pytest"}'},
        }
        history += [
            {"role": "assistant", "content": f"Step {step}: running the tests.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": f"test_{step} failed at line {step}\n" * 400},
        ]
    return history


async def main() -> None:
    # The application owns logging: this prints one JSON line per request.
    structlog.configure(processors=[structlog.processors.add_log_level, structlog.processors.JSONRenderer()])
    litellm.callbacks = [ContextBudget(policy="auto")]
    response = await litellm.acompletion(
        model="openai/gpt-4o",  # 128k window, from LiteLLM's model map
        messages=agent_history(90),
        mock_response="All green.",  # no network: remove to call the real model
    )
    print(response.choices[0].message.content)


if __name__ == "__main__":
    asyncio.run(main())
