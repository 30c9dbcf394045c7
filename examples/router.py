"""A LiteLLM Router: each deployment's `model_info.max_input_tokens` is its window, and
`context_window_fallbacks` move what cannot fit the small model to the big one.

Run: python examples/router.py   (offline: deployments answer with `mock_response`)
"""

from __future__ import annotations

import asyncio
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
import structlog

from litellm_budget import ContextBudget

ROUTER = litellm.Router(
    model_list=[
        {
            "model_name": "small",
            "litellm_params": {"model": "openai/gpt-4o-mini", "mock_response": "small model here"},
            "model_info": {"max_input_tokens": 4000},
        },
        {
            "model_name": "large",
            "litellm_params": {"model": "openai/gpt-4o", "mock_response": "large model here"},
            "model_info": {"max_input_tokens": 100_000, "litellm_budget": {"policy": "plan"}},
        },
    ],
    context_window_fallbacks=[{"small": ["large"]}],
)


async def main() -> None:
    structlog.configure(processors=[structlog.processors.JSONRenderer()])
    litellm.callbacks = [ContextBudget()]
    chat = [{"role": "system", "content": "You are terse."}]
    for turn in range(30):
        chat += [
            {"role": "user", "content": f"Question {turn}? " * 40},
            {"role": "assistant", "content": "Answer. " * 200},
        ]
    chat.append({"role": "user", "content": "Summarise."})

    trimmed = await ROUTER.acompletion(model="small", messages=chat)
    print("long chat ->", trimmed.choices[0].message.content)

    huge_system = [{"role": "system", "content": "Rules. " * 6000}, {"role": "user", "content": "Hi"}]
    fallen_back = await ROUTER.acompletion(model="small", messages=huge_system)
    print("huge system prompt ->", fallen_back.choices[0].message.content)


if __name__ == "__main__":
    asyncio.run(main())
