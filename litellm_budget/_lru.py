"""A small thread-safe LRU map, so every cache the plugin keeps has a hard bound."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

_V = TypeVar("_V")


class BoundedLRU(Generic[_V]):
    """Least-recently-used map holding at most ``max_entries`` values."""

    __slots__ = ("_data", "_lock", "max_entries")

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            msg = "max_entries must be >= 1"
            raise ValueError(msg)
        self.max_entries = max_entries
        self._data: OrderedDict[Hashable, _V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> _V | None:
        """The value under ``key``, marked as recently used; ``None`` if absent."""
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def pop(self, key: Hashable) -> _V | None:
        """Remove and return the value under ``key``; ``None`` if absent."""
        with self._lock:
            return self._data.pop(key, None)

    def put(self, key: Hashable, value: _V) -> None:
        """Store ``value``, evicting the least recently used entry when full."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)
