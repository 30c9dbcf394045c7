"""
Window truth on a real backend: a deployment configured at 8192 in front of a llama.cpp server
started with ``--n_ctx 2048`` (llama-cpp-python, the tiny Llama 3 model), through the real proxy.
The server's own context-length error teaches the plugin the window it holds: one upstream error
at most, then every request of a growing conversation is answered inside the served window, and
the report names the learned window and where it came from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.builders import chat_session
from tests.support.llama_model import tiny_model, vocab_file
from tests.support.llama_server import llama_available, llama_server
from tests.support.proxy_process import ProxyProcess, post_chat, start_proxy

pytestmark = [pytest.mark.slow, pytest.mark.proxy]
N_CTX = 2048
CONFIGURED = 8192
#: llama-cpp-python's line for each prompt it evaluated: how many of its tokens the KV cache held.
PREFIX_HIT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


@pytest.fixture(name="served", scope="module")
def fixture_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProxyProcess, Path]]:
    """The proxy in front of the server, and the server's log."""
    if not llama_available():
        pytest.skip("no llama.cpp server: run .ci/llama (installs llama-cpp-python[server]==0.3.36 into .venv)")
    vocab = vocab_file()
    assert vocab is not None
    folder = tmp_path_factory.mktemp("llama")
    log = folder / "llama.log"
    with llama_server(tiny_model(vocab), N_CTX, log_path=log) as base_url:
        params = {"model": "openai/tiny-llama", "api_base": base_url, "api_key": "sk-local"}
        config = {
            "model_list": [
                {"model_name": "local", "litellm_params": params, "model_info": {"max_input_tokens": CONFIGURED}}
            ],
            "litellm_settings": {"callbacks": ["litellm_budget.handler"], "num_retries": 0},
            "general_settings": {"master_key": "sk-llama-window-test"},
        }
        with start_proxy(config, tmp_path=folder) as proxy:
            yield proxy, log


def _ask(proxy: ProxyProcess, messages: list[dict[str, Any]]) -> tuple[int, Any, Any]:
    return post_chat(proxy, {"model": "local", "messages": messages, "max_tokens": 4, "temperature": 0}, timeout=120)


def test_the_served_window_is_learned_and_every_later_request_fits(served: tuple[ProxyProcess, Path]) -> None:
    """At most one context error from the backend; every later turn answered, reported at the learned window."""
    proxy, log = served
    # Plain turns (the server's Llama 3 template leaves tool results out): about 7,000 tokens in all.
    session = chat_session(16, 400)
    outcomes = [_ask(proxy, session[: end + 1]) for end in range(2, len(session), 2)]
    statuses = [status for status, _, _ in outcomes]
    errors = [json.dumps(payload) for status, _, payload in outcomes if status != 200]

    assert len(errors) <= 1, errors
    assert all("maximum context length is 2048" in error for error in errors)
    assert statuses[-3:] == [200, 200, 200]
    last = outcomes[-1][1]
    assert last["x-litellm-budget-window-source"] == "context_error"
    assert int(last["x-litellm-budget-window"]) <= N_CTX
    assert last["x-litellm-budget-action"] == "trimmed"
    # What reached the server after it was learned: every prompt inside its --n_ctx.
    evaluated = [int(hit) + int(rest) for hit, rest in PREFIX_HIT.findall(log.read_text(errors="replace"))]
    assert evaluated
    assert max(evaluated[-3:]) <= N_CTX
