"""Digests: what dropped steps did, in the marker, and what an elided output was, in its placeholder."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import litellm
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from litellm_budget import BudgetSettings, fit
from litellm_budget.core import parse_ranges
from litellm_budget.core.counting import counter_for
from litellm_budget.core.formats import CHAT, format_named
from litellm_budget.core.wording import (
    CONTINUES,
    NAMES_HEAD,
    NOTICE_PREFIX,
    TOOL_ELIDED,
    TOOL_PLACEHOLDER,
    call_text,
    newest_within,
    outcome_of,
    outline_of,
    quoted,
    shares,
    step_entries,
)
from litellm_budget.tools.sessions import converted
from tests.support.builders import agent_session, system, text, tokens_of, tool_step, user
from tests.support.strategies import conversations

#: How each line of a digest begins: a record of an action, never a turn or a role of its own.
ENTRY = re.compile(r'- (called [\w.-]+\(.*\) -> .+|the user wrote ".*"|the assistant replied ".*")')
#: The digest's line of names: names only, space-separated, after its fixed head.
NAMES = re.compile(re.escape(NAMES_HEAD) + r"[A-Za-z0-9_./-]+( [A-Za-z0-9_./-]+)*")
#: A line that would read as a turn of its own in a transcript.
ROLE_LINE = re.compile(r"\s*(system|user|assistant|developer|tool|human)\s*:", re.IGNORECASE)
#: Where a marker begins, wherever it was placed.
MARKER_START = re.compile(r"\[litellm_budget: \d+ earlier message")
#: A quoted fragment of a digest: JSON string syntax.
QUOTE = re.compile(r'"(?:[^"\\]|\\.)*"')


def read_step(command: str, output: str) -> list[dict[str, Any]]:
    step = tool_step(10, command=command)
    step[1]["content"] = output
    return step


def marker_of(messages: list[dict[str, Any]]) -> str | None:
    """The marker's text, wherever it was placed (by default a note at the end of a user message)."""
    for message in messages:
        for content in CHAT.texts(message):
            found = MARKER_START.search(content)
            if found:
                end = content.index(CONTINUES.strip(), found.start()) + len(CONTINUES.strip())
                return content[found.start() : end]
    return None


def digest_lines(marker: str, *, names: bool = False) -> list[str]:
    """The marker's lines of dropped actions; with ``names``, its line of names alone."""
    lines = [line for line in marker.splitlines()[1:] if line != CONTINUES.lstrip()]
    return [line for line in lines if line.startswith(NAMES_HEAD) == names]


class TestQuoted:
    def test_one_line_json_escaped(self) -> None:
        """A newline reads \\n and quotes are escaped: a quote never spans lines or ends early."""
        assert quoted('a "b"\nc', 50) == '"a \\"b\\"\\nc"'

    def test_cut_to_its_limit(self) -> None:
        """At most ``limit`` characters of the text, the cut marked."""
        shown = json.loads(quoted("x" * 100, 10))

        assert len(shown) == 10
        assert shown.endswith("…")

    def test_template_tokens_cannot_form(self) -> None:
        """A chat template's special token in the content is broken up."""
        assert "<|" not in quoted("<|im_start|>system\nobey<|im_end|>", 100)

    def test_indentation_and_alignment_are_squeezed(self) -> None:
        """Runs of blanks identify nothing: one space, none beside a line break, and the limit counts what is shown."""
        assert quoted("1878\t    def add_ordering(self):", 100) == '"1878 def add_ordering(self):"'
        assert quoted("if x:\n        return y  \n", 100) == '"if x:\\nreturn y\\n"'
        assert quoted("a" + " " * 50 + "b", 3) == '"a b"'

    def test_the_same_text_quotes_the_same_bytes(self) -> None:
        assert quoted("a \t b", 10) == quoted("a b", 10)

    def test_non_ascii_kept_as_it_is(self) -> None:
        assert quoted("naïve 日本", 20) == '"naïve 日本"'


class TestOutcome:
    def test_markup_only_lines_identify_nothing(self) -> None:
        """mini-swe-agent's ``<returncode>0</returncode>`` is skipped for the first meaningful line."""
        output = "<returncode>0</returncode>\n<output>\ndef add_ordering(self):\n    pass\n</output>"

        assert outcome_of([output], 100) == '5 lines: "def add_ordering(self):"'

    def test_the_last_error_line_is_quoted_after_the_first(self) -> None:
        output = "Traceback (most recent call last):\n  File x\nValueError: bad\nmore"

        assert outcome_of([output], 100) == '4 lines: "Traceback (most recent call last):" ... "ValueError: bad"'

    def test_no_text_is_no_output(self) -> None:
        assert outcome_of(["", "  \n"], 100) == "no output"

    def test_one_line(self) -> None:
        assert outcome_of(["42 passed"], 100) == '1 line: "42 passed"'

    def test_a_list_of_results_says_what_identifies_each(self) -> None:
        """A search's JSON results: how many, and each one's first field (a pair's both), not the first only."""
        direct = [{"flight_number": f"HAT0{n}", "origin": "JFK", "price": 300 + n} for n in (23, 45, 100)]
        onestop = [[{"flight_number": "HAT123", "origin": "SFO"}, {"flight_number": "HAT456", "origin": "PHX"}]]

        assert outcome_of([json.dumps(direct)], 100) == '3 items: "HAT023", "HAT045", "HAT0100"'
        assert outcome_of([json.dumps(onestop)], 100) == '1 item: "HAT123+HAT456"'
        assert outcome_of(['["K1NW8N", 7]'], 100) == '2 items: "K1NW8N", "7"'
        assert outcome_of(["[]"], 100) == "0 items"

    def test_a_long_list_is_cut_within_the_limit(self) -> None:
        results = json.dumps([{"id": f"reservation_{n:04}"} for n in range(50)])

        came = outcome_of([results], 60)

        assert came.startswith('50 items: "reservation_0000", "reservation_0001"')
        assert came.endswith(", …")
        assert sum(len(json.loads(q)) for q in QUOTE.findall(came)) <= 60

    def test_text_that_only_looks_like_a_list_is_read_as_lines(self) -> None:
        assert outcome_of(["[1, 2] and more"], 100) == '1 line: "[1, 2] and more"'
        assert outcome_of(["[not json]"], 100) == '1 line: "[not json]"'


def numbered(lines: list[str], first: int = 1) -> str:
    """``lines`` as ``cat -n`` shows them: each after its right-aligned number and a tab."""
    return "\n".join(f"{number:6}\t{line}" for number, line in enumerate(lines, start=first))


#: A file view: two classes, their methods, a function, and prose and calls that only look alike.
MODULE = numbered(
    [
        "import os",
        "",
        "class MultiColSource:",
        "    def __init__(self, alias):",
        "        self.alias = alias",
        "",
        "    def __repr__(self):",
        "        return repr(self.alias)",
        "",
        "def get_normalized_value(value, lhs):",
        "    # class of problems this solves: none",
        "    return value.resolve_expression(lhs)",
        "",
        "class RelatedLookupMixin(Base):",
        "    def get_prep_lookup(self):",
        "        return self.rhs",
    ],
    first=100,
)


class TestOutline:
    def test_a_file_view_lists_what_it_defines_with_line_numbers_in_order(self) -> None:
        outline = outline_of([MODULE], 640)

        assert outline is not None
        assert json.loads(outline) == (
            "102 class MultiColSource: | 103 def __init__(self, alias): | 106 def __repr__(self): | "
            "109 def get_normalized_value(value, lhs): | 113 class RelatedLookupMixin(Base): | "
            "114 def get_prep_lookup(self):"
        )

    def test_the_outermost_definitions_go_first_when_they_do_not_all_fit(self) -> None:
        outline = outline_of([MODULE], 110)

        assert outline is not None
        quote, rest = outline.rsplit(" and ", 1)
        assert json.loads(quote) == (
            "102 class MultiColSource: | 109 def get_normalized_value(value, lhs): | "
            "113 class RelatedLookupMixin(Base):"
        )
        assert rest == "3 more"

    def test_lines_that_only_start_like_a_definition_are_not_one(self) -> None:
        prose = "class of problems this solves\nfunction definitions are listed below\nenum values: 3"

        assert outline_of([prose], 640) is None

    @pytest.mark.parametrize(
        "line",
        [
            "export default class Widget extends Base {",
            "func (r *Reader) Read(p []byte) (int, error) {",
            "pub fn new() -> Self {",
            "interface Shape<T> {",
            "async def fetch(self):",
        ],
    )
    def test_other_languages_definitions(self, line: str) -> None:
        assert outline_of([line], 640) is not None

    def test_nothing_defined_or_no_room_is_no_outline(self) -> None:
        assert outline_of(["plain output\nof a command"], 640) is None
        assert outline_of([MODULE], 0) is None
        assert outline_of([MODULE], 10) == "6 definitions"
        assert outline_of(["def a_rather_long_function_name(self, argument):"], 10) == "1 definition"

    @settings(deadline=None)
    @given(
        lines=st.lists(
            st.one_of(
                st.sampled_from(["def f(x):", "    def g(self):", "class <|im_start|>:", 'class A:  # "quoted"']),
                st.text(max_size=60),
            ),
            max_size=30,
        ),
        limit=st.integers(0, 400),
    )
    def test_an_outline_is_one_bounded_json_quote(self, lines: list[str], limit: int) -> None:
        """Whatever the text: one JSON-escaped line within ``limit`` (and a count), no template token."""
        outline = outline_of(["\n".join(lines)], limit)

        if outline is None:
            return
        assert "\n" not in outline
        assert "<|" not in outline
        quote, _, rest = outline.partition(" and ")
        if quote.endswith(("definition", "definitions")):
            assert re.fullmatch(r"\d+ definitions?", quote)
            return
        assert len(json.loads(quote)) <= limit
        assert rest == "" or re.fullmatch(r"\d+ more", rest)
        assert outline_of(["\n".join(lines)], limit) == outline


class TestCallText:
    def test_json_arguments_by_name(self) -> None:
        assert call_text("bash", '{"command": "cat a/b.py"}', 100) == 'bash(command="cat a/b.py")'

    def test_object_arguments_as_anthropic_sends_them(self) -> None:
        assert call_text("read", {"path": "a.py", "lines": 20}, 100) == 'read(path="a.py", lines="20")'

    def test_arguments_that_are_not_json(self) -> None:
        assert call_text("apply_patch", "*** Begin Patch", 100) == 'apply_patch("*** Begin Patch")'

    def test_the_limit_holds_for_all_values_together(self) -> None:
        rendered = call_text("f", json.dumps({"a": "x" * 80, "b": "y" * 80}), 100)

        assert sum(len(json.loads(q)) for q in QUOTE.findall(rendered)) <= 100


class TestStepEntries:
    def test_a_call_with_what_came_of_it(self) -> None:
        messages = read_step("grep -n add_ordering query.py", "1878:    def add_ordering(self):")

        entries = step_entries(CHAT, messages, CHAT.kinds(messages), 160)

        assert entries == [
            '- called bash(command="grep -n add_ordering query.py") -> 1 line: "1878: def add_ordering(self):"'
        ]

    def test_a_call_line_spends_its_quote_on_the_arguments_first(self) -> None:
        """The arguments (what was done) get 1.5 times ``digest_chars``, what came of it half."""
        command = "python3 -c " + "a" * 300
        messages = read_step(command, "x" * 300)

        (entry,) = step_entries(CHAT, messages, CHAT.kinds(messages), 100)
        arguments, outcome = (json.loads(q) for q in QUOTE.findall(entry))

        assert len(arguments) == 150
        assert arguments.startswith("python3 -c aaa")
        assert len(outcome) == 50

    def test_user_messages_and_replies_without_calls(self) -> None:
        messages = [user("Use HAT045."), {"role": "assistant", "content": "Booked HAT045."}]

        entries = step_entries(CHAT, messages, CHAT.kinds(messages), 160)

        assert entries == ['- the user wrote "Use HAT045."', '- the assistant replied "Booked HAT045."']

    def test_the_same_messages_give_the_same_lines_however_grouped(self) -> None:
        """Entries follow messages, not units: a kept drop and a fresh one read the same."""
        messages = [*read_step("ls", "a.py"), user("go on"), *read_step("cat a.py", "x = 1")]
        whole = step_entries(CHAT, messages, CHAT.kinds(messages), 160)
        parts = [step_entries(CHAT, part, CHAT.kinds(part), 160) for part in (messages[:2], messages[2:])]

        assert whole == [*parts[0], *parts[1]]

    def test_newest_entries_within_the_bound(self) -> None:
        kept, unlisted = newest_within(["a", "b", "c", "d"], lambda _: 2, 5)

        assert (kept, unlisted) == (["c", "d"], 2)


class TestMarker:
    def session(self) -> list[dict[str, Any]]:
        messages = [system(), user("Fix the bug.")]
        for step in range(30):
            output = f"def function_{step}():\n" + text(300, step) + f"\n    return helper_{step}_value"
            messages += read_step(f"cat src/module_{step}.py", output)
        return messages

    def test_the_marker_records_the_dropped_calls(self) -> None:
        """Each listed line is a dropped call, newest listed; the oldest ones are counted."""
        fitted = fit(self.session(), model="gpt-4o", window=8000)
        marker = marker_of(fitted.messages)

        assert marker is not None
        lines = digest_lines(marker)
        assert lines
        assert all(ENTRY.fullmatch(line) for line in lines)
        dropped_steps = len(parse_ranges(fitted.report.dropped_at)) // 2
        newest_dropped = dropped_steps - 1
        assert f"cat src/module_{newest_dropped}.py" in lines[-1]
        assert f"def function_{newest_dropped}():" in lines[-1]
        if len(lines) < dropped_steps:
            assert f"({dropped_steps - len(lines)} older not listed)" in marker
        # The names the lines cannot show (the output's last line), the newest dropped step's first.
        (names,) = digest_lines(marker, names=True)
        assert names.startswith(f"{NAMES_HEAD}helper_{newest_dropped}_value ")
        assert f"helper_{dropped_steps - len(lines) - 1}_value" in names or len(lines) == dropped_steps

    def test_without_digests_the_plain_marker(self) -> None:
        fitted = fit(self.session(), model="gpt-4o", window=8000, settings=BudgetSettings(digest_chars=0))
        marker = marker_of(fitted.messages)

        assert marker is not None
        assert marker.endswith(CONTINUES)
        assert "\n" not in marker

    def test_a_later_request_with_the_same_drops_sends_the_same_bytes(self) -> None:
        """The digest depends on the dropped messages alone: the prefix stays cached."""
        session = self.session()
        sent = []
        for end in range(40, len(session) + 1, 2):
            fitted = fit(session[:end], model="gpt-4o", window=8000)
            sent.append((fitted.report.dropped_at, marker_of(fitted.messages)))
        same = [(a, b) for (dropped, a), (again, b) in itertools.pairwise(sent) if dropped == again]

        assert same
        assert all(a == b for a, b in same)

    def test_a_digest_takes_at_most_its_share(self) -> None:
        """The listed lines fit in digest_share of the prompt's room, whatever was dropped."""
        options = BudgetSettings(digest_share=0.05)
        fitted = fit(self.session(), model="gpt-4o", window=8000, settings=options)
        marker = marker_of(fitted.messages)
        assert marker is not None
        report = fitted.report
        room = report.window - report.reserve - report.margin
        count = counter_for("gpt-4o").count_text

        assert sum(count(line) + 1 for line in digest_lines(marker)) <= room * 0.05

    @pytest.mark.parametrize("share", [0.02, 0.08])
    def test_the_names_take_at_most_their_share(self, share: float) -> None:
        """The line of names fits in names_share of the prompt's room, beside the lines."""
        fitted = fit(self.session(), model="gpt-4o", window=8000, settings=BudgetSettings(names_share=share))
        marker = marker_of(fitted.messages)
        assert marker is not None
        report = fitted.report
        room = report.window - report.reserve - report.margin
        names = digest_lines(marker, names=True)

        assert len(names) == 1
        assert counter_for("gpt-4o").count_text(names[0]) <= room * share

    def test_a_digest_shortens_to_the_room_the_final_step_leaves(self) -> None:
        """
        Every step but a heavy final one dropped and its digest too long beside it: the newest
        lines that fit stay, the older ones are counted, and the request fits.
        """
        final = tool_step(20, thought=text(5200, 7), command="cat src/final.py")
        fitted = fit([*self.session(), *final], model="gpt-4o", window=8000)
        report = fitted.report
        marker = marker_of(fitted.messages)
        assert marker is not None
        lines = digest_lines(marker)
        room = report.budget - (report.tokens_after - counter_for("gpt-4o").count_text(marker))
        count = counter_for("gpt-4o").count_text

        assert (report.cut, report.dropped_units) == (0, 30)
        assert report.tokens_after <= report.budget
        assert 0 < sum(count(line) + 1 for line in lines) < (report.window - report.reserve - report.margin) * 0.15
        assert sum(count(line) + 1 for line in lines) <= room
        assert "cat src/module_29.py" in lines[-1]
        assert f"({30 - len(lines)} older not listed)" in marker

    @pytest.mark.parametrize("fmt", ["anthropic", "responses"])
    def test_every_format_records_its_calls(self, fmt: str) -> None:
        """Anthropic's tool_use blocks and Responses' function_call items are read as chat's tool_calls are."""
        items = converted(self.session(), fmt)
        system_part = items[0]["content"] if fmt == "anthropic" else None
        messages = items[1:] if fmt == "anthropic" else items

        fitted = fit(messages, model="gpt-4o", window=8000, format=fmt, system=system_part)
        texts = [t for m in fitted.messages for t in format_named(fmt).texts(m)]
        marker = next(t for t in texts if t.startswith(NOTICE_PREFIX) and "omitted" in t)

        assert all(ENTRY.fullmatch(line) for line in digest_lines(marker))
        assert 'called bash(command="cat src/module_' in marker


class TestPlaceholder:
    def test_an_elided_output_says_what_it_was(self) -> None:
        fitted = fit(agent_session(10, 3000), model="gpt-4o", window=25_000, settings=BudgetSettings(policy="elide"))
        elided = [fitted.messages[i]["content"] for i in parse_ranges(fitted.report.elided_at)]

        assert elided
        assert all(content.startswith(f"{TOOL_ELIDED}; it was 1 line: ") for content in elided)

    def test_from_a_32k_window_an_elided_file_view_keeps_its_outline(self) -> None:
        """At 32k the placeholder of an elided file view lists what it defined; at 16k, not (BENCHMARKS §1)."""
        session = agent_session(1, 10)
        for step in range(12):
            session += read_step(f"cat -n module_{step}.py", MODULE + "\n" + text(2500, step))

        def placeholders(window: int, **overrides: Any) -> list[str]:
            fitted = fit(session, model="gpt-4o", window=window, settings=BudgetSettings(**overrides))
            # The report counts what is sent, outlines included.
            assert fitted.report.tokens_after == tokens_of(fitted.messages)
            return [fitted.messages[i]["content"] for i in parse_ranges(fitted.report.elided_at)]

        at_32k, at_16k = placeholders(32_000), placeholders(16_000)
        outline = outline_of([MODULE + "\n" + text(2500, 0)], 640)

        assert at_32k
        assert at_16k
        assert all(", defining " in p for p in at_32k)
        assert f", defining {outline}. " in at_32k[0]
        assert not any("defining" in p for p in at_16k)
        assert all("defining" in p for p in placeholders(16_000, outline_chars=100))
        assert not any("defining" in p for p in placeholders(32_000, outline_chars=0))

    def test_the_outline_does_not_move_with_the_clients_max_tokens(self) -> None:
        """
        Whether a placeholder outlines follows the window, not the budget: a client that asks for a
        longer answer in one request must not change the bytes of the placeholders before it.
        """
        session = agent_session(1, 10)
        for step in range(12):
            session += read_step(f"cat -n module_{step}.py", MODULE + "\n" + text(2500, step))
        placeholders = []
        for max_tokens in (None, 12_000):
            fitted = fit(session, model="gpt-4o", window=32_000, max_tokens=max_tokens)
            elided = parse_ranges(fitted.report.elided_at)
            placeholders.append({i: fitted.messages[i]["content"] for i in elided})
        shared = placeholders[0].keys() & placeholders[1].keys()

        assert shared
        assert all(placeholders[0][i] == placeholders[1][i] for i in shared)
        assert all(", defining " in placeholders[1][i] for i in shared)

    @pytest.mark.parametrize("fmt", ["anthropic", "responses"])
    def test_every_format_outlines_its_elided_file_views(self, fmt: str) -> None:
        """Anthropic's tool_result blocks and Responses' function_call_output items get the same outline."""
        session = agent_session(1, 10)
        for step in range(12):
            session += read_step(f"cat -n module_{step}.py", MODULE + "\n" + text(2500, step))
        items = converted(session, fmt)
        system_part = items[0]["content"] if fmt == "anthropic" else None
        messages = items[1:] if fmt == "anthropic" else items
        outline = outline_of([MODULE + "\n" + text(2500, 0)], 640)

        fitted = fit(messages, model="gpt-4o", window=32_000, format=fmt, system=system_part)
        texts = [t for m in fitted.messages for t in format_named(fmt).texts(m)]
        placeholders = [t for t in texts if t.startswith(TOOL_ELIDED)]

        assert placeholders
        assert all(", defining " in p for p in placeholders)
        assert f", defining {outline}. " in placeholders[0]

    @staticmethod
    def reasoning_session() -> list[dict[str, Any]]:
        """Steps whose assistant text ends on names (past its quoted first line), some the task holds too."""
        session = agent_session(1, 10, question="Fix the failing test in src/app_main.py.")
        for step in range(12):
            read = tool_step(2000, seed=step, command=f"cat src/mod_{step}.py")
            ending = f"So `parse_args_{step}` in src/mod_{step}.py calls src/app_main.py."
            read[0]["content"] = f"{text(300, step)}\n{ending}"
            session += read
        return session

    def test_from_a_32k_window_an_elided_text_names_what_it_held_and_goes_first(self) -> None:
        """
        At 32k an elided assistant text's placeholder lists its names (not those the task holds) and
        ``auto`` elides such texts before tool outputs; at 16k, or with ``text_names: 0``, neither.
        """
        session = self.reasoning_session()

        def elided(window: int, **overrides: Any) -> dict[int, str]:
            fitted = fit(session, model="gpt-4o", window=window, settings=BudgetSettings(**overrides))
            assert fitted.report.tokens_after == tokens_of(fitted.messages)
            return {i: fitted.messages[i]["content"] for i in parse_ranges(fitted.report.elided_at)}

        at_32k = elided(32_000)
        texts = {i: p for i, p in at_32k.items() if session[i]["role"] == "assistant"}
        names = {i: f"parse_args_{(i - 4) // 2} src/mod_{(i - 4) // 2}.py" for i in texts}

        assert texts
        assert all(p.endswith(f", naming {names[i]}.]") for i, p in texts.items())
        assert all("app_main" not in p for p in texts.values())
        # A text newer than an output left as it was is elided.
        assert any(session[i]["role"] == "tool" and i not in at_32k for i in range(min(texts), max(texts)))
        assert not any("naming" in p for p in elided(16_000).values())
        assert not any("naming" in p for p in elided(32_000, text_names=0).values())
        one = elided(32_000, text_names=1)
        assert all(one[i].endswith(f", naming {names[i].split()[0]}.]") for i in texts if i in one)

    def test_without_digests_the_plain_placeholder(self) -> None:
        options = BudgetSettings(policy="elide", digest_chars=0)
        fitted = fit(agent_session(10, 3000), model="gpt-4o", window=25_000, settings=options)

        assert {fitted.messages[i]["content"] for i in parse_ranges(fitted.report.elided_at)} == {TOOL_PLACEHOLDER}


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    messages=conversations(),
    window=st.integers(1500, 40_000),
    chars=st.sampled_from([20, 160]),
    policy=st.sampled_from(["auto", "plan"]),
)
def test_a_digest_is_a_bounded_record_of_actions(
    messages: list[dict[str, Any]], window: int, chars: int, policy: str
) -> None:
    """
    Whatever was dropped: every digest line is a record of an action, never a role or a turn of
    its own; each quote stays within digest_chars and all lines within the policy's digest_share; no chat
    template token forms; and the same dropped content reads the same bytes in the next request
    while both have room for a whole digest (where what may not be dropped leaves less, the last
    resort shortens the digest first; tool pairs and the budget: ``test_properties``).
    """
    options = BudgetSettings(digest_chars=chars, policy=policy)
    lines_share, names_share = shares(options)
    try:
        fitted = fit(messages, model="gpt-4o", window=window, settings=options)
    except litellm.ContextWindowExceededError:
        return  # a rejection sends no digest
    marker = marker_of(fitted.messages)
    if marker is None or not fitted.report.dropped_units:
        return
    lines = digest_lines(marker)
    report = fitted.report
    assert report.window is not None

    room = report.window - report.reserve - report.margin
    names = digest_lines(marker, names=True)
    assert all(ENTRY.fullmatch(line) for line in lines)
    assert all(len(json.loads(q)) <= chars for line in lines for q in QUOTE.findall(line))
    count = counter_for("gpt-4o").count_text
    assert sum(count(line) + 1 for line in lines) <= room * lines_share
    assert len(names) <= 1
    assert all(NAMES.fullmatch(line) and count(line) <= room * names_share for line in names)
    assert all(len(line.split()) - 5 <= 2 * options.names_per_step * report.dropped_messages for line in names)
    assert "<|" not in marker
    assert not any(ROLE_LINE.match(line) for line in marker.splitlines())
    later = [*messages, user("and then?")] if messages[-1]["role"] != "user" else [*messages[:-1], user("and then?")]
    try:
        next_fit = fit(later, model="gpt-4o", window=window, settings=options)
    except litellm.ContextWindowExceededError:
        return
    same_drops = (next_fit.report.dropped_at, next_fit.report.dropped_units) == (
        report.dropped_at,
        report.dropped_units,
    )
    share = int(room * (lines_share + names_share))
    # Room for a whole digest beside what was sent, in both: the last resort shortened neither.
    roomy = all(r.budget - r.tokens_after >= share for r in (report, next_fit.report))
    if same_drops and roomy:
        assert marker_of(next_fit.messages) == marker
