"""The replay's peers, each against its documented semantics on small hand-built conversations; prices."""

from __future__ import annotations

import copy
import sys
from typing import Any

import litellm
import pytest

from benchmarks.lab import langchain_peer
from benchmarks.lab.baselines import BASELINES
from benchmarks.lab.peers import (
    MASK_TEMPLATE,
    POLYFILL_PLACEHOLDER,
    ClearToolUses,
    auto_quantum,
    clear_tool_uses,
    clear_tool_uses_peer,
    litellm_polyfill,
    mask_observations,
    prompt_budget,
    prompt_counter,
)
from benchmarks.lab.pricing import FALLBACK_PER_TOKEN, prices_for
from benchmarks.lab.replay import Row, Session, Totals, replay_session, strategy_for
from litellm_budget.core.client_edits import CLEARED_RESULT
from litellm_budget.core.client_edits import clear_tool_uses as core_clear_tool_uses
from litellm_budget.core.formats import anthropic_from_chat
from litellm_budget.core.validity import chat_unsupported as unsupported_reason
from litellm_budget.tools.sessions import requests_of
from tests.support.builders import agent_session, chat_session, system, text, tool_step, user

COUNT = prompt_counter("gpt-4o")
Messages = list[dict[str, Any]]


def _results(messages: Messages) -> list[Any]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def _ids(messages: Messages) -> list[str]:
    return [m["tool_call_id"] for m in messages if m["role"] == "tool"]


def test_every_peer_is_registered_next_to_the_baselines() -> None:
    assert {"trim_messages", "sliding", "masking", "clear_tool_uses", "litellm_polyfill", "langchain_trim"} <= set(
        BASELINES
    )


class TestMasking:
    def test_keeps_the_last_m_observations_and_masks_the_rest(self) -> None:
        """Older tool results say how many lines they had; the last M and every other message are the same objects."""
        messages = agent_session(14, 50)
        messages[3]["content"] = "line one\nline two\nline three"
        before = copy.deepcopy(messages)

        masked = mask_observations(messages, keep=10)

        assert messages == before  # the input is not changed
        assert _results(masked)[:4] == [MASK_TEMPLATE.format(lines=n) for n in (3, 1, 1, 1)]
        assert _results(masked)[0] == "Old environment output: (3 lines omitted)"
        assert _results(masked)[4:] == _results(messages)[4:]
        changed = [i for i, (a, b) in enumerate(zip(messages, masked, strict=True)) if a is not b]
        assert changed == [i for i, m in enumerate(messages) if m["role"] == "tool"][:4]
        assert unsupported_reason(masked, None, None) is None

    def test_masks_nothing_with_m_or_fewer_observations_and_keeps_list_shapes(self) -> None:
        messages = agent_session(10, 50)
        assert mask_observations(messages) == messages
        messages += tool_step(20)
        messages[3] = {**messages[3], "content": [{"type": "text", "text": "a\nb"}]}
        assert mask_observations(messages)[3]["content"] == [{"type": "text", "text": MASK_TEMPLATE.format(lines=2)}]

    def test_the_peer_masks_whatever_the_window(self) -> None:
        """Masking knows no budget: the peer is keep-last-10 at any window, overflow or not."""
        messages = agent_session(12, 50)
        assert BASELINES["masking"]("gpt-4o", 100)(messages) == BASELINES["masking"]("gpt-4o", 10**6)(messages)
        assert _results(BASELINES["masking"]("gpt-4o", 100)(messages))[:2] == [MASK_TEMPLATE.format(lines=1)] * 2


class TestClearToolUses:
    def test_under_the_trigger_nothing_changes(self) -> None:
        messages = agent_session(6, 100)
        assert clear_tool_uses(messages, ClearToolUses(trigger=COUNT(messages)), COUNT) is messages

    def test_over_the_trigger_the_oldest_results_are_cleared_keeping_the_last_n(self) -> None:
        messages = agent_session(6, 100)
        before = copy.deepcopy(messages)

        cleared = clear_tool_uses(messages, ClearToolUses(trigger=COUNT(messages) - 1, keep=3), COUNT)

        assert messages == before
        assert _results(cleared) == [CLEARED_RESULT] * 3 + _results(messages)[3:]
        # The calls (tool inputs) stay, so every pair stays valid.
        assert [m.get("tool_calls") for m in cleared] == [m.get("tool_calls") for m in messages]
        assert unsupported_reason(cleared, None, None) is None

    def test_clear_at_least_clears_all_or_nothing(self) -> None:
        """Nothing when the clearing would free fewer tokens than clear_at_least; all of it when it frees enough."""
        messages = agent_session(6, 100)
        freed = COUNT(messages) - COUNT(clear_tool_uses(messages, ClearToolUses(trigger=0), COUNT))
        assert freed > 0

        assert clear_tool_uses(messages, ClearToolUses(trigger=0, clear_at_least=freed + 1), COUNT) is messages
        assert (
            _results(clear_tool_uses(messages, ClearToolUses(trigger=0, clear_at_least=freed), COUNT))[:3]
            == [CLEARED_RESULT] * 3
        )

    def test_inputs_and_excluded_tools(self) -> None:
        messages = agent_session(5, 100)
        messages[2]["tool_calls"][0]["function"]["name"] = "memory"

        cleared = clear_tool_uses(
            messages, ClearToolUses(trigger=0, keep=1, exclude_tools={"memory"}, clear_tool_inputs=True), COUNT
        )

        assert _results(cleared)[0] == _results(messages)[0]  # the excluded tool's use is kept
        assert _results(cleared)[1:4] == [CLEARED_RESULT] * 3
        arguments = [m["tool_calls"][0]["function"]["arguments"] for m in cleared if m.get("tool_calls")]
        sent = [m["tool_calls"][0]["function"]["arguments"] for m in messages if m.get("tool_calls")]
        assert arguments == [sent[0], "{}", "{}", "{}", sent[4]]

    @pytest.mark.parametrize("keep", [0, 2, 5])
    def test_clears_the_same_tool_uses_as_the_core_on_anthropic_messages(self, keep: int) -> None:
        """The chat twin and core.context_edits (Anthropic format) clear the same tool uses."""
        messages = agent_session(6, 80)
        _, converted = anthropic_from_chat(messages)
        edit = {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 0},
            "keep": {"value": keep},
        }

        core, _ = core_clear_tool_uses(converted, edit, lambda m: len(str(m)))
        ours = clear_tool_uses(messages, ClearToolUses(trigger=0, keep=keep), COUNT)

        core_ids = [
            block["tool_use_id"]
            for m in core
            for block in m["content"]
            if isinstance(block, dict) and block.get("content") == CLEARED_RESULT
        ]
        assert core_ids == [m["tool_call_id"] for m in ours if m["role"] == "tool" and m["content"] == CLEARED_RESULT]
        assert len(core_ids) == max(0, 6 - keep)

    def test_the_peer_triggers_at_autos_budget_and_clears_at_least_its_quantum(self) -> None:
        window = 8000
        budget, quantum = prompt_budget(window), auto_quantum(window)
        assert (budget, quantum) == (5840, 1753)  # 8000 - 2000 reserve - 160 margin; 30% of it (the watermark 0.7)
        peer = clear_tool_uses_peer("gpt-4o", window)
        small = [system(), user(), *tool_step(300), *tool_step(300), *tool_step(300), *tool_step(300)]
        small += [user(text(budget - COUNT(small) + 10))]  # just over the budget: clearing one result frees ~300
        assert COUNT(small) > budget
        assert peer(small) is small
        big = [system(), user(), *tool_step(quantum + 100), *[m for _ in range(3) for m in tool_step(200)]]
        big += [user(text(budget - COUNT(big) + 10))]
        assert _results(peer(big)) == [CLEARED_RESULT, *_results(big)[1:]]


class TestLiteLLMPolyfill:
    def test_every_request_over_the_trigger_is_cleared_but_the_last_n(self) -> None:
        """No clear_at_least: every request past the trigger clears all but the last 3 results, however little."""
        session = agent_session(10, 60)
        trigger = COUNT(session[:8])
        cleared_requests = 0
        for request in requests_of(session):
            edited = litellm_polyfill(request, count=COUNT, trigger=trigger)
            uses = len(_ids(request))
            if COUNT(request) <= trigger or uses <= 3:
                assert edited is request
                continue
            cleared_requests += 1
            assert _results(edited) == [POLYFILL_PLACEHOLDER] * (uses - 3) + _results(request)[uses - 3 :]
            # Anthropic's semantics with a clear_at_least above what one request frees would clear none of them.
            assert clear_tool_uses(request, ClearToolUses(trigger=trigger, clear_at_least=10**6), COUNT) is request
        assert cleared_requests >= 4

    def test_never_clears_the_latest_tool_result(self) -> None:
        messages = agent_session(4, 60)
        assert _results(litellm_polyfill(messages, count=COUNT, trigger=0, keep=0)) == [
            *[POLYFILL_PLACEHOLDER] * 3,
            _results(messages)[-1],
        ]


class TestLangChainTrim:
    def test_keeps_the_system_prompt_and_a_suffix_that_starts_on_a_user_turn(self) -> None:
        pytest.importorskip("langchain_core")
        messages = chat_session(12, 200)
        window = 2000
        trimmed = BASELINES["langchain_trim"]("gpt-4o", window)(messages)

        assert trimmed[0] is messages[0]
        rest = trimmed[1:]
        assert rest
        assert rest == messages[len(messages) - len(rest) :]
        assert all(a is b for a, b in zip(rest, messages[len(messages) - len(rest) :], strict=True))
        assert rest[0]["role"] == "user"
        assert COUNT(trimmed) <= prompt_budget(window) < COUNT([trimmed[0], *messages[-len(rest) - 2 :]])

    def test_an_agent_session_with_one_task_keeps_only_the_system_prompt(self) -> None:
        """start_on="human" with the task as the only user message: once the task does not fit, nothing else does."""
        pytest.importorskip("langchain_core")
        messages = agent_session(20, 300)
        assert BASELINES["langchain_trim"]("gpt-4o", 4000)(messages) == [messages[0]]

    def test_the_replay_counts_requests_sent_without_their_newest_message(self) -> None:
        """Once LangChain sends the system prompt alone, the request to answer is gone: counted, unlike auto."""
        pytest.importorskip("langchain_core")
        requests = list(requests_of(agent_session(20, 300)))
        dropped = {}
        for name in ("auto", "langchain_trim"):
            rows = replay_session(
                Session("s", requests), strategy_for(name, "gpt-4o", 4000), model="gpt-4o", window=4000
            )
            dropped[name] = sum(row.newest_dropped for row in rows)
        assert dropped["auto"] == 0
        assert dropped["langchain_trim"] > 0

    def test_without_langchain_core_the_peer_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "langchain_core.messages", None)
        with pytest.raises(RuntimeError, match=r"pip install langchain-core .*dev extra") as error:
            langchain_peer.langchain_trim_peer("gpt-4o", 8000)
        assert str(error.value) == langchain_peer.MISSING


class TestPrices:
    def test_openai_reads_reused_tokens_at_the_cache_price_and_re_prefills_at_the_input_price(self) -> None:
        entry = litellm.model_cost["gpt-4o"]
        assert entry["cache_read_input_token_cost"] < entry["input_cost_per_token"]
        assert entry.get("cache_creation_input_token_cost") is None

        prices = prices_for("gpt-4o")

        assert (prices.input, prices.reused, prices.reprefilled) == pytest.approx(
            (entry["input_cost_per_token"], entry["cache_read_input_token_cost"], entry["input_cost_per_token"])
        )
        assert prices.cost(reused=1_000_000, reprefilled=1_000_000) == pytest.approx(3.75)
        assert "gpt-4o" in prices.source
        assert "cache read, model map" in prices.source

    def test_anthropic_writes_re_prefilled_tokens_to_the_cache_at_the_creation_price(self) -> None:
        model = "claude-sonnet-4-5"  # claude-3-5-sonnet-20241022 is not in LiteLLM 1.108.5's local map
        entry = litellm.model_cost[model]
        assert (
            entry["cache_creation_input_token_cost"]
            > entry["input_cost_per_token"]
            > entry["cache_read_input_token_cost"]
        )

        prices = prices_for(f"anthropic/{model}")

        assert (prices.reused, prices.reprefilled) == pytest.approx(
            (entry["cache_read_input_token_cost"], entry["cache_creation_input_token_cost"])
        )
        assert "cache write, model map" in prices.source

    def test_a_model_without_cache_prices_pays_the_input_price_for_everything(self) -> None:
        entry = litellm.model_cost["gpt-4"]
        assert entry.get("cache_read_input_token_cost") is None
        prices = prices_for("gpt-4")
        assert prices.reused == prices.reprefilled == prices.input == entry["input_cost_per_token"]
        assert "no cache-read price" in prices.source

    def test_flags_override_the_map_and_unknown_models_get_a_stated_fallback(self) -> None:
        flat = prices_for("gpt-4o", per_mtok=10, cached_share=0.1)
        assert (flat.input, flat.reused, flat.reprefilled) == pytest.approx((10e-6, 1e-6, 10e-6))
        kept_ratio = prices_for("claude-sonnet-4-5", per_mtok=10)
        assert (kept_ratio.reused, kept_ratio.reprefilled) == pytest.approx((1e-6, 12.5e-6))
        unknown = prices_for("no-such-model-anywhere")
        assert unknown.reused == unknown.reprefilled == unknown.input == FALLBACK_PER_TOKEN
        assert "assumed" in unknown.source


def test_needless_reprefill_counts_what_was_sent_again_without_being_new() -> None:
    """A strategy that breaks the prefix re-prefills old tokens (needless); one that keeps it, only the new."""
    session = agent_session(14, 200)
    requests = list(requests_of(session))
    window = 4000
    results = {}
    for name in ("auto", "masking"):
        totals = Totals()
        rows = replay_session(
            Session("s", requests), strategy_for(name, "gpt-4o", window), model="gpt-4o", window=window
        )
        totals.add_session(rows, window)
        results[name] = totals.summary(prices_for("gpt-4o"))
        for row in rows:
            assert 0 <= max(0, row.tokens_after - row.shared - row.new) <= row.tokens_after - row.shared
        assert rows[0].new == rows[0].tokens_before  # the first request is all new
    # Masking moves its frontier every request past the 10th observation: each one re-prefills old observations.
    assert results["masking"]["needless_reprefill"] > 0
    assert results["masking"]["needless_per_new"] > 0
    for summary in results.values():
        assert summary["needless_reprefill"] <= summary["reprefilled_tokens"]
        assert summary["input_cost"] > 0


def _row(request: int, sent: int, *, shared: int, new: int) -> Row:
    return Row(
        session="s",
        request=request,
        messages=2 * request,
        tokens_before=1000 * request,
        tokens_after=sent,
        action="trimmed",
        elided=0,
        dropped=0,
        shared=shared,
        new=new,
        overflow=False,
        invalid=False,
        ms=0.1,
    )


def test_needless_per_new_leaves_out_each_sessions_first_request() -> None:
    """Needless = sent - reused - new per request; per new token only after the first request of a session."""
    totals = Totals()
    totals.add_session([_row(1, 1000, shared=0, new=1000), _row(2, 1500, shared=200, new=300)], 4000)

    summary = totals.summary(prices_for("gpt-4o", per_mtok=1, cached_share=0.5))

    assert summary["needless_reprefill"] == 1000
    assert summary["needless_per_new"] == pytest.approx(1000 / 300, abs=1e-4)
    assert summary["input_cost"] == pytest.approx((2300 + 200 * 0.5) / 1_000_000)
