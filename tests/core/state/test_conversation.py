"""Conversation state: the last edits kept exactly while they fit; drops and elisions only grow."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from litellm_budget import BudgetSettings
from litellm_budget.core import MEMOS, parse_ranges
from litellm_budget.core.api import FitRequest, Fitted, fit_request
from litellm_budget.core.budget import limits_for
from litellm_budget.core.counting import counter_for
from litellm_budget.core.formats import CHAT, format_named
from litellm_budget.core.policies import Ledger, SentEdits
from litellm_budget.core.state import _conversation as conversation  # private: tests patch its _KeptDraft
from litellm_budget.core.state import edits_sent, history_digest
from litellm_budget.core.validity import chat_unsupported as unsupported_reason
from litellm_budget.tools.sessions import converted, requests_of
from tests.conftest import SessionSet
from tests.support.builders import agent_session, tokens_of, user
from tests.support.strategies import conversations

COUNTER = counter_for("gpt-4o")


def replay(
    requests: list[list[dict[str, Any]]],
    *,
    window: int,
    stateful: bool,
    ratios: list[float] | None = None,
    **knobs: Any,
) -> list[tuple[list[dict[str, Any]], Fitted]]:
    """Fit each request in order, handing each the edits sent for the one before (when ``stateful``)."""
    settings = BudgetSettings(**knobs)
    out: list[tuple[list[dict[str, Any]], Fitted]] = []
    previous: SentEdits | None = None
    for number, request in enumerate(requests):
        ratio = ratios[number] if ratios else 1.0
        fitted = fit_request(
            FitRequest(
                request,
                model="gpt-4o",
                window=window,
                settings=settings,
                ratio=ratio,
                previous=previous if stateful else None,
            )
        )
        out.append((request, fitted))
        previous = edits_sent(request, fitted.report)
    return out


def prefix_breaks(outcomes: list[tuple[list[dict[str, Any]], Fitted]]) -> int:
    """Requests whose prompt does not start with the whole previous prompt (a prompt-cache miss)."""
    breaks = 0
    for (_, before), (_, after) in itertools.pairwise(outcomes):
        sent, now = before.messages, after.messages
        breaks += now[: len(sent)] != sent
    return breaks


def shrinks(outcomes: list[tuple[list[dict[str, Any]], Fitted]]) -> int:
    """Requests whose dropped or elided set lost something the request before had."""
    count, dropped, elided = 0, set[int](), set[int]()
    for _, fitted in outcomes:
        now_dropped = set(parse_ranges(fitted.report.dropped_at))
        now_elided = set(parse_ranges(fitted.report.elided_at))
        count += not (now_dropped >= dropped and now_elided >= elided - now_dropped)
        dropped, elided = now_dropped, now_elided
    return count


def growing(steps: int, output_tokens: int = 900) -> list[list[dict[str, Any]]]:
    """Every request of one agent session: the history before each assistant step."""
    session = agent_session(steps, output_tokens)
    return [session[:end] for end in range(3, len(session) + 1) if session[end - 1]["role"] != "assistant"]


class TestKeptEdits:
    def test_the_same_request_twice_is_fitted_the_same_whatever_the_ratio_did(self) -> None:
        """The reported bug: one response moved the learned ratio ~1% and the refit dropped 1.5k more."""
        request = agent_session(14, 700)
        first = fit_request(FitRequest(request, model="gpt-4o", window=8000, ratio=1.0))
        assert first.report.action == "trimmed"
        again = fit_request(
            FitRequest(request, model="gpt-4o", window=8000, ratio=1.012, previous=edits_sent(request, first.report))
        )
        assert again.messages == first.messages
        assert again.report.edits_kept

    def test_a_continuation_keeps_the_edits_while_they_fit(self) -> None:
        requests = growing(30)
        outcomes = replay(requests, window=12_000, stateful=True)
        kept = [fitted.report.edits_kept for _, fitted in outcomes]
        assert any(kept), "some request should have kept the edits of the one before"
        for (_, before), (_, after) in itertools.pairwise(outcomes):
            if after.report.edits_kept:
                assert after.messages[: len(before.messages)] == before.messages

    def test_drops_and_elisions_only_grow(self) -> None:
        outcomes = replay(growing(60, 1200), window=4000, stateful=True)
        assert shrinks(outcomes) == 0
        assert max(fitted.report.dropped_messages for _, fitted in outcomes) > 0

    def test_a_rewritten_history_is_fitted_afresh(self) -> None:
        request = agent_session(14, 700)
        first = fit_request(FitRequest(request, model="gpt-4o", window=8000))
        rewritten = [*request[:-1], user("Something else entirely.")]
        stale = edits_sent(request, first.report)
        fresh = fit_request(FitRequest(rewritten, model="gpt-4o", window=8000))
        stateful = fit_request(FitRequest(rewritten, model="gpt-4o", window=8000, previous=stale))
        assert stateful.messages == fresh.messages
        assert not stateful.report.edits_kept

    def test_kept_edits_that_no_longer_fit_grow(self) -> None:
        request = agent_session(14, 700)
        first = fit_request(FitRequest(request, model="gpt-4o", window=8000))
        longer = agent_session(20, 700)
        grown = fit_request(FitRequest(longer, model="gpt-4o", window=8000, previous=edits_sent(request, first.report)))
        assert set(parse_ranges(grown.report.dropped_at)) >= set(parse_ranges(first.report.dropped_at))
        assert tokens_of(grown.messages) <= 8000
        assert unsupported_reason(grown.messages, None, None) is None

    def test_a_short_request_after_edits_keeps_them(self) -> None:
        """Edits stay put even when the request would fit untouched now (a lower ratio): the prefix holds."""
        request = agent_session(14, 700)
        first = fit_request(FitRequest(request, model="gpt-4o", window=8000))
        again = fit_request(
            FitRequest(request, model="gpt-4o", window=8000, ratio=0.5, previous=edits_sent(request, first.report))
        )
        assert again.messages == first.messages


class TestSentEdits:
    def test_round_trip_through_a_shared_cache(self) -> None:
        edits = SentEdits(messages=9, digest="9:ab", dropped=(2, 3), dropped_units=1, elided=(5,))
        assert SentEdits.from_dict(edits.as_dict()) == edits
        assert SentEdits.from_dict(json.loads(json.dumps(edits.as_dict()))) == edits  # as Redis holds it
        assert set(edits.as_dict()) == {field.name for field in dataclasses.fields(SentEdits)}  # every field

    @pytest.mark.parametrize("junk", [None, 3, "x", {}, {"messages": "many"}, {"messages": 1, "digest": "d"}])
    def test_junk_from_a_cache_is_no_state(self, junk: object) -> None:
        assert SentEdits.from_dict(junk) is None

    def test_digest_reads_the_last_message_and_the_count(self) -> None:
        messages = agent_session(3)
        assert history_digest(messages, 4) == history_digest([*messages[:4], user("new")], 4)
        assert history_digest(messages, 4) != history_digest(messages, 5)
        assert history_digest(messages, 99).endswith(":")

    def test_nothing_to_remember_of_a_rejection(self) -> None:
        request = agent_session(3)
        rejected = fit_request(FitRequest(request, model="gpt-4o", window=40))
        assert rejected.report.action == "rejected"
        assert edits_sent(request, rejected.report) is None


@pytest.mark.sessions
@pytest.mark.parametrize("window", [8000, 16_000])
def test_every_session_only_grows_its_edits(session_set: SessionSet, window: int) -> None:
    """Stateless, drops shrank in some sessions (an extra block for one heavy step); with state never."""
    invalid = shrunk = 0
    for messages in session_set.sessions.values():
        outcomes = replay(list(requests_of(messages)), window=window, stateful=True)
        shrunk += shrinks(outcomes)
        invalid += sum(unsupported_reason(f.messages, None, None) is not None for _, f in outcomes)
        assert all(f.report.action in {"trimmed", "passthrough"} for _, f in outcomes)
    assert (shrunk, invalid) == (0, 0)


@pytest.mark.sessions
def test_a_drifting_ratio_does_not_move_the_edits(replay_set: SessionSet) -> None:
    """The learned ratio wanders by 1% per request: with state, no more cache misses than with a fixed ratio."""
    rng = random.Random(7)
    extra = 0
    for messages in replay_set.sessions.values():
        requests = list(requests_of(messages))
        ratios = [1.0]
        for _ in requests[1:]:
            ratios.append(min(1.1, max(0.9, ratios[-1] * rng.choice((0.99, 1.01)))))
        steady = replay(requests, window=16_000, stateful=True)
        drifting = replay(requests, window=16_000, stateful=True, ratios=ratios)
        assert shrinks(drifting) == 0
        extra += prefix_breaks(drifting) - prefix_breaks(steady)
    assert extra <= 0


class TestConversationKey:
    @pytest.mark.parametrize("messages", [[{"content": "no role"}], ["not a dict"], [{"role": "user"}, 7]])
    def test_a_malformed_request_has_no_conversation(self, messages: list[Any]) -> None:
        """The core reports it as unsupported; naming its conversation must not raise first."""
        from litellm_budget.adapter.records.conversations import conversation_key
        from litellm_budget.core.formats import CHAT

        assert conversation_key("gpt-4o", CHAT, messages) is None

    def test_the_key_names_model_system_and_task(self) -> None:
        from litellm_budget.adapter.records.conversations import conversation_key
        from litellm_budget.core.formats import CHAT

        session = agent_session(3)
        key = conversation_key("gpt-4o", CHAT, session)
        assert key is not None
        assert key == conversation_key("gpt-4o", CHAT, session[:3])
        assert key != conversation_key("gpt-4o-mini", CHAT, session)
        assert key != conversation_key("gpt-4o", CHAT, [session[0], user("Another task."), *session[2:]])
        assert conversation_key("gpt-4o", CHAT, [session[0]]) is None


@pytest.mark.sessions
@pytest.mark.parametrize(
    "case",
    [
        ("chat", 8000, {}, False),
        ("chat", 16_000, {}, False),
        ("chat", 16_000, {"marker_placement": "leading_system", "elide_min_tokens": 250, "digest_chars": 0}, False),
        ("chat", 32_000, {"outline_chars": 640}, False),
        ("chat", 8000, {"policy": "plan"}, False),
        ("chat", 16_000, {"policy": "elide"}, False),
        ("chat", 4000, {}, True),
        ("chat", 16_000, {}, True),
        ("anthropic", 16_000, {}, True),
        ("responses", 16_000, {}, False),
    ],
)
def test_kept_edits_carried_from_the_last_request_are_those_made_afresh(
    session_set: SessionSet,
    case: tuple[str, int, dict[str, Any], bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """
    A conversation's kept draft is made once per edits and extended by each request after: every
    request's fit, sent messages and report, is the one made with nothing carried over; also where
    the learned token ratio, and with it the budget, moves on every request (``drift``).
    """
    fmt, window, knobs, drift = case
    carried = []
    original = conversation._KeptDraft.extended

    def spied(self: conversation._KeptDraft, ledger: Any) -> Any:
        draft = original(self, ledger)
        carried.append(draft is not None)
        return draft

    monkeypatch.setattr(conversation._KeptDraft, "extended", spied)
    settings = BudgetSettings(**knobs)
    rng = random.Random(5)
    for messages in session_set.sessions.values():
        previous = None
        for request in requests_of(messages):
            wire = json.dumps(converted(request, fmt))
            fit = functools.partial(
                FitRequest,
                model="gpt-4o",
                window=window,
                settings=settings,
                fmt=format_named(fmt),
                previous=previous,
                ratio=rng.uniform(0.95, 1.05) if drift else None,
            )
            carried_fit = fit_request(fit(json.loads(wire)))
            MEMOS.kept_drafts.clear()  # this fit makes its kept draft afresh, and leaves it to the next request
            fresh = fit_request(fit(json.loads(wire)))
            assert carried_fit.messages == fresh.messages
            assert dataclasses.replace(carried_fit.report, duration_ms=0) == dataclasses.replace(
                fresh.report, duration_ms=0
            )
            previous = edits_sent(json.loads(wire), carried_fit.report)
    # The requests that keep their edits carried them (92 at 32k, the fewest), but at 4k with a drifting
    # budget: there the elision threshold is a share of it, and the draft is made afresh as it moves.
    least = 0 if window < 8000 else LEAST_CARRIED[session_set.name]
    assert sum(carried) > least


#: Requests that must have carried their kept draft, from 8k up: the shared sessions' 785 requests
#: carry 92 at the fewest (32k); this repository's made sessions' 151 carry 13 at the fewest (32k,
#: where only the shell session outgrows the window), 26 to 49 below it.
LEAST_CARRIED = {"shared": 50, "made": 10}


def test_a_carried_kept_draft_sends_its_own_copies_of_the_edited_messages() -> None:
    """What happens to a sent request's dicts (LiteLLM may add to them) never reaches the next request."""
    requests = list(requests_of(agent_session(30, 800)))
    outcomes = replay(requests, window=16_000, stateful=True)
    at = next(
        number
        for number in range(1, len(outcomes) - 1)
        if outcomes[number][1].report.edits_kept and outcomes[number + 1][1].report.edits_kept
    )
    previous = edits_sent(requests[at - 1], outcomes[at - 1][1].report)
    MEMOS.kept_drafts.clear()
    first = fit_request(FitRequest(requests[at], model="gpt-4o", window=16_000, previous=previous))
    edited = [message for message in first.messages if not any(message is sent for sent in requests[at])]
    assert len(edited) > 1  # the placeholders' messages (and the user turn holding the marker)
    for message in edited:
        message["content"] = "changed after it was sent"

    second = fit_request(
        FitRequest(requests[at + 1], model="gpt-4o", window=16_000, previous=edits_sent(requests[at], first.report))
    )

    assert second.report.edits_kept
    assert second.messages == outcomes[at + 1][1].messages


@pytest.mark.parametrize(("window", "same"), [(16_000, True), (4000, False)])
def test_a_kept_draft_is_carried_across_a_moving_budget_where_it_reads_none_of_it(window: int, same: bool) -> None:
    """
    The learned ratio moves the budget on nearly every request: the kept draft reads it only through
    the elision threshold, a share of the budget under 5,556 tokens, so only there is it made afresh.
    """
    messages = agent_session(4, 300)
    counter, settings = counter_for("gpt-4o"), BudgetSettings()
    sent = SentEdits(messages=len(messages), digest="", elided=(3,))

    def key(ratio: float) -> object:
        kinds = CHAT.kinds(messages)
        ledger = Ledger(
            messages=messages,
            kinds=kinds,
            counts=[CHAT.count_message(counter, m) for m in messages],
            tools_and_priming=3,
            limits=limits_for(window, None, settings, ratio),
            settings=settings,
            counter=counter,
            format=CHAT,
            previous=sent,
        )
        return conversation._kept_key(ledger, sent)

    assert (key(1.0) == key(1.05)) is same


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversations(),
    st.sampled_from(["chat", "anthropic", "responses"]),
    st.sampled_from([4000, 8000, 16000]),
    st.sampled_from([{}, {"policy": "plan"}, {"policy": "elide"}, {"marker_placement": "leading_system"}]),
)
def test_any_conversation_gets_the_kept_edits_a_fresh_fit_makes(
    messages: list[dict[str, Any]], fmt: str, window: int, knobs: dict[str, Any]
) -> None:
    """The carried kept draft on generated conversations: system messages anywhere, images, a stray assistant."""
    settings_ = BudgetSettings(**knobs)
    previous = None
    for request in [*requests_of(messages), messages]:
        wire = json.dumps(converted(request, fmt))
        fit = functools.partial(
            FitRequest, model="gpt-4o", window=window, settings=settings_, fmt=format_named(fmt), previous=previous
        )
        carried = fit_request(fit(json.loads(wire)))
        MEMOS.kept_drafts.clear()
        fresh = fit_request(fit(json.loads(wire)))
        assert carried.messages == fresh.messages
        assert dataclasses.replace(carried.report, duration_ms=0) == dataclasses.replace(fresh.report, duration_ms=0)
        previous = edits_sent(json.loads(wire), carried.report)
