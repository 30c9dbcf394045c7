"""What a replayed strategy sends for one request (the type the replay and its strategies share), and its judges."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from litellm_budget.core._checks import bare_model
from litellm_budget.core.formats import MessageFormat
from litellm_budget.core.formats._chat import CHAT
from litellm_budget.typing import Message

#: Our count is within 1% of LiteLLM's; below this share of the window no overflow is possible.
_SURE_FIT = 0.95


@dataclasses.dataclass(frozen=True, slots=True)
class Outcome:
    """What a strategy would send for one request (``None``: it refused), and how it called it."""

    messages: list[Message] | None
    action: str
    elided: int = 0
    dropped: int = 0
    #: Calls of this request repeating one whose output the last request hid (ours only: the report's).
    rereads: int = 0
    #: What the sent request names by handle or key, that a tool would serve back (recall, ``compress()``);
    #: ``None``: nothing is stored.
    stored: Mapping[str, str] | None = None

    def with_stored(self) -> list[Message] | None:
        """What was sent, and the stored texts it names (a refusal sends and names nothing)."""
        if self.messages is None:
            return None
        return [*self.messages, *({"content": text} for text in (self.stored or {}).values())]


#: A policy of ours, a baseline or a peer, as the replay runs it: a request in, its outcome out.
Strategy = Callable[[list[Message]], Outcome]


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
