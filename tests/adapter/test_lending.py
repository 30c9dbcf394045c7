"""Caller lists trimmed in place for the Router's window check, and given back by request id."""

from __future__ import annotations

from typing import Any

from litellm_budget.adapter.lending import Lending, Lent
from litellm_budget.adapter.once import record_of
from litellm_budget.core.report import BudgetReport

REPORT = BudgetReport(model="gpt-4o", policy="auto", action="trimmed", window=4000)


def _lent(lending: Lending, call_id: str) -> tuple[list[Any], list[Any]]:
    caller: list[Any] = [{"role": "user", "content": "long " * 50}]
    original = list(caller)
    fitted = [{"role": "user", "content": "short"}]
    lent = Lent(
        caller=caller,
        original=original,
        fitted_input=record_of(4000, "auto", original, None),
        output=record_of(4000, "auto", fitted, None),
        report=REPORT,
    )
    lending.lend(call_id, fitted, lent)
    return caller, original


class TestLending:
    def test_lending_trims_the_callers_list_in_place(self) -> None:
        """The Router's window check sees the caller's own list, trimmed."""
        lending = Lending()

        caller, original = _lent(lending, "call-1")

        assert caller == [{"role": "user", "content": "short"}]
        assert caller != original

    def test_the_same_request_gets_its_list_back_and_the_report(self) -> None:
        """The deployment hook of the request restores the caller's list and gets the fit's report."""
        lending = Lending()
        caller, original = _lent(lending, "call-1")
        copy_sent = list(caller)

        lent = lending.give_back("call-1", copy_sent, record_of(4000, "auto", copy_sent, None))

        assert lent is not None
        assert lent.report == REPORT
        assert caller == original

    def test_another_request_never_takes_a_stale_entry(self) -> None:
        """A record left by a failed request is found only by its own call id."""
        lending = Lending()
        caller, _ = _lent(lending, "call-1")
        trimmed = list(caller)

        taken = lending.give_back("call-2", trimmed, record_of(4000, "auto", trimmed, None))

        assert taken is None
        assert caller == trimmed

    def test_a_smaller_window_is_fitted_again(self) -> None:
        """Messages trimmed for 4k are not enough for a 2k deployment: the list comes back, the hook refits."""
        lending = Lending()
        caller, original = _lent(lending, "call-1")
        copy_sent = list(caller)

        lent = lending.give_back("call-1", copy_sent, record_of(2000, "auto", copy_sent, None))

        assert lent is None
        assert caller == original

    def test_without_a_call_id_nothing_is_given_back(self) -> None:
        """An empty id matches nothing."""
        lending = Lending()
        caller, _ = _lent(lending, "")

        assert lending.give_back("", list(caller), record_of(4000, "auto", caller, None)) is None
