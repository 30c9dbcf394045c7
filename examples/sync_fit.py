"""Sync `litellm.completion` has no hook that can change a request: call `fit()` yourself.

Run: python examples/sync_fit.py   (offline: answered by `mock_response`)
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

from litellm_budget import fit


def complete(model: str, messages: list[dict[str, object]], **kwargs: object) -> litellm.ModelResponse:
    """`litellm.completion`, with the request fitted to the model's window first."""
    fitted = fit(messages, model=model, max_tokens=kwargs.pop("max_tokens", None))  # type: ignore[arg-type]
    if fitted.max_tokens is not None:
        kwargs["max_tokens"] = fitted.max_tokens
    print(f"{fitted.report.action}: {fitted.report.tokens_before} -> {fitted.report.tokens_after} tokens")
    return litellm.completion(model=model, messages=fitted.messages, **kwargs)


if __name__ == "__main__":
    chat: list[dict[str, object]] = [{"role": "system", "content": "You are helpful."}]
    for turn in range(200):
        chat += [
            {"role": "user", "content": f"Tell me about topic {turn}."},
            {"role": "assistant", "content": "Details. " * 400},
        ]
    chat.append({"role": "user", "content": "Thanks, and finally?"})
    response = complete("gpt-4o-mini", chat, max_tokens=1000, mock_response="You're welcome.")
    print(response.choices[0].message.content)
