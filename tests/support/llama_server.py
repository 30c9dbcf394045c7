"""Run a real llama.cpp server (``llama-cpp-python[server]``) on loopback for tests, and stop it by PID.

Why a real one: it counts with the model's own tokenizer and refuses a request over ``--n_ctx``
with the HTTP 400 ("This model's maximum context length is N tokens...") that clients meet in
the wild. The model is the tiny one from :mod:`tests.support.llama_model`. ``.ci/llama`` installs
the server into ``.venv``; without it :func:`llama_available` is False and the tests skip.

The HTTP response carries only ``usage.{prompt,completion,total}_tokens``: no timings, no cached
tokens. The server runs verbose (its default), and its log (pass ``log_path`` to read it) has, per
request, ``Llama.generate: K prefix-match hit, remaining M prompt tokens to eval`` when its KV cache
served the first K prompt tokens (one slot: the previous request's tokens), then llama.cpp's
``llama_perf_context_print:`` lines: ``prompt eval time = X ms / M tokens`` (it under-counts: ~0 ms
on the first request after start) and ``total time = T ms``, which is within ~30 ms of the wall time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from litellm_budget.tools.demo.proxy import Readiness, free_port, stop_process, wait_until_ready
from tests.support.llama_model import vocab_file

__all__ = ["LlamaStartError", "llama_available", "llama_python", "llama_server", "log_tail"]

ENV_PYTHON = "LITELLM_BUDGET_LLAMA_PYTHON"


class LlamaStartError(RuntimeError):
    """The llama.cpp server exited or never listed its model; the message carries the end of its log."""


def llama_python() -> str:
    """The interpreter with ``llama_cpp`` installed: ``$LITELLM_BUDGET_LLAMA_PYTHON``, else this one."""
    return os.environ.get(ENV_PYTHON) or sys.executable


@functools.cache
def _server_importable() -> bool:
    """Whether the server imports there (a fresh interpreter: a broken native build fails here, not in a test)."""
    code = "import llama_cpp.server.app"
    try:
        done = subprocess.run([llama_python(), "-c", code], capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def llama_available() -> bool:
    """True when ``llama_cpp.server`` imports and the Llama 3 vocabulary is found (fetched if need be)."""
    return _server_importable() and vocab_file() is not None


def log_tail(path: Path, lines: int = 40) -> str:
    with contextlib.suppress(FileNotFoundError):
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    return ""


@contextlib.contextmanager
def llama_server(model: Path, n_ctx: int, *, log_path: Path | None = None, timeout: float = 60.0) -> Iterator[str]:
    """Serve ``model`` with a window of ``n_ctx`` tokens for the block; yield ``http://127.0.0.1:PORT/v1``."""
    host, port = "127.0.0.1", free_port()
    if log_path is None:
        log_path = Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"
    argv = [llama_python(), "-m", "llama_cpp.server", "--model", str(model), "--n_ctx", str(n_ctx)]
    # One thread: llama.cpp's threads spin-wait for each other, and on two cores busy with other tests
    # two threads made each generated token ~200x slower (235 ms against 1 ms). The chat format comes
    # from the model's template, which llama-cpp-python recognises as its "llama-3".
    argv += ["--host", host, "--port", str(port), "--n_threads", "1", "--n_threads_batch", "1"]
    base_url = f"http://{host}:{port}/v1"
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
    with log_path.open("ab") as log:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            ready = Readiness("/models", "llama.cpp server", LlamaStartError)
            wait_until_ready(process, base_url, timeout, lambda: log_tail(log_path), ready)
            yield base_url
        except BaseException:
            print(f"--- llama.cpp server log ({log_path}):\n{log_tail(log_path)}", file=sys.stderr)
            raise
        finally:
            stop_process(process, grace=5.0)
