"""
Where what a fit took out waits for a recall: here (bounded) and in Redis, for every replica. Each fit naming a text
stores it again for the model's ``cache_lifetime``: a handle lives while the conversation names it, and one after.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Mapping
from typing import Any

from litellm_budget.adapter.replicas.shared import shared_get, shared_set, shared_store
from litellm_budget.bounded import BoundedLRU

PREFIX = "litellm_budget:recall:"
#: The most texts this process keeps, and the most bytes (UTF-8 counted as characters: a bound).
MAX_ENTRIES = 16_384
MAX_CHARS = 64 * 1024 * 1024
#: The most characters of one text stored; a longer one is stored cut, and its answers say so.
ITEM_CHARS = 1_000_000


def item_key(scope_id: str, handle: str) -> str:
    return f"{PREFIX}{scope_id}:{handle}"


class RecallStore:
    """The stored texts by scope and handle, with when each expires; and which conversations have any."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_chars: int = MAX_CHARS) -> None:
        self._items: collections.OrderedDict[str, tuple[str, float]] = collections.OrderedDict()
        self._chars = 0
        self._max_entries, self._max_chars = max_entries, max_chars
        self._offered: BoundedLRU[float] = BoundedLRU(max_entries)
        # Bounded too: an SDK process without Redis drains it at each flush, and only holds the newest.
        self._pending: collections.deque[tuple[str, object, float]] = collections.deque(maxlen=max_entries)
        # Each key's last write to Redis, and its lifetime: a text named again is rewritten after a quarter of it.
        self._written: BoundedLRU[tuple[float, float]] = BoundedLRU(max_entries)
        self._lock = threading.Lock()

    def keep(self, scope_id: str, items: Mapping[str, str], lifetime: float) -> None:
        """Store ``items`` (by handle) for ``lifetime`` seconds here, and in Redis on the next flush."""
        now = time.monotonic()
        expires = now + lifetime
        with self._lock:
            for handle, text in items.items():
                key = item_key(scope_id, handle)
                stored = text if len(text) <= ITEM_CHARS else text[:ITEM_CHARS]
                self._put(key, stored, expires)
                self._queue(key, {"text": stored, "chars": len(text)}, now, lifetime)
            self._offered.put(scope_id, expires)
            self._queue(PREFIX + scope_id, 1, now, lifetime)

    def offered(self, scope_id: str) -> bool:
        """Whether the conversation has anything stored (as far as this replica knows)."""
        expires = self._offered.get(scope_id)
        return expires is not None and time.monotonic() < expires

    async def refresh(self, cache: Any, scope_id: str, lifetime: float) -> None:
        """Learn from Redis whether another replica stored anything for this conversation."""
        if shared_store(cache) is None or self.offered(scope_id):
            return
        if await shared_get(cache, PREFIX + scope_id) is not None:
            self._offered.put(scope_id, time.monotonic() + lifetime)

    async def get(self, cache: Any, scope_id: str, handle: str) -> tuple[str, int] | None:
        """The stored text of ``handle`` and its length before any cut; ``None``: unknown or expired."""
        key = item_key(scope_id, handle)
        with self._lock:
            found = self._items.get(key)
        if found is not None and time.monotonic() < found[1]:
            return found[0], len(found[0])
        shared = await shared_get(cache, key) if shared_store(cache) is not None else None
        if isinstance(shared, dict) and isinstance(shared.get("text"), str):
            chars = shared.get("chars")
            return shared["text"], chars if isinstance(chars, int) else len(shared["text"])
        return None

    async def flush(self, cache: Any) -> None:
        with self._lock:
            pending = list(self._pending)
            self._pending.clear()
        if shared_store(cache) is None:
            return
        for key, value, ttl in pending:
            await shared_set(cache, key, value, ttl)

    def forget(self, handle: str) -> None:
        """Take a handle's texts out here, in every scope (an expiry without the wait, for tests)."""
        with self._lock:
            for key in [key for key in self._items if key.endswith(f":{handle}")]:
                self._chars -= len(self._items.pop(key)[0])

    def _put(self, key: str, text: str, expires: float) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._chars -= len(old[0])
        self._items[key] = (text, expires)
        self._chars += len(text)
        while self._items and (len(self._items) > self._max_entries or self._chars > self._max_chars):
            _, (evicted, _) = self._items.popitem(last=False)
            self._chars -= len(evicted)

    def _queue(self, key: str, value: object, now: float, lifetime: float) -> None:
        last = self._written.get(key)
        if last is not None and now - last[0] < last[1] / 4:
            return
        self._written.put(key, (now, lifetime))
        self._pending.append((key, value, lifetime))
