"""The marker's digest, assembled from its atoms' lines and remembered, reads as the whole block read at once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from litellm_budget.core.api import FitRequest, fit_request
from litellm_budget.core.budget import BudgetSettings, limits_for
from litellm_budget.core.counting import counter_for, reset_counters
from litellm_budget.core.formats import format_named
from litellm_budget.core.policies import Derived, Ledger
from litellm_budget.core.wording import marker_digest, names_line, newest_within, shares, step_entries, step_names
from litellm_budget.tools.sessions import converted
from tests.support.builders import agent_session
from tests.support.strategies import conversations

SETTINGS = BudgetSettings()


def ledger_of(messages: list[dict[str, Any]], fmt_name: str = "chat", window: int = 8000) -> Ledger:
    fmt, counter = format_named(fmt_name), counter_for("gpt-4o")
    kinds = fmt.kinds(messages)
    return Ledger(
        messages=messages,
        kinds=kinds,
        counts=[fmt.count_message(counter, m) for m in messages],
        tools_and_priming=3,
        limits=limits_for(window, None, SETTINGS),
        settings=SETTINGS,
        counter=counter,
        format=fmt,
        derived=Derived(),
    )


def read_whole(ledger: Ledger, gone: list[int]) -> tuple[list[str], int]:
    """
    What the digest is, read from the whole block at once: ``step_entries`` of it within the
    digest's share, then the line of names within theirs, of what neither the lines, the system
    nor the task (the first user message) show.
    """
    limits = ledger.limits
    room = limits.window - limits.reserve - limits.margin
    messages, kinds = [ledger.messages[i] for i in gone], [ledger.kinds[i] for i in gone]
    cost = lambda line: ledger.counter.count_text(line) + 1  # noqa: E731
    lines = step_entries(ledger.format, messages, kinds, SETTINGS.digest_chars)
    lines_share, names_share = shares(ledger.settings)
    listed, unlisted = newest_within(lines, cost, int(room * lines_share))
    task = next((i for i, kind in enumerate(ledger.kinds) if kind == "user"), None)
    given = [i for i, kind in enumerate(ledger.kinds) if kind == "system" or i == task]
    shown = "\n".join([*listed, *(t for i in given for t in ledger.format.texts(ledger.messages[i]))])
    names = step_names(ledger.format, messages, kinds)
    line = names_line(names, shown, per_step=SETTINGS.names_per_step, cap=int(room * names_share), cost=cost)
    return [*listed, *([line] if line else [])], unlisted


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(conversations(), st.data())
def test_any_block_reads_as_the_whole_block(messages: list[dict[str, Any]], data: st.DataObject) -> None:
    """Runs of atoms (what policies drop) and arbitrary index sets alike: the same lines, the same count."""
    reset_counters()
    ledger = ledger_of(messages)
    atoms = ledger.layout.atoms
    if atoms and data.draw(st.booleans()):
        start = data.draw(st.integers(0, len(atoms) - 1))
        end = data.draw(st.integers(start + 1, len(atoms)))
        gone = sorted(i for atom in atoms[start:end] for i in atom)
    else:
        gone = sorted(data.draw(st.sets(st.integers(0, len(messages) - 1), min_size=1)))

    listed, unlisted = marker_digest(ledger, gone)

    assert (list(listed), unlisted) == read_whole(ledger, gone)


def test_a_call_answered_in_another_atom_is_read_whole() -> None:
    """A client that reuses a call id across steps: the block reads every answer to it, as before."""
    messages = agent_session(6, 300)
    reused = messages[2]["tool_calls"][0]["id"]
    messages[4]["tool_calls"][0]["id"] = reused
    messages[5]["tool_call_id"] = reused
    ledger = ledger_of(messages)
    gone = list(range(2, 6))

    assert list(marker_digest(ledger, gone)[0]) == read_whole(ledger, gone)[0]


@pytest.mark.parametrize("fmt_name", ["chat", "anthropic", "responses"])
def test_every_format_reads_the_same_digest(fmt_name: str) -> None:
    """Each format's blocks of atoms, through the memo, against the whole block read at once."""
    chat = agent_session(20, 600)
    messages = chat if fmt_name == "chat" else converted(chat, fmt_name)
    ledger = ledger_of(messages, fmt_name)
    for end in range(1, len(ledger.layout.atoms)):
        gone = sorted(i for atom in ledger.layout.atoms[:end] for i in atom)
        assert (list(marker_digest(ledger, gone)[0]), marker_digest(ledger, gone)[1]) == read_whole(ledger, gone)


def test_a_growing_session_reads_the_same_markers_warm_and_cold() -> None:
    """Every request of a growing session, fitted with warm memos and again from a cold start: the same."""
    session = agent_session(60, 900)
    requests = [session[:end] for end in range(4, len(session) + 1, 2)]
    warm = [fit_request(FitRequest(json.loads(json.dumps(r)), model="gpt-4o", window=6000)) for r in requests]
    cold = []
    for request in requests:
        reset_counters()
        cold.append(fit_request(FitRequest(json.loads(json.dumps(request)), model="gpt-4o", window=6000)))

    assert [f.messages for f in warm] == [f.messages for f in cold]
    assert [f.report.tokens_after for f in warm] == [f.report.tokens_after for f in cold]
