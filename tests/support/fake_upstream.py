"""A stdlib-only, OpenAI-compatible fake provider for end-to-end tests.

Why stdlib only: it must run in-process from tests *and* as a standalone script next to a
proxy subprocess, with nothing to install and no import of litellm (so it can never be
influenced by the code under test).

Served (any path prefix is accepted; only the suffix matters, so ``api_base`` may or may not
end in ``/v1``):

* ``POST .../chat/completions``  -- non-streaming and SSE streaming (``n`` choices,
  ``stream_options.include_usage``).
* ``POST .../responses``         -- OpenAI Responses API, non-streaming and SSE streaming
  (``response.created`` ... ``response.output_item.done`` ... ``response.completed``).
* ``POST .../messages``          -- Anthropic Messages API, non-streaming and SSE streaming
  (text blocks, and ``tool_use`` blocks streamed as ``input_json_delta``).
* ``GET .../models`` and ``GET /health``.

``prompt_tokens`` is ``int(estimate_tokens(messages) * usage_ratio)``: a deliberately cheap,
tokenizer-free estimate (``len(json.dumps(messages)) // 4``) so a test can predict it exactly
and simulate a provider that over- or under-reports usage.

With a :class:`~tests.support.fake_cache.PrefixCache` it behaves like a provider's prompt cache
and says so in ``usage`` as each API does: chat ``prompt_tokens_details.cached_tokens``,
Responses ``input_tokens_details.cached_tokens``, Anthropic ``cache_read_input_tokens`` and
``cache_creation_input_tokens`` (its ``input_tokens`` then counts only the rest, as Anthropic's does).

A request whose message content contains :data:`CWE_MARKER`, or whose estimate exceeds
``max_context_tokens``, gets the provider's real "context length exceeded" 400, so tests can
prove an overflow *would* have reached the provider.

With an :class:`AgentScript` it plays a scripted agent model for real agent CLIs: on
``/messages`` and ``/responses`` requests that offer a shell tool it answers with a tool call
running a command with a large output, step after step, then with a final text.

Script use::

    python -m tests.support.fake_upstream --port 0 --log upstream.jsonl
    python tests/support/fake_upstream.py --port 41801 --log upstream.jsonl
    python tests/support/fake_upstream.py --port 41801 --script-steps 25 --script-command "seq 1 4000"

It writes one line ``listening on http://127.0.0.1:PORT/v1`` to stdout, then serves until
SIGTERM/SIGINT; every request body is appended to the JSONL log.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

try:
    from tests.support.fake_cache import CacheUse, PrefixCache, anthropic_blocks, openai_blocks
except ModuleNotFoundError:  # run as a script (``python tests/support/fake_upstream.py``): its folder is on sys.path
    from fake_cache import CacheUse, PrefixCache, anthropic_blocks, openai_blocks  # type: ignore[no-redef]

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "CWE_MARKER",
    "LOST_TEXT",
    "RECALL_TOOL",
    "SHELL_TOOLS",
    "STEP_MARK",
    "AgentScript",
    "FakeUpstream",
    "RecallScript",
    "RecordedRequest",
    "estimate_tokens",
    "main",
]

CWE_MARKER = "UPSTREAM_CWE"
"""A message containing this string is answered with a provider-side context-length 400."""

REPLY_TEXT = "ok"
_DEFAULT_CONTEXT = 8192  # only quoted in the error message when max_context_tokens is unset


STEP_MARK = "fake-agent-step"
"""A scripted command prints ``fake-agent-step-N`` first and last: how the script reads its progress back."""

LOST_TEXT = "fake model: the newest tool result is not one of my steps"
"""The script's answer to a newest tool result that no step of it printed."""

#: The shell tools the script knows, by name, with the arguments each takes for a command line:
#: Claude Code's ``Bash``, Codex's ``exec_command`` (and the ``shell_command`` / ``shell`` of older versions).
SHELL_TOOLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "Bash": lambda command: {"command": command, "description": "Print a long list of numbers"},
    "exec_command": lambda command: {"cmd": command},
    "shell_command": lambda command: {"command": command},
    "shell": lambda command: {"command": ["bash", "-lc", command]},
}


@dataclass(frozen=True)
class AgentScript:
    """A scripted agent model: a shell tool call per turn until ``steps`` commands ran, then ``final_text``.

    Stateless, so trimming cannot confuse it: each request's newest tool result says which step
    ran last (the command prints :data:`STEP_MARK` at its start and end, so a result cut in the
    middle still says it). A request without a known shell tool (a client's side request: a
    title, a summary) gets the fake's plain reply. A newest result without the mark ends the
    script with :data:`LOST_TEXT`, so a test sees that its client ran something else.
    """

    steps: int = 25
    command: str = "seq 1 4000"
    final_text: str = "All steps done."

    def command_for(self, step: int) -> str:
        return f"echo {STEP_MARK}-{step}; {self.command}; echo {STEP_MARK}-{step}"

    def turn(self, tool_names: list[str], newest_result: str | None) -> tuple[str, tuple[str, dict[str, Any]] | None]:
        """``(text, (tool, arguments))`` for a tool call, ``(text, None)`` for a final answer."""
        shell = next(name for name in SHELL_TOOLS if name in tool_names)
        if newest_result is None:
            step = 1
        else:
            ran = re.findall(rf"{STEP_MARK}-(\d+)", newest_result)
            if not ran:
                return LOST_TEXT, None
            step = int(ran[-1]) + 1
        if step > self.steps:
            return self.final_text, None
        return f"Running step {step} of {self.steps}.", (shell, SHELL_TOOLS[shell](self.command_for(step)))


#: The gateway's recall tool (litellm_budget/core/wording/_recall.py), and a handle as its notices name it.
RECALL_TOOL = "litellm_budget_recall"
_RECALL_HANDLE = re.compile(r"recall (r-[0-9a-f]{8})")


@dataclass(frozen=True)
class RecallScript:
    """A model that recalls: offered the recall tool, it calls it ``times`` times, then answers.

    Its call names ``handle``, else the first handle the request names (a placeholder's, a digest
    line's); ``lines`` and ``pattern`` are passed along when given. Its final answer is
    ``FINAL[...]`` around the last recall's answer, so a test sees what the model was given. Stateless:
    the request says how many recalls it made so far (its recall calls in the history).
    """

    times: int = 1
    handle: str | None = None
    lines: str | None = None
    pattern: str | None = None

    def turn(self, body: dict[str, Any], api: str) -> tuple[str, tuple[str, dict[str, Any]] | None]:
        made = _recall_calls_made(body)
        choice = body.get("tool_choice")
        if made >= self.times or choice == "none" or (isinstance(choice, dict) and choice.get("type") == "none"):
            return f"FINAL[{_newest_result(body, api) or ''}]", None
        handles = _RECALL_HANDLE.findall(json.dumps(body.get("messages") or body.get("input") or []))
        handle = self.handle or (handles[0] if handles else "r-00000000")
        arguments: dict[str, Any] = {"handle": handle}
        arguments.update({key: value for key, value in (("lines", self.lines), ("pattern", self.pattern)) if value})
        return "Let me recall that.", (RECALL_TOOL, arguments)


def _recall_calls_made(body: dict[str, Any]) -> int:
    """How many recall calls the request's history holds, in any API's shape."""
    made = 0
    for item in body.get("messages") or body.get("input") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call" and item.get("name") == RECALL_TOOL:
            made += 1
        for call in item.get("tool_calls") or []:
            made += (call.get("function") or {}).get("name") == RECALL_TOOL
        content = item.get("content")
        for block in content if isinstance(content, list) else []:
            made += isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == RECALL_TOOL
    return made


def _tool_names(body: dict[str, Any]) -> list[str]:
    """The request's tool names: Anthropic's and Responses' ``name``, chat's ``function.name``."""
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            function = tool.get("function")
            name = tool.get("name") or (function.get("name") if isinstance(function, dict) else None)
            if isinstance(name, str):
                names.append(name)
    return names


def _text_of(content: Any) -> str:
    """The text of a tool result's content: a string, or a list of text parts of any API."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text") or "" for part in content if isinstance(part, dict))
    return ""


def _newest_result(body: dict[str, Any], api: str) -> str | None:
    """The text of the newest tool result (chat ``tool``, Anthropic ``tool_result``, Responses ``*_output``)."""
    if api == "chat":
        results = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool"]
        return _text_of(results[-1].get("content")) if results else None
    if api == "anthropic":
        for message in reversed(body.get("messages") or []):
            content = message.get("content")
            for block in reversed(content if isinstance(content, list) else []):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    return _text_of(block.get("content"))
        return None
    items = body.get("input")
    for item in reversed(items if isinstance(items, list) else []):
        if isinstance(item, dict) and str(item.get("type", "")).endswith("call_output"):
            return _text_of(item.get("output"))
    return None


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
        if upstream.delay:
            time.sleep(upstream.delay)
        if upstream.error_status is not None:
            self._send_json(
                upstream.error_status,
                _openai_error("fake upstream failure", "server_error", None, None),
            )
            return
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
        overflow = upstream._overflow(messages, messages, body)
        if overflow is not None:
            self._send_json(400, upstream.context_error(*overflow))
            return
        n = max(1, int(body.get("n") or 1))
        model = body.get("model", "fake")
        usage = upstream._usage(messages, n, body)
        if usage is not None and upstream.cache is not None:
            use = upstream._cache_use(openai_blocks([body.get("tools"), *messages]), usage)
            usage["prompt_tokens_details"] = {"cached_tokens": use.read}
        cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        if not body.get("stream"):
            # A script's tool call is answered on the plain path only (streamed chat stays text).
            reply, call = upstream._turn(body, "chat")
            message: dict[str, Any] = {"role": "assistant", "content": reply, "refusal": None}
            if call is not None:
                name, arguments = call
                function = {"name": name, "arguments": json.dumps(arguments)}
                message["tool_calls"] = [
                    {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function", "function": function}
                ]
            payload: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": [
                    {
                        "index": i,
                        "message": message,
                        "logprobs": None,
                        "finish_reason": "stop" if call is None else "tool_calls",
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
        overflow = upstream._overflow(counted, counted, body)
        if overflow is not None:
            self._send_json(400, upstream.context_error(*overflow))
            return
        usage = upstream._usage(counted, 1, body)
        cached = 0
        if usage is not None and upstream.cache is not None:
            items = body.get("input")
            parts = [body.get("instructions"), body.get("tools"), *(items if isinstance(items, list) else [items])]
            cached = upstream._cache_use(openai_blocks(parts), usage).read
        text, call = upstream._turn(body, "responses")
        output = [_responses_message(text)]
        if call is not None:
            output.append(_responses_call(*call))
        response: dict[str, Any] = {
            "id": f"resp_{uuid.uuid4().hex[:24]}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body.get("model", "fake"),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        if usage is not None:
            response["usage"] = {
                "input_tokens": usage["prompt_tokens"],
                "output_tokens": usage["completion_tokens"],
                "total_tokens": usage["total_tokens"],
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
        if not body.get("stream"):
            self._send_json(200, response)
            return
        self._start_sse()
        for event in _responses_events(response):
            self._sse(event, event=event["type"])

    # -- Anthropic Messages ---------------------------------------------------------------

    def _anthropic(self, body: dict[str, Any], upstream: FakeUpstream) -> None:
        counted = {"system": body.get("system"), "messages": body.get("messages") or []}
        scanned = [{"content": body.get("system")}, *(body.get("messages") or [])]
        overflow = upstream._overflow(counted, scanned, body)
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
        usage = upstream._usage(counted, 1, body)
        in_tok = usage["prompt_tokens"] if usage else 0
        out_tok = usage["completion_tokens"] if usage else 0
        cache_usage: dict[str, int] = {}
        if usage is not None and upstream.cache is not None:
            use = upstream._cache_use(anthropic_blocks(body), usage)
            in_tok -= use.read + use.written
            cache_usage = {"cache_read_input_tokens": use.read, "cache_creation_input_tokens": use.written}
        text, call = upstream._turn(body, "anthropic")
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if call is not None:
            name, arguments = call
            content.append(
                {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": name, "input": arguments}
            )
        stop_reason = "end_turn" if call is None else "tool_use"
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
                    "content": content,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": {"input_tokens": in_tok, "output_tokens": out_tok, **cache_usage},
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
            "usage": {"input_tokens": in_tok, "output_tokens": 1, **cache_usage},
        }
        self._sse({"type": "message_start", "message": start}, event="message_start")
        for index, block in enumerate(content):
            for event in _anthropic_block_events(index, block):
                self._sse(event, event=event["type"])
        self._sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": out_tok},
            },
            event="message_delta",
        )
        self._sse({"type": "message_stop"}, event="message_stop")


def _anthropic_block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    """content_block_start, one delta carrying the whole block, content_block_stop."""
    if block["type"] == "tool_use":
        opened = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        opened = {**block, "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    return [
        {"type": "content_block_start", "index": index, "content_block": opened},
        {"type": "content_block_delta", "index": index, "delta": delta},
        {"type": "content_block_stop", "index": index},
    ]


def _responses_message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _responses_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{uuid.uuid4().hex[:24]}",
        "call_id": f"call_{uuid.uuid4().hex[:24]}",
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def _responses_events(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The SSE events of a streamed Responses answer, as OpenAI sends them, numbered."""
    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": pending},
        {"type": "response.in_progress", "response": pending},
    ]
    for index, item in enumerate(response["output"]):
        events.extend(_responses_item_events(index, item))
    events.append({"type": "response.completed", "response": response})
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def _responses_item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    where = {"output_index": index, "item_id": item["id"]}
    added = {"type": "response.output_item.added", "output_index": index}
    done = {"type": "response.output_item.done", "output_index": index, "item": item}
    if item["type"] == "function_call":
        arguments = item["arguments"]
        return [
            {**added, "item": {**item, "arguments": "", "status": "in_progress"}},
            {"type": "response.function_call_arguments.delta", **where, "delta": arguments},
            {"type": "response.function_call_arguments.done", **where, "arguments": arguments},
            done,
        ]
    part = item["content"][0]
    text_at = {**where, "content_index": 0}
    return [
        {**added, "item": {**item, "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", **text_at, "part": {**part, "text": ""}},
        {"type": "response.output_text.delta", **text_at, "delta": part["text"], "logprobs": []},
        {"type": "response.output_text.done", **text_at, "text": part["text"], "logprobs": []},
        {"type": "response.content_part.done", **text_at, "part": part},
        done,
    ]


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

    ``script`` makes it a scripted agent model (see :class:`AgentScript`). ``prompt_counter``
    counts a whole request body's prompt (tools included) for ``usage`` and
    ``max_context_tokens`` in place of :func:`estimate_tokens`, so a test can give the fake a
    real tokenizer's count without this module importing one. ``delay`` makes every POST wait
    that many seconds before it is answered (a slow provider), and ``error_status`` answers
    every POST with that status and an OpenAI-style error (a provider that is down); both are
    recorded first, like every request. ``cache`` makes it a provider's prompt cache (see
    :mod:`tests.support.fake_cache`); its ``uses`` say what each request read and wrote.
    ``context_error(tokens, limit)`` is the body of its context-length 400 (OpenAI's by default),
    to stand in for another backend's words.
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
        script: AgentScript | None = None,
        prompt_counter: Callable[[dict[str, Any]], int] | None = None,
        delay: float = 0.0,
        error_status: int | None = None,
        cache: PrefixCache | None = None,
        recall: RecallScript | None = None,
        context_error: Callable[[int, int], dict[str, Any]] = _context_error,
    ) -> None:
        self.host = host
        self.context_error = context_error
        self.recall = recall
        self.cache = cache
        self.delay = delay
        self.error_status = error_status
        self.script = script
        self.prompt_counter = prompt_counter
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

    def _prompt_tokens(self, counted: Any, body: dict[str, Any]) -> int:
        """The request's prompt size: ``prompt_counter(body)`` when given, else the estimate over ``counted``."""
        return self.prompt_counter(body) if self.prompt_counter is not None else estimate_tokens(counted)

    def _overflow(self, counted: Any, scanned: Any, body: dict[str, Any]) -> tuple[int, int] | None:
        """``(tokens, limit)`` when the request must be refused for length, else None.

        ``counted`` is what the estimate is computed over; ``scanned`` is searched for the marker.
        """
        tokens = self._prompt_tokens(counted, body)
        limit = self.max_context_tokens if self.max_context_tokens is not None else _DEFAULT_CONTEXT
        if _contains_marker(scanned) or (self.max_context_tokens is not None and tokens > self.max_context_tokens):
            return tokens, limit
        return None

    def _turn(self, body: dict[str, Any], api: str) -> tuple[str, tuple[str, dict[str, Any]] | None]:
        """What the model says next: the plain reply, or the script's next step (see :class:`AgentScript`)."""
        tools = _tool_names(body)
        if self.recall is not None and RECALL_TOOL in tools:
            return self.recall.turn(body, api)
        if self.script is None or not any(name in tools for name in SHELL_TOOLS):
            return self.reply, None
        return self.script.turn(tools, _newest_result(body, api))

    def _cache_use(self, blocks: list[tuple[str, bool]], usage: dict[str, Any]) -> CacheUse:
        """Serve the prompt from the cache (there is one): what it read and wrote, in ``usage``'s tokens."""
        assert self.cache is not None  # callers check
        return self.cache.serve(blocks, int(usage["prompt_tokens"]))

    def _usage(self, counted: Any, n: int, body: dict[str, Any]) -> dict[str, Any] | None:
        if not self.report_usage:
            return None
        prompt = int(self._prompt_tokens(counted, body) * self.usage_ratio)
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
    parser.add_argument(
        "--script-steps",
        type=int,
        default=0,
        help="act as a scripted agent: this many shell tool calls, then a final answer",
    )
    parser.add_argument("--script-command", default=AgentScript.command)
    args = parser.parse_args(argv)

    upstream = FakeUpstream(
        port=args.port,
        host=args.host,
        usage_ratio=args.usage_ratio,
        report_usage=not args.no_usage,
        max_context_tokens=args.max_context_tokens,
        reply=args.reply,
        log_path=args.log,
        script=AgentScript(steps=args.script_steps, command=args.script_command) if args.script_steps else None,
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
