"""Caller lists trimmed in place for the Router's window check, and given back by request id."""

from __future__ import annotations

from typing import Any

from litellm_budget.adapter.lending import Lending
from litellm_budget.adapter.once import record_of


def _lent(lending: Lending, call_id: str) -> tuple[list[Any], list[Any]]:
    caller: list[Any] = [{"role": "user", "content": "long " * 50}]
    original = list(caller)
    fitted = [{"role": "user", "content": "short"}]
    lending.lend(call_id, caller, fitted, record_of(4000, "auto", fitted, None))
    return caller, original


class TestLending:
    def test_the_same_request_gets_its_list_back(self) -> None:
        """The deployment hook of the request restores the caller's list and skips the refit."""
        lending = Lending()
        caller, original = _lent(lending, "call-1")
        copy_sent = list(caller)

        skipped = lending.give_back("call-1", copy_sent, record_of(4000, "auto", copy_sent, None))

        assert skipped
        assert caller == original

    def test_another_request_never_takes_a_stale_entry(self) -> None:
        """A record left by a failed request is found only by its own call id."""
        lending = Lending()
        caller, _ = _lent(lending, "call-1")
        trimmed = list(caller)

        taken = lending.give_back("call-2", trimmed, record_of(4000, "auto", trimmed, None))

        assert not taken
        assert caller == trimmed

    def test_a_smaller_window_is_fitted_again(self) -> None:
        """Messages trimmed for 4k are not enough for a 2k deployment: the hook fits again."""
        lending = Lending()
        caller, original = _lent(lending, "call-1")
        copy_sent = list(caller)

        skipped = lending.give_back("call-1", copy_sent, record_of(2000, "auto", copy_sent, None))

        assert not skipped
        assert caller == original

    def test_without_a_call_id_nothing_is_given_back(self) -> None:
        """An empty id matches nothing."""
        lending = Lending()
        caller, _ = _lent(lending, "")

        assert not lending.give_back("", list(caller), record_of(4000, "auto", caller, None))
