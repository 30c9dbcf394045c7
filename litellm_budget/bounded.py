"""Stores of what the plugin learns from traffic: never switched off, unlike memos, so bounded to cap memory."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Generic, TypeVar

_V = TypeVar("_V")


class BoundedLRU(Generic[_V]):
    """At most ``max_entries`` values, the least recently used half dropped at a time, as a memo keeps them."""

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
        with self._lock:
            value = self._young.pop(key, None)
            old = self._old.pop(key, None)
            return value if value is not None else old

    def clear(self) -> None:
        with self._lock:
            self._young, self._old = {}, {}

    def cached_keys(self) -> list[Hashable]:
        """Every key held, for tests and diagnostics."""
        return [*self._old, *self._young]

    def __len__(self) -> int:
        return len(self._young) + len(self._old)


class BoundedDict(Generic[_V]):
    """At most ``max_entries`` values, the oldest forgotten first: for records read or popped soon after."""

    __slots__ = ("_items", "_lock", "max_entries")

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            msg = "max_entries must be >= 1"
            raise ValueError(msg)
        self.max_entries = max_entries
        self._items: dict[Hashable, _V] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> _V | None:
        return self._items.get(key)

    def put(self, key: Hashable, value: _V) -> None:
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = value
            if len(self._items) > self.max_entries:
                del self._items[next(iter(self._items))]

    def pop(self, key: Hashable) -> _V | None:
        with self._lock:
            return self._items.pop(key, None)

    def drain(self) -> list[tuple[Hashable, _V]]:
        """Remove and return every entry, oldest first."""
        with self._lock:
            items, self._items = list(self._items.items()), {}
            return items

    def __len__(self) -> int:
        return len(self._items)
