"""The calls the plugin makes on a DualCache's Redis layer, in memory: for unit tests of what replicas share."""

from __future__ import annotations

from typing import Any

from litellm.caching.dual_cache import DualCache


class MemoryRedis:
    """``async_get_cache``, ``async_batch_get_cache`` and ``async_set_cache``, as LiteLLM's RedisCache has them."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    async def async_get_cache(self, key: str, **_: Any) -> object:
        return self.values.get(key)

    async def async_batch_get_cache(self, key_list: list[str], **_: Any) -> dict[str, object]:
        return {key: self.values[key] for key in key_list if key in self.values}

    async def async_set_cache(self, key: str, value: object, **_: Any) -> None:
        self.values[key] = value


def shared_cache() -> DualCache:
    """What a proxy with Redis hands the pre-call hook: a DualCache with a Redis layer (here in memory)."""
    cache = DualCache()
    cache.redis_cache = MemoryRedis()  # type: ignore[assignment]
    return cache
