"""The one flat record of what was done to a request, safe to log: no message contents."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ._types import Action, PolicyName


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetReport:
    """
    What ``fit()`` measured and changed. Indices refer to the caller's messages.

    ``elided_at``, ``dropped_at`` and ``cut_at`` are compact index ranges such as
    ``"2,5-9"``, so a report stays one short log line even for 5,000 messages.
    """

    model: str
    policy: PolicyName
    action: Action
    reason: str | None = None
    window: int | None = None
    budget: int | None = None
    reserve: int = 0
    margin: int = 0
    watermark: int | None = None
    quantum: int | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    messages_before: int = 0
    messages_after: int = 0
    elided: int = 0
    dropped_units: int = 0
    dropped_messages: int = 0
    cut: int = 0
    elided_at: str = ""
    dropped_at: str = ""
    cut_at: str = ""
    marker: bool = False
    first_changed_index: int | None = None
    max_tokens_requested: int | None = None
    max_tokens_sent: int | None = None
    counter: str = ""
    token_ratio: float = 1.0
    duration_ms: float = 0.0

    @property
    def tokens_saved(self) -> int:
        """Tokens taken out of the prompt (never negative)."""
        return max(0, self.tokens_before - self.tokens_after)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-safe types only, in field order."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


def format_ranges(indices: Iterable[int]) -> str:
    """Render sorted indices compactly: ``[1, 2, 3, 7]`` becomes ``"1-3,7"``."""
    parts: list[str] = []
    start = previous = None
    for index in sorted(set(indices)):
        if previous is not None and index == previous + 1:
            previous = index
            continue
        if start is not None:
            parts.append(_span(start, previous))
        start = previous = index
    if start is not None:
        parts.append(_span(start, previous))
    return ",".join(parts)


def parse_ranges(ranges: str) -> list[int]:
    """The inverse of ``format_ranges``: ``"1-3,7"`` becomes ``[1, 2, 3, 7]``."""
    indices: list[int] = []
    for part in filter(None, ranges.split(",")):
        start, _, end = part.partition("-")
        indices.extend(range(int(start), int(end or start) + 1))
    return indices


def _span(start: int, end: int | None) -> str:
    return str(start) if end == start else f"{start}-{end}"
