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


def _fits(memo: str | None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_BUDGET_MEMO"}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    if memo is not None:
        env["LITELLM_BUDGET_MEMO"] = memo
    command = [sys.executable, "-m", "tests.support.fit_digest", str(MADE_DIR)]
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True, timeout=300)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_every_fit_is_the_same_with_memos_off() -> None:
    on, off = _fits(None), _fits("off")

    assert (on["memo_off"], off["memo_off"]) == (False, True)
    assert on["trimmed"] > 100
    assert on["fits"]
    assert off == {**on, "memo_off": True}
