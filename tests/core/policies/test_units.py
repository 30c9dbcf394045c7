"""Layout: which messages form droppable units and which are pinned."""

from __future__ import annotations

from litellm_budget.core.policies import layout_of
from tests.support.builders import assistant, system, tool_step, user


class TestLayout:
    def test_turns_steps_and_pins(self) -> None:
        """History turns are whole, current-turn steps are separate, the final step and question are pinned."""
        messages = [system(), user("task"), *tool_step(5), user("more"), *tool_step(5), *tool_step(5)]
        # 0 S, 1 U, 2 A, 3 T, 4 U, 5 A, 6 T, 7 A, 8 T

        layout = layout_of(messages)

        assert layout.turns == ((1, 2, 3), (5, 6))
        assert layout.steps == ((2, 3), (5, 6))
        assert layout.pinned == frozenset({0, 4, 7, 8})
        assert layout.question == 4

    def test_stray_leading_assistant_is_its_own_unit(self) -> None:
        """An assistant before any user message opens no turn (and the reply a final question answers is pinned)."""
        layout = layout_of([system(), assistant("hi"), user("q1"), assistant("a1"), user("q2")])

        assert layout.turns == ((1,), (2,))
        assert layout.pinned == frozenset({0, 3, 4})

    def test_the_newest_step_before_a_final_question_is_pinned(self) -> None:
        """A request ending on a question keeps the step it follows, calls and results included."""
        messages = [system(), user("task"), *tool_step(5), user("more"), *tool_step(5), user("and?")]
        # 0 S, 1 U, 2 A, 3 T, 4 U, 5 A, 6 T, 7 U

        layout = layout_of(messages)

        assert layout.pinned == frozenset({0, 5, 6, 7})
        assert layout.steps == ((2, 3), (4,))
        assert layout.turns == ((1, 2, 3), (4,))

    def test_no_user_message_at_all(self) -> None:
        """Without a user message everything is the current turn, split into steps."""
        messages = [system(), *tool_step(5), *tool_step(5)]

        layout = layout_of(messages)

        assert layout.turns == ((1, 2),)
        assert layout.pinned == frozenset({0, 3, 4})

    def test_system_messages_in_the_middle_are_pinned(self) -> None:
        """A system message inside the history is never part of a unit."""
        messages = [user("a"), assistant("b"), system("note"), user("c"), assistant("d"), user("e")]

        layout = layout_of(messages)

        assert 2 in layout.pinned
        assert all(2 not in unit for unit in layout.turns)
