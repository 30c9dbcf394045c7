"""
Window truth through the real proxy, for each backend's words: a deployment configured at four
times what its backend serves, the backend answering an over-long request with its own
context-length error (vLLM's, llama.cpp's, sglang's, TGI's, LM Studio's, Anthropic's, Mistral's,
OpenRouter's, Bedrock's, OpenAI's, each as ``core/budget/_served_limit.py`` names its source).
The backend refuses once; every later request of the conversation reaches it within what it
serves, and the report names the learned window. Where LiteLLM maps the words to its
``ContextWindowExceededError``, the refused request is refitted within its own call and the
client sees no error. Where LiteLLM leaves them a plain 400, its Router reads the generic
``fallbacks`` instead: the plugin gives each call its own copy, and puts the refit first in it only
after such an error, so the client sees none either way, and every other error (a 400, a 429, a
500) takes the operator's fallbacks as it would without the plugin.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.builders import agent_session
from tests.support.fake_upstream import FakeUpstream, estimate_tokens
from tests.support.proxy_process import ProxyProcess, post_chat, start_proxy

pytestmark = pytest.mark.proxy
SERVED = 3000
CONFIGURED = 4 * SERVED

#: Each backend's words for an over-long request, with its count and its limit filled in.
WORDINGS: dict[str, str] = {
    "vllm": "This model's maximum context length is {limit} tokens. However, your request has {tokens} input "
    "tokens. Please reduce the length of the input messages.",
    "llama-cpp": "request ({tokens} tokens) exceeds the available context size ({limit} tokens), try increasing it",
    "sglang": "The input ({tokens} tokens) is longer than the model's context length ({limit} tokens).",
    "tgi": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= {limit}. Given: {tokens} "
    "`inputs` tokens and 1 `max_new_tokens`",
    "lm-studio": "Trying to keep the first {tokens} tokens when context the overflows. However, the model is "
    "loaded with context length of only {limit} tokens, which is not enough.",
    "anthropic": "prompt is too long: {tokens} tokens > {limit} maximum",
    "mistral": "Prompt contains {tokens} tokens and 0 draft tokens, too large for model with {limit} maximum "
    "context length",
    "openrouter": "This endpoint's maximum context length is {limit} tokens. However, you requested about {tokens} "
    "tokens ({tokens} of text input, 0 in the output). Please reduce the length of either one.",
    "bedrock": "Input is too long for requested model.",
    "openai": "This model's maximum context length is {limit} tokens. However, your messages resulted in {tokens} "
    "tokens. Please reduce the length of the messages.",
}
#: The words LiteLLM 1.108.5 maps to its ``ContextWindowExceededError`` (checked by the test).
MAPPED = {"vllm", "openai", "llama-cpp", "sglang", "tgi"}


def _words(template: str) -> Any:
    def body(tokens: int, limit: int) -> dict[str, Any]:
        message = template.format(tokens=tokens, limit=limit)
        return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}

    return body


#: Deployments whose backend fails every request with a status that is not a context error.
FAILING = {"failing-400": 400, "failing-429": 429, "failing-500": 500}


@pytest.fixture(name="rig", scope="module")
def fixture_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProxyProcess, dict[str, FakeUpstream]]]:
    upstreams = {
        name: FakeUpstream(max_context_tokens=SERVED, context_error=_words(template)).start()
        for name, template in WORDINGS.items()
    }
    upstreams |= {name: FakeUpstream(error_status=status).start() for name, status in FAILING.items()}
    # Mistral's words again, from a backend too small for any fit: the refit is refused, and the
    # operator's context-window fallback answers.
    upstreams["tiny"] = FakeUpstream(max_context_tokens=200, context_error=_words(WORDINGS["mistral"])).start()
    # Ollama's way: no error, it reads the last ``num_ctx`` tokens and reports the count it read.
    upstreams["cutting"] = FakeUpstream(prompt_counter=lambda body: min(estimate_tokens(body["messages"]), SERVED))
    upstreams["cutting"].start()
    upstreams["spare"] = FakeUpstream().start()
    model_list = [
        {
            "model_name": name,
            "litellm_params": {"model": "openai/served", "api_base": upstream.base_url, "api_key": "sk-fake"},
            "model_info": {"id": f"{name}-1", "max_input_tokens": CONFIGURED if name != "spare" else SERVED // 2},
        }
        for name, upstream in upstreams.items()
    ]
    # Two deployments of one model, one with ``model_info`` and one without: LiteLLM's Router writes
    # the first's window into the model map's entry of gpt-4o, which the second must not borrow.
    upstreams["gpt-4o"] = FakeUpstream().start()
    params = {"model": "openai/gpt-4o", "api_base": upstreams["gpt-4o"].base_url, "api_key": "sk-fake"}
    model_list += [
        {"model_name": "small", "litellm_params": params, "model_info": {"max_input_tokens": 4000}},
        {"model_name": "big", "litellm_params": params},
    ]
    # The operator's own fallbacks, for any error: they still fire, after the refit where there is one
    # (a smaller window than the one learned, so the plugin does not prefer it to the refit).
    fallbacks = [{name: ["spare"]} for name in ("mistral", *FAILING)]
    config = {
        "model_list": model_list,
        "litellm_settings": {"callbacks": ["litellm_budget.handler"], "num_retries": 0},
        "router_settings": {
            "fallbacks": fallbacks,
            "context_window_fallbacks": [{"tiny": ["spare"]}],
            "allowed_fails": 100,
        },
        "general_settings": {"master_key": "sk-served-window-test"},
    }
    try:
        with start_proxy(config, tmp_path=tmp_path_factory.mktemp("served")) as proxy:
            yield proxy, upstreams
    finally:
        for upstream in upstreams.values():
            upstream.stop()


@pytest.mark.parametrize("backend", list(WORDINGS))
def test_each_backends_words_teach_the_served_window(
    rig: tuple[ProxyProcess, dict[str, FakeUpstream]], backend: str
) -> None:
    proxy, upstreams = rig
    spare_before = len(upstreams["spare"].requests)
    session = agent_session(16, 400)  # about 9,000 tokens by the fake's count: three times what it serves
    ends = [end for end in range(4, len(session) + 1, 2) if session[end - 1]["role"] == "tool"]
    outcomes = [post_chat(proxy, {"model": backend, "messages": session[:end]}) for end in ends]
    statuses = [status for status, _, _ in outcomes]
    reached = [estimate_tokens(body["messages"]) for body in upstreams[backend].requests]
    refused = [tokens for tokens in reached if tokens > SERVED]
    last = outcomes[-1][1]

    assert len(refused) == 1, reached  # the backend refuses once
    assert statuses.count(400) == 0, [json.dumps(p)[:300] for _, _, p in outcomes]
    assert statuses[-3:] == [200, 200, 200]
    assert last["x-litellm-budget-window-source"] == "context_error"
    assert int(last["x-litellm-budget-window"]) < CONFIGURED
    assert max(reached[-3:]) <= SERVED
    assert len(upstreams["spare"].requests) == spare_before  # the refit answered, before any fallback


@pytest.mark.parametrize("group", list(FAILING))
def test_other_errors_teach_nothing_and_take_the_operators_fallbacks(
    rig: tuple[ProxyProcess, dict[str, FakeUpstream]], group: str
) -> None:
    proxy, upstreams = rig
    spare_before = len(upstreams["spare"].requests)
    status, headers, _ = post_chat(proxy, {"model": group, "messages": agent_session(16, 400)})

    assert status == 200  # answered by the operator's fallback
    assert len(upstreams[group].requests) == 1  # no refit: the failing backend was asked once
    assert len(upstreams["spare"].requests) == spare_before + 1
    assert headers.get("x-litellm-budget-window-source") != "context_error"


def test_an_unmapped_error_that_no_refit_can_answer_takes_the_context_window_fallback(
    rig: tuple[ProxyProcess, dict[str, FakeUpstream]],
) -> None:
    proxy, upstreams = rig
    spare_before = len(upstreams["spare"].requests)
    status, headers, _ = post_chat(proxy, {"model": "tiny", "messages": agent_session(16, 400)})

    assert status == 200
    assert len(upstreams["tiny"].requests) == 1  # refused once; its refit was refused here, unsent
    assert len(upstreams["spare"].requests) == spare_before + 1
    assert headers.get("x-litellm-model-group") == "spare"


def test_a_silent_cut_is_reported_once_and_not_repeated(rig: tuple[ProxyProcess, dict[str, FakeUpstream]]) -> None:
    proxy, upstreams = rig
    session = agent_session(16, 400)
    ends = [end for end in range(4, len(session) + 1, 2) if session[end - 1]["role"] == "tool"]
    outcomes = [post_chat(proxy, {"model": "cutting", "messages": session[:end]}) for end in ends]
    reached = [estimate_tokens(body["messages"]) for body in upstreams["cutting"].requests]

    assert [status for status, _, _ in outcomes] == [200] * len(ends)
    assert len([tokens for tokens in reached if tokens > SERVED]) == 1, reached  # cut once, then fitted
    assert outcomes[-1][1]["x-litellm-budget-window-source"] == "truncation"
    assert int(outcomes[-1][1]["x-litellm-budget-window"]) <= SERVED


def test_a_deployment_without_model_info_gets_its_own_models_window(
    rig: tuple[ProxyProcess, dict[str, FakeUpstream]],
) -> None:
    proxy, _ = rig
    messages = agent_session(30, 700)  # about 21,000 tokens
    _, big, _ = post_chat(proxy, {"model": "big", "messages": messages})
    _, small, _ = post_chat(proxy, {"model": "small", "messages": messages})

    assert (big["x-litellm-budget-window"], big["x-litellm-budget-window-source"]) == ("128000", "model_map")
    assert big["x-litellm-budget-action"] == "passthrough"
    assert (small["x-litellm-budget-window"], small["x-litellm-budget-window-source"]) == ("4000", "deployment")
    assert small["x-litellm-budget-action"] == "trimmed"
