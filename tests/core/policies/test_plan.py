"""The plan policy: whole units newest first, drops in quantized blocks, one marker."""

from __future__ import annotations

import pytest

from litellm_budget import BudgetSettings, fit
from litellm_budget.core import parse_ranges
from litellm_budget.core.budget import limits_for
from litellm_budget.core.wording import NOTICE_PREFIX
from tests.support.builders import assistant, chat_session, system, text, tokens_of, tool_step, user

PLAN = BudgetSettings(policy="plan")


class TestReserve:
    @pytest.mark.parametrize(
        ("window", "expected"),
        [(100_000, 8192), (16_000, 4000), (800, 256)],
        ids=["capped", "quarter", "floor"],
    )
    def test_default_reserve(self, window: int, expected: int) -> None:
        """Plan holds back 25% of the window for the answer, at most 8192 and at least 256."""
        assert limits_for(window, None, PLAN).reserve == expected

    def test_client_max_tokens_is_the_reserve(self) -> None:
        """The client's own max_tokens replaces the default reserve."""
        assert limits_for(16_000, 1000, PLAN).reserve == 1000

    def test_elide_reserves_nothing_by_default(self) -> None:
        """Elide, as in its seed, keeps no room for the answer unless the client asks."""
        messages = chat_session(2, 50)

        report = fit(messages, model="gpt-4o", window=16_000, settings=BudgetSettings(policy="elide")).report
        asked = fit(messages, model="gpt-4o", window=16_000, max_tokens=500, settings=BudgetSettings(policy="elide"))

        assert report.reserve == 0
        assert asked.report.reserve == 500


class TestPlan:
    def test_marker_only_when_dropped_and_counted(self) -> None:
        """The marker appears exactly when something was dropped, as a user-side note after the system, counted."""
        messages = chat_session(30, 300)
        small = fit(messages, model="gpt-4o", window=100_000, settings=PLAN)
        window = tokens_of(messages) // 2

        fitted = fit(messages, model="gpt-4o", window=window, settings=PLAN)

        assert small.report.marker is False
        assert not any(NOTICE_PREFIX in str(m.get("content")) for m in small.messages)
        assert fitted.report.marker is True
        assert fitted.messages[0] is messages[0]
        assert fitted.messages[1]["role"] == "user"
        assert NOTICE_PREFIX in fitted.messages[1]["content"]
        assert fitted.report.tokens_after == tokens_of(fitted.messages)
        assert fitted.report.tokens_after <= fitted.report.budget

    def test_whole_turns_dropped_oldest_first(self) -> None:
        """Dropped messages are whole turns, oldest first; the kept history is a contiguous suffix."""
        messages = [system()]
        for turn in range(10):
            messages += [user(f"Task {turn}"), *tool_step(300, seed=turn), assistant(text(100, turn))]
        messages.append(user("Last?"))
        window = tokens_of(messages) // 2

        fitted = fit(messages, model="gpt-4o", window=window, settings=PLAN)

        dropped = parse_ranges(fitted.report.dropped_at)
        # The task (turn 0's question) is kept where it fits: then the rest of its turn goes.
        first = 2 if fitted.messages[1]["content"].startswith("Task 0") else 1
        assert dropped == list(range(first, dropped[-1] + 1))
        assert (dropped[-1] + 1 - 1) % 4 == 0  # whole turns of four: a question, a call, its result, an answer
        assert fitted.messages[-(len(messages) - dropped[-1] - 2) :] == messages[dropped[-1] + 2 :]

    def test_stray_leading_assistant_opens_no_turn(self) -> None:
        """An assistant message before any user message is a unit of its own, not part of the first turn."""
        messages = [system(), assistant(text(2000)), user("First question"), assistant("A1")]
        messages += [user("Second question"), assistant(text(200)), user("Third?")]
        window = tokens_of(messages) - 1000

        fitted = fit(messages, model="gpt-4o", window=window, settings=PLAN)

        assert fitted.report.dropped_at == "1"
        # The marker is a note merged into the first question that follows it.
        assert fitted.messages[1]["content"].startswith(NOTICE_PREFIX)
        assert fitted.messages[1]["content"].endswith("First question")
        assert fitted.messages[2:] == messages[3:]

    def test_question_cut_visibly_when_alone_too_big(self) -> None:
        """When system plus question overflow, the question is cut in the middle with a note, never silently."""
        question = text(6000)
        messages = [system(), user("Earlier"), assistant("Answer"), user(question)]

        fitted = fit(messages, model="gpt-4o", window=4000, settings=PLAN)

        last = fitted.messages[-1]["content"]
        assert fitted.report.cut == 1
        assert last.startswith(question[:100])
        assert last.endswith(question[-100:])
        assert "the gateway cut this message" in last
        assert fitted.report.tokens_after <= fitted.report.budget

    def test_max_tokens_lowered_when_it_would_overflow(self) -> None:
        """A client max_tokens that no longer fits beside the prompt is lowered to the room left."""
        messages = chat_session(3, 100)
        window = tokens_of(messages) + 500

        fitted = fit(messages, model="gpt-4o", window=window, max_tokens=900, settings=PLAN)

        assert fitted.max_tokens is not None
        assert fitted.max_tokens < 900
        assert fitted.report.tokens_after + fitted.max_tokens + fitted.report.margin <= window

    def test_drops_come_in_blocks(self) -> None:
        """As a chat grows one turn at a time, the dropped set changes only every few turns."""
        messages = chat_session(10, 300)[:-1]
        changes, previous = 0, None
        for turn in range(30):
            messages += [user(f"Q{turn}"), assistant(text(300, turn))]
            fitted = fit([*messages, user("Now?")], model="gpt-4o", window=6000, settings=PLAN)
            changes += previous is not None and fitted.report.dropped_at != previous
            previous = fitted.report.dropped_at
        assert 0 < changes <= 12


class TestLargeMaxTokens:
    def test_an_answer_asked_bigger_than_the_cap_holds_the_usual_reserve(self) -> None:
        """max_tokens above half the window (agent CLIs send their model's limit) holds the default reserve."""
        limits = limits_for(32_000, 32_000, BudgetSettings())

        assert limits.reserve == 8000

    def test_its_max_tokens_is_lowered_to_the_room_left(self) -> None:
        """The request then keeps far more of its history, and max_tokens says what room is left."""
        messages = chat_session(60, 400)

        fitted = fit(messages, model="gpt-4o", window=32_000, max_tokens=32_000)

        assert fitted.report.reserve == 8000
        assert fitted.max_tokens is not None
        assert 8000 <= fitted.max_tokens < 32_000
        assert fitted.report.tokens_after + fitted.max_tokens <= 32_000

    def test_an_answer_within_the_cap_is_the_reserve(self) -> None:
        """max_tokens at most half the window is held back in full, as before."""
        assert limits_for(32_000, 16_000, BudgetSettings()).reserve == 16_000
