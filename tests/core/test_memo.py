"""The one memo mechanism, and the memos it declares."""

from __future__ import annotations

import pytest

from litellm_budget.core import Memo, forget_all, memos
from litellm_budget.core import _memo as memo_module  # private: a test sets what the variable named
from litellm_budget.core._memo import _off_names  # how the variable is read, without reloading the module


class TestMemo:
    def test_a_lookup_gives_exactly_what_the_step_reads(self) -> None:
        """A step that comes to read one more input cannot look its memo up without declaring it."""
        memo: Memo[int] = Memo("outcomes", ("limit", "texts"), 8)

        with pytest.raises(TypeError, match=r"'outcomes' reads \('limit', 'texts'\)"):
            memo.get(160)
        with pytest.raises(TypeError, match="given 3 inputs"):
            memo.recall(lambda: 1, 160, ("a",), "one more")

    def test_recall_makes_once_per_inputs(self) -> None:
        """The step runs once for the same inputs, again for others."""
        memo: Memo[str] = Memo("outcomes", ("limit", "texts"), 8)
        made: list[int] = []

        def make(limit: int) -> str:
            made.append(limit)
            return f"made {limit}"

        assert memo.recall(lambda: make(160), 160, ("a",)) == "made 160"
        assert memo.recall(lambda: make(160), 160, ("a",)) == "made 160"
        assert memo.recall(lambda: make(80), 80, ("a",)) == "made 80"
        assert made == [160, 80]

    def test_never_holds_more_than_its_bounds(self) -> None:
        """Entries and, where it weighs them, their weight stay within the bounds."""
        memo: Memo[str] = Memo("texts", ("key",), 10, weigh=len, max_weight=100)
        for key in range(1000):
            memo.put("x" * (key % 40), key)
            assert len(memo) <= 10
            assert memo.held_weight() <= 100
        memo.put("y" * 51, "too big for a generation")
        assert memo.get("too big for a generation") is None

    def test_recently_used_survive(self) -> None:
        """A key read while the old generation is retired is kept."""
        memo: Memo[int] = Memo("counts", ("text",), 4)
        memo.put(1, "hot")
        for key in range(20):
            memo.put(key, key)
            assert memo.get("hot") == 1

    def test_a_memo_needs_inputs_room_and_a_weight_bound(self) -> None:
        with pytest.raises(ValueError, match="at least one input"):
            Memo("nothing", (), 8)
        with pytest.raises(ValueError, match="bound"):
            Memo("texts", ("key",), 8, weigh=len)

    def test_forget_all_reaches_every_memo(self) -> None:
        memo: Memo[int] = Memo("counts", ("text",), 4)
        memo.put(1, "a")

        assert memo in memos()
        forget_all()
        assert len(memo) == 0

    @pytest.mark.parametrize(
        ("setting", "off"),
        [
            ("", set()),
            ("on", set()),
            ("off", None),
            (" OFF ", None),
            ("off:outcomes, atom_lines", {"outcomes", "atom_lines"}),
        ],
    )
    def test_the_switch_names_the_memos_it_turns_off(self, setting: str, off: set[str] | None) -> None:
        assert _off_names(setting) == (None if off is None else frozenset(off))


def test_a_memo_off_holds_nothing_and_gives_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off (``LITELLM_BUDGET_MEMO``), a memo makes every time and remembers nothing."""
    monkeypatch.setattr(memo_module, "_OFF", frozenset({"outcomes"}))
    off: Memo[int] = Memo("outcomes", ("text",), 8)
    on: Memo[int] = Memo("counts", ("text",), 8)
    made: list[str] = []

    for memo in (off, off, on, on):
        assert memo.recall(lambda memo=memo: made.append(memo.name) or 7, "text") == 7  # type: ignore[func-returns-value]
        memo.put(8, "other")

    assert made == ["outcomes", "outcomes", "counts"]
    assert len(off) == 0
    assert off.get("other") is None
    assert on.get("other") == 8


def test_every_memo_of_the_package_declares_what_it_reads() -> None:
    """The memos the plugin makes at work: named, each with its declared inputs, each bounded."""
    import litellm_budget.adapter.callback  # noqa: F401 - every module the plugin loads at work
    from litellm_budget.core.counting import preload_counters

    preload_counters()
    found = {memo.name: memo for memo in memos()}

    assert {"text_counts", "message_counts", "kept_drafts", "conversation_reads"} <= set(found)
    for memo in found.values():
        assert memo.reads
        assert all(isinstance(read, str) and read for read in memo.reads)
        assert memo.max_entries >= 2


def test_every_shared_memo_is_made_in_the_one_table() -> None:
    """
    Derived state stays in one place: no module of the plugin holds a memo of its own; the shared
    ones are ``MEMOS``'s, each declared, and every declared one is either there or a counter's.
    """
    import dataclasses
    import importlib
    import pkgutil

    import litellm_budget
    from litellm_budget.core import DECLARED, MEMOS
    from litellm_budget.core._memo import COUNTER_MEMOS  # private: which declared memos counters hold

    names = [
        info.name
        for info in pkgutil.walk_packages(litellm_budget.__path__, "litellm_budget.")
        if not info.name.endswith("__main__")
    ]
    at_module_level = sorted(
        f"{name}.{attr}"
        for name in names
        for attr, value in vars(importlib.import_module(name)).items()
        if isinstance(value, Memo)
    )
    shared = {field.name: getattr(MEMOS, field.name) for field in dataclasses.fields(MEMOS)}

    assert at_module_level == []
    assert all(memo.name == name and memo.reads == DECLARED[name].reads for name, memo in shared.items())
    assert set(shared) | set(COUNTER_MEMOS) == set(DECLARED)
    assert not set(shared) & set(COUNTER_MEMOS)
