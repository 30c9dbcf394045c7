"""Start the real LiteLLM proxy as a child process on loopback, wait for it, stop it by PID."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import httpx

#: The ``litellm`` console script's entry point, run with this interpreter.
LAUNCH_CODE = "import sys; from litellm import run_server; sys.exit(run_server())"
#: Unauthenticated, and answered only once the proxy has loaded its config.
READY_PATH = "/health/liveliness"


class ProxyStartError(RuntimeError):
    """The proxy exited or never answered; the message carries the end of its log."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def proxy_command(config: Path, host: str, port: int) -> list[str]:
    """``litellm --config ... --host ... --port ...`` for this interpreter's environment."""
    return [sys.executable, "-c", LAUNCH_CODE, "--config", str(config), "--host", host, "--port", str(port)]


@dataclasses.dataclass(frozen=True, slots=True)
class Readiness:
    """How a server started here says it is ready: the route that answers 200, its name, the error if never."""

    path: str = READY_PATH
    name: str = "litellm proxy"
    error: type[Exception] = ProxyStartError


def wait_until_ready(
    process: subprocess.Popen[bytes],
    base_url: str,
    timeout: float,
    log_tail: Callable[[], str],
    ready: Readiness = Readiness(),
) -> None:
    """Poll ``ready.path`` until a 200; fail fast, with the log, if the process dies first."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while True:
            code = process.poll()
            if code is not None:
                raise ready.error(f"{ready.name} exited with {code} during start-up:\n{log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if client.get(base_url + ready.path).status_code == 200:
                    return
            if time.monotonic() >= deadline:
                raise ready.error(f"{ready.name} not ready after {timeout:.0f}s:\n{log_tail()}")
            time.sleep(0.25)


def stop_process(process: subprocess.Popen[bytes], grace: float = 10.0) -> int | None:
    """SIGTERM by PID, SIGKILL after ``grace`` seconds; returns the exit code."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait(timeout=grace)
    return process.returncode


@contextlib.contextmanager
def running_proxy(
    config: Path,
    log_path: Path,
    *,
    host: str = "127.0.0.1",
    timeout: float = 120.0,
    extra_env: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """Run the proxy for the ``with`` block (stopped however it ends), yield its URL; ``extra_env`` is for it alone."""
    port = free_port(host)
    env = {**os.environ, **(extra_env or {}), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": "127.0.0.1,localhost"}
    with log_path.open("ab") as log:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
            proxy_command(config, host, port), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
        base_url = f"http://{host}:{port}"
        try:
            wait_until_ready(process, base_url, timeout, lambda: _tail(log_path))
            yield base_url
        finally:
            stop_process(process)


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
