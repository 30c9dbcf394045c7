"""Through the real proxy: a model that calls again for an output the plugin hid is counted, as a re-read."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.builders import system, text, user
from tests.support.fake_upstream import SHELL_TOOLS, AgentScript, FakeUpstream
from tests.support.proxy_process import ProxyProcess, openai_client, start_proxy

pytestmark = pytest.mark.proxy
GROUP = "agent"
#: The same deployment in a window that holds the whole conversation: nothing is ever hidden.
WIDE = "agent-wide"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "shell_command",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


@dataclass(frozen=True)
class Rereader(AgentScript):
    """Reads ``steps`` files, one a turn, then reads the first one again, then answers."""

    def turn(self, tool_names: list[str], newest_result: str | None) -> tuple[str, tuple[str, dict[str, Any]] | None]:
        shell = next(name for name in SHELL_TOOLS if name in tool_names)
        ran = re.findall(r"^run (\d+)$", newest_result or "", flags=re.MULTILINE)
        step = int(ran[-1]) + 1 if ran else 1
        if step > self.steps + 1:
            return self.final_text, None
        file = 1 if step == self.steps + 1 else step
        return f"Reading file {file}.", (shell, SHELL_TOOLS[shell](f"cat file_{file}.txt"))


@pytest.fixture(name="upstream", scope="module")
def fixture_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(script=Rereader(steps=5)) as upstream:
        yield upstream


@pytest.fixture(name="proxy", scope="module")
def fixture_proxy(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    params = {"model": "openai/gpt-4o", "api_base": upstream.base_url, "api_key": "k"}
    config = {
        "model_list": [
            {"model_name": GROUP, "litellm_params": params, "model_info": {"max_input_tokens": 6000}},
            {"model_name": WIDE, "litellm_params": params, "model_info": {"max_input_tokens": 100_000}},
        ],
        "litellm_settings": {"callbacks": ["litellm_budget.handler", "prometheus"]},
    }
    with start_proxy(config, tmp_path=tmp_path_factory.mktemp("rereads")) as proxy:
        yield proxy


def run_agent(proxy: ProxyProcess, group: str = GROUP) -> list[str]:
    """The agent loop a client runs: call the model, run its command, send the result, until it answers."""
    client = openai_client(proxy)
    messages: list[Any] = [system("You read files."), user("Read the files, then check the first again.")]
    commands = []
    for run in range(1, 12):
        reply = client.chat.completions.create(model=group, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
        message = reply.choices[0].message
        if not message.tool_calls:
            break
        call = message.tool_calls[0]
        command = json.loads(call.function.arguments)["command"]
        commands.append(command)
        messages.append(message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": f"run {run}\n{text(1500, run)}"})
    return commands


def rereads_counted(proxy: ProxyProcess, group: str = GROUP) -> float:
    metrics = httpx.get(proxy.base_url + "/metrics/", headers=proxy.auth_headers, timeout=10, follow_redirects=True)
    found = re.search(rf'^litellm_budget_rereads_total\{{model_group="{group}"\}} ([\d.]+)$', metrics.text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_call_repeated_for_a_hidden_output_is_counted(proxy: ProxyProcess, upstream: FakeUpstream) -> None:
    """The model reads file 1 again once its output was elided or dropped: one re-read, on the metric."""
    commands = run_agent(proxy)

    assert commands == [*(f"cat file_{n}.txt" for n in range(1, 6)), "cat file_1.txt"]
    # What the model saw when it asked again: file 1's output was no longer there in full.
    asked_again = upstream.requests[-2]
    first_output = f"run 1\n{text(1500, 1)}"
    assert all(message.get("content") != first_output for message in asked_again["messages"])
    assert rereads_counted(proxy) == 1.0


def test_asking_again_for_what_was_sent_is_not_counted(proxy: ProxyProcess) -> None:
    """The same agent in a window that holds everything: nothing was hidden, so no re-read."""
    commands = run_agent(proxy, WIDE)

    assert commands[-1] == "cat file_1.txt"
    assert rereads_counted(proxy, WIDE) == 0.0
