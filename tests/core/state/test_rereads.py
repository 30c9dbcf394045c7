"""Re-reads: the model calling again, with the same arguments, for an output the gateway hid."""

from __future__ import annotations

from typing import Any

import pytest

from litellm_budget import BudgetSettings
from litellm_budget.core import MEMOS, parse_ranges
from litellm_budget.core.api import FitRequest, Fitted, fit_request
from litellm_budget.core.formats import call_key, format_named
from litellm_budget.core.state import _conversation as conversation  # private: a test patches _hidden_calls
from litellm_budget.core.state import edits_sent
from litellm_budget.tools.sessions import converted
from tests.support.builders import system, text, tool_step, user

SETTINGS = BudgetSettings(policy="elide")


def step(command: str, tokens: int = 3000) -> list[dict[str, Any]]:
    return tool_step(tokens, command=command, seed=len(command))


def session() -> list[dict[str, Any]]:
    """Ten reads of different files, the oldest ones bulky enough to be elided at 20k."""
    messages = [system(), user("Fix it.")]
    for number in range(10):
        messages += step(f"cat file_{number}.py")
    return messages


def fitted_after(first: list[dict[str, Any]], more: list[dict[str, Any]], *, state: bool = True) -> Fitted:
    """Fit ``first``, remember what was sent, then fit ``first`` with ``more`` appended."""
    sent = fit_request(FitRequest(first, model="gpt-4o", window=20_000, settings=SETTINGS))
    assert sent.report.action == "trimmed"
    previous = edits_sent(first, sent.report) if state else None
    return fit_request(FitRequest([*first, *more], model="gpt-4o", window=20_000, settings=SETTINGS, previous=previous))


class TestRereads:
    def test_repeating_an_elided_call_is_a_reread(self) -> None:
        first = session()
        elided = parse_ranges(
            fit_request(FitRequest(first, model="gpt-4o", window=20_000, settings=SETTINGS)).report.elided_at
        )
        assert 3 in elided  # the output of the first read

        assert fitted_after(first, step("cat file_0.py", 50)).report.rereads == 1

    def test_other_arguments_are_not(self) -> None:
        assert fitted_after(session(), step("cat file_99.py", 50)).report.rereads == 0

    def test_an_output_that_was_sent_is_not(self) -> None:
        """The newest read's output was sent in full: reading it again says nothing about the gateway."""
        assert fitted_after(session(), step("cat file_9.py", 50)).report.rereads == 0

    def test_without_conversation_state_nothing_is_known(self) -> None:
        assert fitted_after(session(), step("cat file_0.py", 50), state=False).report.rereads == 0

    def test_a_dropped_step_read_again_is_a_reread(self) -> None:
        """auto drops the oldest steps at a small window: calling one of them again counts."""
        first = [system(), user("Fix it.")]
        for number in range(30):
            first += step(f"cat file_{number}.py", 400)
        options = BudgetSettings()
        sent = fit_request(FitRequest(first, model="gpt-4o", window=8000, settings=options))
        assert 2 in parse_ranges(sent.report.dropped_at)
        again = [*first, *step("cat file_0.py", 50), user(text(5))]

        report = fit_request(
            FitRequest(again, model="gpt-4o", window=8000, settings=options, previous=edits_sent(first, sent.report))
        ).report

        assert report.rereads == 1

    def test_the_hidden_calls_follow_the_history_they_were_read_from(self) -> None:
        """Remembered per edited history: the same edits over a history whose calls changed read it again."""
        first = session()
        sent = fit_request(FitRequest(first, model="gpt-4o", window=20_000, settings=SETTINGS))
        previous = edits_sent(first, sent.report)
        assert 3 in parse_ranges(sent.report.elided_at)
        again = step("cat file_0.py", 50)
        assert (
            fit_request(
                FitRequest([*first, *again], model="gpt-4o", window=20_000, settings=SETTINGS, previous=previous)
            ).report.rereads
            == 1
        )
        renamed = [dict(message) for message in first]
        call = renamed[2]["tool_calls"][0]
        renamed[2]["tool_calls"] = [
            {**call, "function": {**call["function"], "arguments": '{"command": "cat other.py"}'}}
        ]

        report = fit_request(
            FitRequest([*renamed, *again], model="gpt-4o", window=20_000, settings=SETTINGS, previous=previous)
        ).report

        assert report.rereads == 0

    def test_a_conversation_reads_the_calls_its_edits_hid_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The kept draft carries them: a later request of the conversation finds them without a scan."""
        first = session()
        sent = fit_request(FitRequest(first, model="gpt-4o", window=20_000, settings=SETTINGS))
        previous = edits_sent(first, sent.report)
        grown = [*first, *step("cat file_50.py", 50)]
        assert fit_request(FitRequest(grown, model="gpt-4o", window=20_000, settings=SETTINGS, previous=previous))
        scans: list[int] = []
        scan = conversation._hidden_calls
        monkeypatch.setattr(conversation, "_hidden_calls", lambda *args: scans.append(1) or scan(*args))

        report = fit_request(
            FitRequest(
                [*grown, *step("cat file_0.py", 50)],
                model="gpt-4o",
                window=20_000,
                settings=SETTINGS,
                previous=previous,
            )
        ).report

        assert report.rereads == 1
        assert scans == ([] if MEMOS.kept_drafts.on else [1])


@pytest.mark.parametrize("fmt", ["anthropic", "responses"])
def test_every_format_counts_its_rereads(fmt: str) -> None:
    """Anthropic's tool_use blocks and Responses' function_call items are read as chat's calls are."""
    first, more = session(), step("cat file_0.py", 50)
    options = BudgetSettings(policy="elide")

    def fitted_in(messages: list[dict[str, Any]], previous: Any = None) -> Fitted:
        items = converted(messages, fmt)
        return fit_request(
            FitRequest(items, model="gpt-4o", window=20_000, settings=options, fmt=format_named(fmt), previous=previous)
        )

    sent = fitted_in(first)
    previous = edits_sent(converted(first, fmt), sent.report)

    assert fitted_in([*first, *more], previous).report.rereads == 1
    assert fitted_in([*first, *step("cat file_77.py", 50)], previous).report.rereads == 0


def test_a_call_is_its_name_and_decoded_arguments() -> None:
    """Key order and spacing of JSON arguments do not make another call; other values do."""
    assert call_key("bash", '{"a": 1, "b": 2}') == call_key("bash", '{"b":2,"a":1}')
    assert call_key("bash", '{"a": 1}') != call_key("bash", '{"a": 2}')
    assert call_key("bash", {"a": 1}) == call_key("bash", '{"a": 1}')
