"""The elide policy: quantized elision of old bulky tool and assistant outputs."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from litellm_budget import BudgetSettings, fit
from litellm_budget.core import parse_ranges
from litellm_budget.core.budget import limits_for
from litellm_budget.core.counting import counter_for
from litellm_budget.core.policies import ELIDE_REFIT_GRAIN, POLICIES
from litellm_budget.core.wording import TEXT_ELIDED, TOOL_ELIDED
from litellm_budget.exceptions import BudgetExceededError
from tests.support.builders import agent_session, assistant, system, text, tokens_of, tool_step, user

ELIDE = BudgetSettings(policy="elide")
COUNTER = counter_for("gpt-4o")


def four_huge_results() -> list[dict[str, Any]]:
    """System, task, four steps with 3000-token results, four small steps: 19 messages."""
    messages = [system(), user("Investigate.")]
    for seed in range(4):
        messages += tool_step(3000, seed=seed)
    for seed in range(4):
        messages += tool_step(50, seed=seed)
    return [*messages, user("What did you find?")]


class TestElide:
    def test_under_budget_untouched_even_with_huge_outputs(self) -> None:
        """A request under budget is forwarded as is, however bulky its tool outputs."""
        messages = four_huge_results()

        fitted = fit(messages, model="gpt-4o", window=100_000, settings=ELIDE)

        assert fitted.messages == messages
        assert fitted.report.action == "passthrough"
        assert fitted.report.first_changed_index is None

    def test_no_messages_untouched(self) -> None:
        """An empty request passes through."""
        fitted = fit([], model="gpt-4o", window=1000, settings=ELIDE)

        assert fitted.messages == []
        assert fitted.report.action == "passthrough"

    def test_oldest_huge_results_elided_down_to_watermark(self) -> None:
        """Over budget, the oldest bulky results go first and the result lands at the watermark or below."""
        messages = four_huge_results()
        window = tokens_of(messages) - 2000

        fitted = fit(messages, model="gpt-4o", window=window, settings=ELIDE)

        report = fitted.report
        assert report.action == "trimmed"
        assert report.tokens_after <= report.watermark
        elided = parse_ranges(report.elided_at)
        assert elided == [3, 5, 7, 9][: len(elided)] != []
        assert len(elided) < 4
        assert fitted.messages[3]["content"].startswith(TOOL_ELIDED)
        newest = [3, 5, 7, 9][len(elided)]
        assert fitted.messages[newest] is messages[newest]
        assert report.tokens_after == tokens_of(fitted.messages)

    def test_assistant_content_eligible_system_never(self) -> None:
        """Bulky assistant text is elided; a bulky system prompt never is."""
        messages = [system(text(3000)), user("Go."), assistant(text(3000, 1)), user("More."), assistant(text(3000, 2))]
        messages += [user(f"q{i}") if i % 2 == 0 else assistant("short") for i in range(8)]
        window = tokens_of(messages) - 1500

        fitted = fit(messages, model="gpt-4o", window=window, settings=ELIDE)

        assert fitted.messages[0] is messages[0]
        assert fitted.messages[2]["content"].startswith(TEXT_ELIDED)

    def test_protected_tail_elided_only_under_pressure(self) -> None:
        """
        The last eight messages are elided only when the older outputs are not enough, and the
        final step never: what cannot fit without it is rejected.
        """
        messages = [system(), user("Go.")]
        for seed in range(6):
            messages += tool_step(2000, seed=seed)
        tail = range(len(messages) - 8, len(messages))

        roomy = fit(messages, model="gpt-4o", window=tokens_of(messages) - 3000, settings=ELIDE)
        tight = fit(messages, model="gpt-4o", window=tokens_of(messages) // 2, settings=ELIDE)

        assert not set(parse_ranges(roomy.report.elided_at)).intersection(tail)
        assert set(parse_ranges(tight.report.elided_at)).intersection(tail)
        assert tight.messages[-2:] == messages[-2:]
        assert tight.report.tokens_after <= tight.report.budget
        with pytest.raises(BudgetExceededError, match="context window"):
            fit(messages, model="gpt-4o", window=tokens_of(messages[-2:]) + 500, settings=ELIDE)

    def test_messages_under_threshold_never_elided(self) -> None:
        """Outputs at or under the threshold stay, even when the request is then rejected."""
        messages = [system(), user("Go.")]
        for seed in range(20):
            messages += tool_step(180, seed=seed)
        window = tokens_of(messages) - 500

        with pytest.raises(BudgetExceededError, match="context window"):
            fit(messages, model="gpt-4o", window=window, settings=ELIDE)

    def test_elide_takes_smaller_outputs_than_the_dropping_policies(self) -> None:
        """Dropping nothing, ``elide`` elides outputs of 400 tokens, which ``auto`` keeps whole."""
        messages = [system(), user("Go.")]
        for seed in range(20):
            messages += tool_step(400, seed=seed)
        window = tokens_of(messages) - 500

        elided = fit(messages, model="gpt-4o", window=window, settings=ELIDE).report
        auto = fit(messages, model="gpt-4o", window=window, settings=BudgetSettings(policy="auto")).report

        assert elided.action == "trimmed"
        assert parse_ranges(elided.elided_at)
        assert not parse_ranges(auto.elided_at)

    def test_tool_calls_survive_elision(self) -> None:
        """Elision swaps text only: tool_calls and tool_call_id are kept, so pairs stay valid."""
        messages = [*agent_session(8, 50), user("Done?")]
        messages[2]["content"] = text(2000, 9)

        fitted = fit(messages, model="gpt-4o", window=tokens_of(messages) - 1000, settings=ELIDE)

        assert fitted.messages[2]["content"].startswith(TEXT_ELIDED)
        assert fitted.messages[2]["tool_calls"] == messages[2]["tool_calls"]
        assert fitted.messages[3]["tool_call_id"] == messages[3]["tool_call_id"]

    def test_tool_outputs_go_before_an_older_assistant_text(self) -> None:
        """The agent's own words are elided only when the tool outputs before the tail are not enough."""
        messages = four_huge_results()
        messages[2]["content"] = text(2000, 9)

        fitted = fit(messages, model="gpt-4o", window=tokens_of(messages) - 3000, settings=ELIDE)
        more = fit(messages, model="gpt-4o", window=tokens_of(messages) - 13_000, settings=ELIDE)

        assert parse_ranges(fitted.report.elided_at) == [3, 5, 7]
        assert fitted.messages[2] is messages[2]
        assert parse_ranges(more.report.elided_at) == [2, 3, 5, 7, 9]

    @pytest.mark.parametrize(("state", "grain"), [(False, 1.0), (True, ELIDE_REFIT_GRAIN)])
    def test_savings_target_snaps_to_its_grain(self, state: bool, grain: float) -> None:
        """
        Elision stops at the first message whose saving reaches the target rounded up: to whole
        quanta without conversation state, to half a quantum with it (the kept edits hold still).
        """
        messages = agent_session(12, 700)
        before = tokens_of(messages)
        window = int(before * 0.9)
        settings = BudgetSettings(policy="elide", conversation_state=state)

        fitted = fit(messages, model="gpt-4o", window=window, settings=settings)

        limits = limits_for(window, None, settings, holds_reserve=POLICIES["elide"].holds_reserve)
        step = round(limits.quantum * grain)
        target = limits.target(before, grain=step)
        saved_each = [
            COUNTER.count_message(messages[i]) - COUNTER.count_message(fitted.messages[i]) for i in range(len(messages))
        ]
        elided = [i for i, s in enumerate(saved_each) if s > 0]
        assert target % step == 0
        assert target > before - limits.watermark
        assert sum(saved_each) >= target
        assert sum(saved_each) - saved_each[elided[-1]] < target

    def test_growing_conversation_is_cache_stable(self) -> None:
        """Over 30 turns the elided set holds within a band, outputs extend each other, and it changes rarely."""
        messages = agent_session(0)
        window = 16_000
        outputs: list[tuple[str, list[dict[str, Any]]]] = []
        for step in range(30):
            messages += tool_step(900, seed=step)
            fitted = fit(messages, model="gpt-4o", window=window, settings=ELIDE)
            outputs.append((fitted.report.elided_at, fitted.messages))

        changes = 0
        for (before_set, before), (after_set, after) in itertools.pairwise(outputs):
            if before_set == after_set:
                assert after[: len(before)] == before
            else:
                changes += 1
                assert set(before_set.split(",")) <= set(after_set.replace("-", ",").split(",")) or before_set == ""
        assert 0 < changes <= 10

    def test_list_content_text_elided_images_kept(self) -> None:
        """In list content, bulky text parts become the placeholder; images and short parts stay."""
        image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
        step = tool_step(10)
        step[1]["content"] = [{"type": "text", "text": text(3000)}, image, {"type": "text", "text": "short note"}]
        chatty = {
            "role": "tool",
            "tool_call_id": "x",
            "content": [{"type": "text", "text": text(150, i)} for i in range(20)],
        }
        chatty_step = tool_step(10)
        chatty_step[1] = {**chatty, "tool_call_id": chatty_step[1]["tool_call_id"]}
        messages = [system(), user("Look."), *step, *chatty_step, *agent_session(4, 100)[2:], user("Done?")]
        window = tokens_of(messages) - 1000

        fitted = fit(messages, model="gpt-4o", window=window, settings=ELIDE)

        parts = fitted.messages[3]["content"]
        assert parts[0]["type"] == "text"
        assert parts[0]["text"].startswith(TOOL_ELIDED)
        assert parts[1] == image
        assert parts[2] == {"type": "text", "text": "short note"}
        assert fitted.messages[5] == messages[5]

    def test_input_not_mutated(self) -> None:
        """The caller's list and dicts are left exactly as they were."""
        messages = four_huge_results()
        snapshot = copy.deepcopy(messages)

        fit(messages, model="gpt-4o", window=tokens_of(messages) - 2000, settings=ELIDE)

        assert messages == snapshot
