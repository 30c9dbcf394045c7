"""
Window truth on a real backend: a deployment configured at 8192 in front of a llama.cpp server
started with ``--n_ctx 2048`` (llama-cpp-python, the tiny Llama 3 model), through the real proxy
and through the SDK's Router. The server's own context-length error teaches the plugin the window
it holds, and the request that drew it is refitted within its own call: one upstream error, none
for the client, and every request of a growing conversation answered inside the served window,
the report naming the learned window and where it came from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import litellm
import pytest

from litellm_budget import ContextBudget
from tests.support.builders import chat_session, deployment
from tests.support.llama_model import tiny_model, vocab_file
from tests.support.llama_server import llama_available, llama_server
from tests.support.proxy_process import ProxyProcess, post_chat, start_proxy

pytestmark = [pytest.mark.slow, pytest.mark.proxy]
N_CTX = 2048
CONFIGURED = 8192
#: llama-cpp-python's line for each prompt it evaluated: how many of its tokens the KV cache held.
PREFIX_HIT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


@pytest.fixture(name="llama", scope="module")
def fixture_llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The server at ``--n_ctx 2048``, and its log."""
    if not llama_available():
        pytest.skip("no llama.cpp server: run .ci/llama (installs llama-cpp-python[server]==0.3.36 into .venv)")
    vocab = vocab_file()
    assert vocab is not None
    log = tmp_path_factory.mktemp("llama") / "llama.log"
    with llama_server(tiny_model(vocab), N_CTX, log_path=log) as base_url:
        yield base_url, log


@pytest.fixture(name="served", scope="module")
def fixture_served(llama: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    """The proxy in front of the server."""
    config = {
        "model_list": [deployment("local", "openai/tiny-llama", llama[0], window=CONFIGURED)],
        "litellm_settings": {"callbacks": ["litellm_budget.handler"], "num_retries": 0},
        "general_settings": {"master_key": "sk-llama-window-test"},
    }
    with start_proxy(config, tmp_path=tmp_path_factory.mktemp("proxy")) as proxy:
        yield proxy


def _refused(log: Path) -> int:
    """How many requests the server answered with a 400 so far."""
    return log.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 400')


def _ask(proxy: ProxyProcess, messages: list[dict[str, Any]]) -> tuple[int, Any, Any]:
    return post_chat(proxy, {"model": "local", "messages": messages, "max_tokens": 4, "temperature": 0}, timeout=120)


def test_the_served_window_is_learned_and_every_later_request_fits(
    served: ProxyProcess, llama: tuple[str, Path]
) -> None:
    """One context error from the backend, none for the client; every turn answered, at the learned window."""
    proxy, log = served, llama[1]
    refused_before = _refused(log)
    # Plain turns (the server's Llama 3 template leaves tool results out): about 7,000 tokens in all.
    session = chat_session(16, 400)
    outcomes = [_ask(proxy, session[: end + 1]) for end in range(2, len(session), 2)]
    statuses = [status for status, _, _ in outcomes]
    errors = [json.dumps(payload) for status, _, payload in outcomes if status != 200]

    server_log = log.read_text(errors="replace")
    refused = _refused(log) - refused_before

    assert errors == []  # the one request the backend refused was refitted within its own call
    assert statuses == [200] * len(outcomes)
    assert refused == 1, server_log[-3000:]
    last = outcomes[-1][1]
    assert last["x-litellm-budget-window-source"] == "context_error"
    assert int(last["x-litellm-budget-window"]) <= N_CTX
    assert last["x-litellm-budget-action"] == "trimmed"
    # What reached the server after it was learned: every prompt inside its --n_ctx.
    evaluated = [int(hit) + int(rest) for hit, rest in PREFIX_HIT.findall(server_log)]
    assert evaluated
    assert max(evaluated[-3:]) <= N_CTX


@pytest.mark.asyncio
async def test_the_sdk_router_refits_with_the_documented_fallback(llama: tuple[str, Path]) -> None:
    """docs/limits.md's Router line: the same refit within the call, through ``Router.acompletion``."""
    base_url, log = llama
    refused_before = _refused(log)
    router = litellm.Router(
        model_list=[deployment("local", "openai/tiny-llama", base_url, window=CONFIGURED, id="sdk-local")],
        context_window_fallbacks=[{"local": [{"model": "local", "litellm_budget_refit": "local"}]}],
    )
    litellm.callbacks = [ContextBudget(router=router)]
    try:
        session = chat_session(16, 400)
        answers = [
            await router.acompletion(model="local", messages=session[: end + 1], max_tokens=4, temperature=0)
            for end in range(2, len(session), 2)
        ]
    finally:
        litellm.callbacks = []

    assert len(answers) == len(range(2, len(session), 2))
    assert _refused(log) - refused_before == 1
