"""Read JSON-lines files another process is still writing: complete lines only, waiting for what is due."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Records = list[dict[str, Any]]


def complete_records(path: Path) -> Records:
    """The records of every complete line (ending in a newline) of ``path``; none when it is absent."""
    if not path.exists():
        return []
    complete = path.read_text(encoding="utf-8").rpartition("\n")[0]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]


def wait_for_records(path: Path, ready: Callable[[Records], bool], *, what: str, timeout: float = 20.0) -> Records:
    """
    Poll ``path`` until ``ready`` says its records hold what is due, and return them: LiteLLM
    logs in background tasks, after the client already has its answer.
    """
    deadline = time.monotonic() + timeout
    while True:
        records = complete_records(path)
        if ready(records):
            return records
        if time.monotonic() >= deadline:
            pytest.fail(f"{path}: {what} did not arrive within {timeout:.0f}s ({len(records)} records)")
        time.sleep(0.05)


def wait_for_count(path: Path, count: int, timeout: float = 20.0) -> Records:
    """``wait_for_records`` until there are at least ``count`` records."""
    return wait_for_records(path, lambda records: len(records) >= count, what=f"{count} records", timeout=timeout)
