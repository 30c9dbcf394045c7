"""The bounded cache behind every memo."""

from __future__ import annotations

import pytest

from litellm_budget._lru import BoundedLRU


class TestBoundedLRU:
    def test_never_holds_more_than_its_bound(self) -> None:
        """However many keys go in, at most max_entries stay."""
        cache: BoundedLRU[int] = BoundedLRU(10)
        for key in range(1000):
            cache.put(key, key)

        assert len(cache) <= 10

    def test_recently_used_survive(self) -> None:
        """A key read while the old generation is retired is kept."""
        cache: BoundedLRU[int] = BoundedLRU(4)
        cache.put("hot", 1)
        for key in range(20):
            cache.put(key, key)
            assert cache.get("hot") == 1

    def test_pop_and_clear(self) -> None:
        """pop removes one key wherever it is; clear removes all."""
        cache: BoundedLRU[int] = BoundedLRU(4)
        cache.put("a", 1)
        cache.put("b", 2)

        assert cache.pop("a") == 1
        assert cache.pop("a") is None
        cache.clear()
        assert len(cache) == 0

    def test_bound_must_allow_two_generations(self) -> None:
        """A bound under 2 cannot hold two generations."""
        with pytest.raises(ValueError, match="max_entries"):
            BoundedLRU(1)
