"""Run the real ``litellm`` proxy (1.108.5) as a subprocess for end-to-end tests.

Why a subprocess and not ``TestClient(app)``: the proxy keeps module-level globals
(``llm_router``, ``litellm.callbacks``, the master key) and reads its config once per
process, so an in-process app leaks state between tests and cannot be restarted with a
different config. A subprocess is exactly what users run.

Launch: this venv has no ``python -m litellm`` (no ``litellm/__main__.py``); the ``litellm``
console script is ``from litellm import run_server; run_server()``, so we run that same
call through ``sys.executable -c`` -- it needs no PATH lookup and always uses the test's
interpreter.

The proxy refuses to start without a master key (``UnsafeMasterKeyError``), so one is
generated when the config has none.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import json
import os
import secrets
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from litellm_budget.tools.demo.proxy import (
    ProxyStartError,
    free_port,
    proxy_command,
    stop_process,
    wait_until_ready,
)
from tests.support.paths import REPO_ROOT, SUPPORT

if TYPE_CHECKING:
    from typing_extensions import Self

import httpx
import yaml

__all__ = [
    "REPO_ROOT",
    "ProxyProcess",
    "ProxyStartError",
    "free_port",
    "parse_sse",
    "post_chat",
    "post_json",
    "start_proxy",
]


_LIVE: set[ProxyProcess] = set()

#: Set by conftest before each test's fixtures: whether that test carries the ``proxy`` marker.
RUNNING_TEST = {"marked_proxy": True}


@dataclass(eq=False)
class ProxyProcess:
    """A running proxy subprocess; stop it with :meth:`stop` or use it as a context manager."""

    process: subprocess.Popen[bytes]
    host: str
    port: int
    master_key: str
    config_path: Path
    log_path: Path
    _log_file: Any = field(repr=False, default=None)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``: the proxy serves both spellings)."""
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.master_key}"}

    def is_running(self) -> bool:
        return self.process.poll() is None

    def log_text(self) -> str:
        """Everything the proxy wrote to stdout/stderr so far."""
        if self._log_file is not None:
            with contextlib.suppress(ValueError):
                self._log_file.flush()
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def stop(self, grace: float = 10.0) -> int | None:
        """SIGTERM by PID, SIGKILL after ``grace`` seconds; returns the exit code (idempotent)."""
        _LIVE.discard(self)
        code = stop_process(self.process, grace)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return code

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@atexit.register
def _stop_leftovers() -> None:
    """A crashed test session must not leave proxies holding ports."""
    for proxy in list(_LIVE):
        with contextlib.suppress(Exception):
            proxy.stop(grace=3)


def _resolve_env_ref(value: Any, env: dict[str, str]) -> Any:
    """Follow litellm's ``os.environ/NAME`` indirection so we know the effective key."""
    if isinstance(value, str) and value.startswith("os.environ/"):
        return env.get(value.removeprefix("os.environ/"))
    return value


def _prepare_config(config: dict[str, Any] | str | Path, env: dict[str, str], tmp_path: Path) -> tuple[Path, str]:
    """Return (config path to pass, master key); mutates ``env`` when the key goes through it.

    A dict is copied, given a key if it lacks one, and written to ``tmp_path/proxy_config.yaml``.
    A path is used in place -- rewriting it elsewhere would change the directory the proxy
    resolves ``callbacks`` files against -- so a missing key is passed as LITELLM_MASTER_KEY.
    """
    if isinstance(config, dict):
        data = copy.deepcopy(config)
        general = data.setdefault("general_settings", {}) or {}
        data["general_settings"] = general
        key = _resolve_env_ref(general.get("master_key"), env) or env.get("LITELLM_MASTER_KEY")
        if not key:
            key = f"sk-{secrets.token_hex(24)}"
            general["master_key"] = key
        path = tmp_path / "proxy_config.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return path, str(key)

    path = Path(config).resolve()
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    key = _resolve_env_ref((data.get("general_settings") or {}).get("master_key"), env) or env.get("LITELLM_MASTER_KEY")
    if not key:
        key = f"sk-{secrets.token_hex(24)}"
        env["LITELLM_MASTER_KEY"] = key
    return path, str(key)


def _child_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # otherwise start-up retries a network fetch
    env["PYTHONUNBUFFERED"] = "1"  # log_text() should see lines as they happen
    no_proxy = "127.0.0.1,localhost"
    env["NO_PROXY"] = env["no_proxy"] = ",".join(p for p in (env.get("NO_PROXY"), no_proxy) if p)
    # No repo root on PYTHONPATH: the proxy must find litellm_budget as an installed package.
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


#: The callbacks of tests/support a test proxy loads from beside its config, with the variable that
#: names the file each writes (in the proxy's folder): ``start_proxy(..., helpers=[...])``.
HELPER_FILES = {
    "proxy_spy.py": ("SPY_LOG", "spy.jsonl"),
    "proxy_structlog.py": ("STRUCTLOG_FILE", "structlog.jsonl"),
    "proxy_spend_rows.py": ("SPEND_ROWS", "rows.jsonl"),
    "proxy_startup_probe.py": ("PROBE_LOG", "probe.jsonl"),
}


def _copy_helpers(helpers: list[str] | tuple[str, ...], folder: Path) -> dict[str, str]:
    """Copy each of ``helpers`` (files of tests/support) into ``folder``; the env naming the files they write."""
    env = {}
    for helper in helpers:
        shutil.copy(SUPPORT / helper, folder / helper)
        if helper in HELPER_FILES:
            variable, name = HELPER_FILES[helper]
            env[variable] = str(folder / name)
    return env


def start_proxy(
    config: dict[str, Any] | str | Path,
    *,
    tmp_path: Path,
    env: dict[str, str] | None = None,
    helpers: list[str] | tuple[str, ...] = (),
    timeout: float = 120.0,
    host: str = "127.0.0.1",
    port: int | None = None,
    extra_args: list[str] | tuple[str, ...] = (),
) -> ProxyProcess:
    """Start ``litellm --config ... --host 127.0.0.1 --port N`` and wait until it answers.

    cwd is ``tmp_path`` and output goes to ``tmp_path/proxy.log``. ``helpers`` (``proxy_spy.py``,
    ``proxy_structlog.py``...: ``HELPER_FILES``) are copied into ``tmp_path`` for the config's
    ``callbacks`` to name, each writing ``tmp_path/spy.jsonl``, ``tmp_path/structlog.jsonl``...
    The child env is ours plus LITELLM_LOCAL_MODEL_COST_MAP=True, NO_PROXY for loopback, the
    helpers' files, then ``env``. Raises :class:`ProxyStartError` with the log tail if the process
    exits or is not ready within ``timeout`` seconds.
    """
    if not RUNNING_TEST["marked_proxy"]:
        msg = "a test that starts the proxy must carry @pytest.mark.proxy (make test-fast deselects them)"
        raise RuntimeError(msg)
    tmp_path = Path(tmp_path)
    tmp_path.mkdir(parents=True, exist_ok=True)
    child_env = _child_env({**_copy_helpers(helpers, tmp_path), **(env or {})})
    cfg_path, master_key = _prepare_config(config, child_env, tmp_path)
    port = port or free_port(host)
    log_path = tmp_path / "proxy.log"
    log_file = log_path.open("ab")
    cmd = [*proxy_command(cfg_path, host, port), *extra_args]
    process = subprocess.Popen(
        cmd,
        cwd=tmp_path,
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    proxy = ProxyProcess(
        process=process,
        host=host,
        port=port,
        master_key=master_key,
        config_path=cfg_path,
        log_path=log_path,
        _log_file=log_file,
    )
    _LIVE.add(proxy)
    try:
        _wait_ready(proxy, timeout)
    except BaseException:
        proxy.stop(grace=5)
        raise
    return proxy


def _wait_ready(proxy: ProxyProcess, timeout: float) -> None:
    wait_until_ready(proxy.process, proxy.base_url, timeout, proxy.log_tail)


def parse_sse(text: str) -> list[Any]:
    """Decode ``data:`` lines of an SSE body; ``[DONE]`` is kept as the string ``"[DONE]"``."""
    events: list[Any] = []
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[len("data:") :].strip()
        if not payload:
            continue
        try:
            events.append(json.loads(payload))
        except ValueError:
            events.append(payload)
    return events


def post_json(
    proxy: ProxyProcess,
    path: str,
    body: dict[str, Any],
    *,
    stream: bool = False,
    headers: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> tuple[int, httpx.Headers, Any]:
    """POST ``body`` to ``proxy.base_url + path`` with the master key as bearer.

    Returns ``(status, headers, payload)``: the parsed JSON when the body is JSON, the raw
    SSE text for a successful stream (see :func:`parse_sse`), the text otherwise.
    """
    sent = dict(body)
    if stream:
        sent["stream"] = True
    all_headers = {**proxy.auth_headers, "content-type": "application/json", **(headers or {})}
    # ASCII-escaped JSON, so bodies with lone surrogates (valid JSON) can be sent too.
    content = json.dumps(sent).encode("ascii")
    with (
        httpx.Client(timeout=timeout, trust_env=False) as client,
        client.stream("POST", proxy.base_url + path, content=content, headers=all_headers) as resp,
    ):
        text = resp.read().decode("utf-8", errors="replace")
    payload: Any = text
    if "json" in resp.headers.get("content-type", ""):
        with contextlib.suppress(ValueError):
            payload = json.loads(text)
    return resp.status_code, resp.headers, payload


def post_chat(
    proxy: ProxyProcess,
    body: dict[str, Any],
    *,
    stream: bool = False,
    headers: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> tuple[int, httpx.Headers, Any]:
    """``POST /v1/chat/completions`` through the proxy; see :func:`post_json` for the result."""
    return post_json(
        proxy,
        "/v1/chat/completions",
        body,
        stream=stream,
        headers=headers,
        timeout=timeout,
    )


class _Runs(Protocol):
    """Anything a multi-proxy test starts: it holds its proxy."""

    proxy: ProxyProcess


_Started = TypeVar("_Started", bound=_Runs)


def start_proxies(names: list[str], start: Callable[[str], _Started]) -> list[_Started]:
    """
    ``start(name)`` for every name at once (proxy start-up is most of a multi-proxy test's time),
    in the order of ``names``; when any start fails, the proxies that did start are stopped and
    its error is raised here, in the caller's thread.
    """
    started: dict[str, _Started] = {}
    errors: list[Exception] = []

    def run(name: str) -> None:
        try:
            started[name] = start(name)
        except Exception as exc:  # noqa: BLE001 - re-raised below, in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        for replica in started.values():
            replica.proxy.stop()
        raise errors[0]
    return [started[name] for name in names]


def anthropic_client(proxy: ProxyProcess) -> Any:
    """The official anthropic SDK on the proxy: its master key, no retries, loopback whatever HTTP(S)_PROXY says."""
    import anthropic

    return anthropic.Anthropic(
        base_url=proxy.base_url,
        api_key=proxy.master_key,
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(trust_env=False),
    )


def openai_client(proxy: ProxyProcess) -> Any:
    """The official openai SDK on the proxy's ``/v1``, set up as ``anthropic_client`` sets up its SDK."""
    import openai

    return openai.OpenAI(
        base_url=proxy.base_url + "/v1",
        api_key=proxy.master_key,
        max_retries=0,
        http_client=openai.DefaultHttpxClient(trust_env=False),
    )
