"""Summaries through a litellm.Router: the summary model is one of its groups, called once per block."""

from __future__ import annotations

from typing import Any

import litellm
import pytest
from structlog.testing import capture_logs

from litellm_budget import ContextBudget
from litellm_budget.core.wording import NOTICE_PREFIX
from tests.support.builders import agent_session, deployment, tool_step
from tests.support.fake_upstream import FakeUpstream
from tests.support.sdk_support import only_callbacks
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("quiet_logging")]
WINDOW = 3000
SUMMARY = "Task: fix the failing test. Decisions: ran the suite. Files: none yet. Errors: 1 failed."


def router_for(upstream: FakeUpstream) -> litellm.Router:
    return litellm.Router(
        model_list=[
            deployment("agent", "openai/agent", upstream.base_url, window=WINDOW),
            deployment("summarizer", "openai/summarizer", upstream.base_url, window=128_000),
        ]
    )


def agent_reports(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [log for log in logs if log["event"] == "request_trimmed" and log.get("model_group") == "agent"]


async def test_the_summary_stands_where_the_marker_was_and_is_made_once(upstream: FakeUpstream) -> None:
    router = router_for(upstream)
    plugin = ContextBudget(router=router, summary_model="summarizer", summary_timeout=10.0, summary_max_tokens=200)
    first = agent_session(40, 700)
    second = [*first, *tool_step(40, seed=99)]
    upstream.reply = SUMMARY
    upstream.clear()
    with only_callbacks(plugin), capture_logs() as logs:
        await router.acompletion(model="agent", messages=first)
        await router.acompletion(model="agent", messages=second)
        # Its report is published a loop turn after its hook (the size gate counts it then).
        await wait_for_async(lambda: len(agent_reports(logs)) == 2, what="the second request's report")
    bodies = [r for r in upstream.requests if r.get("model") == "agent"]
    summary_calls = [r for r in upstream.requests if r.get("model") == "summarizer"]
    assert len(summary_calls) == 1, "one summary for the one dropped block, reused by the next request"
    for body in bodies:
        notices = [m for m in body["messages"] if NOTICE_PREFIX in str(m.get("content"))]
        assert any(SUMMARY in str(m["content"]) for m in notices)
    assert bodies[1]["messages"][: len(bodies[0]["messages"])] == bodies[0]["messages"]
    reports = agent_reports(logs)
    assert [r["summarized"] for r in reports] == [True, True]
    assert [r["edits_kept"] for r in reports] == [False, True]  # the silent trial fit is not a request sent
    assert reports[0]["summary_calls"] == 1
    assert reports[1]["summary_calls"] == 0
    assert not any(log["event"].startswith("request_") and log.get("model_group") == "summarizer" for log in logs)


async def test_a_failing_summarizer_leaves_the_marker(upstream: FakeUpstream) -> None:
    router = litellm.Router(
        model_list=[
            deployment("agent", "openai/agent", upstream.base_url, window=WINDOW),
            deployment("summarizer", "openai/summarizer", "http://127.0.0.1:9"),  # nothing listens there
        ]
    )
    plugin = ContextBudget(router=router, summary_model="summarizer", summary_timeout=2.0, summary_max_tokens=200)
    upstream.clear()
    with only_callbacks(plugin), capture_logs() as logs:
        response = await router.acompletion(model="agent", messages=agent_session(40, 700), num_retries=0)
    assert response.choices[0].message.content
    body = upstream.requests[-1]
    assert any("omitted from this conversation" in str(m.get("content")) for m in body["messages"])
    report = next(log for log in logs if log["event"] == "request_trimmed")
    assert not report["summarized"]
    assert report["summary_failed"].startswith(("error", "timeout"))
