"""
The callers' lists the Router's filter hook trims in place: given back whole by the same call's
deployment hook, found by the call id, or by the trace id where LiteLLM (1.110) copies the kwargs.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from structlog.testing import capture_logs

from litellm_budget import ContextBudget
from litellm_budget.adapter.records.fit_records import fingerprint, record_of
from litellm_budget.adapter.records.lending import Lent
from litellm_budget.adapter.records.lending import LentLists as Lenders
from litellm_budget.core import BudgetReport
from tests.support.builders import agent_session, deployment, tokens_of

REPORT = BudgetReport(model="gpt-4o", policy="auto", action="trimmed", window=4000)


def _lend(lenders: Lenders, call_id: str, trace_id: str = "", text: str = "long") -> tuple[list[Any], list[Any]]:
    caller: list[Any] = [{"role": "user", "content": f"{text} " * 50}]
    original = list(caller)
    fitted = [{"role": "user", "content": "short"}]
    lent = Lent(
        caller=caller,
        original=original,
        fitted_input=record_of(4000, "auto", original, None),
        output=record_of(4000, "auto", fitted, None),
        report=REPORT,
        trace_id=trace_id,
        items=tuple(fitted),
    )
    lenders.lend(call_id, fitted, lent)
    return caller, original


class TestLenders:
    def test_lending_trims_the_callers_list_in_place(self) -> None:
        """The Router's window check sees the caller's own list, trimmed."""
        caller, original = _lend(Lenders(), "call-1")

        assert caller == [{"role": "user", "content": "short"}]
        assert caller != original

    def test_the_same_call_gets_its_list_back_and_the_report(self) -> None:
        lenders = Lenders()
        caller, original = _lend(lenders, "call-1")

        lent = lenders.give_back("call-1")

        assert lent is not None
        assert lent.report == REPORT
        assert caller == original
        assert lenders.of("call-1") is None
        assert lenders.give_back("call-1") is None

    def test_another_call_never_takes_it(self) -> None:
        """A list left by a failed call is found only by its own call, never by the next one."""
        lenders = Lenders()
        caller, _ = _lend(lenders, "call-1", trace_id="t-1")
        trimmed = list(caller)

        lenders.adopt("call-2", {"litellm_trace_id": "t-2"}, trimmed)

        assert lenders.give_back("call-2") is None
        assert caller == trimmed

    def test_without_a_call_id_nothing_is_lent(self) -> None:
        lenders = Lenders()
        caller, original = _lend(lenders, "")

        assert caller == original
        assert lenders.give_back("") is None

    def test_at_most_max_lent_lists_are_kept_and_the_oldest_goes_first(self) -> None:
        lenders = Lenders(max_lent=2)
        for number in range(3):
            _lend(lenders, f"call-{number}", trace_id=f"t-{number}")

        assert lenders.of("call-0") is None
        assert lenders.of("call-1") is not None
        assert lenders.of("call-2") is not None
        lenders.adopt("other", {"litellm_trace_id": "t-0"}, [{"role": "user", "content": "short"}])
        assert lenders.of("other") is None

    def test_another_id_of_the_same_call_adopts_it_by_trace_id_and_the_trimmed_messages(self) -> None:
        """LiteLLM 1.110 hands the filter hook a copy of the kwargs: its call id is lost, the trace id is not."""
        lenders = Lenders()
        caller, original = _lend(lenders, "minted-by-the-filter-hook", trace_id="t-1")

        lenders.adopt("the-deployment-hooks-id", {"litellm_trace_id": "t-1"}, copy.deepcopy(caller))
        lent = lenders.give_back("the-deployment-hooks-id")

        assert lent is not None
        assert caller == original
        assert lenders.of("minted-by-the-filter-hook") is None

    def test_a_shared_trace_id_adopts_only_the_list_with_these_trimmed_messages(self) -> None:
        """A caller's own trace id may group many calls: the trimmed messages tell them apart."""
        lenders = Lenders()
        first, _ = _lend(lenders, "a", trace_id="session", text="first")
        other_fit = [{"role": "user", "content": "a different trim"}]
        second: list[Any] = [{"role": "user", "content": "second " * 50}]
        lent = Lent(
            caller=second,
            original=list(second),
            fitted_input=record_of(4000, "auto", second, None),
            output=record_of(4000, "auto", other_fit, None),
            report=REPORT,
            trace_id="session",
        )
        lenders.lend("b", other_fit, lent)

        lenders.adopt("deployment-of-b", {"litellm_trace_id": "session"}, copy.deepcopy(other_fit))
        lenders.adopt("no-match", {"litellm_trace_id": "session"}, [{"role": "user", "content": "neither"}])

        assert lenders.of("deployment-of-b") is lent
        assert lenders.of("no-match") is None
        assert lenders.of("a") is not None
        assert first == [{"role": "user", "content": "short"}]

    def test_a_list_still_lent_and_as_lent_is_given_back_when_seen_again(self) -> None:
        """Its call failed between the hooks; the caller's next call (a retry) gets its own list first."""
        lenders = Lenders()
        caller, original = _lend(lenders, "failed")

        lenders.reclaim(list(caller))  # an equal list is not the caller's
        assert caller != original
        lenders.reclaim(caller)

        assert caller == original
        assert lenders.of("failed") is None

    def test_a_list_the_caller_changed_since_is_left_as_it_is(self) -> None:
        lenders = Lenders()
        caller, _ = _lend(lenders, "failed")
        caller.append({"role": "user", "content": "the caller's own next turn"})
        changed = list(caller)

        lenders.reclaim(caller)

        assert caller == changed
        assert lenders.of("failed") is None

    def test_the_bound_gives_back_what_it_forgets_unless_the_caller_changed_it(self) -> None:
        lenders = Lenders(max_lent=1)
        kept, kept_original = _lend(lenders, "first")
        _lend(lenders, "second")
        changed, _ = _lend(lenders, "third")
        changed.append({"role": "user", "content": "more"})
        snapshot = list(changed)
        _lend(lenders, "fourth")

        assert kept == kept_original
        assert changed == snapshot

    def test_a_call_holding_its_own_list_adopts_nothing(self) -> None:
        lenders = Lenders()
        _lend(lenders, "a", trace_id="t")
        mine = lenders.of("a")
        _lend(lenders, "b", trace_id="t")

        lenders.adopt("a", {"litellm_trace_id": "t"}, [{"role": "user", "content": "short"}])

        assert lenders.of("a") is mine
        assert lenders.of("b") is not None


def _deployment_kwargs(messages: list[Any], window: int, call_id: str, trace_id: str) -> dict[str, Any]:
    """What LiteLLM hands the deployment hook: a copy of the (lent) messages, its own ids."""
    return {
        "model": "openai/gpt-4o",
        "messages": copy.deepcopy(messages),
        "model_info": {"max_input_tokens": window},
        "litellm_call_id": call_id,
        "litellm_trace_id": trace_id,
        "metadata": {},
    }


@pytest.mark.asyncio
class TestThroughTheHooks:
    """The filter hook handed a copy of the kwargs, as LiteLLM 1.110's Router does, then the deployment hook."""

    async def test_the_list_comes_back_and_the_trim_is_reported_once(self) -> None:
        budget, messages = ContextBudget(), agent_session(30, 900)
        snapshot = copy.deepcopy(messages)

        with capture_logs() as logs:
            small = deployment("group", "openai/gpt-4o", api_key=None, window=6000, id="d-6000")
            await budget.async_filter_deployments("group", [small], messages, {"litellm_trace_id": "t-1"})
            kwargs = _deployment_kwargs(messages, 6000, "set-after-routing", "t-1")
            await budget.async_pre_call_deployment_hook(kwargs, "acompletion")

        assert messages == snapshot
        assert tokens_of(kwargs["messages"]) < 6000
        reports = [(log["event"], log["hook"], log["window"]) for log in logs if log["event"].startswith("request_")]
        assert reports == [("request_trimmed", "async_filter_deployments", 6000)]
        report = kwargs["metadata"]["spend_logs_metadata"]["litellm_budget"]
        assert (report["messages_before"], report["messages_after"]) == (len(snapshot), len(kwargs["messages"]))

    async def test_a_smaller_deployment_fits_the_callers_messages_again(self) -> None:
        """Trimmed for the group's 16k deployment, sent to its 6k one: the report says all that changed."""
        budget, messages = ContextBudget(), agent_session(30, 900)
        snapshot = copy.deepcopy(messages)

        with capture_logs() as logs:
            small = deployment("group", "openai/gpt-4o", api_key=None, window=6000, id="d-6000")
            big = deployment("group", "openai/gpt-4o", api_key=None, window=16_000, id="d-16000")
            await budget.async_filter_deployments("group", [small, big], messages, {"litellm_trace_id": "t-2"})
            assert fingerprint(messages) != fingerprint(snapshot)  # lent: trimmed for 16k
            kwargs = _deployment_kwargs(messages, 6000, "the-deployment-hooks-id", "t-2")
            await budget.async_pre_call_deployment_hook(kwargs, "acompletion")

        assert messages == snapshot
        assert tokens_of(kwargs["messages"]) < 6000
        trimmed = [log for log in logs if log["event"] == "request_trimmed"]
        assert [(log["hook"], log["window"], log["messages_before"]) for log in trimmed] == [
            ("async_pre_call_deployment_hook", 6000, len(snapshot))
        ]
        assert trimmed[0]["tokens_before"] > 16_000  # the caller's messages, not the 16k trim of them
        assert trimmed[0]["messages_after"] == len(kwargs["messages"])
