"""Once-per-request records: what covers what."""

from __future__ import annotations

from litellm_budget._once import DoneFits, FitRecord


class TestDoneFits:
    def test_a_smaller_window_fit_covers_a_bigger_window(self) -> None:
        """Messages that fit 8k fit 16k too; not the other way round."""
        done = DoneFits()
        done.remember(["call"], FitRecord(8000, "auto", 42, 0))

        assert done.covered(["call"], FitRecord(16_000, "auto", 42, 0))
        assert done.covered(["call"], FitRecord(0, "auto", 42, 0))
        assert not done.covered(["call"], FitRecord(4000, "auto", 42, 0))

    def test_other_messages_policy_or_keys_are_not_covered(self) -> None:
        """A different shape, policy, max_tokens or request is new work."""
        done = DoneFits()
        done.remember(["call", 7], FitRecord(8000, "auto", 42, 0))

        assert done.covered([7], FitRecord(8000, "auto", 42, 0))
        assert not done.covered(["call"], FitRecord(8000, "auto", 43, 0))
        assert not done.covered(["call"], FitRecord(8000, "plan", 42, 0))
        assert not done.covered(["call"], FitRecord(8000, "auto", 42, 1))
        assert not done.covered(["other"], FitRecord(8000, "auto", 42, 0))
