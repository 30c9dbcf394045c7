"""The checks' verdicts remembered by content: a resumed check says what a whole check says."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from litellm_budget.core import content_key, forget_all
from litellm_budget.core.api import FitRequest, fit_request
from litellm_budget.core.formats import format_named
from litellm_budget.core.validity import START, remember_passed, resume_from
from litellm_budget.core.validity import _chat_checks as chat_checks  # private: a test patches _message_problem
from litellm_budget.tools.sessions import converted
from tests.support.builders import agent_session
from tests.support.strategies import conversations


@pytest.fixture(autouse=True)
def _nothing_remembered() -> None:
    forget_all()


def wire(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A fresh copy, as each request arrives from the wire."""
    return copy.deepcopy(messages)


@settings(max_examples=80)
@given(conversations(), st.sampled_from(["chat", "anthropic", "responses"]), st.data())
def test_a_resumed_check_says_what_a_whole_check_says(
    messages: list[dict[str, Any]], fmt_name: str, data: st.DataObject
) -> None:
    """
    Over any prefix that passed and any tail (valid, or with a message taken out, repeated, moved,
    or a legacy function result put in), a check resumed after the prefix with its remembered
    state refuses exactly what a check of the whole request refuses, with the same reason.
    """
    fmt = format_named(fmt_name)
    request = converted(messages, fmt_name)
    assume(len(request) > 3)
    held = data.draw(st.integers(3, len(request) - 1))
    passed = fmt.check(request[:held], None, None)
    assume(passed.reason is None)
    tail = request[held:]
    change = data.draw(st.sampled_from(["none", "take", "repeat", "move", "function"]))
    at = data.draw(st.integers(0, len(tail) - 1))
    if change == "take":
        tail = tail[:at] + tail[at + 1 :]
    elif change == "repeat":
        tail = [*tail[: at + 1], tail[at], *tail[at + 1 :]]
    elif change == "move":
        tail = [*tail[:at], *tail[at + 1 :], tail[at]]
    elif change == "function":  # a legacy function result: it may only follow an assistant's turn
        tail = [*tail[:at], {"role": "function", "name": "run", "content": "done"}, *tail[at:]]
    grown = [*request[:held], *tail]
    remember_passed(fmt_name, [content_key(m) for m in request[:held]], passed)
    resume = resume_from(fmt_name, [*(content_key(m) for m in request[:held]), *([None] * len(tail))])

    assert resume.at == held
    assert fmt.check(grown, None, None, resume).reason == fmt.check(grown, None, None).reason


def test_only_the_very_content_that_passed_resumes() -> None:
    """A prefix resumes only under the keys it passed with, in its own format, never a refused one."""
    history = agent_session(4, 50)
    keys = [content_key(m) for m in history]
    chat = format_named("chat")
    remember_passed("chat", keys, chat.check(history, None, None))
    remember_passed("chat", [1, 2, 3, 4], chat.check([{"role": "nobody"}] * 4, None, None))

    assert resume_from("chat", [*keys, None]).at == len(history)
    assert resume_from("anthropic", [*keys, None]).at == 0
    assert resume_from("chat", [*keys[:-1], keys[-1] + 1, None]).at == 0  # the last one differs
    assert resume_from("chat", [*keys[:3], None, *keys[4:]]).at == 0  # a prefix never remembered
    assert resume_from("chat", [1, 2, 3, 4, None]) == START


def test_outside_a_passed_prefix_every_message_is_read_again() -> None:
    """Only a whole prefix that passed is skipped: a message that passed in another place is read again."""
    history = agent_session(4, 50)
    keys = [content_key(m) for m in history]
    remember_passed("chat", keys, format_named("chat").check(history, None, None))
    shorter = [*keys[:2], keys[5], None]

    resume = resume_from("chat", shorter)

    assert resume.at == 0
    assert list(resume.unread(len(shorter))) == [0, 1, 2, 3]


class TestThroughTheFit:
    @staticmethod
    def spied(monkeypatch: pytest.MonkeyPatch) -> list[object]:
        read: list[object] = []
        original = chat_checks._message_problem

        def spy(message: object) -> str | None:
            read.append(message)
            return original(message)

        monkeypatch.setattr(chat_checks, "_message_problem", spy)
        return read

    def test_a_grown_history_reads_only_its_new_messages(self, monkeypatch: pytest.MonkeyPatch) -> None:
        history = agent_session(6, 50)
        fit_request(FitRequest(wire(history), model="gpt-4o", window=128_000))
        read = self.spied(monkeypatch)

        fit_request(FitRequest(wire([*history, {"role": "user", "content": "next"}]), model="gpt-4o", window=128_000))

        assert len(read) == 1

    def test_with_nothing_remembered_every_message_is_read(self, monkeypatch: pytest.MonkeyPatch) -> None:
        history = agent_session(6, 50)
        fit_request(FitRequest(wire(history), model="gpt-4o", window=128_000))
        forget_all()
        read = self.spied(monkeypatch)
        grown = wire([*history, {"role": "user", "content": "next"}])

        fit_request(FitRequest(grown, model="gpt-4o", window=128_000))

        assert len(read) == len(grown)

    def test_an_edited_old_message_is_read_and_refused(self) -> None:
        history = agent_session(6, 50)
        fit_request(FitRequest(wire(history), model="gpt-4o", window=128_000))
        edited = wire([*history, {"role": "user", "content": "next"}])
        edited[4] = {**edited[4], "role": "nobody"}

        report = fit_request(FitRequest(edited, model="gpt-4o", window=128_000)).report

        assert report.action == "unsupported"
        assert report.reason is not None
        assert report.reason.startswith("message 4")
