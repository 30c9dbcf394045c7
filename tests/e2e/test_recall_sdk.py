"""Recall through ``litellm.acompletion``: a scripted model calls the tool, LiteLLM's loop answers it inside the SDK."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from litellm_budget import ContextBudget
from litellm_budget.adapter.recall.answer import GONE, LAST
from litellm_budget.adapter.recall.offer import recall_tool
from litellm_budget.adapter.recall.server import RecallServer
from litellm_budget.adapter.settings.config import REASON
from litellm_budget.core.wording import NOTICE_PREFIX
from tests.support.builders import agent_session, chat_session, user
from tests.support.fake_upstream import RECALL_TOOL, FakeUpstream, RecallScript
from tests.support.sdk_support import PayloadSpy, only_callbacks

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("quiet_logging")]
WINDOW = 8000
HANDLE = re.compile(r"recall (r-[0-9a-f]{8})")
CLIENT_TOOL = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {}}}}


@pytest.fixture(name="recall_up")
def fixture_recall_up() -> Iterator[FakeUpstream]:
    with FakeUpstream(recall=RecallScript()) as upstream:
        yield upstream


def plugin_with(spy: PayloadSpy | None = None, **knobs: Any) -> Any:
    knobs.setdefault("recall_tool", True)
    plugin = ContextBudget(default_window=WINDOW, **knobs)
    return only_callbacks(plugin, *([spy] if spy else []))


async def ask(upstream: FakeUpstream, messages: list[dict[str, Any]], **extra: Any) -> Any:
    extra.setdefault("tools", [CLIENT_TOOL])
    return await litellm.acompletion(
        model="openai/acme-recall", api_base=upstream.base_url, api_key="k", messages=messages, **extra
    )


def handles_in(request: dict[str, Any]) -> list[str]:
    return HANDLE.findall(json.dumps(request["messages"]))


def block_handles_in(request: dict[str, Any]) -> set[str]:
    """The handles markers name for their whole dropped block (a new one when the block grows)."""
    return set(re.findall(r"Their text is stored as recall (r-[0-9a-f]+)", json.dumps(request["messages"])))


def tool_outputs(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def recalls_counted(outcome: str) -> float:
    return (
        REGISTRY.get_sample_value(
            "litellm_budget_recalls_total", {"model_group": "openai/acme-recall", "outcome": outcome}
        )
        or 0.0
    )


async def test_a_recall_is_answered_inside_the_sdk(recall_up: FakeUpstream) -> None:
    """The model gets the stored text, the caller only the final answer; logged and counted, never its text."""
    messages = agent_session(30, 900)
    spy = PayloadSpy()
    served_before = recalls_counted("served")
    with plugin_with(spy), capture_logs() as logs:
        response = await ask(recall_up, messages)
        payloads = await spy.wait()

    first, followup = recall_up.requests
    handle = handles_in(first)[0]
    original = next(text for text in tool_outputs(messages) if text[:40] in followup["messages"][-1]["content"])
    assert [tool.get("function", {}).get("name") for tool in first["tools"]] == ["bash", RECALL_TOOL]
    assert first["tools"][-1] == recall_tool("chat")
    assert followup["messages"][-1]["content"].startswith(f"[litellm_budget: {handle}, ")
    assert original[:800] in followup["messages"][-1]["content"]
    message = response.choices[0].message
    assert message.content.startswith("FINAL[[litellm_budget: ")
    assert not message.tool_calls
    answered = [log for log in logs if log["event"] == "recall_answered"]
    assert [(log["handle"], log["outcome"]) for log in answered] == [(handle, "served")]
    assert not any(original[:60] in json.dumps(log, default=str) for log in logs)
    assert recalls_counted("served") == served_before + 1
    recalls = payloads[-1]["metadata"]["spend_logs_metadata"]["litellm_budget_recalls"]
    assert [(one["handle"], one["outcome"]) for one in recalls] == [(handle, "served")]


async def test_recall_off_offers_and_names_nothing(recall_up: FakeUpstream) -> None:
    with plugin_with(recall_tool=False):
        await ask(recall_up, agent_session(30, 900))
        registered = [type(callback) for callback in litellm.callbacks]

    (sent,) = recall_up.requests
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["bash"]
    assert handles_in(sent) == []
    assert RecallServer not in registered


async def test_the_tool_and_the_handles_stay_put_as_the_conversation_grows() -> None:
    """The second request carries the same tools, bytes and all, and names the same handles for the same outputs."""
    messages = agent_session(30, 900)
    grown = [*messages, *agent_session(2, 900)[2:]]
    with FakeUpstream() as upstream, plugin_with():
        await ask(upstream, messages)
        await ask(upstream, grown)

    first, second = upstream.requests
    outputs = [
        {m["tool_call_id"]: m["content"] for m in sent["messages"] if m["role"] == "tool"} for sent in upstream.requests
    ]
    common = set(outputs[0]) & set(outputs[1])
    assert json.dumps(first["tools"]) == json.dumps(second["tools"])
    # Kept, or named again by the dropped steps' lines; a marker's block handle is new where more was dropped.
    assert set(handles_in(first)) - block_handles_in(first) <= set(handles_in(second))
    assert block_handles_in(second)
    assert common
    # Edits only grow: an output elided stays elided in the same bytes; one sent whole is sent whole
    # again, or elided now where the grown request crossed the budget (where it does depends on the
    # sizes, and the builders' call ids run on across the tests of a process).
    elided = {call for call in common if outputs[0][call].startswith(NOTICE_PREFIX)}
    assert all(outputs[1][call] == outputs[0][call] for call in elided)
    assert all(outputs[1][call] in {outputs[0][call]} or outputs[1][call].startswith(NOTICE_PREFIX) for call in common)


@pytest.mark.parametrize("other", ["conversation", "key"])
async def test_a_handle_from_another_conversation_or_key_is_never_served(other: str) -> None:
    messages = agent_session(30, 900, question="Fix the first bug.")
    with FakeUpstream() as upstream, plugin_with():
        await ask(upstream, messages, metadata={"user_api_key_hash": "key-a"})
    handle = handles_in(upstream.requests[0])[0]
    if other == "conversation":
        asked, key = agent_session(30, 900, question="Fix the second bug."), "key-a"
    else:
        asked, key = messages, "key-b"

    with FakeUpstream(recall=RecallScript(handle=handle)) as upstream, plugin_with(), capture_logs() as logs:
        response = await ask(upstream, asked, metadata={"user_api_key_hash": key})

    first, followup = upstream.requests
    assert handle not in handles_in(first)
    assert followup["messages"][-1]["content"].startswith(GONE.format(handle=handle))
    assert [log["outcome"] for log in logs if log["event"] == "recall_answered"] == ["unknown"]
    assert response.choices[0].message.content.startswith("FINAL[[litellm_budget: ")
    assert not response.choices[0].message.tool_calls


async def test_an_expired_handle_gets_a_notice_not_an_error() -> None:
    """A handle the conversation still names, whose text is gone: the model is told to call the tool again."""
    messages = agent_session(30, 900)
    plugin = ContextBudget(default_window=WINDOW, recall_tool=True)
    with FakeUpstream() as upstream, only_callbacks(plugin):
        await ask(upstream, messages)
    handle = handles_in(upstream.requests[0])[0]
    plugin._memory.recall.store.forget(handle)
    # The client's own history, now short, names the handle in the assistant's words.
    later = [*messages[:2], {"role": "assistant", "content": f"I noted recall {handle}."}, user("Go on.")]

    with FakeUpstream(recall=RecallScript()) as upstream, only_callbacks(plugin), capture_logs() as logs:
        response = await ask(upstream, later)

    first, followup = upstream.requests
    assert first["tools"][-1] == recall_tool("chat")  # the conversation stored something: still offered
    assert followup["messages"][-1]["content"].startswith(GONE.format(handle=handle))
    assert [log["outcome"] for log in logs if log["event"] == "recall_answered"] == ["expired"]
    assert "no longer available" in response.choices[0].message.content


@pytest.mark.parametrize("client_tools", [True, False])
async def test_recalls_stop_at_the_limit(client_tools: bool) -> None:
    """After recall_limit recalls the tool is no longer offered; the model answers, the caller sees no recall call."""
    tools = [CLIENT_TOOL] if client_tools else None
    with FakeUpstream(recall=RecallScript(times=5)) as upstream, plugin_with(recall_limit=2):
        response = await ask(upstream, agent_session(30, 900), tools=tools)

    first, second, last = upstream.requests
    assert RECALL_TOOL in json.dumps(first["tools"])
    assert RECALL_TOOL in json.dumps(second["tools"])
    assert last["messages"][-1]["content"].endswith(LAST)
    if client_tools:
        assert [tool["function"]["name"] for tool in last["tools"]] == ["bash"]
    else:
        assert last["tool_choice"] == "none"
    assert not response.choices[0].message.tool_calls
    assert RECALL_TOOL not in json.dumps(response.model_dump())


async def test_a_streamed_chat_request_is_not_offered_the_tool(recall_up: FakeUpstream) -> None:
    """LiteLLM runs no loop for a streamed chat request: no tool, and no handle named."""
    with plugin_with():
        stream = await ask(recall_up, agent_session(30, 900), stream=True)
        async for _ in stream:
            pass

    (sent,) = recall_up.requests
    assert RECALL_TOOL not in json.dumps(sent["tools"])
    assert handles_in(sent) == []


async def test_two_recalls_in_one_turn_past_the_limit_get_the_limit_answer() -> None:
    """The model asks for more than is left in one turn: what is left is served, the rest answered with the limit."""
    messages = agent_session(30, 900)
    plugin = ContextBudget(default_window=WINDOW, recall_tool=True, recall_limit=1)
    call_id = "recall-limit-test"
    with FakeUpstream() as upstream, only_callbacks(plugin):
        await ask(upstream, messages, litellm_call_id=call_id)
        fitted = upstream.requests[0]
        handles = handles_in(fitted)[:2]
        server = next(callback for callback in litellm.callbacks if isinstance(callback, RecallServer))
    calls = [{"id": f"c{n}", "name": RECALL_TOOL, "arguments": {"handle": handle}} for n, handle in enumerate(handles)]
    response = litellm.ModelResponse(choices=[{"message": {"role": "assistant", "content": None}}])
    logging_obj = type("Logging", (), {"litellm_call_id": call_id, "model_call_details": {}})()

    with capture_logs() as logs:
        plan = await server.async_build_agentic_loop_plan(
            tools={"tool_calls": calls},
            messages=fitted["messages"],
            response=response,
            logging_obj=logging_obj,
            anthropic_messages_optional_request_params={"tools": fitted["tools"]},
            kwargs={"_agentic_loop_api_surface": "chat_completions"},
        )

    answers = [m["content"] for m in plan.request_patch.messages if m.get("role") == "tool"][-2:]
    assert answers[0].startswith(f"[litellm_budget: {handles[0]}, ")
    assert answers[1].startswith("[litellm_budget: not served: this request reached its limit of 1 recalls.")
    assert [log["outcome"] for log in logs if log["event"] == "recall_answered"] == ["served", "limit"]
    assert [tool["function"]["name"] for tool in plan.request_patch.tools] == ["bash"]


async def test_litellms_compression_and_the_plugin_never_edit_one_request() -> None:
    """With CompressionInterceptionLogger registered it owns /v1/messages; chat is still fitted here."""
    from litellm.integrations.compression_interception.handler import CompressionInterceptionLogger

    from litellm_budget.core.formats import anthropic_from_chat as from_chat

    compression = CompressionInterceptionLogger(compression_trigger=5000)
    # Long answers: what it stubs (it drops Anthropic tool exchanges whole, and then applies nothing).
    system_text, blocks = from_chat(chat_session(20, 900))
    with FakeUpstream() as upstream, plugin_with(), capture_logs() as logs:
        litellm.callbacks.append(compression)
        await litellm.anthropic.messages.acreate(
            model="anthropic/claude-sonnet-4-5",
            api_base=upstream.root_url,
            api_key="k",
            max_tokens=256,
            system=system_text,
            messages=blocks,
        )
        await ask(upstream, agent_session(30, 900))

    messages_request, chat_request = upstream.requests
    assert "litellm_content_retrieve" in json.dumps(messages_request["tools"])  # LiteLLM compressed it ...
    assert "litellm_budget" not in json.dumps(messages_request)  # ... and nothing here touched it
    assert handles_in(chat_request)  # chat: fitted here, with recall
    reports = [log for log in logs if log.get("format") == "anthropic" and "action" in log]
    assert [(log["action"], log["reason"]) for log in reports] == [("unsupported", REASON)]
    assert any(log["event"] == "compression_interception_registered" for log in logs)


async def test_a_responses_recall_is_answered_inside_the_sdk(recall_up: FakeUpstream) -> None:
    """litellm.aresponses: the same loop, with Responses items; the caller gets only the final message."""
    from litellm_budget.tools.sessions import converted

    items = converted(agent_session(30, 900), "responses")
    bash = {"type": "function", "name": "bash", "parameters": {"type": "object", "properties": {}}}
    with plugin_with():
        response = await litellm.aresponses(
            model="openai/acme-recall", input=items, api_base=recall_up.base_url, api_key="k", tools=[bash]
        )

    first, followup = recall_up.requests
    handle = HANDLE.findall(json.dumps(first["input"]))[0]
    assert first["tools"][-1] == recall_tool("responses")
    assert followup["input"][-1]["type"] == "function_call_output"
    assert followup["input"][-1]["output"].startswith(f"[litellm_budget: {handle}, ")
    output = response.model_dump()["output"]
    assert [item["type"] for item in output] == ["message"]
    assert output[0]["content"][0]["text"].startswith(f"FINAL[[litellm_budget: {handle}, ")
