"""The README's SDK quick start runs as a script; CI runs the same script in a venv with only the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("sdk_quickstart.py")


@pytest.mark.subprocess
def test_sdk_quick_start_answers_and_reports_without_loading_the_proxy(tmp_path: Path) -> None:
    """Plain and streamed acompletion, a Router fallback and fit(): answered, reported, no proxy server module."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path, check=False
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert "3 answers, 4 reports, fit() trimmed: ok" in done.stdout
