"""Run a real ``redis-server`` on loopback for tests and benchmarks: find or install it, start, stop, restart.

Where the binary comes from, in order: ``$LITELLM_BUDGET_REDIS_SERVER``, ``redis-server`` on PATH,
``/usr/bin`` or ``/usr/sbin``. When none is there, and this process runs as root on a machine with
``apt-get``, one attempt per process installs the Debian package (``apt-get update`` then
``apt-get install -y --no-install-recommends redis-server``; set ``LITELLM_BUDGET_NO_APT=1`` to
forbid it). Otherwise :func:`redis_server_or_skip` skips the test and says how to install it.

The server has no persistence (``--save ""``, ``--appendonly no``), listens on 127.0.0.1 only, runs
in the foreground as our child, and is stopped by its PID (SIGTERM, SIGKILL after a grace period).
:meth:`RedisServer.restart` starts it again on the same port, empty, so a test can take Redis away
in the middle of a run and give it back. :meth:`RedisServer.command` speaks just enough RESP to
PING, GET, KEYS and FLUSHALL without any client library.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pytest

from litellm_budget.tools.demo.proxy import stop_process

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "INSTALL_HINT",
    "RedisServer",
    "RedisStartError",
    "ensure_redis_server",
    "find_redis_server",
    "fixture_redis_server",
    "redis_server_or_skip",
    "start_redis",
]

ENV_BINARY = "LITELLM_BUDGET_REDIS_SERVER"
ENV_NO_APT = "LITELLM_BUDGET_NO_APT"
INSTALL_HINT = (
    "install it with `apt-get update && apt-get install -y redis-server` (Debian/Ubuntu, as root), "
    f"or put a redis-server on PATH, or name one in ${ENV_BINARY}"
)
_CANDIDATES = ("/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server")
_APT_TIMEOUT = 600.0

#: The one install attempt of this process: ``None`` until tried, then why it did not help ("" if it did).
_INSTALL_OUTCOME: dict[str, str] = {}
#: Held by the worker that installs, on this machine: the other workers wait for it.
_INSTALL_LOCK = Path(tempfile.gettempdir()) / "litellm_budget-redis-install.lock"
_LIVE: set[RedisServer] = set()


class RedisStartError(RuntimeError):
    """redis-server exited or never answered PING; the message carries the end of its log."""


def find_redis_server() -> str | None:
    """The redis-server binary to run, if one is on this machine (nothing is installed here)."""
    named = os.environ.get(ENV_BINARY)
    if named:
        return named if os.access(named, os.X_OK) else None
    found = shutil.which("redis-server")
    if found:
        return found
    return next((path for path in _CANDIDATES if os.access(path, os.X_OK)), None)


def _try_apt_install() -> str:
    """
    Install Debian's ``redis-server`` once per process; "" when it worked, else why not. The test
    workers are processes of their own: a file lock lets one install while the others wait, and
    each looks again once it holds the lock (apt's own lock would fail the second one instead).
    """
    if "outcome" in _INSTALL_OUTCOME:
        return _INSTALL_OUTCOME["outcome"]
    with _INSTALL_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            outcome = "" if find_redis_server() else _apt_install()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    _INSTALL_OUTCOME["outcome"] = outcome
    return outcome


def _apt_install() -> str:
    if os.environ.get(ENV_NO_APT):
        return f"${ENV_NO_APT} is set, so it was not installed"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "not running as root, so apt-get was not tried"
    apt = shutil.which("apt-get")
    if apt is None:
        return "this machine has no apt-get"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # Wait for a dpkg lock another program holds, rather than fail at once.
    wait = ["-o", "DPkg::Lock::Timeout=120"]
    steps = ([apt, "update", "-qq"], [apt, *wait, "install", "-y", "-qq", "--no-install-recommends", "redis-server"])
    for step in steps:
        try:
            done = subprocess.run(step, env=env, capture_output=True, text=True, timeout=_APT_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"`{' '.join(step[1:3])}` failed: {exc}"
        if done.returncode != 0:
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            return f"`apt-get {' '.join(step[1:])}` exited with {done.returncode}: {tail}"
    return "" if find_redis_server() else "apt-get installed redis-server but no binary was found"


def ensure_redis_server() -> tuple[str | None, str]:
    """``(binary, "")``, installing redis-server once if allowed; ``(None, why not)`` when there is none."""
    binary = find_redis_server()
    if binary is not None:
        return binary, ""
    why = _try_apt_install()
    binary = find_redis_server()
    return (binary, "") if binary is not None else (None, why)


def redis_server_or_skip() -> str:
    """The redis-server binary, installing it once if allowed; otherwise skip with how to install it."""
    binary, why = ensure_redis_server()
    if binary is None:
        pytest.skip(f"redis-server is not installed ({why}): {INSTALL_HINT}")
    return binary


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


# -- a minimal RESP client: enough for PING, GET, KEYS, FLUSHALL, DBSIZE ----------------------------------


def _encode(args: tuple[str, ...]) -> bytes:
    out = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        data = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def _read_reply(reader: Any) -> Any:
    line = reader.readline()
    if not line:
        raise ConnectionError("redis closed the connection")
    kind, rest = line[:1], line[1:-2].decode()
    if kind == b"+":
        return rest
    if kind == b"-":
        raise RuntimeError(f"redis error: {rest}")
    if kind == b":":
        return int(rest)
    if kind == b"$":
        size = int(rest)
        if size < 0:
            return None
        data = reader.read(size + 2)
        return data[:-2].decode()
    if kind == b"*":
        size = int(rest)
        return None if size < 0 else [_read_reply(reader) for _ in range(size)]
    raise RuntimeError(f"unexpected RESP reply {line!r}")


@dataclass(eq=False)
class RedisServer:
    """One redis-server child process on ``host:port``; start, stop and restart it by PID."""

    binary: str
    folder: Path
    host: str = "127.0.0.1"
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    _log_file: Any = field(default=None, repr=False)

    @property
    def log_path(self) -> Path:
        return self.folder / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(FileNotFoundError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def start(self, timeout: float = 15.0) -> Self:
        """Start the server (on a free port the first time, on the same port after) and wait for PONG."""
        if self.is_running():
            return self
        if self.port:  # a restart: the same port or nothing
            self._spawn_and_wait(timeout)
            return self
        for attempt in range(3):
            self.port = _free_port(self.host)
            try:
                self._spawn_and_wait(timeout)
            except RedisStartError:
                # The free port may have been taken between our probe and redis' bind: try another.
                if attempt == 2:
                    self.port = 0
                    raise
            else:
                break
        return self

    def _spawn_and_wait(self, timeout: float) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._close_log()
        self._log_file = self.log_path.open("ab")
        argv = [
            self.binary,
            "--port", str(self.port),
            "--bind", self.host,
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--dir", str(self.folder),
            "--logfile", "",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT, cwd=self.folder
        )
        self.starts += 1
        _LIVE.add(self)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                code = self.process.returncode
                self._close_log()
                raise RedisStartError(f"redis-server exited with {code} on port {self.port}:\n{self.log_tail()}")
            with contextlib.suppress(OSError, RuntimeError, ConnectionError):
                if self.command("PING", timeout=0.5) == "PONG":
                    return
            if time.monotonic() >= deadline:
                self.stop(grace=2)
                raise RedisStartError(f"redis-server did not answer PING within {timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.05)

    def stop(self, grace: float = 5.0) -> int | None:
        """SIGTERM by PID, SIGKILL after ``grace`` seconds; the port is free when it returns (idempotent)."""
        process = self.process
        if process is None:
            return None
        stop_process(process, grace)
        _LIVE.discard(self)
        self._close_log()
        return process.returncode

    def restart(self, timeout: float = 15.0) -> Self:
        """Start again on the same port (empty: nothing is persisted)."""
        self.stop()
        return self.start(timeout)

    def command(self, *args: str, timeout: float = 2.0) -> Any:
        """Send one command and return its decoded reply (str, int, None or a list)."""
        with socket.create_connection((self.host, self.port), timeout=timeout) as sock:
            sock.sendall(_encode(args))
            with sock.makefile("rb") as reader:
                return _read_reply(reader)

    def _close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@atexit.register
def _stop_leftovers() -> None:
    """A crashed run must not leave redis-servers holding ports."""
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop(grace=2)


def start_redis(folder: Path | None = None, *, binary: str | None = None) -> RedisServer:
    """Start a redis-server (the binary found here unless given); raises when there is none."""
    binary = binary or find_redis_server()
    if binary is None:
        raise RedisStartError(f"redis-server is not installed: {INSTALL_HINT}")
    folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="redis-"))
    return RedisServer(binary=binary, folder=folder).start()


@pytest.fixture(name="redis_server")
def fixture_redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A running, empty redis-server on 127.0.0.1 for one test; skipped (with how to install) when absent."""
    binary = redis_server_or_skip()
    server = RedisServer(binary=binary, folder=tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()
