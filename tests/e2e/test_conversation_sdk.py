"""Conversation state through litellm.acompletion: what the provider receives keeps its prefix."""

from __future__ import annotations

from typing import Any

import litellm
import pytest
from structlog.testing import capture_logs

from litellm_budget import ContextBudget
from litellm_budget.adapter.records import conversations as conversation_state
from tests.support.builders import agent_session, tool_step
from tests.support.fake_upstream import FakeUpstream
from tests.support.sdk_support import only_callbacks
from tests.support.shifted_clock import shift_module_clock

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("quiet_logging")]
WINDOW = 8000


async def send(upstream: FakeUpstream, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One request; what the provider received and the plugin's event for it."""
    await litellm.acompletion(model="openai/acme-unknown", api_base=upstream.base_url, api_key="k", messages=messages)
    return upstream.requests[-1]["messages"]


def conversation() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A trimmed request and its continuation (one more small step)."""
    first = agent_session(14, 700)
    return first, [*first, *tool_step(40, seed=99)]


async def test_a_continuation_keeps_the_cached_prefix(upstream: FakeUpstream) -> None:
    first, second = conversation()
    with only_callbacks(ContextBudget(default_window=WINDOW)), capture_logs() as logs:
        sent_first = await send(upstream, first)
        sent_second = await send(upstream, second)
    reports = [log for log in logs if log["event"] == "request_trimmed"]
    assert len(reports) == 2
    assert sent_second[: len(sent_first)] == sent_first
    assert [r["edits_kept"] for r in reports] == [False, True]


async def test_without_state_each_request_is_fitted_afresh(upstream: FakeUpstream) -> None:
    first, second = conversation()
    with only_callbacks(ContextBudget(default_window=WINDOW, conversation_state=False)), capture_logs() as logs:
        await send(upstream, first)
        await send(upstream, second)
    assert [log["edits_kept"] for log in logs if log["event"] == "request_trimmed"] == [False, False]


async def test_a_conversation_quiet_past_the_cache_lifetime_is_refitted(
    upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = conversation()
    with only_callbacks(ContextBudget(default_window=WINDOW, cache_lifetime=60)), capture_logs() as logs:
        await send(upstream, first)
        shift_module_clock(monkeypatch, conversation_state, 61)  # quiet past the lifetime
        await send(upstream, second)
    assert [log["edits_kept"] for log in logs if log["event"] == "request_trimmed"] == [False, False]


async def test_a_provider_lifetime_overrides_the_default(
    upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = conversation()
    plugin = ContextBudget(default_window=WINDOW, cache_lifetime=60, cache_lifetimes={"openai": 600})
    with only_callbacks(plugin), capture_logs() as logs:
        await send(upstream, first)
        shift_module_clock(monkeypatch, conversation_state, 61)  # past the default lifetime, not openai's
        await send(upstream, second)
    assert [log["edits_kept"] for log in logs if log["event"] == "request_trimmed"] == [False, True]


async def test_through_a_router_the_lent_fit_becomes_the_state_only_when_sent(upstream: FakeUpstream) -> None:
    """The Router's filter hook trims silently; the state is what the deployment hook lets go out."""
    router = litellm.Router(
        model_list=[
            {
                "model_name": "agent",
                "litellm_params": {"model": "openai/agent", "api_base": upstream.base_url, "api_key": "k"},
                "model_info": {"max_input_tokens": WINDOW},
            }
        ]
    )
    first, second = conversation()
    with only_callbacks(ContextBudget(router=router)), capture_logs() as logs:
        await router.acompletion(model="agent", messages=first)
        sent_first = upstream.requests[-1]["messages"]
        await router.acompletion(model="agent", messages=second)
        sent_second = upstream.requests[-1]["messages"]
    assert [log["edits_kept"] for log in logs if log["event"] == "request_trimmed"] == [False, True]
    assert sent_second[: len(sent_first)] == sent_first
