"""``benchmarks/evidence_bound.py``: its bound is above every pick of whole messages, and its oracle is one of them."""

from __future__ import annotations

import importlib
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
NAMES = ("alpha_1", "beta_2", "gamma_3", "delta_4", "eps_55")


@pytest.fixture(scope="module")
def bound() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    sys.modules.pop("evidence_bound", None)
    yield importlib.import_module("evidence_bound")
    sys.modules.pop("evidence_bound", None)
    sys.path.remove(str(BENCHMARKS))


def session_of(module: ModuleType, texts: list[str], sizes: list[int]) -> object:
    session = object.__new__(module.Session)
    session.texts, session.sizes = texts, sizes
    return session


messages = st.lists(
    st.tuples(st.sets(st.sampled_from(NAMES)), st.integers(min_value=1, max_value=40)), min_size=2, max_size=7
)


@given(messages=messages, room=st.integers(min_value=0, max_value=120), wanted=st.sets(st.sampled_from(NAMES)))
def test_the_bound_holds_over_every_pick_and_the_oracle_is_a_pick(
    bound: ModuleType, messages: list[tuple[set[str], int]], room: int, wanted: set[str]
) -> None:
    """Brute force over the sets of whole messages that fit: none keeps more than the bound, the oracle's is one."""
    texts = [" ".join(sorted(names)) for names, _ in messages]
    sizes = [size for _, size in messages]
    session = session_of(bound, texts, sizes)
    required = {len(messages) - 1}
    others = list(range(len(messages) - 1))
    strings = frozenset(wanted)
    oracle, upper = bound._oracle(session, required, others, strings, room)
    best = 0
    for count in range(len(others) + 1):
        for pick in itertools.combinations(others, count):
            if sum(sizes[i] for i in pick) <= room:
                haystack = " ".join(texts[i] for i in (*pick, *required))
                best = max(best, sum(s in haystack for s in strings))
    assert oracle <= best <= upper + 1e-9


def test_the_guesses_take_their_order_while_it_fits(bound: ModuleType) -> None:
    """A message too big for what is left is skipped, and a smaller one after it still goes in."""
    session = session_of(bound, ["task", "big alpha_1", "small beta_2", "tiny gamma_3", "question"], [5, 50, 10, 5, 5])
    kept = bound._guess(session, {0, 4}, [1, 2, 3], room=16)
    assert "beta_2" in kept
    assert "gamma_3" in kept
    assert "alpha_1" not in kept


def test_related_puts_what_the_newest_messages_name_first(bound: ModuleType) -> None:
    """Shared salient strings per token decide; among equals the newer message comes first."""
    texts = ["task", "edit alpha_1.py", "read beta_2.py", "read alpha_1.py again", "open alpha_1.py"]
    session = session_of(bound, texts, [5, 10, 10, 20, 5])
    session.salient = [frozenset(bound.salient_strings(text)) for text in texts]
    assert bound._related(session, length=5, others=[1, 2, 3], focus=1) == [1, 3, 2]
    assert bound._related(session, length=5, others=[1, 2, 3], focus=5) == [2, 1, 3]
