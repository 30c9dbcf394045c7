"""A real llama.cpp server (llama-cpp-python 0.3.36, the tiny Llama 3 model): what it counts and refuses.

Why: the plugin keeps requests inside a model's window; this pins what a real local server does at
the edge of it, with the real Llama 3 tokenizer: a request that fits gets a 200 with
``usage.prompt_tokens``; one over ``--n_ctx`` gets HTTP 400 "This model's maximum context length
is N tokens". It also pins where the server tells prompt-processing time and KV-cache reuse: not in
the response (only ``usage.{prompt,completion,total}_tokens``), but in its verbose log.
``.ci/llama`` installs the server; without it these tests skip.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.llama_model import tiny_model, vocab_file
from tests.support.llama_server import llama_available, llama_server

pytestmark = pytest.mark.slow

N_CTX = 2048
SENTENCE = "The quick brown fox jumps over the lazy dog."  # 10 Llama 3 tokens
#: llama-cpp-python's line when the KV cache served a prefix, and llama.cpp's perf lines after each request.
PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
TOTAL = re.compile(r"total time =\s*([\d.]+) ms")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The server at ``--n_ctx 2048`` for this module, and its log."""
    if not llama_available():
        pytest.skip("no llama.cpp server: run .ci/llama (installs llama-cpp-python[server]==0.3.36 into .venv)")
    vocab = vocab_file()
    assert vocab is not None
    started = time.perf_counter()
    model = tiny_model(vocab)
    made = time.perf_counter()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    with llama_server(model, N_CTX, log_path=log_path) as base_url:
        print(f"model ready in {made - started:.2f}s, server in {time.perf_counter() - made:.2f}s")
        yield base_url, log_path


def chat(base_url: str, text: str) -> httpx.Response:
    body = {"model": "tiny", "messages": [{"role": "user", "content": text}], "max_tokens": 4, "temperature": 0}
    return httpx.post(f"{base_url}/chat/completions", json=body, timeout=60, trust_env=False)


def test_short_request_is_answered_with_usage(server: tuple[str, Path]) -> None:
    base_url, log_path = server
    started = time.perf_counter()
    reply = chat(base_url, SENTENCE)
    print(f"200 in {time.perf_counter() - started:.2f}s")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    print("response fields:", sorted(body), "usage:", body["usage"])
    # <|begin_of_text|>, the user header (4), the sentence (10), <|eot_id|>, the assistant header (4).
    assert body["usage"]["prompt_tokens"] == 20
    assert set(body["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}  # no cached_tokens
    assert "timings" not in body

    # The same prompt again: the KV cache serves all but its last token, and only the log says so.
    assert chat(base_url, SENTENCE).status_code == 200
    log = log_path.read_text(errors="replace")
    hits = [(int(cached), int(evaluated)) for cached, evaluated in PREFIX_HIT.findall(log)]
    evals = [(float(ms), int(n)) for ms, n in PROMPT_EVAL.findall(log)]
    print(
        "prefix hits (cached, evaluated):",
        hits,
        "prompt evals (ms, tokens):",
        evals,
        "totals (ms):",
        TOTAL.findall(log),
    )
    assert hits == [(19, 1)]
    assert [n for _, n in evals] == [20, 1]


def test_request_over_the_window_is_refused_with_400(server: tuple[str, Path]) -> None:
    base_url, _ = server
    started = time.perf_counter()
    reply = chat(base_url, f"{SENTENCE} " * 240)  # ~2,400 tokens against a 2,048-token window
    print(f"400 in {time.perf_counter() - started:.2f}s: {reply.text}")
    assert reply.status_code == 400
    assert "maximum context length is 2048 tokens" in reply.text
    assert re.search(r"\((24\d\d) in the messages, 4 in the completion\)", reply.text), reply.text
