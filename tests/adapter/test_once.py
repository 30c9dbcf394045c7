"""Once-per-request records: which later sight of a request is skipped, refitted quietly, or new."""

from __future__ import annotations

from litellm_budget.adapter.once import DoneFits, FitRecord

INPUT = FitRecord(8000, "auto", 41, 0)
OUTPUT = FitRecord(8000, "auto", 42, 0)


class TestDoneFits:
    def test_only_a_fitted_output_is_skipped(self) -> None:
        """The fit's output needs no work at this or a bigger window; the input it came from does."""
        done = DoneFits()
        done.remember("call", INPUT, OUTPUT)

        assert done.already_fitted("call", OUTPUT)
        assert done.already_fitted("call", OUTPUT._replace(window=16_000))
        assert done.already_fitted("call", OUTPUT._replace(window=0))
        assert not done.already_fitted("call", OUTPUT._replace(window=4000))
        assert not done.already_fitted("call", INPUT)

    def test_the_same_input_at_the_same_window_was_reported(self) -> None:
        """A retry from the caller's messages is refitted, but it was already reported."""
        done = DoneFits()
        done.remember("call", INPUT, OUTPUT)

        assert done.already_reported("call", INPUT)
        assert not done.already_reported("call", INPUT._replace(window=4000))
        assert not done.already_reported("other", INPUT)

    def test_other_messages_policy_or_requests_are_new(self) -> None:
        """Different messages, policy, max_tokens or request are new work."""
        done = DoneFits()
        done.remember("call", INPUT, OUTPUT)

        assert not done.already_fitted("call", OUTPUT._replace(fingerprint=43))
        assert not done.already_fitted("call", OUTPUT._replace(policy="plan"))
        assert not done.already_fitted("call", OUTPUT._replace(max_tokens_hash=1))
        assert not done.already_fitted("other", OUTPUT)

    def test_requests_without_a_call_id_are_not_remembered(self) -> None:
        """Without litellm_call_id nothing identifies the request, so nothing is skipped."""
        done = DoneFits()
        done.remember("", INPUT, OUTPUT)

        assert not done.already_fitted("", OUTPUT)
