"""One record per call: which later sight of a call is skipped, refitted again or new."""

from __future__ import annotations

import dataclasses
from typing import Any

from litellm_budget.adapter.records.calls import Calls, call_id_of
from litellm_budget.adapter.records.fit_records import FitRecord, record_of
from litellm_budget.adapter.records.lending import Lent
from litellm_budget.core import BudgetReport

INPUT = FitRecord(8000, "auto", 41, 0)
OUTPUT = FitRecord(8000, "auto", 42, 0)
REPORT = BudgetReport(model="gpt-4o", policy="auto", action="trimmed", window=4000)


def _fitted(call_id: str = "call") -> Calls:
    calls = Calls()
    calls.fitted(call_id, INPUT, OUTPUT, REPORT)
    return calls


class TestFits:
    def test_only_a_fitted_output_is_skipped(self) -> None:
        """The fit's output needs no work at this or a bigger window; the input it came from does."""
        record = _fitted().get("call")

        assert record.already_fitted(OUTPUT)
        assert record.already_fitted(OUTPUT._replace(window=16_000))
        assert record.already_fitted(OUTPUT._replace(window=0))
        assert not record.already_fitted(OUTPUT._replace(window=4000))
        assert not record.already_fitted(INPUT)

    def test_the_same_input_at_the_same_window_was_reported(self) -> None:
        """A retry from the caller's messages is refitted, but it was already reported."""
        calls = _fitted()

        assert calls.get("call").already_reported(INPUT)
        assert not calls.get("call").already_reported(INPUT._replace(window=4000))
        assert not calls.get("other").already_reported(INPUT)

    def test_other_messages_policy_or_requests_are_new(self) -> None:
        """Different messages, policy, max_tokens or request are new work."""
        calls = _fitted()

        assert not calls.get("call").already_fitted(OUTPUT._replace(fingerprint=43))
        assert not calls.get("call").already_fitted(OUTPUT._replace(policy="plan"))
        assert not calls.get("call").already_fitted(OUTPUT._replace(max_tokens_hash=1))
        assert not calls.get("other").already_fitted(OUTPUT)

    def test_requests_without_a_call_id_are_not_remembered(self) -> None:
        """Without litellm_call_id nothing identifies the request, so nothing is skipped."""
        calls = _fitted("")

        assert not calls.get("").already_fitted(OUTPUT)
        assert calls.get("").served is None


class TestOutcomes:
    def test_a_fit_sent_is_what_the_call_served(self) -> None:
        """The headers of a call report its latest fit; a rejection clears it and is told once when re-sent."""
        calls = _fitted()
        assert calls.get("call").served == REPORT

        calls.refused("call", REPORT, "group")

        assert calls.get("call").served is None
        assert calls.resent_after_rejection("call") == (REPORT, "group")
        assert calls.resent_after_rejection("call") is None

    def test_a_rejection_served_since_is_not_a_resend(self) -> None:
        """A fallback that served the call after the rejection is no re-send past the hooks."""
        calls = Calls()
        calls.refused("call", REPORT, "group")
        calls.sent_as_it_came("call", REPORT)

        assert calls.resent_after_rejection("call") is None

    def test_client_edits_are_taken_once_and_an_empty_list_is_still_said(self) -> None:
        """Edits applied over two hooks add up; a call that applied none still answers ``applied_edits: []``."""
        calls = Calls()
        calls.record_edits("call", [{"type": "a"}])
        calls.record_edits("call", [{"type": "b"}])
        calls.record_edits("none", [])

        assert calls.take_edits("call") == [{"type": "a"}, {"type": "b"}]
        assert calls.take_edits("call") is None
        assert calls.take_edits("none") == []
        assert calls.take_edits("unknown") is None

    def test_one_bounded_store(self) -> None:
        """Every record lives in one store of a fixed size: the calls touched last are kept."""
        calls = Calls(max_calls=8)
        for number in range(20):
            calls.sent_as_it_came(f"call-{number}", REPORT)

        assert calls.get("call-19").served == REPORT
        assert calls.get("call-0").served is None


class TestCallId:
    def test_read_and_minted_in_one_place(self) -> None:
        """The call id is read as LiteLLM set it; minted (and set) only when asked and missing."""
        request: dict[str, Any] = {"litellm_call_id": "abc"}
        bare: dict[str, Any] = {"litellm_call_id": None}

        assert call_id_of(request) == call_id_of(request, mint=True) == "abc"
        assert call_id_of(bare) == ""
        minted = call_id_of(bare, mint=True)
        assert minted
        assert bare["litellm_call_id"] == minted == call_id_of(bare)


class TestTransitions:
    """Each transition changes the fields the hooks read; the record holds the list lent in place."""

    def test_a_fitted_call_serves_its_report(self) -> None:
        calls = _fitted()

        assert calls.get("call").served is REPORT
        assert calls.get("other").served is None
        assert calls.get("never seen") is calls.get("other")  # no record made for a call never fitted

    def test_a_count_left_for_later_is_served_exact_once_it_is_done(self) -> None:
        calls, bound = Calls(), dataclasses.replace(REPORT, tokens_exact=False)
        calls.fitted("call", INPUT, OUTPUT, bound)
        assert calls.get("call").served is bound

        exact = dataclasses.replace(REPORT, tokens_after=1234)
        calls.counted("call", REPORT, exact)  # not the report it sent: nothing changes
        assert calls.get("call").served is bound
        calls.counted("call", bound, exact)

        assert calls.get("call").served is exact

    def test_deferred_and_refused(self) -> None:
        calls = _fitted()
        calls.deferred("a", REPORT)
        calls.refused("call", REPORT, "group")

        assert calls.get("a").deferred is REPORT
        assert (calls.get("call").rejected, calls.get("call").served) == ((REPORT, "group"), None)

    def test_a_lent_list_is_its_calls_until_given_back(self) -> None:
        calls = Calls()
        caller, original, lent = _lent_list("long")

        calls.lend("call", list(lent.items), lent)

        assert calls.lent_of("call") is lent
        assert caller == [{"role": "user", "content": "short"}]
        assert calls.give_back("call") is lent
        assert caller == original
        assert calls.lent_of("call") is None

    def test_a_list_reclaimed_or_forgotten_leaves_its_record(self) -> None:
        calls = Calls()
        caller, original, lent = _lent_list("long")
        calls.lend("call", list(lent.items), lent)

        calls.reclaim(caller)

        assert caller == original
        assert calls.lent_of("call") is None


def _lent_list(text: str) -> tuple[list[Any], list[Any], Lent]:
    caller: list[Any] = [{"role": "user", "content": f"{text} " * 50}]
    original = list(caller)
    fitted = [{"role": "user", "content": "short"}]
    output = record_of(4000, "auto", fitted, None)
    lent = Lent(
        caller=caller,
        original=original,
        fitted_input=record_of(4000, "auto", original, None),
        output=output,
        report=REPORT,
        items=tuple(fitted),
    )
    return caller, original, lent
