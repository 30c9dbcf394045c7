"""
The one memo mechanism, and the bounded stores of state.

A ``Memo`` remembers what one step derived, keyed by what that step reads: it declares its
inputs (``reads``) and every lookup gives exactly those, in that order (a content as its content
key), so a step that comes to read one more input or setting must declare it, or its first
lookup fails. Every memo is bounded and registered here, so one switch reaches them all:
``LITELLM_BUDGET_MEMO=off`` in the environment (read at import) turns every memo off, and
``LITELLM_BUDGET_MEMO=off:NAME,NAME`` only those named (to measure each one's gain). A memo off
holds nothing, and the fits, reports and replay figures must not change; CI compares them both ways.

``BoundedLRU`` and ``BoundedDict`` hold state the plugin learns from traffic (call records, token
ratios, conversations' edits): not memos, never switched off, bounded all the same.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

_V = TypeVar("_V")


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
    One step's results by the inputs it declares it ``reads``, at most ``entries`` of them (and,
    with ``weigh``, at most ``max_weight`` of what they weigh, characters say); the least recently
    used half goes first.

    Two generations of plain dicts: a hit in the old one is promoted, and when the young one is
    full the old one is dropped whole. Lookups take no lock (a dict read is atomic), which matters
    on the request path, where a 200-message history makes hundreds of them.
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

    def key(self, inputs: tuple[Hashable, ...]) -> Hashable:
        """The key of ``inputs``: they must be the declared ``reads``, one each."""
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
        """Remember ``value`` as what the step derived from ``inputs``."""
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
        """Forget everything."""
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


#: Every memo alive, for ``forget_all`` and the tests that list them (a counter made in a test holds its own).
_MEMOS: weakref.WeakSet[Memo[Any]] = weakref.WeakSet()


def memos() -> tuple[Memo[Any], ...]:
    """Every memo alive."""
    return tuple(_MEMOS)


def forget_all() -> None:
    """Forget everything every memo remembered (tests, benchmarks: a cold start)."""
    for memo in list(_MEMOS):
        memo.clear()


class BoundedLRU(Generic[_V]):
    """
    State learned from traffic, at most ``max_entries`` values, the least recently used half
    dropped at a time: two generations of plain dicts, as a ``Memo`` keeps them.
    """

    __slots__ = ("_lock", "_old", "_young", "max_entries")

    def __init__(self, max_entries: int) -> None:
        if max_entries < 2:
            msg = "max_entries must be >= 2"
            raise ValueError(msg)
        self.max_entries = max_entries
        self._young: dict[Hashable, _V] = {}
        self._old: dict[Hashable, _V] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> _V | None:
        """The value under ``key``, kept as recently used; ``None`` if absent."""
        value = self._young.get(key)
        if value is None:
            value = self._old.get(key)
            if value is not None:
                self.put(key, value)
        return value

    def put(self, key: Hashable, value: _V) -> None:
        """Store ``value``; when the young generation is full, the old one is forgotten."""
        with self._lock:
            self._young[key] = value
            if len(self._young) >= self.max_entries // 2:
                self._old, self._young = self._young, {}

    def pop(self, key: Hashable) -> _V | None:
        """Remove and return the value under ``key``; ``None`` if absent."""
        with self._lock:
            value = self._young.pop(key, None)
            old = self._old.pop(key, None)
            return value if value is not None else old

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._young, self._old = {}, {}

    def cached_keys(self) -> list[Hashable]:
        """Every key held, for tests and diagnostics."""
        return [*self._old, *self._young]

    def __len__(self) -> int:
        return len(self._young) + len(self._old)


class BoundedDict(Generic[_V]):
    """
    State learned from traffic, at most ``max_entries`` values, the oldest forgotten first: for
    records that are written once and read or popped soon after, where recency does not matter.
    """

    __slots__ = ("_items", "_lock", "max_entries")

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            msg = "max_entries must be >= 1"
            raise ValueError(msg)
        self.max_entries = max_entries
        self._items: dict[Hashable, _V] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> _V | None:
        """The value under ``key``; ``None`` if absent."""
        return self._items.get(key)

    def put(self, key: Hashable, value: _V) -> None:
        """Store ``value``, forgetting the oldest entry when full."""
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = value
            if len(self._items) > self.max_entries:
                del self._items[next(iter(self._items))]

    def pop(self, key: Hashable) -> _V | None:
        """Remove and return the value under ``key``; ``None`` if absent."""
        with self._lock:
            return self._items.pop(key, None)

    def drain(self) -> list[tuple[Hashable, _V]]:
        """Remove and return every entry, oldest first."""
        with self._lock:
            items, self._items = list(self._items.items()), {}
            return items

    def __len__(self) -> int:
        return len(self._items)
