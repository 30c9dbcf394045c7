"""Markers placed where strict chat templates of local models accept them (Qwen's, Mistral's, Gemma's)."""

from __future__ import annotations

from typing import Any

import pytest

from litellm_budget import BudgetSettings, fit
from litellm_budget.core.api import FitRequest, fit_request
from litellm_budget.core.formats import CHAT
from litellm_budget.core.wording import NOTICE_PREFIX
from litellm_budget.tools.replay import Remembered
from litellm_budget.tools.sessions import requests_of
from tests.conftest import SessionSet
from tests.support.builders import assistant, system, text, tool_step, user
from tests.support.chat_templates import TEMPLATES, renders


def chat(turns: int) -> list[dict[str, Any]]:
    messages = [system()]
    for turn in range(turns):
        messages += [user(f"Question {turn}?"), assistant(text(300, turn))]
    return [*messages, user("And now?")]


class TestTheTemplates:
    """The strict templates refuse what their models refuse, so the tests below can fail."""

    def test_a_system_message_after_the_conversation_began(self) -> None:
        late = [system(), user("a"), system("late"), assistant("b"), user("c")]

        assert [renders(name, late) for name in TEMPLATES] == [False, False, False]

    def test_two_user_turns_in_a_row(self) -> None:
        doubled = [system(), user("a"), user("b")]

        assert (renders("alternating", doubled), renders("system_first", doubled)) == (False, True)

    def test_an_agent_loop_alternates_with_its_calls_set_aside(self) -> None:
        loop = [system(), user("task"), *tool_step(5), *tool_step(5), assistant("done"), user("thanks")]

        assert all(renders(name, loop) for name in TEMPLATES)


class TestPlacement:
    def test_by_default_the_marker_is_a_note_in_a_user_turn(self) -> None:
        """plan drops whole turns: the note joins the kept task and the first kept question, so turns alternate."""
        messages = chat(30)

        fitted = fit(messages, model="gpt-4o", window=4000, settings=BudgetSettings(policy="plan"))

        assert all(renders(name, fitted.messages) for name in TEMPLATES)
        noted = [m for m in fitted.messages if NOTICE_PREFIX in str(m.get("content"))]
        assert [m["role"] for m in noted] == ["user"]
        assert fitted.messages[-1] is messages[-1]

    def test_a_system_message_where_asked(self) -> None:
        """system_message: OpenAI takes a system message anywhere; strict templates refuse it."""
        options = BudgetSettings(policy="plan", marker_placement="system_message")

        fitted = fit(chat(30), model="gpt-4o", window=4000, settings=options)

        assert any(m["role"] == "system" and NOTICE_PREFIX in m["content"] for m in fitted.messages[1:])
        assert not renders("system_first", fitted.messages)

    def test_the_leading_system_text_where_asked(self) -> None:
        options = BudgetSettings(policy="plan", marker_placement="leading_system")
        messages = chat(30)

        fitted = fit(messages, model="gpt-4o", window=4000, settings=options)

        assert fitted.messages[0]["content"].startswith(messages[0]["content"] + "\n\n" + NOTICE_PREFIX)
        assert all(NOTICE_PREFIX not in str(m.get("content")) for m in fitted.messages[1:])
        assert all(renders(name, fitted.messages) for name in TEMPLATES)

    def test_a_note_at_the_end_of_the_task_keeps_its_head(self) -> None:
        """auto keeps the task: the note is appended to it, so its tokens stay a cached prefix."""
        messages = [system(), user("Fix the bug."), *(m for step in range(40) for m in tool_step(400, seed=step))]

        fitted = fit(messages, model="gpt-4o", window=6000)

        assert fitted.messages[1]["content"].startswith("Fix the bug.\n\n" + NOTICE_PREFIX)
        assert CHAT.unsupported_reason(fitted.messages, None, None) is None


@pytest.mark.sessions
@pytest.mark.parametrize("window", [4000, 8000, 16_000])
@pytest.mark.parametrize("policy", ["auto", "plan"])
def test_fitted_sessions_render_wherever_their_input_did(replay_set: SessionSet, policy: str, window: int) -> None:
    """Every request of the agent sessions fitted as the plugin fits it: a template that took it takes the fit."""
    options = BudgetSettings(policy=policy)  # type: ignore[arg-type]
    broken: dict[str, int] = dict.fromkeys(TEMPLATES, 0)
    trimmed = 0
    for messages in replay_set.sessions.values():
        remembered = Remembered(options)
        for request in requests_of(messages):
            fitted = fit_request(
                FitRequest(request, model="gpt-4o", window=window, settings=options, previous=remembered.previous)
            )
            remembered.sent(request, fitted)
            if fitted.report.action != "trimmed":
                continue
            trimmed += 1
            for name in TEMPLATES:
                broken[name] += renders(name, request) and not renders(name, fitted.messages)

    print(f"{replay_set.name} {policy} {window}: {trimmed} trimmed")  # the figure, shown with -s
    # Of the made sessions' 151 requests (this test with -s, no ../shared/sessions), auto and plan
    # each trim 91 at 4k, 61 at 8k and 37 at 16k.
    assert trimmed > {"shared": 100, "made": 30}[replay_set.name]
    assert broken == dict.fromkeys(TEMPLATES, 0)
