"""Proves the end-to-end harness itself works, with no litellm_budget plugin loaded.

If these fail, every plugin e2e test would fail for reasons unrelated to the plugin.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import anthropic
import httpx
import litellm
import openai
import pytest
import yaml
from litellm.exceptions import ContextWindowExceededError

from tests.support.fake_upstream import (
    CWE_MARKER,
    LOST_TEXT,
    STEP_MARK,
    AgentScript,
    FakeUpstream,
    estimate_tokens,
)
from tests.support.proxy_process import (
    REPO_ROOT,
    ProxyProcess,
    ProxyStartError,
    parse_sse,
    post_chat,
    post_json,
    start_proxy,
)

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say ok."},
]


def _post(upstream: FakeUpstream, body: dict[str, Any], path: str = "/chat/completions") -> httpx.Response:
    return httpx.post(upstream.base_url + path, json=body, timeout=10, trust_env=False)


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as up:
        yield up


class TestFakeUpstream:
    def test_non_stream_answer_records_body(self, upstream: FakeUpstream) -> None:
        """A plain chat call gets a chat.completion with usage, and the body is recorded."""
        body = {"model": "fake", "messages": MESSAGES}
        resp = _post(upstream, body)
        assert resp.status_code == 200
        data = resp.json()
        assert data["object"] == "chat.completion"
        assert data["choices"][0]["message"] == {
            "role": "assistant",
            "content": "ok",
            "refusal": None,
        }
        assert data["choices"][0]["finish_reason"] == "stop"
        assert data["usage"]["prompt_tokens"] == estimate_tokens(MESSAGES)
        assert data["usage"]["total_tokens"] == data["usage"]["prompt_tokens"] + 1
        assert upstream.requests == [body]
        assert upstream.records[0]["path"] == "/v1/chat/completions"

    def test_stream_sse_with_usage(self, upstream: FakeUpstream) -> None:
        """A stream is SSE chunks ending in [DONE], with a usage-only chunk when include_usage is set."""
        body = {
            "model": "fake",
            "messages": MESSAGES,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        resp = _post(upstream, body)
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        events = parse_sse(resp.text)
        assert events[-1] == "[DONE]"
        chunks = events[:-1]
        assert all(c["object"] == "chat.completion.chunk" for c in chunks)
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
        assert text == "ok"
        assert chunks[-1]["choices"] == []
        assert chunks[-1]["usage"]["prompt_tokens"] == estimate_tokens(MESSAGES)
        assert all(c["usage"] is None for c in chunks[:-1])

    def test_stream_without_include_usage_has_no_usage(self, upstream: FakeUpstream) -> None:
        """Without stream_options.include_usage no chunk carries usage, as with OpenAI."""
        events = parse_sse(_post(upstream, {"model": "fake", "messages": MESSAGES, "stream": True}).text)
        assert events[-1] == "[DONE]"
        assert all("usage" not in c for c in events[:-1])

    def test_n_choices(self, upstream: FakeUpstream) -> None:
        """n>1 yields one choice per index, streaming and not."""
        data = _post(upstream, {"model": "fake", "messages": MESSAGES, "n": 3}).json()
        assert [c["index"] for c in data["choices"]] == [0, 1, 2]
        assert data["usage"]["completion_tokens"] == 3
        events = parse_sse(
            _post(
                upstream,
                {"model": "fake", "messages": MESSAGES, "n": 2, "stream": True},
            ).text
        )
        finished = sorted(c["choices"][0]["index"] for c in events[:-1] if c["choices"][0]["finish_reason"])
        assert finished == [0, 1]

    def test_cwe_marker_yields_openai_400(self, upstream: FakeUpstream) -> None:
        """A message containing the marker gets OpenAI's real context_length_exceeded 400."""
        resp = _post(
            upstream,
            {
                "model": "fake",
                "messages": [{"role": "user", "content": f"x {CWE_MARKER} y"}],
            },
        )
        assert resp.status_code == 400
        err = resp.json()["error"]
        assert err["code"] == "context_length_exceeded"
        assert err["type"] == "invalid_request_error"
        assert err["param"] == "messages"
        assert err["message"].startswith("This model's maximum context length is")
        assert len(upstream.requests) == 1  # refused requests are still recorded

    def test_max_context_tokens_overflow(self) -> None:
        """Requests whose estimate exceeds max_context_tokens get the same 400; smaller ones pass."""
        limit = estimate_tokens(MESSAGES)
        with FakeUpstream(max_context_tokens=limit) as up:
            assert _post(up, {"model": "fake", "messages": MESSAGES}).status_code == 200
            bigger = [*MESSAGES, {"role": "user", "content": "more words here"}]
            resp = _post(up, {"model": "fake", "messages": bigger})
            assert resp.status_code == 400
            assert resp.json()["error"]["code"] == "context_length_exceeded"

    def test_usage_ratio_and_report_usage(self) -> None:
        """usage_ratio scales prompt_tokens; report_usage=False omits usage (stream and not)."""
        with FakeUpstream(usage_ratio=2.5) as up:
            usage = _post(up, {"model": "fake", "messages": MESSAGES}).json()["usage"]
            assert usage["prompt_tokens"] == int(estimate_tokens(MESSAGES) * 2.5)
        with FakeUpstream(report_usage=False) as up:
            assert "usage" not in _post(up, {"model": "fake", "messages": MESSAGES}).json()
            body = {
                "model": "fake",
                "messages": MESSAGES,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            events = parse_sse(_post(up, body).text)
            assert all(c.get("usage") is None for c in events[:-1])

    def test_models_health_and_404(self, upstream: FakeUpstream) -> None:
        """GET /v1/models lists models, /health is 200, unknown routes are a JSON 404."""
        models = httpx.get(upstream.base_url + "/models", trust_env=False).json()
        assert models["object"] == "list"
        assert models["data"]
        assert httpx.get(upstream.root_url + "/health", trust_env=False).status_code == 200
        assert httpx.post(upstream.base_url + "/nope", json={}, trust_env=False).status_code == 404

    def test_responses_and_anthropic_messages(self, upstream: FakeUpstream) -> None:
        """The Responses and Anthropic Messages shapes answer too (for non-chat plugin paths)."""
        resp = _post(upstream, {"model": "fake", "input": "hi"}, "/responses").json()
        assert resp["object"] == "response"
        assert resp["output"][0]["content"][0]["text"] == "ok"
        msg = _post(
            upstream,
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "hi"}],
            },
            "/messages",
        )
        assert msg.json()["content"] == [{"type": "text", "text": "ok"}]
        cwe = _post(
            upstream,
            {"model": "c", "max_tokens": 5, "system": CWE_MARKER, "messages": []},
            "/messages",
        )
        assert cwe.status_code == 400
        assert cwe.json()["error"]["message"].startswith("prompt is too long")

    def test_concurrent_requests_and_clear(self, upstream: FakeUpstream) -> None:
        """Concurrent clients all succeed and all bodies are recorded; clear() empties the record."""
        statuses: list[int] = []
        lock = threading.Lock()

        def call(i: int) -> None:
            code = _post(
                upstream,
                {"model": "fake", "messages": [{"role": "user", "content": str(i)}]},
            ).status_code
            with lock:
                statuses.append(code)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert statuses == [200] * 24
        assert sorted(int(b["messages"][0]["content"]) for b in upstream.requests) == list(range(24))
        upstream.clear()
        assert upstream.requests == []

    def test_script_mode_writes_jsonl(self, tmp_path: Path) -> None:
        """`python -m tests.support.fake_upstream --port 0 --log F` serves and logs JSONL lines."""
        log = tmp_path / "up.jsonl"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.fake_upstream",
                "--port",
                "0",
                "--log",
                str(log),
            ],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            base_url = proc.stdout.readline().split()[-1]
            body = {"model": "fake", "messages": MESSAGES}
            assert httpx.post(base_url + "/chat/completions", json=body, trust_env=False).status_code == 200
            assert [json.loads(line) for line in log.read_text().splitlines()] == [body]
        finally:
            proc.terminate()
            assert proc.wait(timeout=10) == 0


class TestLitellmSdk:
    """Each test drives its own event loop with asyncio.run: nothing is shared across loops."""

    def test_acompletion_reaches_upstream(self, upstream: FakeUpstream) -> None:
        """litellm.acompletion with api_base=fake reaches it and parses the answer and usage."""
        resp = asyncio.run(
            litellm.acompletion(
                model="openai/fake",
                api_base=upstream.base_url,
                api_key="x",
                messages=MESSAGES,
            )
        )
        assert resp.choices[0].message.content == "ok"
        assert resp.usage.prompt_tokens == estimate_tokens(MESSAGES)
        assert upstream.requests == [{"model": "fake", "messages": MESSAGES}]

    def test_acompletion_stream(self, upstream: FakeUpstream) -> None:
        """A streamed acompletion yields the text and, with include_usage, the usage."""

        async def run() -> tuple[str, Any]:
            stream = await litellm.acompletion(
                model="openai/fake",
                api_base=upstream.base_url,
                api_key="x",
                messages=MESSAGES,
                stream=True,
                stream_options={"include_usage": True},
            )
            text, usage = "", None
            async for chunk in stream:
                if chunk.choices:
                    text += chunk.choices[0].delta.content or ""
                usage = getattr(chunk, "usage", None) or usage
            return text, usage

        text, usage = asyncio.run(run())
        assert text == "ok"
        assert usage is not None
        assert usage.prompt_tokens == estimate_tokens(MESSAGES)
        assert upstream.requests[0]["stream"] is True

    def test_upstream_cwe_maps_to_context_window_exceeded(self, upstream: FakeUpstream) -> None:
        """The fake's 400 is mapped by litellm to ContextWindowExceededError (what a plugin must prevent)."""
        with pytest.raises(ContextWindowExceededError):
            asyncio.run(
                litellm.acompletion(
                    model="openai/fake",
                    api_base=upstream.base_url,
                    api_key="x",
                    messages=[{"role": "user", "content": CWE_MARKER}],
                )
            )

    @pytest.mark.asyncio
    async def test_acompletion_under_pytest_asyncio(self, upstream: FakeUpstream) -> None:
        """pytest-asyncio (strict mode, the session's loop) works alongside the asyncio.run tests."""
        resp = await litellm.acompletion(
            model="openai/fake",
            api_base=upstream.base_url,
            api_key="x",
            messages=MESSAGES,
        )
        assert resp.choices[0].message.content == "ok"
        assert len(upstream.requests) == 1


class TestAgentScript:
    """The scripted agent model that drives the real CLIs (test_real_clis.py), read by the official SDKs."""

    SCRIPT = AgentScript(steps=2, command="true", final_text="all done")
    BASH: ClassVar[dict[str, Any]] = {"name": "Bash", "description": "Run.", "input_schema": {"type": "object"}}
    EXEC: ClassVar[dict[str, Any]] = {"type": "function", "name": "exec_command", "parameters": {"type": "object"}}

    def test_messages_stream_a_tool_use_then_the_final_text(self) -> None:
        """A streamed tool_use (input_json_delta) with the step's command; after the last step, the final text."""
        go: list[Any] = [{"role": "user", "content": "go"}]
        with (
            FakeUpstream(script=self.SCRIPT) as up,
            anthropic.Anthropic(
                base_url=up.root_url, api_key="k", http_client=anthropic.DefaultHttpxClient(trust_env=False)
            ) as client,
        ):
            with client.messages.stream(model="m", max_tokens=64, tools=[self.BASH], messages=go) as stream:
                first = stream.get_final_message()
            call: Any = first.content[-1]
            result = {"type": "tool_result", "tool_use_id": call.id, "content": f"{STEP_MARK}-2"}
            history = [
                *go,
                {"role": "assistant", "content": [block.model_dump() for block in first.content]},
                {"role": "user", "content": [result]},
            ]
            final: Any = client.messages.create(model="m", max_tokens=64, tools=[self.BASH], messages=history)
        assert (first.stop_reason, call.type, call.name) == ("tool_use", "tool_use", "Bash")
        assert call.input == {"command": self.SCRIPT.command_for(1), "description": "Print a long list of numbers"}
        assert (final.stop_reason, final.content[0].text) == ("end_turn", "all done")

    def test_responses_stream_a_function_call_then_the_final_text(self) -> None:
        """Every Responses event the SDK's stream accumulator needs, numbered; then the final text."""
        with (
            FakeUpstream(script=self.SCRIPT) as up,
            openai.OpenAI(
                base_url=up.base_url, api_key="k", http_client=openai.DefaultHttpxClient(trust_env=False)
            ) as client,
        ):
            with client.responses.stream(model="m", input="go", tools=[self.EXEC]) as stream:
                events = list(stream)
                first = stream.get_final_response()
            call: Any = first.output[-1]
            output = {"type": "function_call_output", "call_id": call.call_id, "output": f"{STEP_MARK}-2"}
            final = client.responses.create(model="m", input=[call.model_dump(), output], tools=[self.EXEC])
        assert [event.sequence_number for event in events] == list(range(len(events)))
        assert (events[0].type, events[-1].type) == ("response.created", "response.completed")
        assert (call.type, call.name) == ("function_call", "exec_command")
        assert json.loads(call.arguments) == {"cmd": self.SCRIPT.command_for(1)}
        assert final.output_text == "all done"

    def test_a_result_that_is_not_a_step_and_a_request_without_a_shell(self) -> None:
        """A foreign newest result ends the script visibly; a request without a shell tool gets the plain reply."""
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "not found"}]},
        ]
        with FakeUpstream(script=self.SCRIPT) as up:
            lost = _post(up, {"model": "m", "max_tokens": 9, "tools": [self.BASH], "messages": messages}, "/messages")
            plain = _post(up, {"model": "m", "max_tokens": 9, "messages": messages}, "/messages")
        assert lost.json()["content"] == [{"type": "text", "text": LOST_TEXT}]
        assert plain.json()["content"] == [{"type": "text", "text": "ok"}]


# -- the real proxy ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def module_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as up:
        yield up


@pytest.fixture(scope="module")
def proxy(module_upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    config = {
        "model_list": [
            {
                "model_name": "fake",
                "litellm_params": {
                    "model": "openai/fake",
                    "api_base": module_upstream.base_url,
                    "api_key": "x",
                },
            },
            {
                "model_name": "mocked",
                "litellm_params": {
                    "model": "openai/gpt-4o",
                    "mock_response": "mocked!",
                },
            },
        ],
    }
    with start_proxy(config, tmp_path=tmp_path_factory.mktemp("proxy")) as running:
        yield running
    assert _pid_gone(running.pid)


@pytest.mark.proxy
@pytest.mark.slow  # the harness's own proxy cases; every proxy test of the default run exercises it
class TestProxy:
    def test_generated_master_key_is_enforced(self, proxy: ProxyProcess) -> None:
        """The injected sk- master key is written to the config, and requests without it are refused."""
        assert proxy.master_key.startswith("sk-")
        assert yaml.safe_load(proxy.config_path.read_text())["general_settings"]["master_key"] == proxy.master_key
        url = proxy.base_url + "/v1/chat/completions"
        body = {"model": "mocked", "messages": MESSAGES}
        # 1.108.5 without prisma installed: no key -> 500 (its error handler imports prisma and
        # crashes), wrong key -> 400 "No connected db."; neither is 401, so only assert refusal.
        for headers in ({}, {"Authorization": "Bearer sk-wrong"}):
            assert httpx.post(url, json=body, headers=headers, trust_env=False).status_code >= 400

    def test_non_stream_through_proxy(self, proxy: ProxyProcess, module_upstream: FakeUpstream) -> None:
        """A chat completion through the proxy returns 200 and the upstream saw the body."""
        module_upstream.clear()
        status, headers, data = post_chat(proxy, {"model": "fake", "messages": MESSAGES})
        assert status == 200, data
        assert data["choices"][0]["message"]["content"] == "ok"
        assert headers["x-litellm-model-group"] == "fake"
        assert module_upstream.requests == [{"model": "fake", "messages": MESSAGES}]

    def test_stream_through_proxy(self, proxy: ProxyProcess, module_upstream: FakeUpstream) -> None:
        """A streamed chat completion through the proxy returns 200 SSE ending in [DONE]."""
        module_upstream.clear()
        status, _, text = post_chat(proxy, {"model": "fake", "messages": MESSAGES}, stream=True)
        assert status == 200, text
        events = parse_sse(text)
        assert events[-1] == "[DONE]"
        assert "".join(e["choices"][0]["delta"].get("content") or "" for e in events[:-1] if e["choices"]) == "ok"
        # The proxy asks upstream for usage even though the client did not, and strips it again.
        assert module_upstream.requests == [
            {
                "model": "fake",
                "messages": MESSAGES,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        ]
        assert all(not e.get("usage") for e in events[:-1])

    def test_mock_response_deployment(self, proxy: ProxyProcess, module_upstream: FakeUpstream) -> None:
        """A mock_response deployment answers without touching the upstream."""
        module_upstream.clear()
        status, _, data = post_chat(proxy, {"model": "mocked", "messages": MESSAGES})
        assert status == 200, data
        assert data["choices"][0]["message"]["content"] == "mocked!"
        assert module_upstream.requests == []

    def test_upstream_overflow_is_a_400(self, proxy: ProxyProcess, module_upstream: FakeUpstream) -> None:
        """The upstream's context_length_exceeded reaches the client as the proxy's 400 shape."""
        module_upstream.clear()
        status, _, data = post_json(
            proxy,
            "/v1/chat/completions",
            {"model": "fake", "messages": [{"role": "user", "content": CWE_MARKER}]},
        )
        assert status == 400
        assert data["error"]["type"] == "invalid_request_error"
        assert data["error"]["code"] == "400"  # litellm re-codes it; context_length_exceeded is lost
        assert "ContextWindowExceededError" in data["error"]["message"]
        assert len(module_upstream.requests) == 1


@pytest.mark.slow  # the harness's own lifecycle; every proxy test exercises the usual path
@pytest.mark.proxy
class TestProxyLifecycle:
    def test_path_config_env_key_and_stop(self, tmp_path: Path) -> None:
        """A YAML path without a key gets one via LITELLM_MASTER_KEY; stop() ends the PID."""
        cfg = tmp_path / "cfg.yaml"
        cfg.write_text(
            yaml.safe_dump(
                {
                    "model_list": [
                        {
                            "model_name": "m",
                            "litellm_params": {
                                "model": "openai/gpt-4o",
                                "mock_response": "hi",
                            },
                        }
                    ]
                }
            )
        )
        proxy = start_proxy(cfg, tmp_path=tmp_path / "run", timeout=90)
        try:
            assert proxy.config_path == cfg.resolve()
            status, _, data = post_chat(proxy, {"model": "m", "messages": MESSAGES})
            assert status == 200
            assert data["choices"][0]["message"]["content"] == "hi"
            assert "Uvicorn running" in proxy.log_text() or "Application startup complete" in proxy.log_text()
        finally:
            proxy.stop()
        assert not proxy.is_running()
        assert _pid_gone(proxy.pid)

    def test_dead_proxy_fails_fast_with_log(self, tmp_path: Path) -> None:
        """A config the proxy rejects raises ProxyStartError with the log tail, long before the timeout."""
        config = {
            "model_list": [
                {
                    "model_name": "m",
                    "litellm_params": {"model": "openai/gpt-4o", "mock_response": "hi"},
                }
            ],
            "litellm_settings": {"callbacks": ["no_such_module_for_harness.handler.instance"]},
        }
        with pytest.raises(ProxyStartError, match="no_such_module_for_harness"):
            start_proxy(config, tmp_path=tmp_path, timeout=90)
