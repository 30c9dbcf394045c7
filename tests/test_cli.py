"""The litellm-budget command: arguments, formats, and errors on bad files, on small fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from litellm_budget.tools.cli import main
from tests.builders import agent_session, tool_step


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


class TestReplay:
    def test_policies_and_baselines_side_by_side(self, session_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Every window x strategy gets one line of measures, in JSON too."""
        argv = [
            "replay",
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

        assert main(argv) == 0

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
            main(
                [
                    "replay",
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

    def test_unknown_strategy_and_empty_folder(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Unknown names and folders without sessions are errors before any work."""
        (tmp_path / "a.json").write_text(json.dumps(agent_session(2)))

        assert main(["replay", str(tmp_path), "--model", "gpt-4o", "--window", "4000", "--baseline", "magic"]) == 2
        empty = tmp_path / "empty"
        empty.mkdir()
        assert main(["replay", str(empty), "--model", "gpt-4o", "--window", "4000"]) == 2
        assert "unknown policy or baseline" in capsys.readouterr().err

    def test_bad_window_is_an_argument_error(self, session_dir: Path) -> None:
        """--window must be positive integers."""
        with pytest.raises(SystemExit) as exit_info:
            main(["replay", str(session_dir), "--model", "gpt-4o", "--window", "8k"])
        assert exit_info.value.code == 2

    def test_plot(self, session_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--plot writes a PNG when matplotlib is there, and says how to get it when not."""
        target = tmp_path / "plot.png"
        status = main(
            [
                "replay",
                str(session_dir),
                "--model",
                "gpt-4o",
                "--window",
                "4000",
                "--baseline",
                "sliding",
                "--plot",
                str(target),
            ]
        )
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            assert status == 2
            assert "litellm-budget[plot]" in capsys.readouterr().err
        else:
            assert status == 0
            assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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


@pytest.mark.proxy
def test_demo_through_the_real_proxy(capsys: pytest.CaptureFixture[str]) -> None:
    """`litellm-budget demo` starts the proxy from examples/config.yaml, replays, prints a row each, stops."""
    config = Path(__file__).parents[1] / "examples" / "config.yaml"

    assert main(["demo", "--config", str(config), "--steps", "12"]) == 0

    out = capsys.readouterr().out
    assert "tokens before" in out
    assert "trimmed" in out
    assert "all answered; proxy stopped." in out
