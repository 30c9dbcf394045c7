"""With every memo off (``LITELLM_BUDGET_MEMO=off``), every fit and report is what it is with them on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.support.paths import MADE_DIR, REPO_ROOT

pytestmark = pytest.mark.subprocess


def _fitting(memo: str | None) -> subprocess.Popen[str]:
    """Every fit of the made sessions, digested in a process of its own (``memo``: the variable's value)."""
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_BUDGET_MEMO"}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    if memo is not None:
        env["LITELLM_BUDGET_MEMO"] = memo
    command = [sys.executable, "-m", "tests.support.fit_digest", str(MADE_DIR)]
    return subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _fits(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-3000:]
    result: dict[str, Any] = json.loads(out)
    return result


def test_every_fit_is_the_same_with_memos_off() -> None:
    # Both at once: each is a process of its own, and the default run waits for this test.
    processes = [_fitting(None), _fitting("off")]
    try:
        on, off = (_fits(process) for process in processes)
    finally:
        for process in processes:
            process.kill()

    assert (on["memo_off"], off["memo_off"]) == (False, True)
    assert on["trimmed"] > 100
    assert on["fits"]
    assert off == {**on, "memo_off": True}
