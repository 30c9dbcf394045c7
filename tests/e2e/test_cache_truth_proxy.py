"""
Through the real proxy, against fake providers that behave like a prefix cache: what the plugin
says a provider's cache read is what the provider said, and each scripted miss gets its reason.

Two fake OpenAI deployments of one model group (tags ``a`` and ``b`` route to each) and one
fake Anthropic deployment, each its own cache (``tests/support/fake_cache.py``) with a lifetime
of 300 s and a minimum of 1024 tokens, on a clock the test moves (``shifted_clock.py``), which
runs the plugin's cache clock in the proxy too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from litellm_budget.tools.sessions import load_conversation, requests_of
from tests.support.builders import deployment, system, text, tool_step, user
from tests.support.fake_cache import PrefixCache
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import wait_for_records
from tests.support.paths import session_file
from tests.support.proxy_process import ProxyProcess, openai_client, start_proxy
from tests.support.shifted_clock import ENV_VAR, ShiftedClock

pytestmark = pytest.mark.proxy

LIFETIME = 300.0
GPT = "openai/gpt-4o"
#: A window the scripted sessions outgrow, so the plugin elides and drops.
SMALL_WINDOW = 8000
#: The replayed session: a short shell agent's, which outgrows the window; made__shell without ../shared/sessions.
SESSION = session_file("mini__astropy__astropy-14508", "made__shell")


@dataclass
class Rig:
    proxy: ProxyProcess
    clock: ShiftedClock
    a: FakeUpstream
    b: FakeUpstream
    folder: Path

    def client(self) -> openai.OpenAI:
        return openai_client(self.proxy)

    def send(self, messages: list[dict[str, Any]], *, tag: str = "a", model: str = "gpt") -> dict[str, Any]:
        """One chat request, served by deployment ``tag``; its ``cache_observed`` event."""
        raw = self.client().chat.completions.with_raw_response.create(
            model=model, messages=messages, max_tokens=50, extra_body={"metadata": {"tags": [tag]}}
        )
        call_id = raw.headers["x-litellm-call-id"]
        return self.observed(call_id)

    def observed(self, call_id: str) -> dict[str, Any]:
        path = self.folder / "structlog.jsonl"

        def ready(records: list[dict[str, Any]]) -> bool:
            return any(r["event"] == "cache_observed" and r.get("litellm_call_id") == call_id for r in records)

        records = wait_for_records(path, ready, what=f"cache_observed of {call_id}")
        return next(r for r in records if r["event"] == "cache_observed" and r.get("litellm_call_id") == call_id)


@pytest.fixture(name="rig", scope="module")
def fixture_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    folder = tmp_path_factory.mktemp("cache-truth")
    clock = ShiftedClock(folder / "clock")
    a = FakeUpstream(cache=PrefixCache(lifetime=LIFETIME, clock=clock))
    b = FakeUpstream(cache=PrefixCache(lifetime=LIFETIME, clock=clock))
    with a, b:
        config = {
            "model_list": [  # each deployment served by the fake its tag names (enable_tag_filtering)
                deployment("gpt", GPT, a.base_url, window=128_000, params={"tags": ["a"]}, id="gpt-a"),
                deployment("gpt", GPT, b.base_url, window=128_000, params={"tags": ["b"]}, id="gpt-b"),
                deployment("small", GPT, a.base_url, window=SMALL_WINDOW, params={"tags": ["a"]}, id="small-a"),
                deployment(
                    "planned",
                    GPT,
                    a.base_url,
                    window=SMALL_WINDOW,
                    budget={"policy": "plan"},
                    params={"tags": ["a"]},
                    id="planned-a",
                ),
            ],
            "router_settings": {"enable_tag_filtering": True},
            "litellm_settings": {
                "callbacks": [
                    "proxy_structlog.configured",
                    "litellm_budget.handler",
                    "shifted_clock.shifter",
                    "proxy_spy.spy",
                    "prometheus",
                ]
            },
            "callback_settings": {"litellm_budget": {"cache_lifetime": LIFETIME}},
        }
        helpers = ["proxy_structlog.py", "shifted_clock.py", "proxy_spy.py"]
        with start_proxy(config, tmp_path=folder, env={ENV_VAR: str(clock.path)}, helpers=helpers) as proxy:
            yield Rig(proxy, clock, a, b, folder)


def _task(name: str) -> list[dict[str, Any]]:
    """A conversation of its own (its task names it), over the 1024-token minimum from the start."""
    return [system(f"You are agent {name}. " + text(600)), user(f"Task {name}: fix the bug."), *tool_step(600)]


def test_a_growing_conversation_reads_what_the_provider_says(rig: Rig) -> None:
    """Each request reads the last one's prompt: reported as the fake reported it, predicted alike, no miss."""
    messages = _task("growing")
    first = rig.send(messages)
    reports = []
    for step in range(3):
        messages += tool_step(300, seed=step)
        reports.append((rig.send(messages), rig.a.cache.uses[-1]))  # type: ignore[union-attr]

    assert first["cache_miss"] is None
    assert first["idle_seconds"] is None
    for report, use in reports:
        assert report["cache_read_tokens"] == use.read > 0
        assert report["input_tokens"] == use.prompt
        assert report["cache_miss"] is None
        assert report["same_deployment"] is True
        assert abs(report["predicted_tokens"] - use.read) <= 0.05 * use.read
        assert report["shared_entries"] == report["previous_entries"]


@pytest.mark.parametrize(
    ("reason", "between"),
    [
        ("client_edit", "edit"),
        ("idle", "idle"),
        ("deployment", "switch"),
    ],
)
def test_each_miss_has_its_reason(rig: Rig, reason: str, between: str) -> None:
    """A client's edit of an early message, an idle gap past the lifetime, a switch of deployment."""
    messages = _task(reason)
    rig.send(messages)
    messages += tool_step(200)
    tag = "a"
    if between == "edit":
        messages[3] = {**messages[3], "content": "[output cleared by the client]"}  # the first tool result
    elif between == "idle":
        rig.clock.advance(LIFETIME + 60)
    else:
        tag = "b"

    report = rig.send(messages, tag=tag)

    assert report["cache_miss"] == reason
    assert report["cache_read_tokens"] < report["shared_tokens"] or reason == "client_edit"
    if reason == "client_edit":
        assert report["shared_entries"] == 3  # the system prompt, the task and the first call still are
    if reason == "idle":
        assert report["idle_seconds"] > LIFETIME
        assert report["predicted_tokens"] == 0
    if reason == "deployment":
        assert report["same_deployment"] is False


def test_a_prompt_under_the_minimum_is_not_cached(rig: Rig) -> None:
    """A conversation under 1024 tokens is read from no cache: below_minimum, nothing predicted."""
    messages = [system("Short."), user("Task short: say hi."), *tool_step(100)]
    rig.send(messages)
    messages += tool_step(100)

    report = rig.send(messages)

    assert report["cache_read_tokens"] == 0
    assert report["predicted_tokens"] == 0
    assert report["cache_miss"] == "below_minimum"


@pytest.mark.parametrize(("model", "reason"), [("small", "plugin_elision"), ("planned", "plugin_drop")])
def test_the_plugins_own_edit_is_named(rig: Rig, model: str, reason: str) -> None:
    """Where the plugin's next quantum of edits moves the prefix, the miss names the edit."""
    messages = [system(f"Agent {model}. " + text(1200)), user(f"Task {model}.")]
    reasons = []
    for step in range(14):
        messages += tool_step(700, seed=step)
        reasons.append(rig.send(messages, model=model)["cache_miss"])

    assert reason in reasons
    assert set(reasons) <= {None, "plugin_drop", "plugin_elision"}


def test_a_replayed_session_reports_the_hit_ratio_the_provider_reported(rig: Rig) -> None:
    """A real agent session, request by request: the reported reads and prompts are the fake's, in sum and each."""
    requests = list(requests_of(load_conversation(SESSION).messages))
    before = len(rig.a.cache.uses)  # type: ignore[union-attr]
    reports = [rig.send(request, model="small") for request in requests]
    uses = rig.a.cache.uses[before:]  # type: ignore[union-attr]

    assert [r["cache_read_tokens"] for r in reports] == [use.read for use in uses]
    assert [r["input_tokens"] for r in reports] == [use.prompt for use in uses]
    reported = sum(r["cache_read_tokens"] for r in reports) / sum(r["input_tokens"] for r in reports)
    provided = sum(use.read for use in uses) / sum(use.prompt for use in uses)
    assert reported == provided
    assert reported > 0.5
    assert {r["cache_miss"] for r in reports} <= {None, "plugin_elision", "plugin_drop", "plugin_cut"}


def test_loggers_after_the_plugin_and_prometheus_see_the_cache_report(rig: Rig) -> None:
    """A callback listed after the plugin finds the cache report in spend_logs_metadata; /metrics/ counts it."""
    messages = _task("payload")
    rig.send(messages)
    messages += tool_step(200)
    report = rig.send(messages, tag="b")  # another deployment: a miss
    call_id = report["litellm_call_id"]
    spied = wait_for_records(
        rig.folder / "spy.jsonl", lambda records: any(r["call_id"] == call_id for r in records), what=call_id
    )
    metrics = httpx.get(
        rig.proxy.base_url + "/metrics/", headers=rig.proxy.auth_headers, timeout=10, follow_redirects=True
    ).text

    spend = next(r for r in spied if r["call_id"] == call_id)["metadata"]["spend_logs_metadata"]
    assert spend["litellm_budget_cache"] == {k: report[k] for k in spend["litellm_budget_cache"]}
    assert spend["litellm_budget_cache_miss"] == "deployment"
    assert spend["litellm_budget"]["action"] == "passthrough"  # the request's own report, as before
    assert 'litellm_budget_input_tokens_total{cache="read",model_group="gpt"}' in metrics
    assert 'litellm_budget_input_tokens_total{cache="fresh",model_group="gpt"}' in metrics
    assert 'litellm_budget_cache_misses_total{model_group="gpt",reason="deployment"}' in metrics
    assert 'litellm_budget_cache_predicted_tokens_total{model_group="gpt"}' in metrics
