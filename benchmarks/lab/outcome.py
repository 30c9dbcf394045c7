"""The research replay's judges of what a strategy sent for one request (``Outcome``: the wheel's replay loop)."""

from __future__ import annotations

from collections.abc import Sequence

from litellm_budget.core._checks import bare_model
from litellm_budget.core.formats import MessageFormat
from litellm_budget.core.formats._chat import CHAT
from litellm_budget.tools.replay import Outcome
from litellm_budget.typing import Message

#: Our count is within 1% of LiteLLM's; below this share of the window no overflow is possible.
_SURE_FIT = 0.95


def with_stored(outcome: Outcome) -> list[Message] | None:
    """What was sent, and the stored texts it names (a refusal sends and names nothing)."""
    if outcome.messages is None:
        return None
    return [*outcome.messages, *({"content": text} for text in (outcome.stored or {}).values())]


def newest_dropped(request: Sequence[Message], sent: Sequence[Message]) -> bool:
    """Whether the last message sent is not the request's last (a visible cut of it still counts as sent)."""
    if not request:
        return False
    if not sent:
        return True
    return any(request[-1].get(key) != sent[-1].get(key) for key in _IDENTITY)


#: What identifies a message or item whatever its text: a cut leaves these as they were.
_IDENTITY = ("role", "type", "tool_call_id", "call_id")


def overflows(messages: list[Message], counted: int, model: str, window: int, fmt: MessageFormat) -> bool:
    """Judged by ``litellm.token_counter``, asked only when our own count comes close (other
    formats than chat, which it cannot read, by our own count)."""
    if fmt is not CHAT:
        return counted > window
    if counted < window * _SURE_FIT:
        return False
    import litellm

    return int(litellm.token_counter(model=bare_model(model), messages=messages)) > window


def baseline_outcome(before: list[Message], after: list[Message]) -> Outcome:
    changed = after != before
    # Peers that edit in place (masking, clearing) keep every message: count those they changed.
    edited = (
        sum(1 for b, a in zip(before, after, strict=True) if b is not a and b != a) if len(after) == len(before) else 0
    )
    return Outcome(after, "trimmed" if changed else "passthrough", edited, max(0, len(before) - len(after)))
