"""Small builders used across the tests: OpenAI-format conversations, and the deployments they go to."""

from __future__ import annotations

import itertools
import json
from typing import Any

from litellm_budget.core.counting import counter_for

_ids = itertools.count()

# Each of these words is one token in both cl100k_base and o200k_base, after a space.
WORDS = ["the", "and", "of", "to", "in", "is", "it", "that", "for", "on", "with", "as"]


def text(tokens: int, seed: int = 0) -> str:
    """Exactly ``tokens`` tokens of words, varied by ``seed`` so texts differ."""
    return " ".join(WORDS[(seed + i * 5) % len(WORDS)] for i in range(tokens))


def system(content: str = "You are a careful agent.") -> dict[str, Any]:
    return {"role": "system", "content": content}


def user(content: str = "Please fix the bug.") -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: str | None = "Let me look.") -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def tool_step(
    output_tokens: int, *, thought: str = "Running a command.", seed: int = 0, command: str | None = None
) -> list[dict[str, Any]]:
    """
    One agent step: an assistant tool call and the tool's result of about ``output_tokens``.
    Each step runs its own command (``ls <its call id>``) unless ``command`` says which: steps
    with the same command repeat one call, and the earlier outputs are stale.
    """
    call_id = f"call_{next(_ids)}"
    arguments = json.dumps({"command": command if command is not None else f"ls {call_id}"})
    call = {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": arguments}}
    return [
        {"role": "assistant", "content": thought, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": text(output_tokens, seed)},
    ]


def agent_session(
    steps: int, output_tokens: int = 800, *, question: str = "Fix the failing test."
) -> list[dict[str, Any]]:
    """A system prompt, one task, then ``steps`` tool steps."""
    messages = [system(), user(question)]
    for step in range(steps):
        messages += tool_step(output_tokens, seed=step)
    return messages


def chat_session(turns: int, answer_tokens: int = 300) -> list[dict[str, Any]]:
    """A plain chat: ``turns`` user questions, each answered, ending on a question."""
    messages = [system()]
    for turn in range(turns):
        messages += [user(f"Question {turn}?"), assistant(text(answer_tokens, turn))]
    return [*messages, user("And the last question?")]


def tokens_of(messages: list[dict[str, Any]], model: str = "gpt-4o") -> int:
    """What fit() counts for ``messages``: every message plus the reply priming."""
    counter = counter_for(model)
    return sum(counter.count_message(m) for m in messages) + counter.count_tools(None)


#: Anthropic's ``compact_20260112`` edit, as a client asks for it in ``context_management``.
COMPACT_EDIT = "compact_20260112"
#: Another context edit, left as asked when the compaction is served.
CLEAR_TOOL_USES_EDIT = {"type": "clear_tool_uses_20250919"}


def compact_asked(trigger: int | None = None, **extra: Any) -> dict[str, Any]:
    """A client's compaction edit, with an ``input_tokens`` trigger when given."""
    edit: dict[str, Any] = {"type": COMPACT_EDIT, **extra}
    if trigger is not None:
        edit["trigger"] = {"type": "input_tokens", "value": trigger}
    return edit


def anthropic_history(steps: int = 12) -> list[dict[str, Any]]:
    """Anthropic messages of an agent's tool history: about 300 tokens a step."""
    from litellm_budget.core.formats import anthropic_from_chat as from_chat

    return from_chat(agent_session(steps, 300))[1]


def text_of(message: dict[str, Any]) -> str:
    """A message's texts, joined: a string content, or its text blocks."""
    content = message["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


def deployment_kwargs(messages: list[dict[str, Any]], window: int, call_id: str) -> dict[str, Any]:
    """What the deployment hook gets for ``messages`` (a copy, as from the wire) on a ``window``-token gpt-4o."""
    return {
        "model": "gpt-4o",
        "messages": json.loads(json.dumps(messages)),
        "model_info": {"max_input_tokens": window},
        "litellm_call_id": call_id,
        "metadata": {},
    }


def deployment(
    group: str,
    model: str,
    api_base: str | None = None,
    *,
    window: int | None = None,
    api_key: str | None = "k",
    budget: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    **model_info: Any,
) -> dict[str, Any]:
    """
    One ``model_list`` entry, as a proxy config or ``litellm.Router`` takes it: the model group
    ``group`` served by ``model`` at ``api_base`` with ``api_key`` (either left out when None), more
    ``litellm_params`` in ``params``; ``model_info`` holds ``max_input_tokens: window`` (when given),
    the plugin's per-deployment settings ``litellm_budget: budget`` (when given), then ``model_info``.
    """
    litellm_params: dict[str, Any] = {"model": model}
    if api_base is not None:
        litellm_params["api_base"] = api_base
    if api_key is not None:
        litellm_params["api_key"] = api_key
    info: dict[str, Any] = {} if window is None else {"max_input_tokens": window}
    if budget is not None:
        info["litellm_budget"] = budget
    return {
        "model_name": group,
        "litellm_params": {**litellm_params, **(params or {})},
        "model_info": {**info, **model_info},
    }
