"""Names in a digest, and the reads of a file that make an earlier read stale."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from litellm_budget.core.api import FitRequest, fit_request
from litellm_budget.core.budget import BudgetSettings, limits_for
from litellm_budget.core.counting import counter_for
from litellm_budget.core.formats import CHAT, read_path
from litellm_budget.core.policies import Ledger, superseded
from litellm_budget.core.wording import NAMES_HEAD, InText, is_name, names_beyond, names_in, names_line
from tests.support.builders import system, tool_step, user

COUNT = counter_for("gpt-4o").count_text


class TestNames:
    @pytest.mark.parametrize(
        "token", ["src/app.py", "parse_args", "QuerySet", "HAT045", "sys.modules", "mia_li_3668", "test-v2.0"]
    )
    def test_paths_and_identifiers_are_names(self, token: str) -> None:
        assert is_name(token)

    @pytest.mark.parametrize("token", ["error", "ERROR", "Hello", "12345", "a.py", "x_1", "-----", "user"])
    def test_words_numbers_and_short_tokens_are_not(self, token: str) -> None:
        assert not is_name(token)

    def test_each_name_once_in_order_edges_stripped(self) -> None:
        text = "cat ./src/app.py; then edit src/app.py and run tests/test_app.py::test_parse_args."
        assert names_in([text]) == ("src/app.py", "tests/test_app.py", "test_parse_args")

    def test_the_line_lists_calls_then_outputs_newest_first(self) -> None:
        """Of each step its call's names first (newest step first), then the outputs'; shown ones left out."""
        steps = [(("old_call_name",), ("old_output_name",)), (("new_call_name", "shown_name"), ("new_output_name",))]
        line = names_line(steps, "shown_name", per_step=12, cap=1000, cost=COUNT)

        assert line == f"{NAMES_HEAD}new_call_name old_call_name new_output_name old_output_name"

    def test_per_step_and_cap_bound_it(self) -> None:
        steps = [(tuple(f"name_{step}_{n}" for n in range(30)), ()) for step in range(5)]
        few = names_line(steps, "", per_step=2, cap=10_000, cost=COUNT)
        tight = names_line(steps, "", per_step=30, cap=40, cost=COUNT)

        assert few is not None
        assert len(few.removeprefix(NAMES_HEAD).split()) == 10
        assert tight is not None
        assert COUNT(tight) <= 40
        assert names_line(steps, "", per_step=30, cap=3, cost=COUNT) is None
        assert names_line(steps, "", per_step=0, cap=10_000, cost=COUNT) is None

    @given(st.lists(st.text(alphabet="ab_./-<|: \n1Z", max_size=30), max_size=8), st.integers(0, 400))
    def test_no_line_can_read_as_a_turn_or_a_template_token(self, texts: list[str], cap: int) -> None:
        """A name holds no space, colon or bracket: the line is one line of names after its head."""
        steps = [(names_in(texts[:4]), names_in(texts[4:]))]
        line = names_line(steps, "", per_step=12, cap=cap, cost=COUNT)
        if line is None:
            return
        names = line.removeprefix(NAMES_HEAD)

        assert "\n" not in line
        assert "<|" not in line
        assert ":" not in names
        assert all(is_name(name) for name in names.split(" "))
        assert line == names_line(steps, "", per_step=12, cap=cap, cost=COUNT)


class TestNamesBeyond:
    def test_in_order_none_shown_or_given_at_most_most(self) -> None:
        text = "See src/app.py: parse_args calls load_config, then QuerySet.filter and src/app.py again."
        given = InText("the task names load_config")

        assert names_beyond(text, '"See src/app.py:"', given, 10) == "parse_args QuerySet.filter"
        assert names_beyond(text, "", given, 2) == "src/app.py parse_args"
        assert names_beyond(text, "", given, 0) is None
        assert names_beyond("plain words only", "", given, 10) is None

    @given(st.text(alphabet="ab_./-<|: \n1Z", max_size=80), st.integers(0, 20))
    def test_only_names_each_once_and_the_same_every_time(self, text: str, most: int) -> None:
        """Names hold no space, colon or bracket: the list cannot read as a turn or form a template token."""
        listed = names_beyond(text, "", InText(""), most)
        if listed is None:
            return
        names = listed.split(" ")

        assert "\n" not in listed
        assert "<|" not in listed
        assert ":" not in listed
        assert len(names) == len(set(names)) <= most
        assert all(is_name(name) for name in names)
        assert listed == names_beyond(text, "", InText(""), most)


class TestReads:
    @pytest.mark.parametrize(
        ("command", "path"),
        [
            ("cat src/app.py", "src/app.py"),
            ("nl -ba django/db/models/sql/query.py | sed -n '1650,1680p'", "django/db/models/sql/query.py"),
            ("sed -n '1668,1670p' django/db/models/sql/query.py", "django/db/models/sql/query.py"),
            ("head -n 40 setup.cfg", None),  # "40" and "setup.cfg": two operands, not one file
            ("head setup.cfg", "setup.cfg"),
            ("cat <<'EOF' > fix.py", None),
            ("sed -i 's/a/b/' src/app.py", None),
            ("cat a.py && cat b.py", None),
            ("grep -n parse_args src/app.py", None),
        ],
    )
    def test_shell_reads(self, command: str, path: str | None) -> None:
        assert read_path("bash", json.dumps({"command": command})) == path

    def test_an_editor_view_and_claude_codes_read(self) -> None:
        assert read_path("str_replace_editor", {"command": "view", "path": "/repo/a.py"}) == "/repo/a.py"
        assert read_path("Read", {"file_path": "/repo/a.py", "offset": 10}) == "/repo/a.py"
        assert read_path("str_replace_editor", {"command": "str_replace", "path": "/repo/a.py"}) is None

    @pytest.mark.parametrize("stale_reads", [False, True])
    def test_a_later_read_of_the_file_makes_the_earlier_stale(self, stale_reads: bool) -> None:
        """``cat`` then ``nl | sed -n`` of the same file: with ``stale_reads`` the first output goes first."""
        messages = [
            system(),
            user("Fix it."),
            *tool_step(600, command="cat src/app.py"),
            *tool_step(600, command="ls"),
            *tool_step(600, command="nl -ba src/app.py | sed -n '1,40p'"),
            user("And?"),
        ]
        settings = BudgetSettings(stale_reads=stale_reads)
        counter = counter_for("gpt-4o")
        ledger = Ledger(
            messages=messages,
            kinds=CHAT.kinds(messages),
            counts=[CHAT.count_message(counter, m) for m in messages],
            tools_and_priming=3,
            limits=limits_for(8000, None, settings),
            settings=settings,
            counter=counter,
            format=CHAT,
        )

        assert superseded(ledger) == (frozenset({3}) if stale_reads else frozenset())

    def test_stale_reads_go_first_in_a_fit(self) -> None:
        """What a later read showed again is elided before an older output that only it held."""
        messages = [
            system(),
            user("Fix it."),
            *tool_step(2000, command="ls -R"),
            *tool_step(2000, command="find . -name '*.py'"),
            *tool_step(2000, command="cat src/app.py"),
            *tool_step(2000, command="sed -n '1,200p' src/app.py"),
            *tool_step(100, command="ls -la"),
            *tool_step(100, command="ls -l"),
            *tool_step(100, command="pwd"),
            *tool_step(100, command="git status"),
            user("And?"),
        ]
        fitted = {
            stale: fit_request(
                FitRequest(
                    messages, model="gpt-4o", window=8000, settings=BudgetSettings(stale_reads=stale, policy="elide")
                )
            ).report
            for stale in (False, True)
        }

        assert fitted[False].elided_at == "3,5"
        assert fitted[True].elided_at == "3,7"
