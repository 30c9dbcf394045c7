"""
The spend-log rows LiteLLM would write for requests the plugin handled, built by LiteLLM's own code.

The proxy's database cannot run here (Prisma downloads its query engines at run time and no
reachable registry ships them), so each row comes from LiteLLM's real spend-log path with only
the Prisma enqueue replaced: ``DBSpendUpdateWriter.update_database`` builds the row with
``spend_tracking_utils.get_logging_payload``, and ``_insert_spend_log_to_db`` (the one step
that would hand it to Prisma) keeps it instead. A success row is built from the success event's
``kwargs``, as the proxy's cost callback does; a failure row goes through the proxy's
``_ProxyDBLogger.async_post_call_failure_hook`` with the request dict, as the proxy does for
every failed request (LiteLLM never builds a row from a failure event's ``kwargs``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import litellm
import pytest
from litellm.integrations.custom_logger import CustomLogger
from litellm.proxy._types import UserAPIKeyAuth
from litellm.proxy.db.db_spend_update_writer import DBSpendUpdateWriter
from litellm.proxy.hooks.proxy_track_cost_callback import _ProxyDBLogger
from litellm.proxy.spend_tracking.compression_savings import extract_compression_saved_tokens
from litellm.proxy.spend_tracking.spend_tracking_utils import get_logging_payload

from litellm_budget import ContextBudget
from tests.support.builders import agent_session, deployment, system, text, user
from tests.support.fake_upstream import FakeUpstream
from tests.support.sdk_support import only_callbacks

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("quiet_logging")]
WINDOW = 8000
# In every prompt, so a test can tell that no row's report copies message contents.
SECRET = "zebra-quartz-7319"

Event = tuple[dict[str, Any], Any, Any, Any]


class EventSpy(CustomLogger):  # type: ignore[misc]
    """A second logger that keeps everything LiteLLM hands to its success and failure events."""

    def __init__(self) -> None:
        super().__init__()
        self.successes: list[Event] = []
        self.failures: list[Event] = []

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.successes.append((kwargs, response_obj, start_time, end_time))

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.failures.append((kwargs, response_obj, start_time, end_time))

    async def success_of(self, response: Any) -> Event:
        """The success event of this response (a late event of an earlier test may come first)."""
        return await _wait_for(self.successes, lambda event: getattr(event[1], "id", None) == response.id)

    async def failure_of(self, call_id: str) -> Event:
        """The failure event of the request with this ``litellm_call_id``."""
        return await _wait_for(self.failures, lambda event: event[0].get("litellm_call_id") == call_id)


async def _wait_for(events: list[Event], wanted: Callable[[Event], bool]) -> Event:
    """LiteLLM logs in background tasks: wait for the event in the same event loop."""
    for _ in range(250):
        found = [event for event in events if wanted(event)]
        if found:
            return found[-1]
        await asyncio.sleep(0.02)
    raise AssertionError(f"LiteLLM logged no such event among {len(events)}")


class SpendRows(DBSpendUpdateWriter):  # type: ignore[misc]
    """LiteLLM's spend writer with the Prisma enqueue replaced: it keeps the rows it would write."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []

    async def _insert_spend_log_to_db(
        self, payload: dict[str, Any], prisma_client: Any = None, spend_logs_url: Any = None, llm_router: Any = None
    ) -> Any:
        self.rows.append(dict(payload))
        return prisma_client

    async def success_row(self, event: Event) -> dict[str, Any]:
        """The row of a success event, as the proxy's cost callback has it written."""
        kwargs, response_obj, start_time, end_time = event
        written = len(self.rows)
        await self.update_database(
            token="hashed-key",
            user_id="user-1",
            end_user_id=None,
            team_id=None,
            org_id=None,
            kwargs=kwargs,
            completion_response=response_obj,
            start_time=start_time,
            end_time=end_time,
            response_cost=0.0,
        )
        return self._the_row_since(written)

    async def failure_row(self, request: dict[str, Any], error: Exception) -> dict[str, Any]:
        """The row the proxy writes for a failed request: its failure hook, with the request dict."""
        logger = _ProxyDBLogger(spend_writer=lambda: self)
        written = len(self.rows)
        await logger.async_post_call_failure_hook(
            request_data=request,
            original_exception=error,
            user_api_key_dict=UserAPIKeyAuth(api_key="hashed-key", user_id="user-1"),
        )
        return self._the_row_since(written)

    def _the_row_since(self, written: int) -> dict[str, Any]:
        assert len(self.rows) == written + 1, f"LiteLLM wrote {len(self.rows) - written} rows for one request"
        return self.rows[-1]


def row_metadata(row: dict[str, Any]) -> dict[str, Any]:
    """The row's metadata column: a JSON string in the SpendLogs payload."""
    metadata = row["metadata"]
    parsed = json.loads(metadata) if isinstance(metadata, str) else metadata
    assert isinstance(parsed, dict)
    return parsed


def budget_of(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The row's ``spend_logs_metadata`` and the plugin's report in it, checked free of message text."""
    spend = row_metadata(row)["spend_logs_metadata"]
    assert isinstance(spend, dict)
    assert SECRET not in json.dumps(spend)
    return spend, spend["litellm_budget"]


def proxy_request(**fields: Any) -> dict[str, Any]:
    """A request dict as the proxy prepares it: metadata, a call id, one logging object for its whole life."""
    logging_obj, request = litellm.utils.function_setup(
        original_function="acompletion",
        rules_obj=litellm.utils.Rules(),
        start_time=datetime.now(),
        **{"metadata": {}, **fields},
    )
    request["litellm_logging_obj"] = logging_obj
    return dict(request)


@pytest.fixture(name="spy")
def fixture_spy() -> Iterator[EventSpy]:
    spy = EventSpy()
    with only_callbacks(ContextBudget(default_window=WINDOW), spy):
        yield spy


@pytest.fixture(name="rows")
def fixture_rows() -> SpendRows:
    return SpendRows()


@pytest.fixture(name="routed")
def fixture_routed(upstream: FakeUpstream) -> Iterator[tuple[litellm.Router, EventSpy]]:
    """A 4000-token group whose context-window fallback is a 16000-token group, given to the plugin."""
    router = litellm.Router(
        model_list=[  # their ids are the rows' model_id
            deployment("small", "openai/acme-small", upstream.base_url, window=4000, id="small-4000"),
            deployment("big", "openai/acme-big", upstream.base_url, window=16_000, id="big-16000"),
        ],
        context_window_fallbacks=[{"small": ["big"]}],
    )
    spy = EventSpy()
    with only_callbacks(ContextBudget(default_window=WINDOW, router=router), spy):
        yield router, spy


async def test_trimmed_request_row_carries_the_report(upstream: FakeUpstream, spy: EventSpy, rows: SpendRows) -> None:
    """A trimmed request's spend row has the trimmed report in spend_logs_metadata, with flat labels."""
    messages = agent_session(30, 900, question=f"Fix it. {SECRET}")

    response = await litellm.acompletion(
        model="openai/acme-unknown", api_base=upstream.base_url, api_key="k", messages=messages
    )
    row = await rows.success_row(await spy.success_of(response))

    spend, report = budget_of(row)
    assert row["status"] == "success"
    assert report["action"] == "trimmed"
    assert report["window"] == WINDOW
    assert report["tokens_after"] < report["tokens_before"]
    assert report["model"] == "openai/acme-unknown"
    assert spend["litellm_budget_action"] == "trimmed"
    assert spend["litellm_budget_policy"] == report["policy"] == "auto"
    assert 0 < row["prompt_tokens"] < WINDOW
    # LiteLLM's Usage views read the savings from the row with their own extractor.
    saved = report["tokens_before"] - report["tokens_after"]
    assert extract_compression_saved_tokens(row_metadata(row)) == saved > 0
    assert row_metadata(row)["compression_savings"]["source"] == "litellm_budget"


async def test_rejected_request_row_carries_the_report(upstream: FakeUpstream, spy: EventSpy, rows: SpendRows) -> None:
    """A request whose system prompt overflows the window gets a failure row with the rejected report."""
    request = proxy_request(
        model="openai/acme-unknown",
        api_base=upstream.base_url,
        api_key="k",
        messages=[system(text(20_000)), user(f"hi {SECRET}")],
        litellm_call_id="call-rejected",
    )
    upstream.clear()

    with pytest.raises(litellm.ContextWindowExceededError) as caught:
        await litellm.acompletion(**request)
    failure_kwargs, _, _, _ = await spy.failure_of("call-rejected")
    row = await rows.failure_row(request, caught.value)

    spend, report = budget_of(row)
    assert upstream.requests == []
    assert failure_kwargs is request["litellm_logging_obj"].model_call_details
    assert row["status"] == "failure"
    assert row["request_id"] == "call-rejected"
    assert row_metadata(row)["error_information"]["error_class"] == type(caught.value).__name__
    assert report["action"] == "rejected"
    assert report["window"] == WINDOW
    assert report["tokens_before"] > WINDOW
    assert spend["litellm_budget_action"] == "rejected"
    assert spend["litellm_budget_policy"] == "auto"
    assert extract_compression_saved_tokens(row_metadata(row)) == 0  # nothing was sent, nothing saved


async def test_failure_event_kwargs_are_not_a_spend_row(upstream: FakeUpstream, spy: EventSpy) -> None:
    """LiteLLM's builder cannot take a failure event's kwargs (pinned: proxy failure rows come from the request)."""
    with pytest.raises(litellm.ContextWindowExceededError):
        await litellm.acompletion(
            model="openai/acme-unknown",
            api_base=upstream.base_url,
            api_key="k",
            messages=[system(text(20_000)), user("hi")],
            litellm_call_id="call-pinned",
        )
    kwargs, response_obj, start_time, end_time = await spy.failure_of("call-pinned")

    assert kwargs["completion_start_time"] is None
    with pytest.raises(AttributeError, match="astimezone"):
        get_logging_payload(kwargs, response_obj, start_time, end_time)


async def test_row_of_a_fallback_carries_the_report_of_the_model_that_served(
    upstream: FakeUpstream, routed: tuple[litellm.Router, EventSpy], rows: SpendRows
) -> None:
    """A request no trim fits into the small model is served by the big fallback, whose fit the row reports."""
    router, spy = routed
    upstream.clear()

    response = await router.acompletion(model="small", messages=[system(text(5000)), user(f"question {SECRET}")])
    row = await rows.success_row(await spy.success_of(response))

    spend, report = budget_of(row)
    assert [request["model"] for request in upstream.requests] == ["acme-big"]
    assert (row["model_group"], row["model_id"]) == ("big", "big-16000")
    assert report["model"] == "openai/acme-big"
    assert report["window"] == 16_000
    assert report["action"] == "passthrough"
    assert report["tokens_after"] == report["tokens_before"]
    assert spend["litellm_budget_action"] == "passthrough"


async def test_row_of_a_request_the_fallback_reads_whole_is_the_fallbacks(
    upstream: FakeUpstream, routed: tuple[litellm.Router, EventSpy], rows: SpendRows
) -> None:
    """A request the small model could only take trimmed goes to the big fallback, whose passthrough the row reports."""
    router, spy = routed
    upstream.clear()

    response = await router.acompletion(model="small", messages=agent_session(8, 900, question=f"Fix it. {SECRET}"))
    row = await rows.success_row(await spy.success_of(response))

    spend, report = budget_of(row)
    assert [request["model"] for request in upstream.requests] == ["acme-big"]
    assert (row["model_group"], row["model_id"]) == ("big", "big-16000")
    assert report["model"] == "openai/acme-big"
    assert report["window"] == 16_000
    assert report["action"] == "passthrough"
    assert report["tokens_before"] > 4000
    assert spend["litellm_budget_action"] == "passthrough"


async def test_row_of_a_request_no_fallback_fits_reports_the_last_rejection(
    upstream: FakeUpstream, routed: tuple[litellm.Router, EventSpy], rows: SpendRows
) -> None:
    """Too big for the small model and its fallback: the failure row reports the fallback's rejection."""
    router, _ = routed
    request = proxy_request(
        model="small", messages=[system(text(20_000)), user(f"hi {SECRET}")], litellm_call_id="call-no-fit"
    )
    upstream.clear()

    with pytest.raises(litellm.ContextWindowExceededError) as caught:
        await router.acompletion(**request)
    row = await rows.failure_row(request, caught.value)

    spend, report = budget_of(row)
    assert upstream.requests == []
    assert row["status"] == "failure"
    assert report["action"] == "rejected"
    assert report["model"] == "openai/acme-big"
    assert report["window"] == 16_000
    assert spend["litellm_budget_action"] == "rejected"
