"""The litellm-budget command: arguments, formats, and errors on bad files, on small fixtures."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.lab import replay_cli
from benchmarks.lab.plot import MISSING
from benchmarks.lab.replay import Row
from benchmarks.replay import main as lab_replay
from litellm_budget import BudgetSettings
from litellm_budget.tools.cli import demo_config, main
from litellm_budget.tools.inspect import group_changes
from tests.support.builders import agent_session, chat_session, tool_step
from tests.support.paths import EXAMPLES


@pytest.fixture(name="session_dir")
def fixture_session_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for number in range(2):
        (folder / f"s{number}.json").write_text(json.dumps({"source": "test", "messages": agent_session(12, 700)}))
    return folder


class TestInspect:
    @pytest.mark.parametrize("shape", ["list", "body", "session"])
    def test_reads_every_file_shape(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], shape: str) -> None:
        """A message list, a request body and a session file are all understood."""
        messages = agent_session(12, 700)
        data = {
            "list": messages,
            "body": {"model": "gpt-4o", "messages": messages},
            "session": {"meta": {}, "messages": messages},
        }
        path = tmp_path / "request.json"
        path.write_text(json.dumps(data[shape]))

        status = main(["inspect", str(path), "--model", "gpt-4o", "--window", "6000", "--json"])

        report = json.loads(capsys.readouterr().out)
        assert status == 0
        assert report["report"]["window"] == 6000
        assert {entry["part"] for entry in report["ledger"]} >= {
            "system",
            "tools schema + reply priming",
            "history: tool",
        }
        assert any(change["change"] == "elided" for change in report["changes"])

    def test_human_readable_table(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Without --json the ledger, limits and the verdict are printed as text."""
        path = tmp_path / "r.json"
        path.write_text(json.dumps({"model": "gpt-4o", "messages": agent_session(12, 700), "max_tokens": 500}))

        assert main(["inspect", str(path), "--window", "6000", "--policy", "plan"]) == 0

        out = capsys.readouterr().out
        assert "share of window" in out
        assert "watermark" in out
        assert "plan: trimmed" in out
        assert "dropped" in out

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("{not json", "not a readable JSON"),
            ('{"messages": "x"}', "expected a JSON list"),
            ("[1, 2]", "expected a JSON list"),
        ],
        ids=["not-json", "messages-not-list", "entries-not-objects"],
    )
    def test_bad_files_exit_2_with_a_message(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
    ) -> None:
        """A file that holds no conversation is a clear error with exit status 2."""
        path = tmp_path / "bad.json"
        path.write_text(content)

        assert main(["inspect", str(path), "--model", "gpt-4o"]) == 2
        assert message in capsys.readouterr().err

    def test_missing_file_and_model(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A missing file, or no model anywhere, are errors too."""
        path = tmp_path / "r.json"
        path.write_text(json.dumps(agent_session(2)))

        assert main(["inspect", str(tmp_path / "nope.json"), "--model", "gpt-4o"]) == 2
        assert main(["inspect", str(path)]) == 2
        assert "no --model" in capsys.readouterr().err

    def test_changes_are_grouped_into_ranges(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Dropped messages print as two rows, one per role, with their index range, count and tokens."""
        path = tmp_path / "chat.json"
        path.write_text(json.dumps({"model": "gpt-4o", "messages": chat_session(30, 300)}))

        assert main(["inspect", str(path), "--window", "4000", "--policy", "plan", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert main(["inspect", str(path), "--window", "4000", "--policy", "plan"]) == 0
        text = capsys.readouterr().out

        tokens = {
            role: sum(c["tokens"] for c in data["changes"] if c["role"] == role) for role in ("user", "assistant")
        }
        # Whole turns go, but the first question (the task) stays: its answer, then each later turn.
        turns = len(data["changes"]) // 2
        assert (len(data["changes"]), turns > 10) == (2 * turns + 1, True)
        assert data["groups"] == [
            {
                "indices": f"2-{2 * turns + 2}",
                "first": 2,
                "last": 2 * turns + 2,
                "role": "assistant",
                "messages": turns + 1,
                "tokens": tokens["assistant"],
                "change": "dropped",
            },
            {
                "indices": f"3-{2 * turns + 1}",
                "first": 3,
                "last": 2 * turns + 1,
                "role": "user",
                "messages": turns,
                "tokens": tokens["user"],
                "change": "dropped",
            },
        ]
        table = text[text.index("indices") :].splitlines()
        assert [line.split()[:3] for line in table[2:]] == [
            [f"2-{2 * turns + 2}", "assistant", str(turns + 1)],
            [f"3-{2 * turns + 1}", "user", str(turns)],
        ]


def test_group_changes_splits_runs_by_change_and_role() -> None:
    """A run of one change holds across unchanged messages and ends where another change starts."""

    def change(index: int, role: str, kind: str) -> dict[str, Any]:
        return {"index": index, "role": role, "tokens": 10 * index, "change": kind}

    changes = [
        change(2, "assistant", "dropped"),
        change(3, "tool", "dropped"),
        change(4, "assistant", "dropped"),
        change(5, "tool", "dropped"),
        change(7, "tool", "elided"),
        change(9, "tool", "elided"),
        change(11, "assistant", "cut"),
        change(13, "tool", "elided"),
    ]

    rows = [(g["indices"], g["role"], g["messages"], g["tokens"], g["change"]) for g in group_changes(changes)]

    assert rows == [
        ("2-4", "assistant", 2, 60, "dropped"),
        ("3-5", "tool", 2, 80, "dropped"),
        ("7-9", "tool", 2, 160, "elided"),
        ("11", "assistant", 1, 110, "cut"),
        ("13", "tool", 1, 130, "elided"),
    ]


class TestReplay:
    def test_policies_and_baselines_side_by_side(self, session_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Every window x strategy gets one line of measures, in JSON too."""
        argv = [
            str(session_dir),
            "--model",
            "gpt-4o",
            "--window",
            "4000,8000",
            "--policy",
            "auto,elide",
            "--baseline",
            "sliding",
            "--json",
        ]

        assert lab_replay(argv) == 0

        results = json.loads(capsys.readouterr().out)["results"]
        assert [(r["window"], r["strategy"]) for r in results] == [
            (4000, "auto"),
            (4000, "elide"),
            (4000, "sliding"),
            (8000, "auto"),
            (8000, "elide"),
            (8000, "sliding"),
        ]
        auto = results[0]
        assert auto["requests"] == 24
        assert auto["overflow"] == auto["invalid_pairs"] == 0
        assert 0 < auto["reuse"] <= 1
        assert auto["reprefilled_tokens"] > 0

    def test_rows_and_table(self, session_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """The text output has the totals table and, with --rows, one line per request."""
        assert (
            main(
                [
                    "replay",
                    str(session_dir / "s0.json"),
                    "--model",
                    "gpt-4o",
                    "--window",
                    "4000",
                    "--rows",
                    "--no-progress",
                ]
            )
            == 0
        )

        out = capsys.readouterr().out
        assert "reprefilled_tokens" in out
        assert "== auto at 4000" in out
        assert out.count("trimmed") >= 3

    def test_the_policies_count_as_in_the_research_replay(
        self, session_dir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """One loop: each figure the wheel's replay prints is the research replay's, per window and policy."""
        argv = [str(session_dir), "--model", "gpt-4o", "--window", "4000,8000", "--policy", "auto,plan", "--json"]

        assert main(["replay", *argv, "--format", "anthropic"]) == 0
        ours = json.loads(capsys.readouterr().out)
        assert lab_replay([*argv, "--format", "anthropic"]) == 0
        lab = json.loads(capsys.readouterr().out)

        assert set(ours) == {"model", "settings", "results"}
        assert len(ours["results"]) == len(lab["results"]) == 4
        for mine, theirs in zip(ours["results"], lab["results"], strict=True):
            assert mine.pop("policy") == theirs["strategy"]
            figures = set(mine) - {"ms_per_request", "sent_tokens"}  # the research replay prices what was sent
            assert {key: mine[key] for key in figures} == {key: theirs[key] for key in figures}

    @pytest.mark.parametrize(
        "extra", [["--baseline", "sliding"], ["--plot", "p.png"], ["--cache-breakpoints"], ["--watermarks", "0.5"]]
    )
    def test_the_research_options_name_where_they_are(
        self, session_dir: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
    ) -> None:
        """The wheel has no peers, prices, caches or plots: such an option says to run the research replay."""
        with pytest.raises(SystemExit) as exited:
            main(["replay", str(session_dir), "--model", "gpt-4o", "--window", "4000", *extra])

        assert exited.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"litellm-budget replay: error: {extra[0]} is an option of the research replay: run python -m "
            "benchmarks.replay, from a clone of the repository, with the same arguments"
        )

    def test_a_summarizing_policy_names_the_research_replay(
        self, session_dir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``summarize`` needs a summary model, which only the research replay stands in for."""
        argv = ["replay", str(session_dir), "--model", "gpt-4o", "--window", "4000", "--policy", "auto,summarize"]

        assert main(argv) == 2
        assert "python -m benchmarks.replay" in capsys.readouterr().err

    @pytest.mark.parametrize("fmt", ["anthropic", "responses"])
    def test_sessions_replay_in_other_formats(
        self, session_dir: Path, capsys: pytest.CaptureFixture[str], fmt: str
    ) -> None:
        """--format replays the chat sessions converted to another API: fitted, valid, same request count."""
        argv = [str(session_dir), "--model", "gpt-4o", "--window", "4000", "--no-progress", "--json"]

        assert lab_replay([*argv, "--format", fmt]) == 0
        other = json.loads(capsys.readouterr().out)["results"][0]
        assert lab_replay(argv) == 0
        chat = json.loads(capsys.readouterr().out)["results"][0]

        assert other["requests"] == chat["requests"]
        assert other["overflow"] == other["invalid_pairs"] == 0
        assert other["fitted"] == other["requests"]

    def test_baselines_refuse_other_formats(self, session_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """The chat baselines cannot read another API's messages: a clear error before replaying."""
        argv = [str(session_dir), "--model", "gpt-4o", "--window", "4000", "--format", "anthropic"]

        assert lab_replay([*argv, "--baseline", "sliding"]) == 2
        assert "takes chat messages only" in capsys.readouterr().err

    def test_trim_messages_baseline_is_measured_honestly(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """LiteLLM's trim_messages leaves orphan tool results in the middle: replay counts them."""
        messages = agent_session(0)
        for seed in range(12):
            messages += tool_step(600, seed=seed)
        path = tmp_path / "s.json"
        path.write_text(json.dumps(messages))

        assert (
            lab_replay(
                [
                    str(path),
                    "--model",
                    "gpt-4o",
                    "--window",
                    "3000",
                    "--baseline",
                    "trim_messages",
                    "--policy",
                    "auto",
                    "--json",
                ]
            )
            == 0
        )

        results = {r["strategy"]: r for r in json.loads(capsys.readouterr().out)["results"]}
        assert results["auto"]["invalid_pairs"] == 0
        assert results["trim_messages"]["invalid_pairs"] > 0

    def test_peers_money_and_waste(self, session_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Every peer replays beside auto; needless re-prefill, its share of new tokens and the priced cost per row."""
        peers = "masking,clear_tool_uses,litellm_polyfill,langchain_trim"
        if importlib.util.find_spec("langchain_core") is None:
            peers = peers.removesuffix(",langchain_trim")
        argv = [str(session_dir), "--model", "gpt-4o", "--window", "4000", "--baseline", peers, "--json"]

        assert lab_replay(argv) == 0

        out = json.loads(capsys.readouterr().out)
        assert out["prices"].startswith("gpt-4o: input $2.5/M (model map)")
        assert set(out["peers"]) == set(peers.split(","))
        results = {r["strategy"]: r for r in out["results"]}
        assert set(results) == {"auto", *peers.split(",")}
        for result in results.values():
            assert 0 <= result["needless_reprefill"] <= result["reprefilled_tokens"]
            assert result["needless_per_new"] >= 0
            assert result["input_cost"] > 0
        assert results["auto"]["watermark"] == BudgetSettings().watermark
        assert results["masking"]["watermark"] is None
        # Masking never trims: on 12 steps of 700 tokens at a 4k window, it overflows.
        assert results["masking"]["overflow"] > 0

    def test_prices_are_the_models_own_or_the_flags(
        self, session_dir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The text output names where the prices came from; --price-per-mtok and --cached-share override the map."""
        argv = [str(session_dir / "s0.json"), "--model", "gpt-4o", "--window", "4000", "--no-progress"]

        assert lab_replay(argv) == 0
        mapped = capsys.readouterr().out
        assert lab_replay([*argv, "--price-per-mtok", "10", "--cached-share", "0.1", "--json"]) == 0
        flagged = json.loads(capsys.readouterr().out)

        assert "needless_reprefill" in mapped
        assert "needless_per_new" in mapped
        assert "input_cost: in dollars, at gpt-4o: input $2.5/M (model map); reused prefix at $1.25/M" in mapped
        assert "input $10/M (--price-per-mtok); reused prefix at $1/M (cache read, --cached-share)" in flagged["prices"]
        auto = flagged["results"][0]
        reused = round(auto["reuse"] * (auto["reprefilled_tokens"] / (1 - auto["reuse"])))
        assert auto["input_cost"] == pytest.approx((auto["reprefilled_tokens"] * 10 + reused * 1) / 1e6, rel=1e-3)

    def test_peers_refuse_other_formats(self, session_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        argv = [str(session_dir), "--model", "gpt-4o", "--window", "4000", "--format", "responses"]
        assert lab_replay([*argv, "--baseline", "masking"]) == 2
        assert "'masking' takes chat messages only" in capsys.readouterr().err

    def test_watermarks_replay_each_policy_again(self, session_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--watermarks adds a row per policy and watermark (the default is the policy's own row); bad values fail."""
        argv = [str(session_dir), "--model", "gpt-4o", "--window", "4000", "--policy", "auto,plan", "--json"]

        default = BudgetSettings().watermark
        assert lab_replay([*argv, "--watermarks", f"0.5,{default}"]) == 0

        results = json.loads(capsys.readouterr().out)["results"]
        assert [(r["strategy"], r["watermark"]) for r in results] == [
            ("auto", default),
            ("plan", default),
            ("auto@0.5", 0.5),
            ("plan@0.5", 0.5),
        ]
        assert results[3]["mean_fill"] < results[1]["mean_fill"]  # plan aims lower at a lower watermark
        with pytest.raises(SystemExit):
            lab_replay([*argv, "--watermarks", "0.5,1.5"])

    def test_plot_cost_writes_a_png(
        self, session_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        pytest.importorskip("matplotlib")
        target = tmp_path / "cost.png"
        argv = [str(session_dir), "--model", "gpt-4o", "--window", "4000,8000", "--no-progress"]

        status = lab_replay(
            [*argv, "--baseline", "masking,sliding", "--watermarks", "0.5,0.6", "--plot-cost", str(target)]
        )

        assert status == 0
        assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert capsys.readouterr().out.splitlines()[-1] == f"cost plot written to {target}: windows 4000, 8000"

    def test_unknown_strategy_and_empty_folder(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Unknown names and folders without sessions are errors before any work."""
        (tmp_path / "a.json").write_text(json.dumps(agent_session(2)))

        assert lab_replay([str(tmp_path), "--model", "gpt-4o", "--window", "4000", "--baseline", "magic"]) == 2
        empty = tmp_path / "empty"
        empty.mkdir()
        assert lab_replay([str(empty), "--model", "gpt-4o", "--window", "4000"]) == 2
        assert "unknown policy or baseline" in capsys.readouterr().err

    def test_bad_window_is_an_argument_error(self, session_dir: Path) -> None:
        """--window must be positive numbers of tokens (16k is one: tests/tools/test_cli_errors.py)."""
        with pytest.raises(SystemExit) as exit_info:
            main(["replay", str(session_dir), "--model", "gpt-4o", "--window", "8x"])
        assert exit_info.value.code == 2

    def test_plot_writes_a_png_of_every_window(
        self, session_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--plot writes one PNG with a panel per window and names the session it draws."""
        pytest.importorskip("matplotlib")
        target = tmp_path / "plot.png"

        status = lab_replay(
            [
                str(session_dir),
                "--model",
                "gpt-4o",
                "--window",
                "4000,8000",
                "--baseline",
                "sliding",
                "--plot",
                str(target),
                "--no-progress",
            ]
        )

        assert status == 0
        assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert capsys.readouterr().out.splitlines()[-1] == f"plot written to {target}: s0, windows 4000, 8000"

    def test_plot_without_matplotlib_fails_before_the_replay(
        self, session_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without matplotlib, --plot is one clear error line and exit 2, before anything is replayed."""
        monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
        replayed: list[str] = []
        monkeypatch.setattr(replay_cli, "replay_session", lambda name, *_, **__: replayed.append(name))
        argv = [str(session_dir), "--model", "gpt-4o", "--window", "4000", "--plot", str(tmp_path / "p.png")]

        status = lab_replay(argv)

        assert (status, replayed) == (2, [])
        assert capsys.readouterr().err == f"python -m benchmarks.replay: error: {MISSING}\n"
        assert "pip install matplotlib" in MISSING


def _row(request: int, action: str, sent: int, *, elided: int = 0, dropped: int = 0, shared: int = 0) -> Row:
    return Row(
        session="s",
        request=request,
        messages=2 * request,
        tokens_before=1000 * request,
        tokens_after=0 if action == "rejected" else sent,
        action=action,
        elided=elided,
        dropped=dropped,
        shared=shared,
        new=0,
        overflow=False,
        invalid=False,
        ms=0.1,
    )


def test_plot_draws_a_panel_per_window_and_explains_every_mark() -> None:
    """Every window gets a panel, every strategy a line, rejections labelled ticks, the legend every mark."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from benchmarks.lab import plot

    grows = [_row(n, "passthrough", 1000 * n, shared=1000 * (n - 1)) for n in range(1, 9)]
    rejects = [*grows[:4], *(_row(n, "rejected", 0) for n in range(5, 9))]
    lone = [*grows[:4], _row(5, "rejected", 0), grows[5], *(_row(n, "rejected", 0) for n in (7, 8))]
    panels = {4000: {"auto": grows, "elide": rejects}, 16000: {"auto": grows, "elide": lone}}

    figure = plot.draw(panels, title="Prompt tokens sent per request: session s")
    try:
        titles = [ax.get_title(loc="left") for ax in figure.axes]
        notes = [[text.get_text() for text in ax.texts] for ax in figure.axes]
        points = [collection.get_offsets().tolist() for collection in figure.axes[1].collections]
        legend = [text.get_text() for text in figure.legends[0].get_texts()]
        suptitle = figure.get_suptitle()
    finally:
        plt.close(figure)

    assert titles == [
        "4,000-token window (the whole history grows to 8,000 tokens)",
        "16,000-token window (the whole history grows to 8,000 tokens)",
    ]
    assert notes == [["elide rejects requests 5-8"], ["elide: 3 rejected, the first at 5"]]
    assert [[6.0, 6000.0]] in points  # the lone request sent between rejections, as a dot
    assert legend == [
        "auto",
        "elide",
        plot.HISTORY_LABEL,
        " ",
        plot.BREAK_LABEL,
        plot.WINDOW_LABEL,
        plot.REJECTED_LABEL,
        plot.LONE_LABEL,
    ]
    assert suptitle == "Prompt tokens sent per request: session s"


def test_cost_plot_marks_invalid_strategies_and_draws_the_watermark_frontier() -> None:
    """A panel per window; our watermark runs joined by a line; an overflowing peer hollow, and listed if far off."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from benchmarks.lab.plot_cost import HOLLOW_LABEL, draw_cost_fill

    def result(window: int, strategy: str, fill: float, cost: float, **extra: Any) -> dict[str, Any]:
        fields = {"overflow": 0, "invalid_pairs": 0, "rejected": 0, "watermark": None, **extra}
        return {"window": window, "strategy": strategy, "mean_fill": fill, "input_cost": cost, **fields}

    results = [
        result(8000, "auto", 0.5, 2.0, watermark=0.75),
        result(8000, "masking", 2.4, 9.0, overflow=60),
        result(8000, "sliding", 0.55, 2.5, invalid_pairs=3),
        result(8000, "auto@0.5", 0.4, 1.5, watermark=0.5),
        result(16000, "auto", 0.4, 3.0, watermark=0.75),
        result(16000, "masking", 0.45, 3.2),
        result(16000, "auto@0.5", 0.3, 2.0, watermark=0.5),
    ]
    figure = draw_cost_fill(results, title="Input cost against context fill", policies=["auto"], prices="p")
    try:
        titles = [ax.get_title(loc="left") for ax in figure.axes]
        notes = [[text.get_text() for text in ax.texts] for ax in figure.axes]
        lines = [[line.get_xydata().tolist() for line in ax.get_lines()] for ax in figure.axes]
        legend = [text.get_text() for text in figure.legends[0].get_texts()]
        labels = (figure.axes[0].get_xlabel(), figure.axes[0].get_ylabel())
    finally:
        plt.close(figure)

    assert titles == ["8,000-token window", "16,000-token window"]
    assert lines[0] == [[[0.4, 1.5], [0.5, 2.0]]]
    assert "□ masking overflows 60: off the chart at fill 2.40, $9.00" in notes[0]
    assert any("sliding orphan pairs 3" in note for note in notes[0])
    assert {"auto (0.75)", "masking", "0.5"} <= set(notes[1])
    assert legend[-1] == HOLLOW_LABEL
    assert labels == (
        "mean fill: prompt tokens sent / window (more context kept →)",
        "input cost of all requests, US dollars",
    )


def test_progress_bar_draws_on_a_terminal() -> None:
    """The progress bar redraws one line and ends it."""
    import io

    from litellm_budget.tools.progress import Progress

    stream = io.StringIO()
    progress = Progress(4, enabled=True, stream=stream, width=8)
    for _ in range(4):
        progress.step("s")
    progress.close()

    assert stream.getvalue().count("\r") == 4
    assert "100%" in stream.getvalue()


def test_demo_config_is_built_in_and_works_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --config the demo uses the packaged twin of examples/config.yaml, wherever it runs."""
    example = yaml.safe_load((EXAMPLES / "config.yaml").read_text())
    monkeypatch.chdir(tmp_path)

    with demo_config(None) as builtin:
        shipped = yaml.safe_load(builtin.read_text())
    with demo_config(EXAMPLES / "config.yaml") as given:
        chosen = given

    # The twin leaves out only the Prometheus exporter, which needs prometheus_client.
    settings = example["litellm_settings"]
    settings["callbacks"].remove("prometheus")
    del settings["custom_prometheus_metadata_labels"]
    assert shipped == example
    assert shipped["general_settings"]["master_key"]
    assert chosen == EXAMPLES / "config.yaml"
    assert main(["demo", "--config", "examples/config.yaml"]) == 2
    assert capsys.readouterr().err == (
        "litellm-budget: error: examples/config.yaml: no such config file (leave out --config for the built-in one)\n"
    )


@pytest.mark.parametrize(("module", "named"), [("yaml", "pyyaml"), ("websockets", "litellm[proxy]")])
def test_demo_without_its_extra_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, module: str, named: str
) -> None:
    """A missing demo dependency (an SDK-only install lacks the proxy's) names the demo extra, not a traceback."""
    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.delitem(sys.modules, "litellm_budget.tools.demo.run", raising=False)

    assert main(["demo"]) == 2
    assert capsys.readouterr().err == (
        f"litellm-budget: error: the demo runs the LiteLLM proxy, which needs {named}: pip install '{named}', "
        "or this package with its demo extra (in a clone: pip install '.[demo]')\n"
    )


def test_demo_rows_say_why_the_edit_changed() -> None:
    """The why column is read from the counts: what changed since the row above, blank when nothing did."""
    from litellm_budget.tools.demo.run import reasons

    counts = [
        ("passthrough", 0, 0),
        ("passthrough", 0, 0),
        ("trimmed", 2, 0),
        ("trimmed", 2, 0),
        ("trimmed", 0, 16),
        ("trimmed", 4, 0),
        ("trimmed", 5, 0),
        ("trimmed", 0, 37),
        ("trimmed", 0, 47),
        ("trimmed", 4, 24),
        ("trimmed", 2, 24),
        ("passthrough", 0, 0),
    ]
    rows = [_row(n, action, 500, elided=e, dropped=d) for n, (action, e, d) in enumerate(counts, 1)]

    assert reasons(rows) == [
        "fits: sent untrimmed",
        "",
        "over budget: 2 elided",
        "",
        "new drop block: dropped 0 -> 16",
        "drop released: eliding 4 fits",
        "more elided: 4 -> 5",
        "new drop block: dropped 0 -> 37",
        "bigger drop block: dropped 37 -> 47",
        "smaller drop block: dropped 47 -> 24",
        "fewer elided: 4 -> 2",
        "fits: sent untrimmed",
    ]


@pytest.mark.proxy
def test_demo_through_the_real_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`litellm-budget demo` from an empty folder starts the proxy on its built-in config and tells what it does."""
    monkeypatch.chdir(tmp_path)

    assert main(["demo", "--steps", "15"]) == 0

    out = capsys.readouterr().out
    lines = out.splitlines()
    table = lines[lines.index(next(line for line in lines if line.startswith("request"))) :]
    assert "replaying 15 agent steps as 16 requests to agent-model" in out
    assert table[0].split() == [
        "request",
        "messages",
        "tokens",
        "before",
        "tokens",
        "after",
        "action",
        "elided",
        "dropped",
        "ms",
        "why",
    ]
    assert [line.split()[0] for line in table[2:18]] == [str(n) for n in range(1, 17)]
    assert "over budget:" in out
    assert "elided and dropped count messages (x-litellm-budget-elided, x-litellm-budget-dropped), not units;" in out
    assert lines[-1] == f"16 requests, {out.count(' trimmed ')} trimmed, all answered; proxy stopped."


def test_demo_reads_a_master_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A config whose master_key is os.environ/NAME (as the README's) gives the demo that variable's value."""
    from litellm_budget.tools.demo.run import master_key_of

    monkeypatch.setenv("DEMO_KEY_FOR_TEST", "sk-from-env")

    assert master_key_of({"general_settings": {"master_key": "os.environ/DEMO_KEY_FOR_TEST"}}) == "sk-from-env"
    assert master_key_of({"general_settings": {"master_key": "sk-literal"}}) == "sk-literal"
    assert master_key_of({}) == ""


class TestSettingsOfARun:
    """``--config`` (a proxy config's ``callback_settings.litellm_budget``) and ``--set KEY=VALUE``."""

    @staticmethod
    def _replay(session_dir: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
        argv = ["replay", str(session_dir), "--model", "gpt-4o", "--window", "4000", "--json", *extra]
        assert main(argv) == 0
        return json.loads(capsys.readouterr().out)

    def test_set_changes_the_fit_and_the_output_says_so(
        self, session_dir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A what-if is replayed with that setting, and the output names every setting not a default."""
        default = self._replay(session_dir, capsys, "--policy", "plan")
        changed = self._replay(
            session_dir, capsys, "--policy", "plan", "--set", "watermark=0.5", "--set", "elide_min_tokens=null"
        )

        assert default["settings"] == {}
        assert changed["settings"] == {"watermark": 0.5}  # elide_min_tokens=null is its default
        assert changed["results"][0]["watermark"] == 0.5
        assert changed["results"][0]["mean_fill"] < default["results"][0]["mean_fill"]  # plan aims lower

    def test_a_proxy_config_is_replayed_with_its_settings_and_set_goes_over_them(
        self, session_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The config's policy is the default policy; ``--set`` overrides a config's value."""
        config = tmp_path / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "model_list": [],
                    "callback_settings": {"litellm_budget": {"policy": "plan", "watermark": 0.5}},
                    "litellm_settings": {"callbacks": ["litellm_budget.handler"]},
                }
            )
        )
        from_config = self._replay(session_dir, capsys, "--config", str(config))
        from_flags = self._replay(session_dir, capsys, "--policy", "plan", "--set", "watermark=0.5")
        over = self._replay(session_dir, capsys, "--config", str(config), "--set", "watermark=0.6")

        assert [r["policy"] for r in from_config["results"]] == ["plan"]
        assert from_config["settings"] == {"policy": "plan", "watermark": 0.5}
        assert _measures(from_config) == _measures(from_flags)
        assert over["results"][0]["watermark"] == 0.6
        assert _measures(over) != _measures(from_config)

    def test_inspect_takes_them_too(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        request = tmp_path / "request.json"
        request.write_text(json.dumps(agent_session(16, 800)))
        argv = ["inspect", str(request), "--model", "gpt-4o", "--window", "8000", "--json"]

        assert main([*argv, "--set", "watermark=0.5", "--set", "policy=plan"]) == 0
        report = json.loads(capsys.readouterr().out)["report"]

        assert report["policy"] == "plan"
        assert report["watermark"] == report["budget"] // 2

    def test_the_examples_config_replays_as_written(
        self, session_dir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        result = self._replay(session_dir, capsys, "--config", str(EXAMPLES / "config.yaml"))
        assert [r["policy"] for r in result["results"]] == ["auto"]

    @pytest.mark.parametrize(
        ("extra", "said"),
        [
            (["--set", "watermak=0.8"], "--set watermak=0.8: 'watermak' is not a setting (did you mean 'watermark'?)"),
            (["--set", "watermark=1.5"], "--set watermark=1.5: BudgetSettings.watermark must be between 0 and 1"),
            (["--set", "protected_tail=many"], "--set protected_tail=many: litellm_budget setting 'protected_tail'"),
            (["--set", "watermark"], "--set 'watermark': give a setting as KEY=VALUE"),
            (["--config", "{missing}"], "missing.yaml: cannot read the config"),
            (["--config", "{bare}"], "bare.yaml: no callback_settings.litellm_budget mapping"),
            (["--config", "{typo}"], "typo.yaml: callback_settings.litellm_budget: 'polcy' is not a setting"),
        ],
    )
    def test_a_mistyped_setting_fails_before_anything_is_measured(
        self,
        session_dir: Path,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        extra: list[str],
        said: str,
    ) -> None:
        """Never the defaults' numbers under the operator's settings: exit 2, the file or flag and the key named."""
        (tmp_path / "bare.yaml").write_text("model_list: []\n")
        (tmp_path / "typo.yaml").write_text("callback_settings:\n  litellm_budget:\n    polcy: plan\n")
        paths = {name: str(tmp_path / f"{name}.yaml") for name in ("missing", "bare", "typo")}
        extra = [part.format(**paths) for part in extra]

        for command in (["replay", str(session_dir), "--window", "4000"], ["inspect", str(session_dir / "s0.json")]):
            assert main([*command, "--model", "gpt-4o", *extra]) == 2
            captured = capsys.readouterr()
            assert said in captured.err
            assert captured.out == ""


def _measures(output: dict[str, Any]) -> list[dict[str, Any]]:
    """A replay's results without the time each request took, the one field that differs between runs."""
    return [{k: v for k, v in r.items() if k != "ms_per_request"} for r in output["results"]]
