"""
The plugin's events as the application configured structlog, and as JSON lines where nobody did
and LiteLLM writes JSON (``JSON_LOGS=True``): a proxy's log pipeline reads every line as JSON.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import subprocess
import sys
from unittest import mock

import litellm
import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st
from structlog.dev import ConsoleRenderer
from structlog.testing import capture_logs

from litellm_budget import logs
from litellm_budget.logs import get_logger

log = get_logger()


@pytest.fixture(autouse=True)
def _litellm_log_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LITELLM_LOG", raising=False)


@pytest.fixture(name="json_logs")
def fixture_json_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(litellm, "json_logs", True)


@pytest.mark.usefixtures("json_logs")
def test_unconfigured_structlog_follows_litellm_json_logs(capsys: pytest.CaptureFixture[str]) -> None:
    """One JSON line per event, on stdout, with LiteLLM's ``message`` key beside structlog's ``event``."""
    log.info("request_trimmed", tokens_before=12, dropped_at="2-5")
    log.warning("hook_failed", hook="h", step="fit")

    lines = capsys.readouterr().out.splitlines()
    events = [json.loads(line) for line in lines]

    assert [(e["event"], e["message"], e["level"], e["component"]) for e in events] == [
        ("request_trimmed", "request_trimmed", "info", "litellm_budget"),
        ("hook_failed", "hook_failed", "warning", "litellm_budget"),
    ]
    assert (events[0]["tokens_before"], events[0]["dropped_at"]) == (12, "2-5")
    assert events[0]["timestamp"].endswith("Z")


def test_without_json_logs_it_is_structlogs_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert litellm.json_logs is not True
    log.info("request_trimmed", tokens_before=12)

    out = capsys.readouterr().out

    assert "request_trimmed" in out
    assert "tokens_before=12" in out
    assert not out.lstrip().startswith("{")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_in_a_terminal_structlogs_own_defaults_render_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a person reads the lines, structlog's default processors (its coloured console renderer) write them."""
    defaults = [structlog.processors.KeyValueRenderer(key_order=["event"])]
    # Not configure(): structlog stays unconfigured, with other defaults.
    monkeypatch.setattr(structlog._config._CONFIG, "default_processors", defaults)
    terminal, log_file = _Terminal(), io.StringIO()
    for stdout in (terminal, log_file):
        monkeypatch.setattr(sys, "stdout", stdout)
        log.info("request_trimmed", tokens_before=12)

    assert terminal.getvalue() == "event='request_trimmed' tokens_before=12\n"
    assert log_file.getvalue().endswith(" [info     ] request_trimmed" + " " * 16 + "tokens_before=12\n")


values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@given(
    fields=st.dictionaries(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), values, max_size=12),
    event=st.from_regex(r"[a-z_]{1,40}", fullmatch=True),
    level=st.sampled_from(["debug", "info", "warning", "error", "critical"]),
    exception=st.one_of(st.none(), st.just("Traceback (most recent call last):\nZeroDivisionError: division by zero")),
)
def test_off_a_terminal_each_line_is_the_console_renderers_without_colours(
    fields: dict[str, object], event: str, level: str, exception: str | None
) -> None:
    """The cheaper renderer a proxy's log gets writes, byte for byte, what structlog's console renderer would."""
    for taken in ("timestamp", "level", "event", "exception", "stack", "exc_info"):
        fields.pop(taken, None)
    line = {"timestamp": "2026-12-03 01:00:00", "level": level, "event": event, **fields}
    if exception is not None:
        line["exception"] = exception

    assert logs._plain_line(None, level, dict(line)) == ConsoleRenderer(colors=False)(None, level, dict(line))


def test_off_a_terminal_an_exceptions_traceback_follows_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        _ = 1 / 0
    except ZeroDivisionError:
        log.exception("hook_failed", hook="async_pre_call_hook")

    lines = capsys.readouterr().out.splitlines()

    assert "[error    ] hook_failed" in lines[0]
    assert lines[0].endswith("hook=async_pre_call_hook")
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "ZeroDivisionError: division by zero"


def test_one_logger_per_choice_and_another_when_stdout_the_level_or_the_format_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Built once for a stdout, level and format, and read again per event: a change takes the next event."""
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", first)
    assert logs.in_force() is logs.in_force()
    log.info("request_trimmed", turn=1)
    monkeypatch.setattr(sys, "stdout", second)
    log.info("request_trimmed", turn=2)
    monkeypatch.setenv("LITELLM_LOG", "WARNING")
    log.info("request_trimmed", turn=3)
    monkeypatch.setattr(litellm, "json_logs", True)
    log.warning("hook_failed", turn=4)

    assert first.getvalue().rstrip().endswith("turn=1")
    plain, json_line = second.getvalue().splitlines()
    assert plain.endswith("turn=2")
    assert (json.loads(json_line)["event"], json.loads(json_line)["turn"]) == ("hook_failed", 4)


@given(second=st.integers(min_value=0, max_value=4_000_000_000), fraction=st.floats(min_value=0, max_value=0.999))
def test_the_timestamp_is_the_local_second(second: int, fraction: float) -> None:
    """Formatted once a second, it reads as the local time of that second, whatever the fraction."""
    with mock.patch.object(logs.time, "time", return_value=second + fraction):
        stamped = logs._local_time(None, "info", {})["timestamp"]

    assert stamped == datetime.datetime.fromtimestamp(second).strftime("%Y-%m-%d %H:%M:%S")


def test_the_timestamp_is_structlogs_own() -> None:
    """What structlog's ``TimeStamper(fmt="%Y-%m-%d %H:%M:%S")``, the console defaults' stamper, writes now."""
    stamper = structlog.processors.TimeStamper(fmt="%Y-%m-%d %H:%M:%S", utc=False)
    for _ in range(3):  # a second may turn between the two
        ours, theirs = logs._local_time(None, "info", {}), stamper(None, "info", {})
        if ours == theirs:
            break
    assert ours == theirs


@pytest.mark.usefixtures("json_logs")
def test_the_applications_configuration_wins(capsys: pytest.CaptureFixture[str]) -> None:
    """Configured structlog (here by ``capture_logs``) gets every event, whatever LiteLLM writes."""
    with capture_logs() as logs:
        log.info("request_trimmed", tokens_before=12)

    assert logs == [{"event": "request_trimmed", "tokens_before": 12, "log_level": "info"}]
    assert capsys.readouterr().out == ""


@pytest.mark.usefixtures("json_logs")
def test_a_later_configure_wins_too(capsys: pytest.CaptureFixture[str]) -> None:
    """Decided per event: an application that configures structlog after the plugin loaded is obeyed."""
    log.info("before")  # the plugin's logger is in use before the application configures structlog
    capsys.readouterr()
    structlog.configure(processors=[structlog.processors.KeyValueRenderer(key_order=["event"])])

    log.info("request_trimmed", tokens_before=12)

    assert capsys.readouterr().out == "event='request_trimmed' tokens_before=12\n"


@pytest.mark.subprocess
@pytest.mark.parametrize(("value", "expected"), [("true", True), ("1", False)])
def test_litellm_reads_json_logs_from_its_environment(value: str, expected: bool) -> None:
    """Pinned: LiteLLM 1.108.5 sets ``litellm.json_logs`` from ``JSON_LOGS`` at import (only "true", any case)."""
    env = {**os.environ, "JSON_LOGS": value, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    code = "import litellm; print(litellm.json_logs is True)"
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, timeout=120)

    assert done.stdout.strip() == str(expected)


@pytest.mark.parametrize("json_logs", [False, True])
def test_unconfigured_debug_events_are_left_out(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], json_logs: bool
) -> None:
    """A proxy nobody configured structlog for prints no debug line per response (``token_ratio_learned``)."""
    monkeypatch.setattr(litellm, "json_logs", json_logs)
    log.debug("token_ratio_learned", model="m", ratio=1.07)
    log.info("request_trimmed")

    out = capsys.readouterr().out

    assert "token_ratio_learned" not in out
    assert "request_trimmed" in out


def test_a_configured_application_gets_debug_events() -> None:
    with capture_logs() as logs:
        log.debug("token_ratio_learned", model="m", ratio=1.07)

    assert logs == [{"event": "token_ratio_learned", "model": "m", "ratio": 1.07, "log_level": "debug"}]


@pytest.mark.parametrize(
    ("level", "written"),
    [
        ("ERROR", ["hook_failed"]),
        ("warning", ["settings_invalid", "hook_failed"]),
        ("DEBUG", ["token_ratio_learned", "request_trimmed", "settings_invalid", "hook_failed"]),
        ("nonsense", ["request_trimmed", "settings_invalid", "hook_failed"]),
    ],
)
@pytest.mark.parametrize("json_logs", [False, True])
def test_unconfigured_it_follows_litellm_log(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    json_logs: bool,
    level: str,
    written: list[str],
) -> None:
    """``LITELLM_LOG=ERROR`` quiets the plugin's lines with LiteLLM's; a value that names no level means info."""
    monkeypatch.setattr(litellm, "json_logs", json_logs)
    monkeypatch.setenv("LITELLM_LOG", level)
    log.debug("token_ratio_learned")
    log.info("request_trimmed")
    log.warning("settings_invalid")
    log.error("hook_failed")

    out = capsys.readouterr().out

    names = ["token_ratio_learned", "request_trimmed", "settings_invalid", "hook_failed"]
    assert [name for name in names if name in out] == written
