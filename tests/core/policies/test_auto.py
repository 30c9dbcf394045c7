"""The auto policy: elide, then drop units, then cut; reject only what cannot fit."""

from __future__ import annotations

import pytest

from litellm_budget import BudgetSettings, fit
from litellm_budget.core.wording import TOOL_ELIDED
from tests.support.builders import agent_session, system, text, tokens_of, tool_step, user


class TestAuto:
    def test_elision_first(self) -> None:
        """When elision is enough, nothing is dropped."""
        messages = agent_session(12, 1500)
        window = int(tokens_of(messages) * 1.05)

        fitted = fit(messages, model="gpt-4o", window=window)

        assert fitted.report.elided > 0
        assert fitted.report.dropped_units == 0

    def test_drops_units_when_elision_is_not_enough(self) -> None:
        """A long run of small steps cannot be elided, so the oldest steps go, the task stays."""
        messages = agent_session(60, 400)

        fitted = fit(messages, model="gpt-4o", window=8000)

        assert fitted.report.dropped_units > 0
        assert fitted.messages[0] is messages[0]
        # The marker is a note at the end of the task: it keeps the task's tokens a cached prefix.
        assert fitted.messages[1]["content"].startswith(messages[1]["content"] + "\n\n[litellm_budget:")
        assert fitted.messages[-1] is messages[-1]
        assert fitted.report.tokens_after <= fitted.report.budget

    def test_oversized_tool_result_is_cut_to_fit(self) -> None:
        """One tool result bigger than the whole window is cut to fit, head and tail kept, with its note."""
        messages = [system(), user("Read the log."), *tool_step(50_000)]

        fitted = fit(messages, model="gpt-4o", window=16_000)

        result = fitted.messages[-1]["content"]
        original = messages[-1]["content"]
        assert fitted.report.action == "trimmed"
        assert fitted.report.cut_at == "3"
        assert result.startswith(original[:200])
        assert result.endswith(original[-200:])
        assert "the gateway cut this message" in result
        assert fitted.messages[-1]["tool_call_id"] == messages[-1]["tool_call_id"]
        assert fitted.report.tokens_after <= fitted.report.budget

    def test_a_message_of_many_text_parts_is_cut_as_one_text(self) -> None:
        """Short parts do not each get a note costing more than they do: one note, emptied parts gone, image kept."""
        image = {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}}
        parts = [
            {"type": "text", "text": text(30, seed=1)},
            {"type": "text", "text": text(30, seed=2)},
            image,
            {"type": "text", "text": text(3000, seed=3)},
            {"type": "text", "text": text(30, seed=4)},
        ]
        messages = [system(), {"role": "user", "content": parts}]

        fitted = fit(messages, model="gpt-4o", window=300, settings=BudgetSettings(image_tokens=10))

        sent = fitted.messages[-1]["content"]
        texts = [part["text"] for part in sent if part.get("type") == "text"]
        assert fitted.report.cut_at == "1"
        assert sum("the gateway cut this message" in t for t in texts) == 1
        assert all(texts)
        assert image in sent
        assert texts[0].startswith(parts[0]["text"][:50])
        assert texts[-1] == parts[-1]["text"]
        assert fitted.report.tokens_after <= fitted.report.budget

    def test_rejects_when_system_alone_overflows(self) -> None:
        """If the system messages alone overflow, nothing sensible fits: LiteLLM's error is raised."""
        import litellm

        messages = [system(text(20_000)), user("Hi")]

        with pytest.raises(litellm.ContextWindowExceededError) as caught:
            fit(messages, model="gpt-4o", window=8000)

        assert caught.value.report.action == "rejected"

    def test_heavy_tail_elided_before_more_drops(self) -> None:
        """Under pressure, bulky outputs inside the protected tail are elided (the final step never)."""
        messages = [system(), user("Go."), *tool_step(3000, seed=1), *tool_step(3000, seed=2), *tool_step(3000, seed=3)]

        fitted = fit(messages, model="gpt-4o", window=8000)

        assert fitted.messages[3]["content"].startswith(TOOL_ELIDED)
        assert fitted.messages[-1] is messages[-1]

    @pytest.mark.parametrize("policy", ["auto", "plan", "elide"])
    def test_fitting_twice_changes_nothing(self, policy: str) -> None:
        """A fitted request fits as it is: fitting it again passes it through."""
        messages = agent_session(30, 900)
        settings = BudgetSettings(policy=policy)  # type: ignore[arg-type]
        once = fit(messages, model="gpt-4o", window=20_000, settings=settings)

        twice = fit(once.messages, model="gpt-4o", window=20_000, max_tokens=once.max_tokens, settings=settings)

        assert twice.messages == once.messages
        assert twice.report.action == "passthrough"


class TestWhereAnElidingRefitLands:
    """
    With conversation state the remembered edits hold still by themselves, so a refit that only
    elides lands just under the watermark; whole quanta for a drop and without state.
    """

    @staticmethod
    def just_over(window: int = 16_000) -> tuple[list[dict[str, object]], int]:
        """Steps of one bulky output each, added until the total first passes the budget."""
        messages = agent_session(2, 600)
        while True:
            report = fit(messages, model="gpt-4o", window=window).report
            if report.tokens_before > report.budget:
                return messages, window
            messages = [*messages, *tool_step(600, seed=len(messages))]

    def test_with_state_it_lands_within_an_eighth_of_a_quantum_under_the_watermark(self) -> None:
        messages, window = self.just_over()

        report = fit(messages, model="gpt-4o", window=window).report

        assert report.dropped_units == 0
        assert report.elided > 0
        # Within an eighth of a quantum, less what the last output elided saved beyond it.
        assert report.watermark - report.quantum / 8 - 700 <= report.tokens_after <= report.watermark

    def test_without_state_it_saves_whole_quanta(self) -> None:
        messages, window = self.just_over()
        settings = BudgetSettings(conversation_state=False)

        report = fit(messages, model="gpt-4o", window=window, settings=settings).report

        assert report.dropped_units == 0
        # Just over the budget is a quantum and a bit over the watermark: two quanta go.
        assert report.tokens_after <= report.watermark - report.quantum + 700
