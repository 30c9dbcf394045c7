"""LiteLLM's ``compress()`` as a replay peer, and retrievable recall: evidence sent, or stored under a name sent."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.lab import compress_peer
from benchmarks.lab.evidence import Evidence, recall_of
from benchmarks.lab.outcome import with_stored
from benchmarks.lab.peers import prompt_budget
from benchmarks.lab.replay import Session, Totals, replay_session, strategy_for
from litellm_budget import BudgetSettings
from litellm_budget.tools.replay import Outcome
from tests.support.builders import agent_session, chat_session, user

WINDOW = 8000


def test_with_auto_s_budget_it_compresses_and_stores_what_its_stubs_name() -> None:
    messages = chat_session(20, 900)
    outcome = strategy_for("litellm_compress_budget", "gpt-4o", WINDOW)(messages)

    assert outcome.stored
    assert outcome.messages is not None
    sent = json.dumps(outcome.messages)
    assert all(key in sent for key in outcome.stored)
    assert set(outcome.stored.values()) <= {m["content"] for m in messages}


def test_with_its_defaults_it_sends_an_8k_request_as_it_came() -> None:
    """Its default trigger is 200,000 tokens: a request past an 8k window goes as it came, and overflows."""
    messages = chat_session(20, 900)
    outcome = strategy_for("litellm_compress", "gpt-4o", WINDOW)(messages)

    assert outcome.messages == messages
    assert outcome.stored == {}


def test_a_request_it_raises_on_is_sent_as_it_came_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    def raising(**_: Any) -> None:
        raise TypeError("content is None")

    monkeypatch.setattr(litellm, "compress", raising)
    monkeypatch.setattr(compress_peer, "FAILURES", compress_peer.FAILURES.copy())
    messages = agent_session(3, 100)

    outcome = strategy_for("litellm_compress_budget", "gpt-4o", 1234)(messages)

    assert outcome.messages == messages
    assert compress_peer.FAILURES[("litellm_compress_budget", 1234)] == 1
    assert "raised on (sent as they came) 1,234: 1 (TypeError)" in compress_peer.describe_compress(
        "litellm_compress_budget", [1234]
    )
    assert f"{prompt_budget(1234):,}" in compress_peer.describe_compress("litellm_compress_budget", [1234])


def test_retrievable_recall_counts_what_a_named_store_holds() -> None:
    evidence = Evidence(learned=frozenset({"query.py", "QuerySet"}), old=frozenset({"query.py"}))
    sent = [user("see QuerySet")]
    outcome = Outcome(sent, "trimmed", stored={"r-1": "in django/db/models/query.py"})

    assert recall_of(evidence, outcome.messages).kept == 1
    assert recall_of(evidence, with_stored(outcome)).kept == 2
    assert recall_of(evidence, with_stored(Outcome(None, "rejected", stored={"r-1": "query.py"}))).kept == 0


@pytest.mark.parametrize("recall", [False, True])
def test_our_policies_report_retrievable_recall_only_with_recall_on(recall: bool) -> None:
    messages = agent_session(30, 900)
    answer = {"role": "assistant", "content": "done"}
    session = Session("s", [messages, [*messages, answer, user("more")]], [Evidence(), Evidence()])
    settings = BudgetSettings(recall_tool=recall)
    totals = Totals()
    totals.add_session(
        replay_session(session, strategy_for("auto", "gpt-4o", WINDOW, settings), model="gpt-4o", window=WINDOW), WINDOW
    )

    summary = totals.summary()

    assert ("retrievable_recall" in summary) is recall
