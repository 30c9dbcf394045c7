"""
Through the real proxy and the official SDKs: the opt-in cache hints reach the provider as its API
takes them, and the fake providers' caches (``tests/support/fake_cache.py``) read more for them.

``cache_breakpoints``: Anthropic ``cache_control`` breakpoints where the prompt stays stable, the
client's own kept where they were, never more than four. ``prompt_cache_key``: OpenAI's key from
the conversation, a client's own kept.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from litellm_budget.core.formats import anthropic_from_chat as from_chat
from tests.support.builders import agent_session, deployment, system, text, tool_step, user
from tests.support.fake_cache import PrefixCache
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import wait_for_records
from tests.support.proxy_process import ProxyProcess, anthropic_client, openai_client, start_proxy

pytestmark = pytest.mark.proxy

CLAUDE = "anthropic/claude-sonnet-4-5"
BREAKPOINT = {"type": "ephemeral"}
WINDOW = 12_000
HINTS = {"cache_breakpoints": True, "prompt_cache_key": True}


@dataclass
class Rig:
    proxy: ProxyProcess
    claude_up: FakeUpstream
    gpt_up: FakeUpstream
    folder: Path
    claude: anthropic.Anthropic

    def gpt(self) -> openai.OpenAI:
        return openai_client(self.proxy)

    def message(
        self, model: str, messages: list[dict[str, Any]], **extra: Any
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """One /v1/messages request: the body the provider got, and the plugin's ``cache_observed``."""
        before = len(self.claude_up.requests)
        raw = self.claude.messages.with_raw_response.create(model=model, max_tokens=50, messages=messages, **extra)
        body = self.claude_up.wait_for_requests(before + 1)[before]
        return body, self.observed(raw.headers["x-litellm-call-id"])

    def observed(self, call_id: str) -> dict[str, Any]:
        def ready(records: list[dict[str, Any]]) -> bool:
            return any(r["event"] == "cache_observed" and r.get("litellm_call_id") == call_id for r in records)

        records = wait_for_records(self.folder / "structlog.jsonl", ready, what=f"cache_observed of {call_id}")
        return next(r for r in records if r["event"] == "cache_observed" and r.get("litellm_call_id") == call_id)


@pytest.fixture(name="rig", scope="module")
def fixture_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    folder = tmp_path_factory.mktemp("cache-hints")
    with (
        FakeUpstream(cache=PrefixCache(breakpoints=True)) as claude_up,
        FakeUpstream(cache=PrefixCache()) as gpt_up,
    ):
        config = {
            "model_list": [
                deployment("claude", CLAUDE, claude_up.root_url, window=WINDOW),
                deployment("claude-hinted", CLAUDE, claude_up.root_url, window=WINDOW, budget=HINTS),
                deployment("gpt", "openai/gpt-4o", gpt_up.base_url, window=WINDOW),
                deployment("gpt-hinted", "openai/gpt-4o", gpt_up.base_url, window=WINDOW, budget=HINTS),
            ],
            "litellm_settings": {"callbacks": ["proxy_structlog.configured", "litellm_budget.handler"]},
        }
        with (
            start_proxy(config, tmp_path=folder, helpers=["proxy_structlog.py"]) as proxy,
            anthropic_client(proxy) as claude,
        ):
            yield Rig(proxy, claude_up, gpt_up, folder, claude)


def _marks(body: dict[str, Any]) -> list[tuple[str, int, int]]:
    """Every breakpoint of a Messages body: ("system", block) or ("message", index, block)."""
    found = []
    system_blocks = body.get("system")
    for block, part in enumerate(system_blocks if isinstance(system_blocks, list) else []):
        if "cache_control" in part:
            found.append(("system", -1, block))
    for index, message in enumerate(body["messages"]):
        content = message["content"]
        for block, part in enumerate(content if isinstance(content, list) else []):
            if "cache_control" in part:
                found.append(("message", index, block))
    return found


def _without_marks(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_marks(v) for v in value]
    return value


def _claude_history(steps: int, tokens: int = 600, name: str = "agent") -> tuple[str, list[dict[str, Any]]]:
    system_text, messages = from_chat([system(f"You are {name}. " + text(1500)), *agent_session(steps, tokens)[1:]])
    return str(system_text), messages


def test_the_clients_breakpoints_are_kept_and_there_are_never_more_than_four(rig: Rig) -> None:
    """Two of the client's own (system, last message) stay where they were; the plugin adds at most two."""
    system_text, messages = _claude_history(3, name="kept")
    messages = copy.deepcopy(messages)
    messages[-1]["content"][-1]["cache_control"] = BREAKPOINT
    system_blocks = [{"type": "text", "text": system_text, "cache_control": BREAKPOINT}]

    body, _ = rig.message("claude-hinted", messages, system=system_blocks)

    marks = _marks(body)
    assert ("system", -1, 0) in marks
    assert ("message", len(messages) - 1, len(messages[-1]["content"]) - 1) in marks
    assert len(marks) <= 4
    assert _without_marks(body["messages"]) == _without_marks(messages)  # nothing else changed


def test_four_of_the_clients_own_leave_no_room(rig: Rig) -> None:
    """A request that already has four breakpoints goes as it came."""
    system_text, messages = _claude_history(4, name="full")
    messages = copy.deepcopy(messages)
    for index in (1, 3, 5, len(messages) - 1):
        messages[index]["content"][-1]["cache_control"] = BREAKPOINT

    body, _ = rig.message("claude-hinted", messages, system=system_text)

    assert body["messages"] == messages
    assert body["system"] == system_text


def test_without_the_setting_nothing_is_added(rig: Rig) -> None:
    """The hints are opt-in: the plain group's requests carry only what the client sent."""
    system_text, messages = _claude_history(3, name="plain")

    body, report = rig.message("claude", messages, system=system_text)

    assert _marks(body) == []
    assert report["cache_read_tokens"] == 0


def _grow(rig: Rig, model: str, name: str, steps: int) -> list[dict[str, Any]]:
    """An agent session of ``steps`` requests through ``model``, past its window: each request's cache report."""
    system_text, _ = _claude_history(0, name=name)
    history: list[dict[str, Any]] = [system(system_text), user("Fix the failing test.")]
    reports = []
    for step in range(steps):
        history += tool_step(900, seed=step)
        body, report = rig.message(model, from_chat(history)[1], system=system_text)
        assert len(_marks(body)) <= 4
        reports.append(report)
    return reports


def test_breakpoints_make_the_cache_read_a_trimmed_session(rig: Rig) -> None:
    """
    Without breakpoints Anthropic reads nothing (no_breakpoint); with them the session, elided and
    dropped past its window, reads most of each prompt, and the reads are the ones predicted.
    """
    plain = _grow(rig, "claude", "plain-session", 16)
    before = len(rig.claude_up.cache.uses)  # type: ignore[union-attr]
    hinted = _grow(rig, "claude-hinted", "hinted-session", 16)
    uses = rig.claude_up.cache.uses[before:]  # type: ignore[union-attr]

    def ratio(reports: list[dict[str, Any]]) -> float:
        return sum(r["cache_read_tokens"] for r in reports) / sum(r["input_tokens"] for r in reports)

    assert ratio(plain) == 0.0
    assert {r["cache_miss"] for r in plain[1:]} <= {"no_breakpoint", "plugin_drop", "plugin_elision", "unknown"}
    assert "no_breakpoint" in {r["cache_miss"] for r in plain}
    assert ratio(hinted) > 0.5
    # What the plugin reports is what the provider said, read, written and in all.
    assert [(r["cache_read_tokens"], r["cache_write_tokens"], r["input_tokens"]) for r in hinted] == [
        (use.read, use.written, use.prompt) for use in uses
    ]
    assert sum(r["cache_write_tokens"] for r in hinted) > 0
    for report in hinted[1:]:
        if report["cache_miss"] is None:
            assert report["cache_read_tokens"] >= report["predicted_tokens"] * 0.9 - 128


def test_chat_to_anthropic_gets_breakpoints_in_content_parts(rig: Rig) -> None:
    """A chat request to a Claude deployment: the breakpoints are content parts LiteLLM hands on."""
    messages = [system("You are chat. " + text(1500)), user("Hello."), *tool_step(600), user("Go on.")]
    before = len(rig.claude_up.requests)

    rig.gpt().chat.completions.create(model="claude-hinted", messages=messages, max_tokens=50)

    body = rig.claude_up.wait_for_requests(before + 1)[before]
    assert 1 <= len(_marks(body)) <= 4
    assert _marks(body)[-1][1] == len(body["messages"]) - 1


def test_prompt_cache_key_from_the_conversation(rig: Rig) -> None:
    """Chat and Responses to OpenAI: one key per conversation, the same on each request; a client's own kept."""
    client = rig.gpt()
    messages = [system("You are keyed. " + text(200)), user("Task keyed.")]
    before = len(rig.gpt_up.requests)
    client.chat.completions.create(model="gpt-hinted", messages=messages)
    client.chat.completions.create(model="gpt-hinted", messages=[*messages, *tool_step(100)])
    client.chat.completions.create(model="gpt-hinted", messages=messages, extra_body={"prompt_cache_key": "mine"})
    client.chat.completions.create(model="gpt", messages=messages)
    client.responses.create(model="gpt-hinted", instructions="You are keyed.", input="Task keyed.")
    bodies = rig.gpt_up.wait_for_requests(before + 5)[before:]

    keys = [body.get("prompt_cache_key") for body in bodies]
    assert keys[0] == keys[1]
    assert keys[0].startswith("litellm_budget-")
    assert len(keys[0]) <= 64
    assert keys[2:4] == ["mine", None]
    assert keys[4].startswith("litellm_budget-")
