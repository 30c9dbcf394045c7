"""What a recall answers: the whole text, a range of lines, the lines holding a text; cut to a cap."""

from __future__ import annotations

import pytest

from litellm_budget.adapter.recall.answer import ANSWER_BYTES, MIN_ANSWER_BYTES, Asked, answer, cap_for
from litellm_budget.adapter.recall.store import ITEM_CHARS, RecallStore

TEXT = "\n".join(f"line {n}: value_{n}" for n in range(1, 201))


def test_the_whole_text_with_a_header() -> None:
    assert (
        answer(Asked("r-1", None, None), TEXT, len(TEXT), ANSWER_BYTES) == f"[litellm_budget: r-1, 200 lines]\n{TEXT}"
    )


def test_a_range_of_lines_numbered() -> None:
    shown = answer(Asked("r-1", "10-12", None), TEXT, len(TEXT), ANSWER_BYTES)

    assert shown.splitlines() == [
        "[litellm_budget: r-1, 200 lines; lines 10-12]",
        "10: line 10: value_10",
        "11: line 11: value_11",
        "12: line 12: value_12",
    ]


def test_the_lines_holding_a_text_case_insensitive() -> None:
    shown = answer(Asked("r-1", None, "VALUE_19"), TEXT, len(TEXT), ANSWER_BYTES)

    assert shown.splitlines()[1:] == ["19: line 19: value_19", *(f"{n}: line {n}: value_{n}" for n in range(190, 200))]


def test_a_range_that_is_no_range_shows_all_and_says_so() -> None:
    shown = answer(Asked("r-1", "the end", None), TEXT, len(TEXT), ANSWER_BYTES)

    assert "is no range like 120-180" in shown.splitlines()[0]
    assert shown.endswith(TEXT)


@pytest.mark.parametrize("cap", [MIN_ANSWER_BYTES, 2000])
def test_an_answer_is_cut_to_its_cap_with_a_note(cap: int) -> None:
    shown = answer(Asked("r-1", None, None), TEXT * 3, len(TEXT) * 3, cap)

    assert len(shown.encode()) <= cap
    assert shown.endswith("ask for lines or a pattern to see the rest.]")


def test_the_cap_follows_the_room_the_fit_left() -> None:
    assert cap_for(None) == ANSWER_BYTES
    assert cap_for(10) == MIN_ANSWER_BYTES
    assert cap_for(1000) == 3000
    assert cap_for(10**6) == ANSWER_BYTES


def test_arguments_that_are_not_strings_read_as_not_given() -> None:
    assert Asked.of({"handle": 7, "lines": "", "pattern": None}) == Asked("", None, None)
    assert Asked.of("r-1") == Asked("", None, None)


@pytest.mark.asyncio
async def test_the_store_is_bounded_in_entries_and_characters() -> None:
    store = RecallStore(max_entries=4, max_chars=100)
    store.keep("s", {f"r-{n}": "x" * 30 for n in range(3)}, lifetime=60)
    store.keep("s", {"r-big": "y" * 60}, lifetime=60)

    assert await store.get(None, "s", "r-0") is None  # the oldest went: 150 characters > 100
    assert await store.get(None, "s", "r-big") == ("y" * 60, 60)
    assert store.offered("s")
    assert not store.offered("other")


@pytest.mark.asyncio
async def test_a_text_too_long_is_stored_cut_and_says_how_long_it_was() -> None:
    store = RecallStore()
    store.keep("s", {"r-1": "z" * (ITEM_CHARS + 5)}, lifetime=60)

    text, chars = await store.get(None, "s", "r-1") or ("", 0)
    assert (len(text), chars) == (ITEM_CHARS, ITEM_CHARS)  # what is kept here is the cut text
    assert "only its first" in answer(Asked("r-1", None, None), text, ITEM_CHARS + 5, ANSWER_BYTES)
