"""The replay's model of a provider's prompt cache, and the replay's observed-style hit ratio and cost from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lab.cache_model import CacheModel, CacheSetup, cache_cost
from benchmarks.lab.pricing import Prices
from benchmarks.replay import main
from litellm_budget.core.formats import ANTHROPIC, CHAT
from litellm_budget.core.formats import anthropic_from_chat as from_chat
from litellm_budget.core.wording import omitted_note
from tests.support.builders import agent_session, system, text, tool_step, user

SIZES = 300  # tokens per message, as the replay counts them


def _serve(model: CacheModel, messages: list[dict[str, Any]]) -> tuple[int, int]:
    return model.serve(messages, [SIZES] * len(messages))


class TestOpenai:
    def test_reads_the_longest_cached_prefix_in_steps(self) -> None:
        """A continued prompt reads its previous one, floored to 128 tokens; under the minimum nothing."""
        model = CacheModel(CacheSetup(kind="openai"), CHAT)
        messages = [system(text(50)), user("Task."), *tool_step(100), *tool_step(100, seed=1)]

        assert _serve(model, messages) == (0, 0)
        assert _serve(model, [*messages, *tool_step(100, seed=2)]) == (6 * SIZES - 6 * SIZES % 128, 0)
        assert _serve(CacheModel(CacheSetup(kind="openai", minimum=4000), CHAT), messages) == (0, 0)

    def test_a_changed_early_message_reads_up_to_it(self) -> None:
        """The prefix ends at the first message that differs."""
        model = CacheModel(CacheSetup(kind="openai", minimum=1), CHAT)
        messages = [system(text(50)), user("Task."), *tool_step(100), *tool_step(100, seed=1)]
        _serve(model, messages)
        edited = [*messages[:3], {**messages[3], "content": "cleared"}, *messages[4:]]

        assert _serve(model, edited)[0] == 3 * SIZES - 3 * SIZES % 128

    def test_the_text_before_a_merged_marker_is_read(self) -> None:
        """A marker appended to the task (``user_note``): the task's text is still a cached token prefix."""
        model = CacheModel(CacheSetup(kind="openai", minimum=1), CHAT)
        task = "Task: " + text(200)
        messages = [system(text(50)), user(task), *tool_step(100), *tool_step(100, seed=1)]
        _serve(model, messages)
        noted = [messages[0], user(f"{task}\n\n{omitted_note(2, 1)}"), *messages[4:]]
        other = [messages[0], user(f"Task: other\n\n{omitted_note(2, 1)}"), *messages[4:]]

        read = _serve(model, noted)[0]

        assert SIZES < read < 2 * SIZES  # the system prompt and the head of the task, not all of it
        assert _serve(model, other)[0] == SIZES - SIZES % 128


class TestAnthropic:
    @staticmethod
    def _session(steps: int) -> list[dict[str, Any]]:
        system_text, messages = from_chat([system(text(50)), *agent_session(steps, 100)[1:]])
        return [{"role": "system", "content": system_text, "litellm_budget_joined_system": True}, *messages]

    def test_nothing_is_cached_without_breakpoints(self) -> None:
        """No client breakpoints and no plugin: Anthropic reads and writes nothing."""
        model = CacheModel(CacheSetup(kind="anthropic", client="none"), ANTHROPIC)

        second = self._session(5)
        _serve(model, second[:-2])
        assert _serve(model, second) == (0, 0)

    @pytest.mark.parametrize("client", ["last", "none"])
    def test_the_last_message_breakpoint_reads_the_previous_prompt(self, client: str) -> None:
        """The client's last-message breakpoint (or the plugin's) writes each prompt, and the next reads it."""
        model = CacheModel(CacheSetup(kind="anthropic", client=client, plugin=client == "none"), ANTHROPIC)
        second = self._session(5)
        first = second[:-2]

        read, written = _serve(model, first)
        assert (read, written) == (0, len(first) * SIZES)
        read, written = _serve(model, second)
        assert read == len(first) * SIZES
        assert written == (len(second) - len(first)) * SIZES

    def test_the_plugins_breakpoint_after_an_edit_keeps_its_prefix(self) -> None:
        """A later elision: the client's breakpoints read only the system prompt, the plugin's more."""
        placeholder = "[litellm_budget: this tool output was elided by the gateway to fit the context window.]"

        def edited(messages: list[dict[str, Any]], at: int) -> list[dict[str, Any]]:
            return [*messages[:at], {**messages[at], "content": placeholder}, *messages[at + 1 :]]

        reads = {}
        for plugin in (False, True):
            model = CacheModel(CacheSetup(kind="anthropic", plugin=plugin, minimum=1), ANTHROPIC)
            first = edited(self._session(12), 2)
            _serve(model, first)
            reads[plugin] = _serve(model, edited(first, 12))[0]

        assert reads[False] == SIZES  # the system prompt
        assert reads[True] >= 3 * SIZES  # through the first placeholder


def test_cache_cost_prices_reads_writes_and_the_rest() -> None:
    """Reads at the cache-read price, writes at the cache-write price, the rest at the input price."""
    prices = Prices(input=3.0, reused=0.3, reprefilled=3.75, source="test")

    assert cache_cost(prices, sent=100, read=60, written=30) == pytest.approx(60 * 0.3 + 30 * 3.75 + 10 * 3.0)


def test_replay_prints_the_hit_ratio_of_the_cache_it_models(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--format anthropic models Anthropic's cache; the plugin's breakpoints raise a bare client's hit ratio."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "s.json").write_text(json.dumps({"messages": agent_session(14, 700)}))
    base = [str(folder), "--model", "claude-sonnet-4-5", "--format", "anthropic", "--window", "8000"]
    results = {}
    for extra in ([], ["--cache-breakpoints"]):
        assert main([*base, "--client-breakpoints", "none", "--json", "--no-progress", *extra]) == 0
        results[bool(extra)] = json.loads(capsys.readouterr().out)

    assert results[False]["results"][0]["cache_hit_ratio"] == 0.0
    assert results[True]["results"][0]["cache_hit_ratio"] > 0.5
    assert results[True]["results"][0]["cache_cost"] < results[False]["results"][0]["cache_cost"]
    assert "Anthropic's cache at breakpoints" in results[True]["cache"]
    assert main([*base[:-1], "8000", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "cache_hit_ratio" in out
    assert "that Anthropic's cache at breakpoints (the client's on the system prompt and the last message" in out
