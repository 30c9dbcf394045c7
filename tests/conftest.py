"""Shared fixtures: offline LiteLLM, a clean structlog, and the real agent sessions."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Before anything imports litellm: its model map must come from the wheel, not the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest
import structlog

SESSIONS_DIR = Path(os.environ.get("LITELLM_BUDGET_SESSIONS", Path(__file__).parents[2] / "shared" / "sessions"))


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


def session_files() -> list[Path]:
    """The real agent sessions, when ../shared/sessions is there."""
    return sorted(SESSIONS_DIR.glob("*.json")) if SESSIONS_DIR.is_dir() else []


def load_session(path: Path) -> list[dict[str, Any]]:
    """The messages of one session file."""
    messages: list[dict[str, Any]] = json.loads(path.read_text())["messages"]
    return messages


def session_requests(messages: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Every request the agent sent: the history before each assistant message."""
    for index, message in enumerate(messages):
        if message["role"] == "assistant" and index > 0:
            yield messages[:index]


@pytest.fixture(name="sessions", scope="session")
def fixture_sessions() -> dict[str, list[dict[str, Any]]]:
    files = session_files()
    if not files:
        pytest.skip(f"no sessions in {SESSIONS_DIR}")
    return {path.stem: load_session(path) for path in files}
