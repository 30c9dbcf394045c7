"""
What the command line says when an operator's first try is slightly wrong: an unknown model,
a window in thousands, a model the demo's config lacks. One clear line, a non-zero exit where
nothing sensible can be done, and never a number that looks measured when it was guessed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.replay import main as lab_replay
from litellm_budget.tools.cli import main
from litellm_budget.tools.demo import run as demo
from tests.support.builders import agent_session


@pytest.fixture(name="request_file")
def fixture_request_file(tmp_path: Path) -> Path:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(agent_session(16, 800)))  # about 13k tokens
    return path


@pytest.fixture(name="session_dir")
def fixture_session_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "s0.json").write_text(json.dumps({"source": "test", "messages": agent_session(6, 300)}))
    return folder


class TestInspect:
    def test_an_unknown_model_says_the_window_is_unknown_how_big_the_request_is_and_how_to_give_one(
        self, request_file: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """No ``unknown_window 0 -> 0 tokens`` under a 13k ledger: the size, and the three ways to a window."""
        assert main(["inspect", str(request_file), "--model", "no-such-model", "--json"]) == 0
        tokens = json.loads(capsys.readouterr().out)["tokens"]
        assert main(["inspect", str(request_file), "--model", "no-such-model"]) == 0
        out = capsys.readouterr().out

        assert tokens == sum(_ledger_tokens(out))
        assert tokens > 13_000
        assert "window unknown for no-such-model: model has no max_input_tokens in LiteLLM's model map; give its" in out
        assert f"auto: unknown_window  the request has {tokens:,} tokens and would be sent untouched" in out
        assert "--window 16000 (or 16k)" in out
        assert "model_info.max_input_tokens" in out
        assert "default_window" in out
        assert "0 -> 0 tokens" not in out

    @pytest.mark.parametrize("window", ["16k", "16K", "16000"])
    def test_a_window_in_thousands(self, request_file: Path, capsys: pytest.CaptureFixture[str], window: str) -> None:
        """``16k`` and ``16K`` are 16000 tokens, as windows are quoted."""
        assert main(["inspect", str(request_file), "--model", "gpt-4o", "--window", window, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["report"]["window"] == 16_000

    @pytest.mark.parametrize("window", ["16x", "0", "1.5k", "k"])
    def test_a_bad_window_names_the_flag_and_shows_an_example(
        self, request_file: Path, capsys: pytest.CaptureFixture[str], window: str
    ) -> None:
        """argparse's own ``invalid _positive value`` named a function of ours; now the flag and an example."""
        with pytest.raises(SystemExit) as exited:
            main(["inspect", str(request_file), "--model", "gpt-4o", "--window", window])

        err = capsys.readouterr().err.splitlines()[-1]
        assert exited.value.code == 2
        assert err == (
            f"litellm-budget inspect: error: argument --window: {window!r} is not a number of tokens; "
            "give a positive integer, e.g. 16000 or 16k"
        )


class TestReplay:
    def test_windows_in_thousands(self, session_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A list of windows takes the same spellings."""
        argv = ["replay", str(session_dir), "--model", "gpt-4o", "--window", "4k,8K", "--json", "--no-progress"]

        assert main(argv) == 0
        assert [result["window"] for result in json.loads(capsys.readouterr().out)["results"]] == [4000, 8000]

    def test_a_bad_window_list_shows_an_example(self, session_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit):
            main(["replay", str(session_dir), "--model", "gpt-4o", "--window", "8000,16q"])

        assert capsys.readouterr().err.splitlines()[-1] == (
            "litellm-budget replay: error: argument --window: '8000,16q' is not a comma-separated list of windows "
            "in tokens, e.g. 8000,16k,32000"
        )

    def test_a_model_without_prices_is_an_error_unless_the_price_is_given(
        self, session_dir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``--model typo`` priced at an assumed $1/M read as a measurement: now exit 2, unless --price-per-mtok."""
        argv = [str(session_dir), "--model", "typo", "--window", "4000", "--no-progress"]

        assert lab_replay(argv) == 2
        assert capsys.readouterr().err == (
            "python -m benchmarks.replay: error: --model 'typo' is not in LiteLLM's model map (a typo?), so the "
            "replay could not price its tokens: give a model the map prices (e.g. gpt-4o, claude-sonnet-4-5), or your "
            "own price with --price-per-mtok\n"
        )
        assert lab_replay([*argv, "--price-per-mtok", "2", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["prices"].startswith("typo: input $2/M (--price-per-mtok)")


class TestDemo:
    def test_a_model_the_config_lacks_is_one_line_before_any_proxy_starts(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``demo --model nope``: no proxy started, no traceback; the config's models are named."""

        def no_proxy(*args: Any, **kwargs: Any) -> None:
            raise AssertionError("the proxy was started")

        monkeypatch.setattr(demo, "running_proxy", no_proxy)

        assert main(["demo", "--model", "nope"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("litellm-budget: error: --model 'nope' is not a model_name of ")
        assert err.endswith("demo/config.yaml; its models: agent-model, agent-model-plan\n")
        assert len(err.splitlines()) == 1

    def test_an_error_answer_is_one_line(self) -> None:
        """An error the proxy answers (a model it cannot route) ends the demo with its message, not a traceback."""
        body = {"error": {"message": "Invalid model name passed in model=nope\nmore detail", "code": "400"}}
        transport = httpx.MockTransport(lambda _: httpx.Response(400, json=body))

        with (
            httpx.Client(base_url="http://proxy", transport=transport) as client,
            pytest.raises(RuntimeError) as failed,
        ):
            demo._send(client, "sk-x", "nope", 3, agent_session(1, 10))

        assert str(failed.value) == (
            "the proxy answered request 3 to nope with HTTP 400: Invalid model name passed in model=nope"
        )


def _ledger_tokens(out: str) -> list[int]:
    """The tokens column of the ledger table that opens ``inspect``'s output."""
    rows = out.split("\n\n", maxsplit=1)[0].splitlines()[2:]
    return [int(row.split()[-1].replace(",", "")) for row in rows]
