"""
Window truth through LiteLLM's SDK, where no proxy hook runs: a deployment configured at four times
what its backend serves. The SDK's ``Router`` with the refit target of docs/limits.md answers the
over-long request within its call where LiteLLM maps the backend's words to its
``ContextWindowExceededError``; where it does not, and with a plain ``litellm.acompletion`` (whose
retries do not run the hooks again), that one call's error reaches the caller. Either way the
deployment's window is learned under the same name as the next call finds it, and every later
call reaches the backend within what it serves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import litellm
import pytest

from litellm_budget import ContextBudget
from tests.support.builders import agent_session
from tests.support.fake_upstream import FakeUpstream, estimate_tokens
from tests.support.sdk_support import only_callbacks

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("quiet_logging")]
SERVED = 3000
CONFIGURED = 4 * SERVED
#: Mistral's words for an over-long prompt, which LiteLLM 1.108.5 leaves a plain 400.
UNMAPPED = "Prompt contains {tokens} tokens and 0 draft tokens, too large for model with {limit} maximum context length"


def _unmapped(tokens: int, limit: int) -> dict[str, Any]:
    return {"error": {"message": UNMAPPED.format(tokens=tokens, limit=limit), "type": "invalid_request_error"}}


@pytest.fixture(name="plugin", autouse=True)
def fixture_plugin() -> Iterator[None]:
    with only_callbacks(ContextBudget(default_window=CONFIGURED)):
        yield


def _router(upstream: FakeUpstream) -> litellm.Router:
    deployment = {
        "model_name": "local",
        "litellm_params": {"model": "openai/served", "api_base": upstream.base_url, "api_key": "sk-test"},
        "model_info": {"id": f"local-{upstream.port}", "max_input_tokens": CONFIGURED},
    }
    refit = [{"local": [{"model": "local", "litellm_budget_refit": "local"}]}]  # docs/limits.md
    return litellm.Router(model_list=[deployment], context_window_fallbacks=refit, num_retries=0)


def _reached(upstream: FakeUpstream) -> list[int]:
    return [estimate_tokens(body["messages"]) for body in upstream.requests]


async def test_the_router_refits_a_mapped_context_error_within_its_call() -> None:
    with FakeUpstream(max_context_tokens=SERVED) as upstream:
        router = _router(upstream)
        session = agent_session(16, 400)  # about 9,000 tokens by the fake's count

        first = await router.acompletion(model="local", messages=session)
        await router.acompletion(model="local", messages=[*session, *agent_session(2, 400)[1:]])

    reached = _reached(upstream)
    assert first.choices[0].message.content
    assert reached[0] > SERVED  # refused once,
    assert max(reached[1:]) <= SERVED  # then the refit of the same call, and the next call, fit
    assert len(reached) == 3


async def test_an_unmapped_error_reaches_the_caller_once_and_the_next_call_fits() -> None:
    with FakeUpstream(max_context_tokens=SERVED, context_error=_unmapped) as upstream:
        router = _router(upstream)
        session = agent_session(16, 400)

        with pytest.raises(litellm.BadRequestError):
            await router.acompletion(model="local", messages=session)
        await router.acompletion(model="local", messages=session)

    reached = _reached(upstream)
    assert len(reached) == 2
    assert reached[0] > SERVED >= reached[1]


async def test_a_plain_acompletion_learns_under_the_name_its_next_call_finds() -> None:
    with FakeUpstream(max_context_tokens=SERVED) as upstream:
        call = {"model": "openai/served", "api_base": upstream.base_url, "api_key": "sk-test"}
        session = agent_session(16, 400)

        with pytest.raises(litellm.ContextWindowExceededError):
            await litellm.acompletion(**call, messages=session, num_retries=1)
        await litellm.acompletion(**call, messages=session)

    reached = _reached(upstream)
    assert reached[-1] <= SERVED < min(reached[:-1])
