"""Evidence recall: the salient strings of an answer, what it learned, and what a strategy kept of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lab.evidence import (
    NO_RECALL,
    Evidence,
    Recall,
    answer_strings,
    evidence_of,
    recall_of,
    salient_strings,
    session_evidence,
)
from benchmarks.lab.replay import Row, Session, Totals, replay_session
from benchmarks.replay import main
from litellm_budget.tools.replay import Outcome
from litellm_budget.tools.sessions import converted, requests_of
from tests.support.builders import text

Messages = list[dict[str, Any]]
PATH = "src/cli/main.py"


def _call(call_id: str, arguments: str, name: str = "bash") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _step(number: int, arguments: str, output: str) -> Messages:
    call_id = f"call_{number}"
    return [
        {"role": "assistant", "content": "Looking.", "tool_calls": [_call(call_id, arguments)]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


def _session(fillers: int = 4, output_tokens: int = 3) -> Messages:
    """
    A task about ``parse_args``; a first step whose arguments alone name :data:`PATH`; ``fillers``
    steps that name nothing (outputs of ``output_tokens``); an answer that uses the path, the
    given name and a new id.
    """
    messages: Messages = [
        {"role": "system", "content": "You are an agent with tools_v2."},
        {"role": "user", "content": "Fix the bug in parse_args."},
        *_step(1, json.dumps({"command": f"grep -n parse_args {PATH}"}), "12: def parse_args(argv):"),
    ]
    for number in range(fillers):
        messages += _step(number + 2, '{"command": "ls"}', text(output_tokens, number))
    answer = {
        "role": "assistant",
        "content": "The bug is in parse_args; see HAT045.",
        "tool_calls": [_call("call_edit", json.dumps({"path": PATH, "old": "argv", "new": "argv or []"}), "edit")],
    }
    return [*messages, answer]


class TestSalientStrings:
    def test_paths_and_file_names(self) -> None:
        """A path with slashes and a file name with an extension are salient, leading slashes stripped."""
        text = "Open /testbed/django/db/models/sql/query.py, then setup.cfg."
        assert salient_strings(text) == {"testbed/django/db/models/sql/query.py", "setup.cfg"}

    def test_ids_with_digits_and_underscores(self) -> None:
        """Flight numbers and user ids are salient: they have digits or underscores."""
        assert salient_strings("Flight HAT045 for mia_li_3668 and add_ordering()") == {
            "HAT045",
            "mia_li_3668",
            "add_ordering",
        }

    def test_inner_capitals_and_dotted_names(self) -> None:
        """CamelCase names and dotted names are salient; a capital first letter alone is not."""
        assert salient_strings("Hello: QuerySet raised ValueError in sys.modules.") == {
            "QuerySet",
            "ValueError",
            "sys.modules",
        }

    def test_surrounding_quotes_and_brackets_are_stripped(self) -> None:
        """Quotes, brackets, backticks and trailing dots are not part of the string."""
        assert salient_strings("(\"add_ordering\"), [`a/b/c.py`]. 'FUN_00401260'") == {
            "add_ordering",
            "a/b/c.py",
            "FUN_00401260",
        }

    def test_too_short_plain_and_numeric_tokens_are_not_salient(self) -> None:
        """Under 5 characters, plain words in any case, numbers, dates and punctuation: nothing."""
        text = "a.py x_1 ab/c Q1 Hello ERROR error well-known 123456 2024-05-20 3.10.4 ----- ..... e.g."
        assert salient_strings(text) == frozenset()


class TestAnswerStrings:
    def test_json_arguments_give_every_string_value(self) -> None:
        """JSON arguments are decoded; every string value is taken, nested ones too, numbers and keys not."""
        arguments = json.dumps({"command": "cat a/b.py", "options": {"paths": ["c/d.py"]}, "lines": 12345})
        answer = {"role": "assistant", "content": None, "tool_calls": [_call("call_1", arguments)]}
        assert answer_strings(answer) == ["cat a/b.py", "c/d.py"]

    def test_arguments_that_are_not_json_are_text(self) -> None:
        """Arguments that do not decode are taken as they are."""
        answer = {"role": "assistant", "content": "Done.", "tool_calls": [_call("call_1", "run tests/test_x.py")]}
        assert answer_strings(answer) == ["Done.", "run tests/test_x.py"]

    def test_tool_call_ids_and_names_are_ignored(self) -> None:
        """The call's id and the tool's name are not what the answer learned."""
        answer = {"role": "assistant", "tool_calls": [_call("call_00123", '{"user_id": "mia_li_3668"}', "get_user")]}
        assert salient_strings("\n".join(answer_strings(answer))) == {"mia_li_3668"}

    def test_text_parts_and_not_images(self) -> None:
        """Text parts are read; image parts are not text."""
        image = {"type": "image_url", "image_url": {"url": "http://x/a_b_c.png"}}
        answer = {"role": "assistant", "content": [{"type": "text", "text": "See HAT045."}, image]}
        assert answer_strings(answer) == ["See HAT045."]


class TestLearned:
    def test_learned_is_what_the_request_held_and_was_not_given(self) -> None:
        """The path came from a step: learned and old; parse_args was in the task; HAT045 is in no message."""
        messages = _session()
        evidence = evidence_of(messages[:-1], messages[-1])
        line = f"grep -n parse_args {PATH}"  # the first step's command, where the path stood
        assert evidence == Evidence(learned=frozenset({PATH}), old=frozenset({PATH}), lines={PATH: frozenset({line})})

    def test_evidence_in_the_last_8_messages_is_not_old(self) -> None:
        """With fewer filler steps the step that named the path is among the last 8 messages."""
        messages = _session(fillers=2)
        assert evidence_of(messages[:-1], messages[-1]) == Evidence(learned=frozenset({PATH}))

    def test_a_later_user_message_is_not_given(self) -> None:
        """Only the first user message is the task: what a later one says was learned."""
        messages = [
            {"role": "user", "content": "Book a flight."},
            {"role": "assistant", "content": "Your id?"},
            {"role": "user", "content": "It is mia_li_3668."},
            {"role": "assistant", "content": "Thanks, mia_li_3668."},
        ]
        assert evidence_of(messages[:3], messages[3]).learned == {"mia_li_3668"}

    def test_session_evidence_follows_requests_of(self) -> None:
        """One evidence per request of requests_of, each answered by the message after it."""
        messages = _session()
        expected = [evidence_of(r, messages[len(r)]) for r in requests_of(messages)]
        assert session_evidence(messages) == expected


class TestKept:
    def test_a_dropped_step_loses_the_path_its_arguments_carried(self) -> None:
        """Without the first step nothing else holds the path: learned 1, kept 0, old the same."""
        messages = _session()
        request, evidence = messages[:-1], evidence_of(messages[:-1], messages[-1])
        assert recall_of(evidence, [*request[:2], *request[4:]]) == Recall(learned=1, kept=0, old_learned=1)
        assert recall_of(evidence, request) == Recall(learned=1, kept=1, old_learned=1, old_kept=1, old_lines_kept=1)

    def test_a_marker_or_placeholder_that_names_it_keeps_it(self) -> None:
        """Any string sent counts, a note's text too."""
        messages = _session()
        evidence = evidence_of(messages[:-1], messages[-1])
        note = {"role": "system", "content": f"[earlier steps omitted: bash on {PATH}]"}
        assert recall_of(evidence, [note, messages[-2]]).kept == 1

    def test_a_name_alone_keeps_no_line(self) -> None:
        """Line recall: the path in a note is kept as evidence, but the line it stood on is gone."""
        messages = _session()
        request, evidence = messages[:-1], evidence_of(messages[:-1], messages[-1])
        note = {"role": "user", "content": f"[names they held: {PATH}]"}
        recall = recall_of(evidence, [*request[:2], note, *request[4:]])

        assert (recall.old_kept, recall.old_lines_kept) == (1, 0)

    def test_the_line_kept_counts(self) -> None:
        """... and a message that still holds that line verbatim keeps it, wherever it is."""
        messages = _session()
        request, evidence = messages[:-1], evidence_of(messages[:-1], messages[-1])
        quoted = {"role": "user", "content": f"earlier: grep -n parse_args {PATH} (12 matches)"}

        assert recall_of(evidence, [*request[:2], quoted, *request[4:]]).old_lines_kept == 1

    def test_a_string_on_no_long_line_counts_as_itself(self) -> None:
        """A string that stood only on lines under 10 characters longer than it is its own line."""
        request = [
            {"role": "user", "content": "Task."},
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": "id_4471_x"},
            *[{"role": "assistant", "content": f"filler {n}"} for n in range(8)],
        ]
        answer = {"role": "assistant", "content": "Using id_4471_x."}
        evidence = evidence_of(request, answer)

        assert evidence.lines == {"id_4471_x": frozenset()}
        assert recall_of(evidence, [{"role": "user", "content": "named id_4471_x"}]).old_lines_kept == 1
        assert recall_of(evidence, [{"role": "user", "content": "nothing"}]).old_lines_kept == 0

    def test_nothing_sent_keeps_nothing(self) -> None:
        """A rejected request (None) keeps none of its evidence."""
        messages = _session()
        assert recall_of(evidence_of(messages[:-1], messages[-1]), None) == Recall(learned=1, old_learned=1)

    @pytest.mark.parametrize("format_name", ["anthropic", "responses"])
    def test_other_formats_are_searched_as_sent(self, format_name: str) -> None:
        """Learned on the chat request, searched in its Anthropic or Responses form: kept, and lost without the step."""
        messages = _session()
        request, evidence = messages[:-1], evidence_of(messages[:-1], messages[-1])
        assert recall_of(evidence, converted(request, format_name)).kept == 1
        assert recall_of(evidence, converted([*request[:2], *request[4:]], format_name)).kept == 0


def _everything(messages: Messages) -> Outcome:
    return Outcome(messages, "passthrough")


def _last_only(messages: Messages) -> Outcome:
    return Outcome(messages[-1:], "trimmed", dropped=len(messages) - 1)


class TestReplay:
    def _summary(self, strategy: Any, messages: Messages, *, with_evidence: bool = True) -> dict[str, Any]:
        evidence = session_evidence(messages) if with_evidence else None
        rows = replay_session(Session("s", requests_of(messages), evidence), strategy, model="gpt-4o", window=100_000)
        totals = Totals()
        totals.add_session(rows, 100_000)
        return totals.summary()

    def test_sending_everything_recalls_everything(self) -> None:
        """A strategy that sends the request as it is keeps all the evidence, old included."""
        summary = self._summary(_everything, _session())
        recalls = (summary["evidence_recall"], summary["old_evidence_recall"])
        assert (recalls, summary["evidence_learned"]) == ((1.0, 1.0), 1)

    def test_sending_only_the_last_message_recalls_nothing_old(self) -> None:
        """The last message is not the first step: old recall 0."""
        summary = self._summary(_last_only, _session())
        assert (summary["evidence_recall"], summary["old_evidence_recall"]) == (0.0, 0.0)

    def test_without_answers_there_is_no_recall(self) -> None:
        """No evidence given: every row counts nothing and the recall is None, not a made-up 0.0."""
        messages = _session()
        rows = replay_session(Session("s", requests_of(messages)), _everything, model="gpt-4o", window=100_000)
        assert {row.evidence for row in rows} == {NO_RECALL}
        summary = self._summary(_everything, messages, with_evidence=False)
        assert (summary["evidence_recall"], summary["old_evidence_recall"]) == (None, None)

    def test_totals_are_a_micro_average_with_rejections_keeping_nothing(self) -> None:
        """Every string weighs the same (1 + 0 + 0 of 1 + 3 + 5); a rejected request sends none of its evidence."""
        totals = Totals()
        totals.add_session(
            [
                _row(1, "trimmed", Recall(learned=1, kept=1, old_learned=1, old_kept=1)),
                _row(2, "trimmed", Recall(learned=3, kept=0, old_learned=2)),
                _row(3, "rejected", Recall(learned=5, old_learned=5)),
            ],
            4000,
        )
        summary = totals.summary()
        assert (summary["evidence_recall"], summary["old_evidence_recall"]) == (0.1111, 0.125)
        assert (summary["evidence_learned"], summary["old_evidence_learned"], summary["rejected"]) == (9, 8, 1)


def _row(request: int, action: str, evidence: Recall) -> Row:
    return Row(
        session="s",
        request=request,
        messages=2 * request,
        tokens_before=1000,
        tokens_after=0 if action == "rejected" else 900,
        action=action,
        elided=0,
        dropped=0,
        shared=0,
        new=0,
        overflow=False,
        invalid=False,
        ms=0.1,
        evidence=evidence,
    )


class TestCommand:
    @pytest.fixture(name="folder")
    def fixture_folder(self, tmp_path: Path) -> Path:
        (tmp_path / "s.json").write_text(json.dumps({"messages": _session(fillers=20, output_tokens=300)}))
        return tmp_path

    def test_json_carries_both_recalls(self, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Each result has the recalls and the learned counts; at a small window auto loses old evidence."""
        argv = [str(folder), "--model", "gpt-4o", "--window", "4000,100000", "--json", "--no-progress"]
        assert main(argv) == 0
        small, large = json.loads(capsys.readouterr().out)["results"]
        assert (large["evidence_recall"], large["old_evidence_recall"]) == (1.0, 1.0)
        assert small["old_evidence_learned"] == large["old_evidence_learned"] > 0
        assert small["line_recall"] < 1.0  # the digest may name what it dropped; its lines are gone
        assert large["line_recall"] == 1.0

    def test_plot_recall_writes_a_png(self, folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--plot-recall writes a PNG and says where."""
        pytest.importorskip("matplotlib")
        target = tmp_path / "recall.png"
        argv = [str(folder), "--model", "gpt-4o", "--window", "4000,8000", "--no-progress"]
        assert main([*argv, "--baseline", "sliding", "--plot-recall", str(target)]) == 0
        assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert capsys.readouterr().out.splitlines()[-1] == f"recall plot written to {target}: windows 4000, 8000"
