"""A stdlib-only, OpenAI-compatible fake provider for end-to-end tests.

Why stdlib only: it must run in-process from tests *and* as a standalone script next to a
proxy subprocess, with nothing to install and no import of litellm (so it can never be
influenced by the code under test).

Served (any path prefix is accepted; only the suffix matters, so ``api_base`` may or may not
end in ``/v1``):

* ``POST .../chat/completions``  -- non-streaming and SSE streaming (``n`` choices,
  ``stream_options.include_usage``).
* ``POST .../responses``         -- OpenAI Responses API, non-streaming only.
* ``POST .../messages``          -- Anthropic Messages API, non-streaming and SSE streaming.
* ``GET .../models`` and ``GET /health``.

``prompt_tokens`` is ``int(estimate_tokens(messages) * usage_ratio)``: a deliberately cheap,
tokenizer-free estimate (``len(json.dumps(messages)) // 4``) so a test can predict it exactly
and simulate a provider that over- or under-reports usage.

A request whose message content contains :data:`CWE_MARKER`, or whose estimate exceeds
``max_context_tokens``, gets the provider's real "context length exceeded" 400, so tests can
prove an overflow *would* have reached the provider.

Script use::

    python -m tests.support.fake_upstream --port 0 --log upstream.jsonl
    python tests/support/fake_upstream.py --port 41801 --log upstream.jsonl

It writes one line ``listening on http://127.0.0.1:PORT/v1`` to stdout, then serves until
SIGTERM/SIGINT; every request body is appended to the JSONL log.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "CWE_MARKER",
    "FakeUpstream",
    "RecordedRequest",
    "estimate_tokens",
    "main",
]

CWE_MARKER = "UPSTREAM_CWE"
"""A message containing this string is answered with a provider-side context-length 400."""

REPLY_TEXT = "ok"
_DEFAULT_CONTEXT = 8192  # only quoted in the error message when max_context_tokens is unset


def estimate_tokens(messages: Any) -> int:
    """Cheap char-based token estimate; public so tests can predict ``prompt_tokens`` exactly."""
    return len(json.dumps(messages)) // 4


class RecordedRequest(dict[str, Any]):
    """One received request: ``method``, ``path``, ``headers`` (lower-cased) and ``body``.

    A dict subclass so it serialises straight to JSON and stays easy to assert on.
    """


class _Server(ThreadingHTTPServer):
    """ThreadingHTTPServer that never prints tracebacks (clients hanging up are normal)."""

    daemon_threads = True
    allow_reuse_address = True
    # The listen backlog: socketserver's default of 5 resets bursts of concurrent clients.
    request_queue_size = 256
    upstream: FakeUpstream

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Swallow per-connection errors (BrokenPipe etc.): tests stay quiet, server stays up."""


class _Handler(BaseHTTPRequestHandler):
    """Routes by path suffix; every response closes the connection.

    Closing after each response avoids keep-alive sockets to a stopped server lingering
    in litellm's cached HTTP clients between tests.
    """

    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request stderr line."""

    # -- plumbing -------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _sse(self, payload: Any, *, event: str | None = None) -> None:
        prefix = f"event: {event}\n" if event else ""
        data = payload if isinstance(payload, str) else json.dumps(payload)
        self.wfile.write(f"{prefix}data: {data}\n\n".encode())
        self.wfile.flush()

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        return json.loads(raw)

    # -- verbs ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/health") or path == "/health":
            self._send_json(200, {"status": "ok"})
        elif path.endswith("/models"):
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": model,
                            "object": "model",
                            "created": 0,
                            "owned_by": "fake-upstream",
                        }
                        for model in ("fake", "fake-large")
                    ],
                },
            )
        else:
            self._send_json(
                404,
                _openai_error(f"no route GET {path}", "not_found", None, "not_found"),
            )

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            body = self._read_body()
        except (ValueError, UnicodeDecodeError):
            self._send_json(
                400,
                _openai_error("body is not JSON", "invalid_request_error", None, None),
            )
            return
        upstream = self.server.upstream
        upstream._record(
            RecordedRequest(
                method="POST",
                path=path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
        )
        if path.endswith("/chat/completions"):
            self._chat(body, upstream)
        elif path.endswith("/responses"):
            self._responses(body, upstream)
        elif path.endswith("/messages"):
            self._anthropic(body, upstream)
        else:
            self._send_json(
                404,
                _openai_error(f"no route POST {path}", "not_found", None, "not_found"),
            )

    # -- OpenAI chat ----------------------------------------------------------------------

    def _chat(self, body: dict[str, Any], upstream: FakeUpstream) -> None:
        messages = body.get("messages") or []
        overflow = upstream._overflow(messages, messages)
        if overflow is not None:
            self._send_json(400, _context_error(*overflow))
            return
        n = max(1, int(body.get("n") or 1))
        model = body.get("model", "fake")
        usage = upstream._usage(messages, n)
        cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        if not body.get("stream"):
            payload: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": [
                    {
                        "index": i,
                        "message": {
                            "role": "assistant",
                            "content": upstream.reply,
                            "refusal": None,
                        },
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                    for i in range(n)
                ],
            }
            if usage is not None:
                payload["usage"] = usage
            self._send_json(200, payload)
            return

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
            out: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": choices,
            }
            if include_usage:
                out["usage"] = None  # OpenAI sends null on every chunk but the last
            out.update(extra)
            return out

        self._start_sse()
        for i in range(n):
            self._sse(
                chunk(
                    [
                        {
                            "index": i,
                            "delta": {"role": "assistant", "content": ""},
                            "logprobs": None,
                            "finish_reason": None,
                        }
                    ]
                )
            )
            self._sse(
                chunk(
                    [
                        {
                            "index": i,
                            "delta": {"content": upstream.reply},
                            "logprobs": None,
                            "finish_reason": None,
                        }
                    ]
                )
            )
        for i in range(n):
            self._sse(
                chunk(
                    [
                        {
                            "index": i,
                            "delta": {},
                            "logprobs": None,
                            "finish_reason": "stop",
                        }
                    ]
                )
            )
        if include_usage and usage is not None:
            self._sse(chunk([], usage=usage))
        self._sse("[DONE]")

    # -- OpenAI Responses -----------------------------------------------------------------

    def _responses(self, body: dict[str, Any], upstream: FakeUpstream) -> None:
        counted = {"input": body.get("input"), "instructions": body.get("instructions")}
        overflow = upstream._overflow(counted, counted)
        if overflow is not None:
            self._send_json(400, _context_error(*overflow))
            return
        if body.get("stream"):
            self._send_json(
                400,
                _openai_error(
                    "fake upstream: streaming /responses is not supported",
                    "invalid_request_error",
                    "stream",
                    None,
                ),
            )
            return
        usage = upstream._usage(counted, 1)
        payload: dict[str, Any] = {
            "id": f"resp_{uuid.uuid4().hex[:24]}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body.get("model", "fake"),
            "output": [
                {
                    "type": "message",
                    "id": f"msg_{uuid.uuid4().hex[:24]}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "output_text",
                            "text": upstream.reply,
                            "annotations": [],
                        }
                    ],
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        if usage is not None:
            payload["usage"] = {
                "input_tokens": usage["prompt_tokens"],
                "output_tokens": usage["completion_tokens"],
                "total_tokens": usage["total_tokens"],
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
        self._send_json(200, payload)

    # -- Anthropic Messages ---------------------------------------------------------------

    def _anthropic(self, body: dict[str, Any], upstream: FakeUpstream) -> None:
        counted = {"system": body.get("system"), "messages": body.get("messages") or []}
        scanned = [{"content": body.get("system")}, *(body.get("messages") or [])]
        overflow = upstream._overflow(counted, scanned)
        if overflow is not None:
            tokens, limit = overflow
            self._send_json(
                400,
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": f"prompt is too long: {tokens} tokens > {limit} maximum",
                    },
                },
            )
            return
        usage = upstream._usage(counted, 1)
        in_tok = usage["prompt_tokens"] if usage else 0
        out_tok = usage["completion_tokens"] if usage else 0
        mid = f"msg_{uuid.uuid4().hex[:24]}"
        model = body.get("model", "fake")
        if not body.get("stream"):
            self._send_json(
                200,
                {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": upstream.reply}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": in_tok, "output_tokens": out_tok},
                },
            )
            return
        self._start_sse()
        start = {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": in_tok, "output_tokens": 1},
        }
        self._sse({"type": "message_start", "message": start}, event="message_start")
        self._sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            event="content_block_start",
        )
        self._sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": upstream.reply},
            },
            event="content_block_delta",
        )
        self._sse({"type": "content_block_stop", "index": 0}, event="content_block_stop")
        self._sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": out_tok},
            },
            event="message_delta",
        )
        self._sse({"type": "message_stop"}, event="message_stop")


def _openai_error(message: str, type_: str, param: str | None, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _context_error(tokens: int, limit: int) -> dict[str, Any]:
    """The exact body OpenAI sends on overflow; litellm maps it to ContextWindowExceededError."""
    return _openai_error(
        f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
        f"{tokens} tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "messages",
        "context_length_exceeded",
    )


def _contains_marker(payload: Any) -> bool:
    """True if any message *content* (or the system/instructions/input text) holds the marker."""
    if isinstance(payload, list):
        return any(
            CWE_MARKER in json.dumps(m.get("content")) if isinstance(m, dict) else CWE_MARKER in json.dumps(m)
            for m in payload
        )
    return CWE_MARKER in json.dumps(payload)


class FakeUpstream:
    """In-process fake provider on ``127.0.0.1`` (a free port unless ``port`` is given).

    Use as ``with FakeUpstream() as up: ... up.base_url ... up.requests``.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        usage_ratio: float = 1.0,
        report_usage: bool = True,
        max_context_tokens: int | None = None,
        reply: str = REPLY_TEXT,
        log_path: str | Path | None = None,
    ) -> None:
        self.host = host
        self.usage_ratio = usage_ratio
        self.report_usage = report_usage
        self.max_context_tokens = max_context_tokens
        self.reply = reply
        self.log_path = Path(log_path) if log_path is not None else None
        self._requested_port = port
        self._lock = threading.Lock()
        self._records: list[RecordedRequest] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind and serve in a daemon thread; returns self so ``up = FakeUpstream().start()`` reads well."""
        if self._server is not None:
            return self
        server = _Server((self.host, self._requested_port), _Handler)
        server.upstream = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-upstream-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port (idempotent)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses ------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (only meaningful once started)."""
        if self._server is None:
            raise RuntimeError("FakeUpstream is not running")
        return int(self._server.server_address[1])

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT`` -- the api_base Anthropic deployments want (litellm appends /v1/messages)."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` -- the api_base OpenAI-compatible deployments want."""
        return f"{self.root_url}/v1"

    # -- recordings -----------------------------------------------------------------------

    @property
    def requests(self) -> list[Any]:
        """Snapshot of received JSON bodies, oldest first."""
        with self._lock:
            return [r["body"] for r in self._records]

    @property
    def records(self) -> list[RecordedRequest]:
        """Snapshot of received requests with path and headers, oldest first."""
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        """Forget recorded requests (the JSONL log, if any, is left alone)."""
        with self._lock:
            self._records.clear()

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[Any]:
        """Block until ``count`` bodies arrived; a proxy may answer its client before logging finishes."""
        deadline = time.monotonic() + timeout
        while True:
            bodies = self.requests
            if len(bodies) >= count or time.monotonic() >= deadline:
                return bodies
            time.sleep(0.02)

    # -- behaviour (called from handler threads) ------------------------------------------

    def _record(self, record: RecordedRequest) -> None:
        with self._lock:
            self._records.append(record)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record["body"]) + "\n")

    def _overflow(self, counted: Any, scanned: Any) -> tuple[int, int] | None:
        """``(tokens, limit)`` when the request must be refused for length, else None.

        ``counted`` is what the estimate is computed over; ``scanned`` is searched for the marker.
        """
        tokens = estimate_tokens(counted)
        limit = self.max_context_tokens if self.max_context_tokens is not None else _DEFAULT_CONTEXT
        if _contains_marker(scanned) or (self.max_context_tokens is not None and tokens > self.max_context_tokens):
            return tokens, limit
        return None

    def _usage(self, counted: Any, n: int) -> dict[str, int] | None:
        if not self.report_usage:
            return None
        prompt = int(estimate_tokens(counted) * self.usage_ratio)
        completion = n  # one "ok" token per choice
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }


def main(argv: list[str] | None = None) -> int:
    """Script entry point: serve until SIGTERM/SIGINT, logging bodies as JSONL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on stdout)")
    parser.add_argument(
        "--log",
        type=Path,
        default=None,
        help="append each request body as a JSONL line",
    )
    parser.add_argument("--usage-ratio", type=float, default=1.0)
    parser.add_argument("--no-usage", action="store_true", help="omit usage blocks")
    parser.add_argument("--max-context-tokens", type=int, default=None)
    parser.add_argument("--reply", default=REPLY_TEXT)
    args = parser.parse_args(argv)

    upstream = FakeUpstream(
        port=args.port,
        host=args.host,
        usage_ratio=args.usage_ratio,
        report_usage=not args.no_usage,
        max_context_tokens=args.max_context_tokens,
        reply=args.reply,
        log_path=args.log,
    )
    upstream.start()
    stopped = threading.Event()

    def _on_signal(signum: int, frame: Any) -> None:
        stopped.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    # A CLI's one line of output: how callers learn the port when --port 0 was used.
    sys.stdout.write(f"listening on {upstream.base_url}\n")
    sys.stdout.flush()
    try:
        while not stopped.wait(0.2):
            pass
    finally:
        upstream.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
