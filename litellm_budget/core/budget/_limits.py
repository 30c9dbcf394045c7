"""Budget arithmetic: the room held back for the answer, the safety margin, watermark and quantum."""

from __future__ import annotations

import dataclasses
import math
from typing import TypedDict

from litellm_budget.core.budget._settings import BudgetSettings


class LimitFields(TypedDict):
    """The fields of ``BudgetReport`` that say what a request was fitted against."""

    window: int
    budget: int
    reserve: int
    margin: int
    watermark: int
    quantum: int
    token_ratio: float


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """
    The numbers a request is fitted against: ``window``, ``reserve`` and ``margin`` in the provider's
    tokens; ``budget``, ``watermark`` and ``quantum`` in counted tokens (the provider's over ``ratio``).
    """

    window: int
    reserve: int
    margin: int
    ratio: float
    budget: int
    watermark: int
    quantum: int

    def target(self, tokens: int, *, grain: int | None = None) -> int:
        """
        Tokens to save from ``tokens``, rounded up to whole quanta (``grain`` tokens where the caller
        holds its edits still another way), so a growing conversation's edits stay the same until it
        grows by another quantum, and its prompt prefix stays byte-stable for provider and KV caches.
        """
        if tokens <= self.watermark:
            return 0
        step = max(1, self.quantum if grain is None else grain)
        return math.ceil((tokens - self.watermark) / step) * step

    def provider_tokens(self, counted: int) -> int:
        """``counted`` tokens as the provider is expected to count them."""
        return math.ceil(counted * self.ratio)

    def report_fields(self) -> LimitFields:
        return {
            "window": self.window,
            "budget": self.budget,
            "reserve": self.reserve,
            "margin": self.margin,
            "watermark": self.watermark,
            "quantum": self.quantum,
            "token_ratio": self.ratio,
        }


def limits_for(
    window: int,
    max_tokens: int | None,
    settings: BudgetSettings,
    ratio: float = 1.0,
    *,
    holds_reserve: bool = True,
    exact: bool = True,
) -> Limits:
    """
    The limits of one request; a policy that does not hold room back for the answer reserves only what
    is asked for, and a model counted with another family's tokenizer (not ``exact``) a wider margin.
    """
    share = settings.safety_margin if exact else max(settings.safety_margin, settings.approximate_margin)
    margin = math.ceil(window * share)
    cap = math.floor(window * settings.max_reserve_ratio)
    if max_tokens is not None and max_tokens <= cap:
        reserve = max_tokens
    elif max_tokens is None and settings.response_reserve is None and not holds_reserve:
        reserve = 0
    else:
        # Also for a client asking for more than ``cap`` (agent CLIs send their model's whole output
        # limit): its max_tokens is lowered to the room left, as holding it would leave the prompt none.
        reserve = min(cap, _default_reserve(window, settings))
    budget = max(0, math.floor((window - reserve - margin) / ratio))
    watermark = math.floor(budget * settings.watermark)
    return Limits(
        window=window,
        reserve=reserve,
        margin=margin,
        ratio=ratio,
        budget=budget,
        watermark=watermark,
        quantum=max(1, budget - watermark),
    )


def _default_reserve(window: int, settings: BudgetSettings) -> int:
    if settings.response_reserve is not None:
        return settings.response_reserve
    share = math.floor(window * settings.reserve_ratio)
    return max(settings.reserve_floor, min(settings.reserve_cap, share))


def max_tokens_to_send(limits: Limits, max_tokens: int | None, prompt_tokens: int) -> int | None:
    """The client's ``max_tokens``, lowered to the room left when prompt plus answer would overflow."""
    if max_tokens is None:
        return None
    room = limits.window - limits.margin - limits.provider_tokens(prompt_tokens)
    return max_tokens if max_tokens <= room else max(1, room)
