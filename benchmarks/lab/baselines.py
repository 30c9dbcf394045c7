"""
What operators compare against: LiteLLM's own trim_messages, a plain sliding window, and the
peers of ``peers.py`` (observation masking, Anthropic's and LiteLLM's tool-result clearing,
LangChain's trim_messages).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from litellm_budget.core._fit_input import DEFAULT_SETTINGS
from litellm_budget.core.budget._limits import limits_for
from litellm_budget.core.counting._tokens import counter_for
from litellm_budget.core.validity._chat_checks import SYSTEM_ROLES
from litellm_budget.typing import Message

from .langchain_peer import langchain_trim_peer
from .peers import clear_tool_uses_peer, litellm_polyfill_peer, masking_peer

Baseline = Callable[[list[Message]], list[Message]]


def trim_messages_baseline(model: str, window: int) -> Baseline:
    """``litellm.utils.trim_messages(messages, model=..., max_tokens=window)``, as a user would call it."""
    from litellm.utils import trim_messages

    def trim(messages: list[Message]) -> list[Message]:
        result: Any = trim_messages(copy.deepcopy(messages), model=model, max_tokens=window)
        return list(result)

    return trim


def sliding_baseline(model: str, window: int) -> Baseline:
    """Keep the system messages and the newest messages that fit ``auto``'s budget; nothing else."""
    counter = counter_for(model)
    budget = limits_for(window, None, DEFAULT_SETTINGS).budget

    def slide(messages: list[Message]) -> list[Message]:
        system = [m for m in messages if m.get("role") in SYSTEM_ROLES]
        room = budget - counter.count_tools(None) - sum(map(counter.count_message, system))
        kept: list[Message] = []
        for message in reversed([m for m in messages if m.get("role") not in SYSTEM_ROLES]):
            room -= counter.count_message(message)
            if room < 0:
                break
            kept.append(message)
        return system + kept[::-1]

    return slide


BASELINES: dict[str, Callable[[str, int], Baseline]] = {
    "trim_messages": trim_messages_baseline,
    "sliding": sliding_baseline,
    "masking": masking_peer,
    "clear_tool_uses": clear_tool_uses_peer,
    "litellm_polyfill": litellm_polyfill_peer,
    "langchain_trim": langchain_trim_peer,
}
