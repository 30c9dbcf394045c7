"""BudgetSettings: defaults, validation and overrides read from YAML or JSON."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from litellm_budget import BudgetSettings
from litellm_budget.core.wording import shares


class TestSettings:
    def test_documented_defaults(self) -> None:
        """The defaults are the documented ones."""
        settings = BudgetSettings()

        assert (settings.policy, settings.protected_tail, settings.elide_min_tokens) == ("auto", 8, None)
        assert settings.marker_placement == "user_note"
        assert (settings.watermark, settings.safety_margin) == (0.7, 0.02)
        assert (settings.elide_step_text_min_tokens, settings.digest_chars, settings.digest_share) == (150, 160, None)
        assert (settings.names_share, settings.names_per_step, settings.stale_reads) == (None, 12, False)
        assert (shares(settings), shares(BudgetSettings(policy="plan"))) == ((0.11, 0.08), (0.15, 0.02))
        assert shares(BudgetSettings(policy="plan", names_share=0.05)) == (0.15, 0.05)
        assert (settings.outline_chars, settings.text_names) == (None, None)
        assert (settings.reserve_ratio, settings.reserve_floor, settings.reserve_cap) == (0.25, 256, 8192)
        assert settings.fail_closed is False
        assert settings.allow_request_overrides is False

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"policy": "nope"},
            {"watermark": 1.0},
            {"protected_tail": -1},
            {"default_window": 0},
            {"token_ratios": {"m": 0}},
            {"outline_chars": -1},
            {"text_names": -1},
        ],
        ids=["policy", "watermark", "tail", "window", "ratio", "outline", "text_names"],
    )
    def test_invalid_values_name_the_field(self, kwargs: dict[str, Any]) -> None:
        """A bad value raises ValueError naming the field."""
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            BudgetSettings(**kwargs)

    def test_updated_from_yaml_like_values(self) -> None:
        """Overrides accept ints for floats and lists for pairs; the original is unchanged."""
        base = BudgetSettings()

        updated = base.updated(
            {"policy": "plan", "watermark": 1 / 2, "default_window": 4096, "calibration_bounds": [0.9, 1.5]}
        )

        assert (updated.policy, updated.watermark, updated.default_window) == ("plan", 0.5, 4096)
        assert updated.calibration_bounds == (0.9, 1.5)
        assert base.policy == "auto"

    @pytest.mark.parametrize(
        "name", [f.name for f in dataclasses.fields(BudgetSettings) if "int | None" in str(f.type)]
    )
    def test_a_setting_that_may_be_null_takes_an_int_from_config(self, name: str) -> None:
        """A default of ``None`` does not make the setting refuse the ints it takes (``outline_chars`` once did)."""
        assert getattr(BudgetSettings().updated({name: 300}), name) == 300
        assert getattr(BudgetSettings().updated({name: None}), name) is None
        with pytest.raises(ValueError, match=name):
            BudgetSettings().updated({name: "300"})

    @pytest.mark.parametrize("name", ["digest_share", "names_share"])
    def test_a_share_that_may_be_null_takes_a_number_from_config(self, name: str) -> None:
        """``None`` is the policy's own share; an int stands in for a float, as for any float setting."""
        assert getattr(BudgetSettings().updated({name: 0}), name) == 0.0
        assert isinstance(getattr(BudgetSettings().updated({name: 0}), name), float)
        assert getattr(BudgetSettings().updated({name: 0.15}), name) == 0.15
        assert getattr(BudgetSettings().updated({name: None}), name) is None
        with pytest.raises(ValueError, match=name):
            BudgetSettings().updated({name: "0.1"})
        with pytest.raises(ValueError, match=name):
            BudgetSettings().updated({name: 0.6})

    @pytest.mark.parametrize("overrides", [{"nope": 1}, {"protected_tail": "8"}, {"fail_closed": 1}])
    def test_updated_rejects_unknown_keys_and_wrong_types(self, overrides: dict[str, Any]) -> None:
        """Unknown keys and wrong types are refused with a clear message."""
        with pytest.raises(ValueError, match="litellm_budget setting"):
            BudgetSettings().updated(overrides)

    def test_ratio_by_full_or_bare_name(self) -> None:
        """Token ratios are looked up by the model's full name, then without its provider."""
        settings = BudgetSettings(token_ratios={"claude-sonnet-4-5": 1.2})

        assert settings.ratio_for("anthropic/claude-sonnet-4-5") == 1.2
        assert settings.ratio_for("gpt-4o") == 1.0
