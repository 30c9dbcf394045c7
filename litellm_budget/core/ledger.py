"""The working copy a policy edits: entries that remember where they came from, and a ledger of changes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ._limits import Limits
from ._settings import BudgetSettings
from ._types import Message, TokenCounter
from ._units import Layout


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One outgoing message; ``source`` is its index in the caller's list, ``None`` if inserted."""

    source: int | None
    message: Message
    tokens: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class Request:
    """
    Everything a policy may read: the caller's messages, their counts, layout and limits.

    ``memo`` holds what policies derive per message (is it bulky, its elided copy), so a
    chain of steps computes each once per request.
    """

    messages: Sequence[Message]
    counts: Sequence[int]
    fixed: int
    layout: Layout
    limits: Limits
    settings: BudgetSettings
    counter: TokenCounter
    memo: dict[Hashable, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    @property
    def final(self) -> int:
        """Index of the final message."""
        return len(self.messages) - 1


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Draft:
    """An immutable step of a policy: entries plus which caller indices were changed and how."""

    entries: tuple[Entry, ...]
    fixed: int
    elided: tuple[int, ...] = ()
    dropped: tuple[int, ...] = ()
    dropped_units: int = 0
    cut: tuple[int, ...] = ()
    marker: bool = False
    total: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        # Policies compare the total after every step: sum it once per draft.
        object.__setattr__(self, "total", self.fixed + sum(entry.tokens for entry in self.entries))

    @classmethod
    def of(cls, request: Request) -> Draft:
        """The untouched request as a draft."""
        entries = tuple(Entry(i, m, c) for i, (m, c) in enumerate(zip(request.messages, request.counts, strict=True)))
        return cls(entries=entries, fixed=request.fixed)

    def replaced(self, replacements: dict[int, Entry], **changes: object) -> Draft:
        """A copy where the entries of the given source indices are swapped for new ones."""
        entries = tuple(replacements.get(e.source, e) if e.source is not None else e for e in self.entries)
        return dataclasses.replace(self, entries=entries, **changes)  # type: ignore[arg-type]


#: Every policy has this signature: take the request, return the best draft it can make.
Policy = Callable[[Request], Draft]
