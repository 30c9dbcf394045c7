"""apply_valid: the valid part of an override applied, each wrong key named with its value and why."""

from __future__ import annotations

from typing import Any

import pytest

from litellm_budget import BudgetSettings
from litellm_budget.core.budget import SHOWN_CHARS, SettingProblem, apply_valid, closest_setting


def _described(overrides: object, base: BudgetSettings | None = None) -> list[str]:
    return [
        problem.describe("model_info.litellm_budget") for problem in apply_valid(base or BudgetSettings(), overrides)[1]
    ]


class TestApplyValid:
    def test_valid_overrides_are_what_updated_makes(self) -> None:
        """Nothing wrong: the same settings as ``updated``, no problems."""
        overrides = {"policy": "plan", "watermark": 1 / 2, "calibration_bounds": [0.9, 1.5]}

        settings, problems = apply_valid(BudgetSettings(), overrides)

        assert settings == BudgetSettings().updated(overrides)
        assert problems == ()

    def test_a_typo_is_named_with_its_value_and_the_setting_it_resembles(self) -> None:
        """``polcy: plan`` says which key, which value, and that ``policy`` was probably meant."""
        assert _described({"polcy": "plan"}) == [
            "model_info.litellm_budget.polcy = 'plan': is not a setting (did you mean 'policy'?)"
        ]
        assert closest_setting("xyzzy") is None

    @pytest.mark.parametrize(
        ("overrides", "reason"),
        [
            ({"policy": "planx"}, "must be one of ['auto', 'elide', 'plan', 'summarize']"),
            ({"watermark": "0.7"}, "must be a number like 0.7, not str"),
            ({"fail_closed": 1}, "must be true or false, not int"),
            ({"default_window": "4k"}, "must be a positive integer or null, not str"),
            ({"protected_tail": -1}, "must be an int >= 0"),
            ({"calibration_bounds": ["a", "b"]}, "must be a pair of numbers like [0.8, 2.0], not list"),
            ({"token_ratios": {"gpt-4o": "x"}}, "must be positive ratios"),
        ],
        ids=["policy", "float", "bool", "window", "tail", "bounds", "ratios"],
    )
    def test_a_bad_value_says_what_it_must_be(self, overrides: dict[str, Any], reason: str) -> None:
        """Each bad value is named with what the setting takes."""
        settings, problems = apply_valid(BudgetSettings(), overrides)

        assert settings == BudgetSettings()
        assert [problem.reason for problem in problems] == [reason]

    def test_the_valid_keys_apply_and_the_wrong_ones_are_left_out(self) -> None:
        """A bad policy beside a good tail: the tail applies, the policy stays what it was."""
        settings, problems = apply_valid(BudgetSettings(policy="elide"), {"policy": "planx", "protected_tail": 4})

        assert (settings.policy, settings.protected_tail) == ("elide", 4)
        assert [problem.key for problem in problems] == ["policy"]

    def test_keys_valid_only_together_are_taken_in_any_order(self) -> None:
        """A floor above the default cap is valid with the new cap given beside it."""
        settings, problems = apply_valid(BudgetSettings(), {"reserve_floor": 10_000, "reserve_cap": 20_000, "x": 1})

        assert (settings.reserve_floor, settings.reserve_cap) == (10_000, 20_000)
        assert [problem.key for problem in problems] == ["x"]

    def test_a_key_that_breaks_another_names_both(self) -> None:
        """A cap under the floor is refused, saying the floor is what it breaks."""
        assert _described({"reserve_cap": 100}) == [
            "model_info.litellm_budget.reserve_cap = 100: makes reserve_floor invalid "
            "(reserve_floor must be between 0 and reserve_cap)"
        ]

    def test_not_a_mapping(self) -> None:
        """``litellm_budget: plan`` is named as the mapping it should be."""
        assert _described("plan") == ["model_info.litellm_budget = 'plan': must be a mapping of settings"]

    def test_long_values_are_shortened(self) -> None:
        """A value is shown, never more than SHOWN_CHARS of it (a request's metadata may hold anything)."""
        (problem,) = apply_valid(BudgetSettings(), {"policy": "x" * 10_000})[1]

        assert len(problem.value) == SHOWN_CHARS
        assert problem.value.endswith("...")
        assert isinstance(problem, SettingProblem)
