"""Every request of the agent sessions (the shared ones, else the made) at 16k, through acompletion and the proxy."""

from __future__ import annotations

import json
from typing import Any

import litellm
import pytest

from litellm_budget import ContextBudget
from litellm_budget.core.validity import chat_unsupported as unsupported_reason
from litellm_budget.tools.sessions import requests_of
from tests.conftest import SessionSet
from tests.support.fake_upstream import FakeUpstream
from tests.support.proxy_process import post_chat, start_proxy
from tests.support.sdk_support import only_callbacks

# Slow (21 s on two cores): `make test-slow` runs it, after `make test`, in CI.
pytestmark = [pytest.mark.sessions, pytest.mark.slow]
WINDOW = 16_000


def _verdict(received: list[dict[str, Any]]) -> tuple[int, int]:
    """(overflowing, invalid) among what the provider received, judged by litellm.token_counter."""
    overflow = sum(litellm.token_counter(model="gpt-4o", messages=body["messages"]) > WINDOW for body in received)
    invalid = sum(unsupported_reason(body["messages"], None, None) is not None for body in received)
    return overflow, invalid


@pytest.mark.asyncio
async def test_every_request_through_acompletion(replay_set: SessionSet, upstream: FakeUpstream) -> None:
    """0 errors, 0 overflow, 0 invalid tool pairs in what the provider got from acompletion."""
    requests = [r for messages in replay_set.sessions.values() for r in requests_of(messages)]
    upstream.clear()
    errors = 0
    with only_callbacks(ContextBudget(default_window=WINDOW)):
        for request in requests:
            try:
                await litellm.acompletion(
                    model="openai/acme-16k", api_base=upstream.base_url, api_key="k", messages=request
                )
            except litellm.exceptions.APIError:
                errors += 1

    assert (errors, len(upstream.requests)) == (0, len(requests))
    assert _verdict(upstream.requests) == (0, 0)


@pytest.mark.proxy
def test_every_session_through_the_proxy(
    replay_set: SessionSet, upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """
    The same through the real proxy's /v1/chat/completions: every answer 200, every body fitting.
    Every session, every third request of it and its last (the proxy fits with the same core as
    acompletion above, which sees every request; the proxy's own CPU is what this test spends).
    """
    requests = [
        r for messages in replay_set.sessions.values() for r in _every_third_and_last(list(requests_of(messages)))
    ]
    config = {
        "model_list": [
            {
                "model_name": "agent",
                "litellm_params": {"model": "openai/gpt-4o", "api_base": upstream.base_url, "api_key": "k"},
                "model_info": {"max_input_tokens": WINDOW},
            }
        ],
        "litellm_settings": {"callbacks": ["litellm_budget.handler"]},
    }
    upstream.clear()
    with start_proxy(config, tmp_path=tmp_path_factory.mktemp("e2e")) as proxy:
        statuses = [post_chat(proxy, {"model": "agent", "messages": request})[0] for request in requests]

    assert statuses.count(200) == len(requests), json.dumps({s: statuses.count(s) for s in set(statuses)})
    assert len(upstream.requests) == len(requests)
    assert _verdict(upstream.requests) == (0, 0)


def _every_third_and_last(requests: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    return [r for i, r in enumerate(requests) if i % 3 == 0 or i == len(requests) - 1]
