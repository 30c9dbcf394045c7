"""The Redis tests' one-time install is safe when both test workers reach it at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: One test worker, as a process of its own: its apt-get is a stand-in that leaves the binary
#: behind, once the other worker looked for it too (and so goes for the lock); it reports what it found.
_WORKER = """
import os, sys
from pathlib import Path
from tests.support import redis_process
from tests.support.waiting import wait_for

binary, runs, looked = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[4])
redis_process._INSTALL_LOCK = Path(sys.argv[3])

def find_redis_server():
    if binary.exists():
        return str(binary)
    with looked.open("a") as out:
        out.write(f"{os.getpid()}\\n")
    return None

redis_process.find_redis_server = find_redis_server

def apt_install():
    with runs.open("a") as out:
        out.write("ran\\n")
    wait_for(lambda: len(set(looked.read_text().split())) == 2, what="the other worker's look", timeout=20)
    binary.write_text("")
    return ""

redis_process._apt_install = apt_install
print(repr(redis_process.ensure_redis_server()))
"""


def test_two_workers_install_once_and_both_find_it(tmp_path: Path) -> None:
    """The second waits on the first's lock and finds what it installed, instead of failing on apt's lock."""
    binary, runs, lock = tmp_path / "redis-server", tmp_path / "runs", tmp_path / "install.lock"
    argv = [sys.executable, "-c", _WORKER, str(binary), str(runs), str(lock), str(tmp_path / "looked")]
    root = Path(__file__).resolve().parents[1]
    workers = [subprocess.Popen(argv, cwd=root, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [worker.communicate(timeout=30)[0].strip() for worker in workers]

    assert runs.read_text().splitlines() == ["ran"]
    assert outputs == [repr((str(binary), ""))] * 2


def test_no_apt_is_still_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support import redis_process

    monkeypatch.setenv("LITELLM_BUDGET_NO_APT", "1")
    assert "LITELLM_BUDGET_NO_APT" in redis_process._apt_install()
