"""The summarize step of the core: where a summary stands, what it costs, how a block is named."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from benchmarks.lab.replay import Session, Totals, replay_session, strategy_for
from benchmarks.lab.replay_summaries import SummarizingStrategy, offline_summary
from benchmarks.replay import main
from litellm_budget import BudgetSettings
from litellm_budget.core import BudgetReport, parse_ranges, unsent
from litellm_budget.core.api import FitRequest, Fitted, fit_request
from litellm_budget.core.formats import format_named
from litellm_budget.core.policies import DIGEST_CHARS, block_digest, summary_job
from litellm_budget.core.wording import CONTINUES, NOTICE_PREFIX, omitted_note
from litellm_budget.tools.sessions import converted, requests_of
from tests.conftest import SessionSet
from tests.support.builders import agent_session, chat_session, text, tokens_of
from tests.support.strategies import conversations

MODEL = "gpt-4o"
WITH_MODEL = BudgetSettings(summary_model="cheap-summarizer")
SUMMARY = "Task: fix the failing test. Decisions: patched parse(). Files: app/parse.py. Errors: none."


def fitted(
    messages: list[dict[str, Any]],
    options: BudgetSettings = WITH_MODEL,
    summaries: dict[str, str] | None = None,
    *,
    window: int = 8000,
    fmt: str = "chat",
) -> Fitted:
    return fit_request(
        FitRequest(messages, model=MODEL, window=window, settings=options, summaries=summaries, fmt=format_named(fmt))
    )


def with_summary(messages: list[dict[str, Any]], summary: str = SUMMARY, **kwargs: Any) -> tuple[Fitted, Fitted]:
    """The fit that asks for a summary, and the fit once it is known (as the plugin does it)."""
    first = fitted(messages, **kwargs)
    assert first.report.summary_needed is not None
    return first, fitted(messages, summaries={first.report.summary_needed: summary}, **kwargs)


def notice_index(messages: list[Any], needle: str) -> int:
    return next(i for i, m in enumerate(messages) if needle in json.dumps(m))


@pytest.mark.parametrize("fmt", ["chat", "anthropic", "responses"])
@pytest.mark.parametrize("policy", ["auto", "plan", "summarize"])
def test_summary_stands_where_the_marker_was(fmt: str, policy: str) -> None:
    """Same units dropped, same place, a message the format accepts, saying what it covers."""
    session = converted(agent_session(40, 400) if policy != "plan" else chat_session(30, 400), fmt)
    options = BudgetSettings(policy=policy, summary_model="cheap-summarizer")  # type: ignore[arg-type]
    first, second = with_summary(session, options=options, fmt=fmt)

    marked, summed = first.report, second.report
    assert (marked.marker, marked.summarized, summed.marker, summed.summarized) == (True, False, True, True)
    assert summed.dropped_at == marked.dropped_at
    assert summed.elided_at == marked.elided_at
    assert summed.summary_needed is None
    assert summed.summary_failed is None
    at = notice_index(first.messages, "earlier messages were omitted")
    assert notice_index(second.messages, SUMMARY) == at
    notice = second.messages[at]
    words = f"the {marked.dropped_messages} earlier messages of this conversation ({marked.dropped_units} exchanges)"
    assert words in json.dumps(notice)
    assert "The conversation continues below." in json.dumps(notice)
    assert format_named(fmt).unsupported_reason(second.messages, None, None) is None
    if fmt == "anthropic":
        # A user text block (merged with the task it follows), as the Messages API requires.
        assert notice["role"] == "user"
        assert any(b["type"] == "text" and SUMMARY in b["text"] for b in notice["content"])
        roles = [m["role"] for m in second.messages[1:]]
        assert roles[0] == "user"
        assert all(a != b for a, b in itertools.pairwise(roles))
    assert summed.tokens_after <= summed.budget  # type: ignore[operator]
    assert 0 < summed.summary_tokens < 200


def test_a_known_summary_keeps_the_prefix_byte_stable() -> None:
    """Once a block's summary is known, the next requests of the conversation send it unchanged."""
    session = agent_session(60, 300)
    first, second = with_summary(session[:-6])
    later = fitted(session[:-4], summaries={first.report.summary_needed or "": SUMMARY})

    assert later.report.summarized
    assert later.report.dropped_at == second.report.dropped_at
    at = notice_index(second.messages, SUMMARY)
    assert later.messages[: at + 1] == second.messages[: at + 1]


def test_a_big_summary_is_shortened_to_its_allowance_and_the_budget_holds() -> None:
    """A summary longer than summary_max_tokens is cut the same way every time; nothing overflows."""
    session = agent_session(40, 400)
    _, second = with_summary(session, summary=text(5000))

    report = second.report
    assert report.summarized
    assert report.tokens_after <= report.budget  # type: ignore[operator]
    assert WITH_MODEL.summary_max_tokens < report.summary_tokens <= WITH_MODEL.summary_max_tokens + 80
    assert " [...]" in json.dumps(second.messages)
    assert with_summary(session, summary=text(5000))[1].messages == second.messages


def test_without_a_summary_model_auto_and_plan_are_unchanged() -> None:
    """No summary_model: the marker, no digest asked, summaries ignored, the same bytes."""
    for policy in ("auto", "plan", "elide"):
        options = BudgetSettings(policy=policy)  # type: ignore[arg-type]
        session = agent_session(40, 400)
        plain = fitted(session, options)
        needed = fitted(session, BudgetSettings(policy="summarize")).report.summary_needed
        given = fitted(session, options, summaries={needed or "": SUMMARY})

        assert json.dumps(given.messages) == json.dumps(plain.messages)
        assert given.report.as_dict() | {"duration_ms": 0} == plain.report.as_dict() | {"duration_ms": 0}
        report = plain.report
        assert (report.summarized, report.summary_needed, report.summary_tokens, report.summary_failed) == (
            False,
            None,
            0,
            None,
        )
        if report.dropped_messages:
            head = omitted_note(report.dropped_messages, report.dropped_units).removesuffix(CONTINUES)
            assert any(head in str(m.get("content")) for m in plain.messages)


def test_summarize_without_a_model_says_so_and_sends_the_marker() -> None:
    """The summarize policy degrades loudly: the marker, and the reason in the report."""
    report = fitted(agent_session(40, 400), BudgetSettings(policy="summarize")).report

    assert report.marker
    assert not report.summarized
    assert report.summary_failed == "summary_model not configured"
    assert report.summary_needed is not None
    assert len(report.summary_needed) == DIGEST_CHARS


def test_no_room_for_a_summary_means_none_is_asked_for() -> None:
    """A final step so heavy that only the marker fits beside it: no call would help."""
    session = [*agent_session(6, 300), {"role": "user", "content": text(5500)}]
    report = fitted(session).report

    assert report.marker
    assert report.summary_needed is None
    assert report.summary_failed == "no room for a summary"


def test_unsent_reports_claim_no_summary() -> None:
    """A rejected or deferred request sent nothing, so no summary either."""
    report = BudgetReport(
        model=MODEL, policy="auto", action="trimmed", summarized=True, summary_tokens=90, summary_needed="ab"
    )
    gone = unsent(report, "deferred", "a bigger fallback")

    assert (gone.summarized, gone.summary_tokens, gone.summary_needed, gone.summary_failed) == (False, 0, None, None)


class TestDigests:
    def test_a_block_is_named_by_its_messages_in_canonical_json(self) -> None:
        """sha256 of the messages as one canonical JSON list, whatever the key order."""
        messages = [{"role": "user", "content": "a"}, {"content": "b", "role": "assistant"}]
        canonical = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

        assert block_digest(messages) == hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_CHARS]
        assert block_digest([dict(reversed(list(m.items()))) for m in messages]) == block_digest(messages)

    def test_same_block_same_digest_and_one_more_unit_another(self) -> None:
        """The next request drops the same block: same digest; a block one unit longer: a new one."""
        session = agent_session(80, 300)
        reports = [fitted(session[:end]).report for end in range(20, len(session) + 1, 2)]
        blocks = [r for r in reports if r.summary_needed]
        pairs = list(itertools.pairwise(blocks))
        same = [(a, b) for a, b in pairs if a.dropped_at == b.dropped_at]
        grown = [(a, b) for a, b in pairs if a.dropped_at != b.dropped_at]

        assert same
        assert grown
        assert all(a.summary_needed == b.summary_needed for a, b in same)
        assert all(b.summary_needed not in {None, a.summary_needed} for a, b in grown)

    def test_a_longer_block_leads_with_the_shorter_ones_digest(self) -> None:
        """summary_job's leading digests hold the earlier block's, so its summary can be extended."""
        session = agent_session(80, 300)
        reports = [fitted(session[:end]).report for end in range(10, len(session) + 1, 2)]
        blocks = [r for r in reports if r.summary_needed]
        first = blocks[0]
        longer = next(r for r in blocks if r.dropped_messages > first.dropped_messages)
        end = 10 + 2 * reports.index(longer)
        job = summary_job(session[:end], format_named("chat"), parse_ranges(longer.dropped_at))

        assert job.digest == longer.summary_needed
        assert (first.dropped_messages, first.summary_needed) in job.leading
        assert [count for count, _ in job.leading] == sorted((count for count, _ in job.leading), reverse=True)
        assert job.messages[: first.dropped_messages] == tuple(session[i] for i in parse_ranges(first.dropped_at))


class TestSettings:
    def test_summary_settings_are_checked(self) -> None:
        for bad in ({"summary_model": ""}, {"summary_timeout": 0}, {"summary_max_tokens": 0}):
            with pytest.raises(ValueError, match="summary_"):
                BudgetSettings(**bad)  # type: ignore[arg-type]

    def test_summary_settings_read_from_yaml(self) -> None:
        updated = BudgetSettings().updated({"summary_model": "cheap", "summary_timeout": 2, "summary_max_tokens": 300})

        assert (updated.summary_model, updated.summary_timeout, updated.summary_max_tokens) == ("cheap", 2.0, 300)
        assert updated.updated({"summary_model": None}).summary_model is None


SIZES = st.sampled_from([1, 40, 300, 700, 3000])


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    messages=conversations(),
    policy=st.sampled_from(["auto", "plan", "summarize"]),
    window=st.integers(300, 40_000),
    size=SIZES,
)
def test_invariants_with_summaries(messages: list[dict[str, Any]], policy: str, window: int, size: int) -> None:
    """Fits or rejects; pairs valid; input kept; deterministic given the summaries; same drops; no cut."""
    options = BudgetSettings(policy=policy, summary_model="cheap")  # type: ignore[arg-type]
    snapshot = copy.deepcopy(messages)
    first = fitted(messages, options, window=window)
    needed = first.report.summary_needed
    summaries = {needed: text(size, seed=size)} if needed else {}
    result = fitted(messages, options, summaries, window=window)
    report = result.report
    event(f"{policy}:{report.action}:{'summarized' if report.summarized else 'marker'}")

    assert messages == snapshot
    assert (report.action == "rejected") == (first.report.action == "rejected")
    if report.action != "rejected":
        assert report.tokens_after <= report.budget  # type: ignore[operator]
        assert report.tokens_after == tokens_of(result.messages)
        assert format_named("chat").unsupported_reason(result.messages, None, result.max_tokens) is None
        systems = [m for m in messages if m["role"] == "system"]
        assert [m for m in result.messages if m in systems] == systems
        assert report.summarized == any(
            NOTICE_PREFIX in str(m.get("content")) and "summarized:" in str(m) for m in result.messages
        )
    plain = fitted(messages, BudgetSettings(policy="auto" if policy == "summarize" else policy), window=window)  # type: ignore[arg-type]
    # Asking for a summary sends exactly what markers alone would; a summary drops the same units.
    assert first.messages == plain.messages
    if report.summarized:
        assert report.dropped_at == plain.report.dropped_at
    if plain.report.action != "rejected" and not plain.report.cut:
        assert report.action != "rejected"
        assert not report.cut
    again = fitted(copy.deepcopy(messages), options, dict(summaries), window=window)
    assert again.messages == result.messages
    assert again.report.as_dict() | {"duration_ms": 0} == report.as_dict() | {"duration_ms": 0}


@pytest.mark.sessions
@pytest.mark.parametrize("fmt", ["chat", "anthropic", "responses"])
def test_sessions_with_summaries_fit_and_stay_valid(replay_set: SessionSet, fmt: str) -> None:
    """Every request of the agent sessions at 8k, summarized: under budget, valid, summary where it was asked."""
    options = BudgetSettings(policy="summarize", summary_model="cheap")
    checks = format_named(fmt)
    summarized = 0
    for messages in replay_set.sessions.values():
        known: dict[str, str] = {}
        for request in requests_of(messages):
            listed = converted(request, fmt)
            first = fitted(listed, options, known, fmt=fmt)
            if first.report.summary_needed:
                known[first.report.summary_needed] = text(150, seed=len(known))
            result = fitted(listed, options, known, fmt=fmt)
            report = result.report
            assert report.action != "rejected"
            assert report.tokens_after <= report.budget  # type: ignore[operator]
            assert checks.unsupported_reason(result.messages, None, None) is None
            summarized += report.summarized
    print(f"{replay_set.name} {fmt}: {summarized} summarized")  # the figure, shown with -s
    # The made sessions' 151 requests (this test with -s, no ../shared/sessions) sent a summary in 54
    # (chat), 56 (Anthropic) and 55 (Responses).
    assert summarized > {"shared": 100, "made": 48}[replay_set.name]


class TestReplay:
    def test_the_offline_summary_is_fixed_and_made_once_per_block(self) -> None:
        """Same digest, same text; a replayed session makes one summary per dropped block."""
        assert offline_summary("ab" * 16) == offline_summary("ab" * 16) != offline_summary("cd" * 16)
        strategy = strategy_for("summarize", MODEL, 6000)
        assert isinstance(strategy, SummarizingStrategy)
        strategy.start_session("one")

        rows = replay_session(Session("one", requests_of(agent_session(40, 400))), strategy, model=MODEL, window=6000)

        stats = strategy.totals()
        (session,) = stats["summary_sessions"]
        assert session["calls"] == stats["summary_calls"] > 0
        assert 0 < session["summarized"] <= session["requests"] == len(rows)
        assert stats["summary_tokens"] > 0
        assert not any(row.overflow or row.invalid for row in rows)

    def test_replay_reports_summaries_per_session(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """replay --policy summarize,plan+summaries: calls and tokens in the JSON, a table per session."""
        for number in range(2):
            session = {"source": "test", "messages": agent_session(40, 500)}
            (tmp_path / f"s{number}.json").write_text(json.dumps(session))
        argv = [str(tmp_path), "--model", MODEL, "--window", "4000", "--no-progress"]

        assert main([*argv, "--policy", "auto,summarize,plan+summaries", "--json"]) == 0
        results = {r["strategy"]: r for r in json.loads(capsys.readouterr().out)["results"]}
        assert "summary_calls" not in results["auto"]
        for name in ("summarize", "plan+summaries"):
            assert [s["session"] for s in results[name]["summary_sessions"]] == ["s0", "s1"]
            assert results[name]["summary_calls"] > 0
        assert main([*argv, "--policy", "summarize"]) == 0
        assert "summaries per session" in capsys.readouterr().out


@pytest.mark.sessions
@pytest.mark.parametrize("window", [8000, 16_000])
def test_summaries_keep_the_prefix_reuse_of_markers(replay_set: SessionSet, window: int) -> None:
    """On the agent sessions, summarize reuses the prompt prefix at least as well as auto's markers, less 0.01."""
    reuse = {}
    for name in ("auto", "summarize"):
        totals = Totals()
        strategy = strategy_for(name, MODEL, window)
        for session, messages in replay_set.sessions.items():
            if isinstance(strategy, SummarizingStrategy):
                strategy.start_session(session)
            totals.add_session(
                replay_session(Session(session, requests_of(messages)), strategy, model=MODEL, window=window), window
            )
        reuse[name] = totals.summary()["reuse"]
        assert totals.overflow == totals.invalid == totals.counts.rejected == 0
    assert reuse["summarize"] >= reuse["auto"] - 0.01
