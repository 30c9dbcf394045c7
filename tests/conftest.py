"""Shared fixtures: offline LiteLLM, a clean structlog, and the agent sessions (made and shared)."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Before anything imports litellm: its model map must come from the wheel, not the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest
import pytest_asyncio
import structlog
from hypothesis import settings

from litellm_budget.tools.sessions import load_conversation
from tests.support import proxy_process
from tests.support.fake_upstream import FakeUpstream
from tests.support.paths import MADE_DIR, SESSIONS_DIR
from tests.support.redis_process import fixture_redis_server  # noqa: F401 - the `redis_server` fixture
from tests.support.sdk_support import logging_settled

# The default run is reproducible: the same examples on every machine, so a red CI always
# reproduces and never comes from a new random draw. `make fuzz` searches fresh examples. No
# deadline: on a busy two-core machine one example may take seconds, and that is not a failure.
settings.register_profile("repeatable", max_examples=150, derandomize=True, database=None, deadline=None)
settings.register_profile("fuzz", max_examples=3000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


#: Each folder of tests is a layer, and its tests carry its marker (``-m core``, ``-m "not e2e"``).
LAYERS = ("core", "adapter", "tools", "e2e", "packaging")
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with the layer its folder names."""
    for item in items:
        folder = item.path.resolve().relative_to(HERE).parts[0]
        if folder in LAYERS:
            item.add_marker(folder)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture of the test starts: may it start the proxy (does it carry the marker)?"""
    proxy_process.RUNNING_TEST["marked_proxy"] = item.get_closest_marker("proxy") is not None


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


@pytest.fixture(name="upstream", scope="module")
def fixture_upstream() -> Iterator[FakeUpstream]:
    """A recording fake provider on 127.0.0.1, one per module; a module needing another kind defines its own."""
    with FakeUpstream() as upstream:
        yield upstream


@pytest_asyncio.fixture(name="quiet_logging")
async def fixture_quiet_logging() -> None:
    """
    LiteLLM's logging worker idle before an SDK test installs its plugin: an earlier test's queued
    success event would reach it as this test's own, and teach it a ratio between two requests.
    """
    await logging_settled()


@dataclasses.dataclass(frozen=True)
class SessionSet:
    """A named set of sessions: ``made`` (this repository's, in any clone) or ``shared`` (CI's larger set)."""

    name: str
    sessions: dict[str, list[dict[str, Any]]]
    folder: Path


#: The sets there are: the made sessions in every clone, the shared ones where ../shared/sessions
#: holds them. A clone without them runs every session test on the made set and skips none.
SET_NAMES = ("made", "shared") if SESSIONS_DIR.is_dir() and any(SESSIONS_DIR.glob("*.json")) else ("made",)


@functools.cache
def session_set_named(name: str) -> SessionSet:
    """The set ``name`` (one of ``SET_NAMES``), read once for every fixture that asks for it."""
    folder = MADE_DIR if name == "made" else SESSIONS_DIR
    files = sorted(folder.glob("*.json"))
    assert files, f"no sessions in {folder}"
    return SessionSet(name, {path.stem: load_conversation(path).messages for path in files}, folder)


@pytest.fixture(name="session_set", scope="session", params=SET_NAMES)
def fixture_session_set(request: pytest.FixtureRequest) -> SessionSet:
    """
    The equivalence and invariant tests' sessions: the ones made for this repository
    (``tests/support/made_sessions.py``), always there, then the shared ones where they are.
    """
    return session_set_named(request.param)


@pytest.fixture(name="replay_set", scope="session")
def fixture_replay_set() -> SessionSet:
    """
    One set for the replays that one set is enough for: the shared sessions where they are (the
    larger set, CI's), else the made ones. A test quoting a figure keeps one per set (``.name``).
    """
    return session_set_named(SET_NAMES[-1])
