"""
Small thread-safe bounded caches, so every cache the plugin keeps has a hard bound.

``LITELLM_BUDGET_MEMO=off`` in the environment (read at import) turns every memo of facts read
from requests off: ``content_memo`` and ``remembered`` then hold nothing, and every fact is read
again. The fits, reports and replay figures must not change; CI compares them both ways.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable
from typing import Any, Generic, Protocol, TypeVar

_V = TypeVar("_V")


class BoundedLRU(Generic[_V]):
    """
    Holds at most ``max_entries`` values, dropping the least recently used half at a time.

    Two generations of plain dicts: hits in the old one are promoted, and when the new one
    fills, the old one is dropped whole. Lookups take no lock (a dict read is atomic), which
    matters on the request path, where a 200-message history makes hundreds of lookups.
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


class _Off(BoundedLRU[_V]):
    """A memo that holds nothing: every lookup misses (``LITELLM_BUDGET_MEMO=off``)."""

    __slots__ = ()

    def get(self, key: Hashable) -> _V | None:  # noqa: ARG002 - the interface of ``BoundedLRU``
        return None

    def put(self, key: Hashable, value: _V) -> None:
        pass


#: Whether memos of facts read from requests are off (the module's docstring).
MEMO_OFF = os.environ.get("LITELLM_BUDGET_MEMO", "").strip().lower() == "off"


def content_memo(max_entries: int) -> BoundedLRU[Any]:
    """A memo of facts read from requests: a ``BoundedLRU``, or one that holds nothing when memos are off."""
    return _Off(max_entries) if MEMO_OFF else BoundedLRU(max_entries)


class BoundedDict(Generic[_V]):
    """
    Holds at most ``max_entries`` values and forgets the oldest first: for records that are
    written once and read or popped soon after, where recency does not matter.
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


class Forgettable(Protocol):
    """Anything that holds facts read from requests and can forget them."""

    def clear(self) -> None: ...


#: The core's memos of what it read in requests (``remembered``, ``register_forgettable``): ``forget_all`` clears them.
_REMEMBERED: list[Forgettable] = []


def register_forgettable(memo: Forgettable) -> None:
    """Have ``forget_all`` clear ``memo`` too: a store of facts read from requests that is not a ``BoundedLRU``."""
    _REMEMBERED.append(memo)


def remembered(max_entries: int) -> BoundedLRU[Any]:
    """A module's memo of facts read from messages, cleared with every other by ``forget_all``."""
    memo: BoundedLRU[Any] = content_memo(max_entries)
    _REMEMBERED.append(memo)
    return memo


def forget_all() -> None:
    """Forget every fact the core remembered by content (tests, benchmarks: a cold start)."""
    for memo in _REMEMBERED:
        memo.clear()
