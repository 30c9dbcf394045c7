"""The summary call: a dropped block as plain text, the structured summary asked of it, what the reply holds."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from litellm_budget.core.api import format_named, is_int, is_number
from litellm_budget.typing import Message

#: Each text of the block is shown up to this many characters (tool outputs are the bulk) ...
TEXT_CHARS = 4000
#: ... and fewer when the block is long, so the whole prompt stays near this size.
PROMPT_CHARS = 120_000
#: ... but never fewer than this.
MIN_TEXT_CHARS = 300
#: Share of ``summary_max_tokens`` asked for in words: a word is about 1.3 tokens.
WORDS_PER_TOKEN = 0.75

_INSTRUCTIONS = (
    "You condense the earlier part of a conversation between a user and an AI assistant (often "
    "an agent calling tools), so the assistant can continue without it. Write a factual record, "
    "not a reply, under these headings: Task; Decisions made; Files and entities touched; Errors "
    "seen; Open questions. Keep names, paths, identifiers and values exactly. No preamble. "
    "At most {words} words."
)


def summary_prompt(
    block: Sequence[Message], fmt_name: str, max_tokens: int, previous_summary: str | None = None
) -> list[dict[str, str]]:
    """The chat messages of one summary call over ``block`` (after ``previous_summary``, if any)."""
    rendered = render_block(block, fmt_name)
    if previous_summary is None:
        task = f"Summarize these messages:\n\n{rendered}"
    else:
        task = (
            f"A summary of the conversation so far:\n\n{previous_summary}\n\n"
            f"The messages that followed it:\n\n{rendered}\n\n"
            "Write one summary that covers both."
        )
    return [
        {"role": "system", "content": _INSTRUCTIONS.format(words=max_words(max_tokens))},
        {"role": "user", "content": task},
    ]


def max_words(max_tokens: int) -> int:
    return max(1, int(max_tokens * WORDS_PER_TOKEN))


def bounded_summary(text: str, max_tokens: int) -> str:
    """The reply cut to its word bound (models overshoot); whitespace runs become single spaces only when cut."""
    words = text.split()
    limit = max_words(max_tokens)
    return text.strip() if len(words) <= limit else " ".join(words[:limit]) + " [...]"


def render_block(block: Sequence[Message], fmt_name: str) -> str:
    """One ``role: text`` paragraph per message, tool calls as name and arguments, long texts shortened."""
    fmt = format_named(fmt_name)
    texts = sum(1 for message in block for _ in fmt.texts(message))
    limit = max(MIN_TEXT_CHARS, min(TEXT_CHARS, PROMPT_CHARS // max(1, texts)))
    lines = []
    for message in block:
        parts = [_shortened(text, limit) for text in fmt.texts(message)]
        parts += [f"[calls {name}({_shortened(arguments, limit)})]" for name, arguments in _calls(message)]
        lines.append(f"{_role(message)}: {' '.join(parts) if parts else '[no text]'}")
    return "\n\n".join(lines)


def _role(message: Message) -> str:
    role = message.get("role") or message.get("type")
    return role if isinstance(role, str) else "item"


def _calls(message: Message) -> Iterator[tuple[str, str]]:
    """Tool calls in any of the three shapes: chat ``tool_calls``, Anthropic ``tool_use``, Responses items."""
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            yield str(function.get("name")), _as_text(function.get("arguments"))
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, Mapping) and block.get("type") in {"tool_use", "server_tool_use"}:
            yield str(block.get("name")), _as_text(block.get("input"))
    if message.get("type") in {"function_call", "custom_tool_call"}:
        yield str(message.get("name")), _as_text(message.get("arguments", message.get("input")))


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]} [... {len(text) - limit} more characters]"


def reply_text(response: Any) -> str:
    choices = _get(response, "choices") or []
    message = _get(choices[0], "message") if choices else None
    content = _get(message, "content")
    return content if isinstance(content, str) else ""


def usage_tokens(response: Any) -> int:
    total = _get(_get(response, "usage"), "total_tokens")
    return total if is_int(total) else 0


def reply_cost(response: Any) -> float | None:
    """The call's cost as LiteLLM priced it; ``None`` when it could not."""
    hidden = getattr(response, "_hidden_params", None)
    cost = hidden.get("response_cost") if isinstance(hidden, Mapping) else None
    if not is_number(cost):
        try:
            import litellm

            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # noqa: BLE001 - an unpriced model has no cost, not an error
            return None
    return float(cost) if is_number(cost) else None


def _get(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)
