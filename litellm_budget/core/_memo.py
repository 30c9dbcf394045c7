"""
The one memo mechanism, and every memo of the package (``DECLARED``), so one switch reaches them all.

A ``Memo`` remembers what one step derived, keyed by exactly the inputs it declares it ``reads``: a step that comes to
read one more input must declare it or its first lookup fails. ``LITELLM_BUDGET_MEMO=off`` (read at import) turns
every memo off, ``off:NAME,NAME`` only those named; a memo off holds nothing, and fits, reports and replay figures
must not change (CI compares both ways). What the plugin learns from traffic is no memo (``bounded.py``).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import weakref
from collections.abc import Callable, Hashable
from types import MappingProxyType
from typing import Any, Generic, NamedTuple, TypeVar

_V = TypeVar("_V")


class Declared(NamedTuple):
    """A memo as declared: what its step reads (its key, in order), its bound, and what it saves."""

    reads: tuple[str, ...]
    entries: int
    #: The measured path's instructions with this memo off, over all memos on (BENCHMARKS.md §2).
    off_costs: float
    #: What an entry weighs (characters, say), and the most a memo holds of it; ``None``: unweighed.
    weigh: Callable[[Any], int] | None = None
    max_weight: int = 0


_BLOCK_READS = tuple("format counter digest_chars cap names_cap names_per_step recall room block given".split())
#: Every memo, by name; one that saves under 2% goes (BENCHMARKS.md §2).
DECLARED = MappingProxyType(
    {
        # What names a conversation, and its last message, are digested on each of its requests.
        "digests": Declared(("content", "chars"), 16_384, 1.069),
        # Digests of whole dropped blocks, each at most digest_share of a window's room.
        "block_digests": Declared(_BLOCK_READS, 256, 1.329),
        # The lines of single steps, with the call ids they make and answer: a few hundred characters each.
        "atom_lines": Declared(("format", "digest_chars", "recall", "atom"), 16_384, 1.311),
        # Outcomes and outlines of elided outputs, each a few hundred characters at most.
        "outcomes": Declared(("what", "limit", "texts"), 16_384, 1.219),
        # Each sent message's hashes and sizes (``sent_prompt``): a hundred busy conversations' histories, about 4 MiB.
        "prompt_facts": Declared(("message",), 16_384, 4.49),
        # Prefixes that passed a format's checks, one a conversation as a rule.
        "passed_prefixes": Declared(("format", "prefix"), 2048, 1.026),
        # A conversation's last request as read (its copies, keys, characters), bounded by characters
        # too: 16 MiB of ASCII text (up to 4 bytes a character of other scripts), about 70 of the
        # longest histories, plus a few MiB of copied containers; texts are shared with the requests.
        "conversation_reads": Declared(
            ("lane", "first", "second"), 512, 1.176, weigh=lambda read: sum(read.chars), max_weight=16_000_000
        ),
        # Each message's calls as (id, key), by its content key: a few small keys each.
        "calls_made": Declared(("format", "message"), 65_536, 1.054),
        # Kept drafts, one a conversation as conversation_reads: a source index per entry, and the few edited entries.
        "kept_drafts": Declared(("format", "counter", "conversation", "edits", "limits", "recall"), 512, 1.037),
        # A counter's counts of texts and of messages, per encoding.
        "text_counts": Declared(("text",), 65_536, 2.371),
        "message_counts": Declared(("format", "message"), 65_536, 1.087),
    }
)


def _off_names(setting: str) -> frozenset[str] | None:
    """The memos ``LITELLM_BUDGET_MEMO`` turns off by name; ``None`` for every one (``off``)."""
    value = setting.strip().lower()
    if value == "off":
        return None
    if value.startswith("off:"):
        return frozenset(name.strip() for name in value[4:].split(",") if name.strip())
    return frozenset()


_OFF = _off_names(os.environ.get("LITELLM_BUDGET_MEMO", ""))
#: Whether every memo is off (the module's docstring).
MEMO_OFF = _OFF is None


def memo_is_off(name: str) -> bool:
    """Whether ``LITELLM_BUDGET_MEMO`` turns the memo ``name`` off."""
    return _OFF is None or name in _OFF


class Memo(Generic[_V]):
    """
    One step's results by the inputs it declares it ``reads``, at most ``entries`` of them (with ``weigh``, at most
    ``max_weight`` of what they weigh), in two generations of plain dicts: a hit in the old one is promoted, and
    when the young one is full the old one is dropped whole, so the least recently used half goes first. Lookups
    take no lock (a dict read is atomic): a request makes hundreds.
    """

    __slots__ = (
        "__weakref__",
        "_arity",
        "_lock",
        "_old",
        "_weight",
        "_young",
        "max_entries",
        "max_weight",
        "name",
        "on",
        "reads",
        "weigh",
    )

    def __init__(
        self,
        name: str,
        reads: tuple[str, ...],
        entries: int,
        *,
        weigh: Callable[[_V], int] | None = None,
        max_weight: int = 0,
    ) -> None:
        if entries < 2 or not reads or (weigh is not None and max_weight <= 0):
            msg = "a memo reads at least one input, holds at least 2 entries, and what it weighs has a bound"
            raise ValueError(msg)
        self.name, self.reads, self.max_entries = name, reads, entries
        self.weigh, self.max_weight = weigh, max_weight
        #: Whether it remembers anything (``LITELLM_BUDGET_MEMO``).
        self.on = not memo_is_off(name)
        self._arity = len(reads)
        self._young: dict[Hashable, _V] = {}
        self._old: dict[Hashable, _V] = {}
        self._weight = [0, 0]  # of the young generation, then of the old
        self._lock = threading.Lock()
        _MEMOS.add(self)

    @classmethod
    def declared(cls, name: str) -> Memo[Any]:
        """The memo ``DECLARED`` names, with what it reads and its bounds from there."""
        declared = DECLARED[name]
        return cls(name, declared.reads, declared.entries, weigh=declared.weigh, max_weight=declared.max_weight)

    def key(self, inputs: tuple[Hashable, ...]) -> Hashable:
        """The key of ``inputs``, which must be the declared ``reads``, one each."""
        if len(inputs) != self._arity:
            msg = f"the memo {self.name!r} reads {self.reads}, and was given {len(inputs)} inputs"
            raise TypeError(msg)
        return inputs[0] if self._arity == 1 else inputs

    def get(self, *inputs: Hashable) -> _V | None:
        """What the step derived from ``inputs``, kept as recently used; ``None`` if not remembered."""
        # ``key`` written out: hundreds of lookups a request, and a call more each is measurable.
        arity = self._arity
        if len(inputs) != arity:
            self.key(inputs)
        key = inputs[0] if arity == 1 else inputs
        value = self._young.get(key)
        if value is None:
            value = self._old.get(key)
            if value is not None:
                self._store(key, value)
        return value

    def put(self, value: _V, *inputs: Hashable) -> None:
        key = self.key(inputs)
        if self.on:
            self._store(key, value)

    def recall(self, derive: Callable[[], _V], *inputs: Hashable) -> _V:
        """What the step derived from ``inputs``: remembered, else ``derive()``, remembered from now."""
        arity = self._arity
        if len(inputs) != arity:
            self.key(inputs)
        key = inputs[0] if arity == 1 else inputs
        value = self._young.get(key)
        if value is None:
            value = self._old.get(key)
            if value is None:
                value = derive()
                if not self.on:
                    return value
            self._store(key, value)
        return value

    def _store(self, key: Hashable, value: _V) -> None:
        weigh = self.weigh
        weight = 0 if weigh is None else weigh(value)
        if weight * 2 > self.max_weight > 0:
            return  # more than a generation may hold: never remembered
        with self._lock:
            young, weights = self._young, self._weight
            if weigh is not None:
                replaced = young.pop(key, None)
                weights[0] -= 0 if replaced is None else weigh(replaced)
                if (weights[0] + weight) * 2 > self.max_weight:
                    self._old, self._young, self._weight = young, {}, [0, weights[0]]
                    young, weights = self._young, self._weight
            young[key] = value
            weights[0] += weight
            if len(young) >= self.max_entries // 2:
                self._old, self._young, self._weight = young, {}, [0, weights[0]]

    def clear(self) -> None:
        with self._lock:
            self._young, self._old, self._weight = {}, {}, [0, 0]

    def cached_keys(self) -> list[Hashable]:
        """Every key held, for tests and diagnostics."""
        return [*self._old, *self._young]

    def held_weight(self) -> int:
        """What the entries held weigh (``weigh``), for tests."""
        return sum(self._weight)

    def __len__(self) -> int:
        return len(self._young) + len(self._old)


#: Every memo alive, for ``forget_all`` and the tests that list them.
_MEMOS: weakref.WeakSet[Memo[Any]] = weakref.WeakSet()


@dataclasses.dataclass(frozen=True, slots=True)
class Memos:
    """The memos the steps share across requests, one each: all the core remembers by content."""

    digests: Memo[str]
    block_digests: Memo[Any]
    atom_lines: Memo[Any]
    outcomes: Memo[Any]
    prompt_facts: Memo[Any]
    passed_prefixes: Memo[Any]
    conversation_reads: Memo[Any]
    calls_made: Memo[Any]
    kept_drafts: Memo[Any]


#: What each token counter holds for itself (``counting/_tokens.py``): its counts are its encoding's.
COUNTER_MEMOS = ("text_counts", "message_counts")
MEMOS = Memos(**{name: Memo.declared(name) for name in DECLARED if name not in COUNTER_MEMOS})


def memos() -> tuple[Memo[Any], ...]:
    """Every memo alive."""
    return tuple(_MEMOS)


def forget_all() -> None:
    """Forget everything every memo remembered (tests, benchmarks: a cold start)."""
    for memo in list(_MEMOS):
        memo.clear()
