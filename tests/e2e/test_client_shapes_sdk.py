"""
Today's clients' shapes through LiteLLM's own SDK entry points with the plugin registered, against
a recording fake upstream: what reaches the provider keeps every compaction, tool change and key
the client owns, and the report speaks of the caller's messages.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import litellm
import pytest
from structlog.testing import capture_logs

from litellm_budget import ContextBudget
from litellm_budget.core import parse_ranges
from litellm_budget.core.formats import RESPONSES, join_system
from litellm_budget.core.validity import anthropic_unsupported
from tests.core.test_client_shapes import (
    ENCRYPTED,
    _bash_steps,
    _compacted_history,
    _compaction,
    custom_tool_session,
    shell_items,
)
from tests.support.fake_upstream import FakeUpstream
from tests.support.sdk_support import only_callbacks

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("quiet_logging")]
WINDOW = 8000


def _reports(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in logs if event["event"].startswith("request_")]


async def _acreate(upstream: FakeUpstream, messages: list[dict[str, Any]], **settings: Any) -> list[dict[str, Any]]:
    """One ``litellm.anthropic.messages.acreate`` to an Anthropic upstream; the report events it logged."""
    upstream.clear()
    with only_callbacks(ContextBudget(default_window=WINDOW, **settings)), capture_logs() as logs:
        await litellm.anthropic.messages.acreate(
            model="anthropic/acme-claude",
            max_tokens=256,
            system="You are a coding agent.",
            messages=messages,
            api_base=upstream.root_url,
            api_key="k",
        )
    return _reports(logs)


class TestAnthropicMessages:
    @pytest.mark.parametrize("policy", ["auto", "plan"])
    async def test_a_compaction_mid_history_reaches_the_provider(self, upstream: FakeUpstream, policy: str) -> None:
        """The compaction and the history before it are sent as the client sent them; the rest is fitted."""
        messages = _compacted_history()
        snapshot = copy.deepcopy(messages)
        reports = await _acreate(upstream, messages, policy=policy)
        sent = upstream.requests[-1]

        assert messages == snapshot
        assert [report["action"] for report in reports] == ["trimmed"]
        assert sent["messages"][:8] == messages[:8]
        assert anthropic_unsupported(join_system(sent["system"], sent["messages"]), None, None) is None
        assert reports[0]["messages_before"] == len(messages)
        assert reports[0]["messages_after"] == len(sent["messages"])
        assert all(messages[i] not in sent["messages"] for i in parse_ranges(reports[0]["dropped_at"]))

    async def test_a_history_opening_with_a_compaction_is_fitted(self, upstream: FakeUpstream) -> None:
        """The newest compaction round trip overflows: it is fitted, not passed through as malformed."""
        messages = [
            {"role": "assistant", "content": [_compaction()]},
            {"role": "user", "content": "go on"},
            *_bash_steps(20),
            {"role": "user", "content": "next"},
        ]
        messages[-2]["content"] = [*messages[-2]["content"], {"type": "text", "text": "next"}]
        messages.pop()
        reports = await _acreate(upstream, messages)
        sent = upstream.requests[-1]["messages"]

        assert [report["action"] for report in reports] == ["trimmed"]
        assert sent[0] == messages[0]

    async def test_a_tool_addition_stays_with_the_calls_of_its_tool(self, upstream: FakeUpstream) -> None:
        """An old tool_addition is not dropped while its tool is still called."""
        addition = {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "Lint"}}
        messages = [
            {"role": "user", "content": [{"type": "text", "text": "task"}, addition]},
            *_bash_steps(18, name="Lint"),
            {"role": "user", "content": "next"},
        ]
        messages[-2]["content"] = [*messages[-2]["content"], {"type": "text", "text": "next"}]
        messages.pop()
        reports = await _acreate(upstream, messages, policy="plan")
        sent = upstream.requests[-1]["messages"]
        blocks = [block for message in sent if isinstance(message["content"], list) for block in message["content"]]

        assert [report["action"] for report in reports] == ["trimmed"]
        assert addition in blocks


class TestResponses:
    async def test_a_compaction_item_and_a_cache_breakpoint_reach_the_provider(self, upstream: FakeUpstream) -> None:
        """litellm.aresponses: the compaction item and what precedes it go as sent; a merged part keeps its keys."""
        items = shell_items()
        compaction = {"type": "compaction", "id": "cmp_1", "encrypted_content": ENCRYPTED}
        items = [*items[:7], compaction, *shell_items(first=100)]
        upstream.clear()
        with only_callbacks(ContextBudget(default_window=WINDOW, policy="plan")), capture_logs() as logs:
            await litellm.aresponses(
                model="openai/acme-gpt", input=items, instructions="Be brief.", api_base=upstream.base_url, api_key="k"
            )
        sent = upstream.requests[-1]["input"]
        reports = _reports(logs)

        assert [report["action"] for report in reports] == ["trimmed"]
        assert sent[:8] == items[:8]
        assert RESPONSES.unsupported_reason(sent, None, None) is None
        assert reports[0]["messages_before"] == len(items)
        breakpoint_part = items[8]["content"][0]
        assert any(breakpoint_part in item.get("content", ()) for item in sent if item.get("type") == "message")


class TestChat:
    async def test_custom_tool_calls_are_fitted(self, upstream: FakeUpstream) -> None:
        """litellm.acompletion with ``type: custom`` tool calls: fitted, not refused as malformed."""
        messages = custom_tool_session()
        upstream.clear()
        with only_callbacks(ContextBudget(default_window=WINDOW)), capture_logs() as logs:
            await litellm.acompletion(
                model="openai/acme-gpt", messages=messages, api_base=upstream.base_url, api_key="k"
            )

        assert [report["action"] for report in _reports(logs)] == ["trimmed"]
        sent = upstream.requests[-1]["messages"]
        assert all(call["type"] == "custom" for m in sent for call in m.get("tool_calls") or ())


class TestBridged:
    async def test_a_compacted_history_reaches_another_provider_as_anthropic_reads_it(
        self, upstream: FakeUpstream
    ) -> None:
        """
        LiteLLM's bridge drops compaction blocks: for an OpenAI upstream the summary is sent, and
        the history it replaced is not.
        """
        messages = _compacted_history(steps=2)
        upstream.clear()
        with only_callbacks(ContextBudget(default_window=128_000)), capture_logs() as logs:
            await litellm.anthropic.messages.acreate(
                model="openai/acme-bridged", max_tokens=256, messages=messages, api_base=upstream.base_url, api_key="k"
            )
        sent = str(upstream.requests[-1]["input"])  # bridged to the Responses API

        assert "old task" not in sent
        assert _compaction()["content"] in sent
        assert [event["event"] for event in logs if event["event"] == "compaction_read"] == ["compaction_read"]


class TestMoreShapes:
    async def test_a_tool_removal_and_an_output_config_system_message_reach_the_provider(
        self, upstream: FakeUpstream
    ) -> None:
        """Through acreate: the removal stays with its step, and a system message of only output_config is fitted."""
        removal = {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "Bash"}}
        messages = [
            {"role": "user", "content": [{"type": "text", "text": "task"}, removal]},
            {"role": "system", "output_config": {"effort": "low"}},
            *_bash_steps(18, name="Lint"),
            {"role": "user", "content": "next"},
        ]
        messages[-2]["content"] = [*messages[-2]["content"], {"type": "text", "text": "next"}]
        messages.pop()
        reports = await _acreate(upstream, messages, policy="plan")
        sent = upstream.requests[-1]["messages"]
        blocks = [block for message in sent if isinstance(message.get("content"), list) for block in message["content"]]

        assert [report["action"] for report in reports] == ["trimmed"]
        assert removal in blocks
        assert {"role": "system", "output_config": {"effort": "low"}} in sent

    async def test_codex_items_are_fitted(self, upstream: FakeUpstream) -> None:
        """Through aresponses: shell and patch calls pair, added tools and a final compaction trigger stay."""
        items = shell_items()[:-1]
        tail = [
            {
                "type": "additional_tools",
                "role": "developer",
                "tools": [{"type": "function", "name": "lint", "parameters": {}}],
            },
            {"type": "shell_call", "call_id": "sh_1", "action": {"commands": ["pytest -q"]}, "status": "completed"},
            {
                "type": "shell_call_output",
                "call_id": "sh_1",
                "output": [{"stdout": "ok", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
            },
            {"type": "message", "role": "user", "content": "compact now"},
            {"type": "compaction_trigger"},
        ]
        upstream.clear()
        with only_callbacks(ContextBudget(default_window=WINDOW)), capture_logs() as logs:
            await litellm.aresponses(
                model="openai/acme-gpt", input=[*items, *tail], api_base=upstream.base_url, api_key="k"
            )

        assert [report["action"] for report in _reports(logs)] == ["trimmed"]
        assert upstream.requests[-1]["input"][-len(tail) :] == tail

    async def test_the_clients_marks_count_wherever_the_api_counts_them(self, upstream: FakeUpstream) -> None:
        """cache_breakpoints on: a request-level mark and one inside a tool_result count, so none is added past 4."""
        mark = {"type": "ephemeral"}
        messages = [
            {"role": "user", "content": [{"type": "text", "text": "task", "cache_control": mark}]},
            *_bash_steps(6),
        ]
        messages[-1]["content"][0]["content"] = [{"type": "text", "text": "result", "cache_control": mark}]
        messages += [
            {"role": "assistant", "content": [{"type": "text", "text": "ok", "cache_control": mark}]},
            {"role": "user", "content": "next"},
        ]
        upstream.clear()
        with only_callbacks(ContextBudget(cache_breakpoints=True)):
            await litellm.anthropic.messages.acreate(
                model="anthropic/claude-sonnet-4-5",
                max_tokens=256,
                system="sys",
                messages=messages,
                cache_control=mark,
                api_base=upstream.root_url,
                api_key="k",
            )
        sent = upstream.requests[-1]

        assert sent["cache_control"] == mark
        assert json.dumps(sent).count('"cache_control"') == 4  # the client's four: none added
