"""The bounded stores of what the plugin learns from traffic."""

from __future__ import annotations

import pytest

from litellm_budget.bounded import BoundedDict, BoundedLRU


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


class TestBoundedDict:
    def test_forgets_the_oldest_first(self) -> None:
        """Past its bound, the entry written first goes first, whatever was read since."""
        records: BoundedDict[int] = BoundedDict(3)
        for key in "abcd":
            records.put(key, ord(key))
            records.get("a")

        assert len(records) == 3
        assert records.get("a") is None
        assert records.get("d") == ord("d")

    def test_pop_takes_a_record_once(self) -> None:
        """pop returns the value and removes it; a second pop finds nothing."""
        records: BoundedDict[str] = BoundedDict(2)
        records.put("call", "lent")

        assert records.pop("call") == "lent"
        assert records.pop("call") is None

    def test_rewriting_a_key_keeps_one_entry(self) -> None:
        """Writing a key again replaces its value and counts once."""
        records: BoundedDict[int] = BoundedDict(2)
        records.put("k", 1)
        records.put("k", 2)

        assert len(records) == 1
        assert records.get("k") == 2

    def test_bound_must_hold_something(self) -> None:
        """A bound below one is refused."""
        with pytest.raises(ValueError, match="max_entries"):
            BoundedDict(0)
