"""
The README and its docs/ pages: the settings and report fields the code has, links that resolve,
pages that say what they cover, a README short enough to read in ten minutes, and the figures they
quote from BENCHMARKS.md the ones it has.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import shlex
from pathlib import Path
from urllib.parse import unquote

import pytest

from benchmarks.replay import main
from litellm_budget import BudgetReport, BudgetSettings
from litellm_budget.core.wording import cut_note, omitted_note, placeholder_for
from tests.support import docs
from tests.support.paths import DOCS, README, REPO_ROOT, SESSIONS_DIR

#: "At most ~15 KB" (issue 21): what a first reader finishes in ten minutes.
README_BYTES = 15 * 1024
BENCHMARKS = REPO_ROOT / "BENCHMARKS.md"


def table_after(heading: str, page: Path = README) -> list[str]:
    """The rows of the first Markdown table under ``heading``."""
    lines = page.read_text(encoding="utf-8").split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows[2:]  # header and separator


def cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def names_in_first_column(rows: list[str]) -> set[str]:
    return {name for row in rows for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])}


def test_settings_table_lists_exactly_the_fields() -> None:
    """Every BudgetSettings field has a row in the README's Configuration table, and no other name does."""
    fields = {field.name for field in dataclasses.fields(BudgetSettings)}

    assert names_in_first_column(table_after("## Configuration")) == fields


def test_every_field_is_documented_where_it_is_defined() -> None:
    """Each field of the settings and the report has a #: comment right above it in its module."""
    for cls, module in ((BudgetSettings, "budget/_settings.py"), (BudgetReport, "_report.py")):
        source = (REPO_ROOT / "litellm_budget" / "core" / module).read_text(encoding="utf-8").splitlines()
        for field in dataclasses.fields(cls):
            at = next(i for i, line in enumerate(source) if re.match(rf"    {field.name}: ", line))
            assert source[at - 1].strip().startswith("#:"), f"{cls.__name__}.{field.name} has no #: comment"


def test_the_readme_reads_in_ten_minutes() -> None:
    """The README stays at most about 15 KB; the rest is in the pages it links to."""
    assert len(README.read_bytes()) <= README_BYTES


def test_every_link_resolves() -> None:
    """Each relative link of the README, the pages and BENCHMARKS.md names a file that exists, and an anchor it has."""
    broken = []
    for page in [*docs.pages(), BENCHMARKS]:
        for target in docs.links(page):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            linked = (page.parent / unquote(path)).resolve() if path else page
            if not linked.exists():
                broken.append(f"{docs.page_name(page)} -> {target}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in docs.anchors(linked):
                broken.append(f"{docs.page_name(page)} -> {target}: no such anchor")

    assert broken == []


def test_the_readme_links_every_page() -> None:
    """Every page of docs/ is linked from the README's Read more, and every page it links is there."""
    section = README.read_text(encoding="utf-8").split("## Read more", 1)[1]
    linked = {target.partition("#")[0] for target in docs.LINK.findall(section) if target.startswith("docs/")}

    assert linked == {f"docs/{page.name}" for page in DOCS.glob("*.md")}


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_each_page_says_what_it_covers_and_links_back(page: Path) -> None:
    """A page opens with its title, then one sentence saying what it covers, which links back to the README."""
    text = page.read_text(encoding="utf-8")
    title, blank, *rest = text.splitlines()
    opening = " ".join(rest[: rest.index("")] if "" in rest else rest)

    assert title.startswith("# ")
    assert blank == ""
    assert opening.endswith(".")
    assert opening.count(". ") == 0, "the opening is one sentence"
    assert "](../README.md)" in opening


def table_with(header: str, page: Path) -> list[list[str]]:
    """The cells of each row of the first table of ``page`` whose header row starts with ``header``."""
    lines = page.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[at + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(cells(line))
    return [cells(lines[at]), *rows]


def test_the_comparison_quotes_benchmarks_section_1() -> None:
    """docs/how-it-decides.md's 16k comparison is BENCHMARKS §1's 16k rows, figure for figure."""
    names, *bench_rows = table_with("| window | strategy |", BENCHMARKS)
    column = {name: index for index, name in enumerate(names)}
    bench = {row[1].strip("*").split(" (")[0]: row for row in bench_rows if row[0] == "16k"}
    _, *rows = table_with("| strategy | overflowing requests |", DOCS / "how-it-decides.md")
    quoted = ("overflow", "invalid pairs", "needless / new", "fill", "evidence recall", "input cost")

    assert len(rows) == 8
    for strategy, *ours in rows:
        key = re.findall(r"`([a-z_]+)`", strategy)[0]
        theirs = bench[key]
        shown = [cell.strip("*").split(" (")[0] for cell in ours]
        assert shown == [theirs[column[name]].strip("*") for name in quoted], key
        if "without the message to answer" in ours[0]:
            assert ours[0].split("(")[1].split()[0] == theirs[column["sent without newest"]], key


def test_the_summaries_table_quotes_benchmarks_section_6() -> None:
    """docs/summaries.md's calls, requests summarized, reuse and cost at 8k and 16k are BENCHMARKS §6's."""
    _, *theirs = table_with("| window | `auto` reuse |", BENCHMARKS)
    by_window = {row[0]: row for row in theirs}
    _, *ours = table_with("| window | sessions with a summary |", DOCS / "summaries.md")

    assert len(ours) == 2
    for window, _, calls, per_session, summarized, reuse, cost in ours:
        auto_reuse, summarize_reuse, bench_calls, _, bench_cost, _ = by_window[
            f"{int(window.replace(',', '')) // 1000}k"
        ][1:]
        assert bench_calls.startswith(f"{calls} (at most {per_session.split(', ')[1]} in a session; "), window
        assert f"{summarized.split()[0]} requests sent a summary" in bench_calls, window
        assert reuse == f"{auto_reuse} / {summarize_reuse}", window
        assert cost == bench_cost, window


@pytest.mark.sessions
@pytest.mark.slow  # 20 s: trim_messages on every request of the session
def test_the_sawtooth_rows_are_what_the_replay_prints() -> None:
    """
    docs/how-it-decides.md's requests of one shared session are what its --rows command prints today,
    pointed at that session: the page's command replays the example session a clone has in its place.
    """
    page = DOCS / "how-it-decides.md"
    command = next(c for c in docs.commands(page) if "--rows" in c.text)
    session = SESSIONS_DIR / "mini__django__django-14351.json"
    if not session.is_file():
        pytest.skip(f"{session} is absent")
    example = "examples/sessions/made__shell.json"
    assert example in command.text
    argv = shlex.split(command.text.replace(example, str(session)))
    assert argv[:3] == ["python", "-m", "benchmarks.replay"]
    argv = argv[3:]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--no-progress"]) == 0
    printed = {name: dict(rows_of(out.getvalue(), f"== {name} at 16000")) for name in ("auto", "trim_messages")}
    _, *rows = table_with("| request | messages |", page)

    assert rows
    for request, messages, auto_sent, auto_reused, trim_sent, trim_reused in rows:
        assert printed["auto"][request] == [messages, auto_sent, auto_reused], request
        assert printed["trim_messages"][request] == [messages, trim_sent, trim_reused], request


def rows_of(text: str, title: str) -> list[tuple[str, list[str]]]:
    """The rows of the `--rows` table under ``title``: request -> messages, tokens after, reused."""
    lines = text.split(title + "\n", 1)[1].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.strip():
            break
        request, messages, _, after, reused, *_ = line.split()
        rows.append((request, [messages, after, reused]))
    return rows


def test_the_notices_shown_are_the_ones_the_model_reads() -> None:
    """docs/how-it-decides.md's placeholder, marker and cut note are what the code writes, word for word."""
    page = DOCS / "how-it-decides.md"
    placeholder, marker, cut = (
        docs.block("text", section, start, page=page)
        for section, start in (
            ("Markers and placeholders say what was removed", "[litellm_budget: this tool output"),
            ("Markers and placeholders say what was removed", "earlier messages were omitted"),
            ("Markers and placeholders say what was removed", "cut this message"),
        )
    )
    head, *listed, dots, end = marker.splitlines()

    assert placeholder.strip() == placeholder_for("tool", '35 lines: "total 180"')
    assert cut.strip() == cut_note(4880, 4879, 32249)
    assert dots == "..."
    assert "\n".join([head, *listed, end]) == omitted_note(40, 22, listed)
