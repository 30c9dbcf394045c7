"""
Summaries through the real proxy: the summary model is a model group of the proxy's own router.

One fake provider serves the agent groups, one fake per summary group serves the summaries (a
normal one, whose every reply is numbered so a second summary of a block could never pass for
the first; a slow one; one that answers 500). Two replicas share one real redis-server (the
recommended config: a coordination Redis and the auth cache on it); without a redis-server only
the replica test is skipped.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from litellm_budget.core.client_edits import COMPACT
from litellm_budget.core.formats import anthropic_from_chat as from_chat
from litellm_budget.core.wording import NOTICE_PREFIX
from litellm_budget.tools.sessions import load_conversation, requests_of
from tests.support.builders import agent_session, deployment, tool_step
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import wait_for_records
from tests.support.paths import session_file
from tests.support.proxy_process import ProxyProcess, anthropic_client, post_chat, start_proxies, start_proxy
from tests.support.redis_process import RedisServer, ensure_redis_server

pytestmark = pytest.mark.proxy
#: The replayed session: 52 messages, 25 requests, about 25k tokens (a block dropped every few steps);
#: where ../shared/sessions is absent, the made shell agent's.
SESSION = session_file("mini__astropy__astropy-14508", "made__shell")
WINDOW = 8000
SUMMARY_WINDOW = 128_000  # the summary models' window
SUMMARY = "Task: fix the failing test. Decisions made: patched parse(). Files and entities touched: app/parse.py."
MARKER = "omitted from this conversation"  # the plain marker's words (core/wording/_notices.py)
SLOW_SECONDS = 2.5  # the slow summarizer's delay, past its groups' summary_timeout (0.5 s)


class NumberedSummaries(FakeUpstream):
    """A summary model whose every reply is new: ``Summary #N. <SUMMARY>``."""

    def __init__(self, **kwargs: Any) -> None:
        self._count = 0
        self._count_lock = threading.Lock()
        super().__init__(**kwargs)

    @property  # type: ignore[override]
    def reply(self) -> str:
        with self._count_lock:
            self._count += 1
            return f"Summary #{self._count}. {SUMMARY}"

    @reply.setter
    def reply(self, value: str) -> None:
        """The base class sets its fixed reply; this fake has none."""


@dataclass
class Replica:
    name: str
    proxy: ProxyProcess
    folder: Path

    def reports(self, group: str, call_ids: list[str]) -> list[dict[str, Any]]:
        """The plugin's report of each request in ``call_ids``, in that order, from the spy's success log."""
        wanted = set(call_ids)

        def complete(records: list[dict[str, Any]]) -> bool:
            return wanted <= {r["call_id"] for r in records if r["outcome"] == "success"}

        records = wait_for_records(self.folder / "spy.jsonl", complete, what=f"{len(wanted)} {group} successes")
        by_id = {r["call_id"]: r for r in records if r["model_group"] == group}
        return [by_id[call_id]["metadata"]["spend_logs_metadata"]["litellm_budget"] for call_id in call_ids]


@dataclass
class Rig:
    agent: FakeUpstream
    summarizer: NumberedSummaries
    slow: FakeUpstream
    broken: FakeUpstream
    a: Replica
    b: Replica | None  # None without a redis-server
    redis: RedisServer | None


def rig_config(
    agent: FakeUpstream, summaries: dict[str, FakeUpstream], broken: FakeUpstream, redis: RedisServer | None
) -> dict[str, Any]:
    """Agent groups (one per test, so each reads its own reports) and the summary groups, on one router."""
    slow_summaries = {"summary_model": "summarizer-slow", "summary_timeout": 0.5}
    config: dict[str, Any] = {
        "model_list": [
            deployment("agent", "openai/agent-a", agent.base_url, window=WINDOW),
            deployment(
                "agent-plain", "openai/agent-plain", agent.base_url, window=WINDOW, budget={"summary_model": None}
            ),
            deployment("agent-replay", "openai/agent-replay", agent.base_url, window=WINDOW),
            deployment("agent-shared", "openai/agent-shared", agent.base_url, window=WINDOW),
            deployment("agent-slow", "openai/agent-slow", agent.base_url, window=WINDOW, budget=slow_summaries),
            deployment(
                "agent-broken",
                "openai/agent-broken",
                agent.base_url,
                window=WINDOW,
                budget={"summary_model": "summarizer-broken"},
            ),
            deployment("claude", "anthropic/claude-sonnet-4-5", agent.root_url, window=WINDOW),
            # /v1/messages to an OpenAI model: LiteLLM bridges it to the Responses API.
            deployment("agent-bridge", "openai/agent-bridge", agent.base_url, window=WINDOW),
            *(
                deployment(group, f"openai/{group}", fake.base_url, window=SUMMARY_WINDOW)
                for group, fake in summaries.items()
            ),
            # The Router retries a 500 twice by default (with back-off, past summary_timeout); this
            # deployment fails fast, so the reason is the error itself.
            deployment(
                "summarizer-broken",
                "openai/summarizer-broken",
                broken.base_url,
                window=SUMMARY_WINDOW,
                params={"num_retries": 0},
            ),
        ],
        "litellm_settings": {"callbacks": ["litellm_budget.handler", "proxy_spy.spy"]},
        # The fake's usage is an estimate, not our count: a learned ratio would move the fits
        # between requests (calibration has its own proxy tests).
        "callback_settings": {
            "litellm_budget": {
                "summary_model": "summarizer",
                "summary_max_tokens": 200,
                "summary_timeout": 10.0,  # a loaded test machine must not turn a summary into a timeout
                "calibrate": False,
            }
        },
    }
    if redis is not None:
        config["litellm_settings"]["enable_redis_auth_cache"] = True
        config["general_settings"] = {"coordination_redis": {"host": redis.host, "port": redis.port}}
    return config


def _start(names: list[str], config: dict[str, Any], root: Path) -> list[Replica]:
    """Start the replicas at once (start-up is most of this module's time)."""

    def start(name: str) -> Replica:
        folder = root / name
        folder.mkdir()
        return Replica(name, start_proxy(config, tmp_path=folder, helpers=["proxy_spy.py"]), folder)

    return start_proxies(names, start)


@pytest.fixture(name="rig", scope="module")
def fixture_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    binary, _ = ensure_redis_server()
    redis = RedisServer(binary=binary, folder=tmp_path_factory.mktemp("redis")).start() if binary else None
    try:
        with (
            FakeUpstream() as agent,
            NumberedSummaries() as summarizer,
            FakeUpstream(reply=SUMMARY, delay=SLOW_SECONDS) as slow,
            FakeUpstream(error_status=500) as broken,
        ):
            config = rig_config(agent, {"summarizer": summarizer, "summarizer-slow": slow}, broken, redis)
            replicas = _start(["a", "b"] if redis else ["a"], config, tmp_path_factory.mktemp("replicas"))
            try:
                yield Rig(agent, summarizer, slow, broken, replicas[0], replicas[1] if redis else None, redis)
            finally:
                for replica in replicas:
                    replica.proxy.stop()
    finally:
        if redis is not None:
            redis.stop()


def send(replica: Replica, group: str, messages: list[dict[str, Any]]) -> str:
    """One chat request, which must be answered 200; its call id."""
    status, headers, payload = post_chat(replica.proxy, {"model": group, "messages": messages})
    if status != 200:
        pytest.fail(f"{group} on replica {replica.name}: {status} {payload}\n{replica.proxy.log_tail()}")
    return str(headers["x-litellm-call-id"])


def agent_bodies(rig: Rig, model: str) -> list[list[dict[str, Any]]]:
    """The messages of every request the agent's provider got for ``model``, oldest first."""
    return [body["messages"] for body in rig.agent.requests if body.get("model") == model]


def notices(messages: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """
    (index, text) of each notice of ours that says something was taken out (not elided outputs),
    wherever it was placed: by default a note at the end of the user message before it.
    """
    found = []
    for index, message in enumerate(messages):
        content = message.get("content")
        texts = (
            [content] if isinstance(content, str) else [b.get("text", "") for b in content or [] if isinstance(b, dict)]
        )
        for text in texts:
            starts = [text.find(f"{NOTICE_PREFIX} {words}") for words in ("the ", *"0123456789")]
            starts = [start for start in starts if start >= 0]
            notice = text[min(starts) :] if starts else ""
            if "summarized:" in notice or MARKER in notice:
                found.append((index, notice))
    return found


def summary_text(notice: str) -> str:
    """What the summary model wrote, as it stands in the notice (between its opening and closing lines)."""
    return notice.split("\n", 1)[1].rsplit("\n", 1)[0]


# -- (a) the summary stands where the marker would --------------------------------------------------------


def test_the_summary_stands_exactly_where_the_marker_would(rig: Rig) -> None:
    """The same request to a group without summaries and to one with: only the marker became the summary."""
    messages = agent_session(30, 400)
    rig.summarizer.clear()
    plain_id = send(rig.a, "agent-plain", messages)
    summarized_id = send(rig.a, "agent", messages)
    plain, summarized = agent_bodies(rig, "agent-plain")[-1], agent_bodies(rig, "agent-a")[-1]
    [(index, marker)] = notices(plain)
    [(at, notice)] = notices(summarized)
    report = rig.a.reports("agent", [summarized_id])[0]

    assert MARKER in marker
    assert at == index
    assert summarized[:index] == plain[:index]
    assert summarized[index + 1 :] == plain[index + 1 :]
    assert summarized[index]["role"] == plain[index]["role"]
    assert summary_text(notice).endswith(SUMMARY)
    assert len(rig.summarizer.requests) == 1
    assert (report["summarized"], report["summary_calls"], report["summary_failed"]) == (True, 1, None)
    assert report["summary_tokens"] > 0
    assert rig.a.reports("agent-plain", [plain_id])[0]["summarized"] is False


def test_an_anthropic_messages_request_gets_the_summary_as_a_user_text_block(rig: Rig) -> None:
    """/v1/messages with the anthropic SDK: one summary, in a user turn, roles still alternating."""
    _, messages = from_chat(agent_session(30, 400, question="Fix the failing build."))
    rig.summarizer.clear()
    with anthropic_client(rig.a.proxy) as client:
        raw = client.messages.with_raw_response.create(
            model="claude",
            max_tokens=1024,
            system="You are a coding agent.",
            messages=messages,  # type: ignore[arg-type]
        )
    sent = [r["body"] for r in rig.agent.records if r["path"].endswith("/messages")][-1]["messages"]
    assert notices(sent), {k: v for k, v in raw.headers.items() if k.startswith("x-litellm-budget")}
    [(at, notice)] = notices(sent)

    assert raw.headers["x-litellm-budget-action"] == "trimmed"
    assert sent[at]["role"] == "user"
    assert summary_text(notice).endswith(SUMMARY)
    assert [m["role"] for m in sent] == ["user", "assistant"] * (len(sent) // 2) + ["user"] * (len(sent) % 2)
    assert len(rig.summarizer.requests) == 1


# -- (b) a whole real session: one call per dropped block ---------------------------------------------------


@pytest.mark.sessions
def test_a_replayed_session_calls_the_summarizer_once_per_dropped_block(rig: Rig) -> None:
    requests = list(requests_of(load_conversation(SESSION).messages))
    rig.summarizer.clear()
    call_ids = [send(rig.a, "agent-replay", messages) for messages in requests]
    reports = rig.a.reports("agent-replay", call_ids)
    bodies = agent_bodies(rig, "agent-replay")[-len(requests) :]
    blocks = {r["dropped_at"] for r in reports if r["summarized"]}
    calls = len(rig.summarizer.requests)

    assert len(bodies) == len(requests)  # every agent request was answered (send() checks the 200s)
    assert len(blocks) >= 2, "the window should make this session drop more than one block"
    assert calls == len(blocks)
    assert sum(r["summary_calls"] for r in reports) == calls
    assert [
        r for r in reports if r["summary_needed"] or r["summary_failed"] not in {None, "no room for a summary"}
    ] == []
    sent: dict[str, list[str | None]] = {}  # per block, each request's summary (None: the marker)
    for report, body in zip(reports, bodies, strict=True):
        [(_, notice)] = notices(body) if report["dropped_at"] else [(0, "")]
        assert ("summarized:" in notice) == report["summarized"]
        if report["dropped_at"]:
            sent.setdefault(report["dropped_at"], []).append(summary_text(notice) if report["summarized"] else None)
    for block, texts in sent.items():
        # Once a block has its summary, every later request sends the same bytes (none goes back to the marker).
        made = [text for text in texts if text is not None]
        first = texts.index(made[0]) if made else len(texts)
        assert texts[first:] == made[:1] * (len(texts) - first), block


# -- (c) two replicas, one Redis: the same bytes, one call per block in total --------------------------------


@pytest.mark.redis
def test_two_replicas_send_the_same_summary_and_make_it_once(rig: Rig) -> None:
    if rig.b is None:
        pytest.skip("redis-server is not installed")
    history = agent_session(24, 400)
    conversation = [history]
    for step in range(10):
        history = [*history, *tool_step(400, seed=500 + step)]
        conversation.append(history)
    rig.summarizer.clear()
    served: list[tuple[str, str]] = []  # (replica, call id) per request
    for number, messages in enumerate(conversation):
        replica = (rig.a, rig.b)[number % 2]
        served.append((replica.name, send(replica, "agent-shared", messages)))
    reports = {}
    for replica in (rig.a, rig.b):
        ids = [call_id for name, call_id in served if name == replica.name]
        reports.update(zip(ids, replica.reports("agent-shared", ids), strict=True))
    bodies = agent_bodies(rig, "agent-shared")[-len(conversation) :]
    texts: dict[str, set[str]] = {}
    replicas: dict[str, set[str]] = {}
    for (name, call_id), body in zip(served, bodies, strict=True):
        report = reports[call_id]
        assert report["summarized"], report
        [(_, notice)] = notices(body)
        texts.setdefault(report["dropped_at"], set()).add(summary_text(notice))
        replicas.setdefault(report["dropped_at"], set()).add(name)

    assert all(len(variants) == 1 for variants in texts.values()), texts
    assert any(names == {"a", "b"} for names in replicas.values()), "no block was served by both replicas"
    assert len(rig.summarizer.requests) == len(texts)
    assert sum(r["summary_calls"] for r in reports.values()) == len(texts)
    assert rig.redis is not None
    assert len(rig.redis.command("KEYS", "litellm_budget:summary:*")) >= len(texts)


# -- (d) a summarizer that is slow or down: the marker, and the request goes on ----------------------------


def test_a_slow_summarizer_leaves_the_marker_and_the_summary_comes_with_the_next_request(rig: Rig) -> None:
    first = agent_session(30, 400)
    second = [*first, *tool_step(400, seed=77)]
    rig.slow.clear()
    ids = [send(rig.a, "agent-slow", first)]
    late = agent_bodies(rig, "agent-slow")[-1]
    # The call the first request stopped waiting for goes on in the background: until it is logged.
    wait_for_records(
        rig.a.folder / "spy.jsonl",
        lambda records: any(r["model_group"] == "summarizer-slow" and r["outcome"] == "success" for r in records),
        what="the slow summary",
    )
    ids.append(send(rig.a, "agent-slow", second))
    on_time = agent_bodies(rig, "agent-slow")[-1]
    reports = rig.a.reports("agent-slow", ids)

    [(_, marker)] = notices(late)
    [(_, notice)] = notices(on_time)
    assert MARKER in marker
    assert (reports[0]["summarized"], reports[0]["summary_failed"]) == (False, "timeout after 0.5s")
    assert summary_text(notice) == SUMMARY
    assert (reports[1]["summarized"], reports[1]["summary_calls"], reports[1]["summary_failed"]) == (True, 0, None)
    assert len(rig.slow.requests) == 1


def test_a_summarizer_answering_500_leaves_the_marker_on_every_request(rig: Rig) -> None:
    history = agent_session(30, 400)
    rig.broken.clear()
    ids = []
    for step in range(3):
        ids.append(send(rig.a, "agent-broken", history))
        history = [*history, *tool_step(400, seed=900 + step)]
    bodies = agent_bodies(rig, "agent-broken")[-3:]
    reports = rig.a.reports("agent-broken", ids)

    for body, report in zip(bodies, reports, strict=True):
        [(_, marker)] = notices(body)
        assert MARKER in marker
        assert report["summarized"] is False
        assert report["summary_failed"] == "error: InternalServerError"
    assert [r["summary_calls"] for r in reports] == [1, 0, 0]  # a failed block is not tried again at once
    assert len(rig.broken.requests) == 1


# -- Anthropic's compact_20260112, served with the summary model ----------------------------------------


def test_compaction_is_served_for_an_anthropic_and_then_an_openai_upstream(rig: Rig) -> None:
    """
    Past its trigger the response starts with a compaction block and the edit never goes upstream;
    the client appends the response, and its next request (to another provider) starts from the summary.
    """
    asked = {"edits": [{"type": COMPACT, "trigger": {"type": "input_tokens", "value": 2000}}]}
    _, messages = from_chat(agent_session(12, 300, question="Compact this."))
    rig.summarizer.clear()
    with anthropic_client(rig.a.proxy) as client:
        first = client.messages.with_raw_response.create(
            model="claude", max_tokens=256, messages=messages, extra_body={"context_management": asked}
        )
        sent_first = [r["body"] for r in rig.agent.records if r["path"].endswith("/messages")][-1]
        answer = first.http_response.json()
        history = [
            *messages,
            {"role": "assistant", "content": answer["content"]},
            {"role": "user", "content": "Thanks."},
        ]
        second = client.messages.with_raw_response.create(
            model="agent-bridge", max_tokens=256, messages=history, extra_body={"context_management": asked}
        )
    sent_second = [r["body"] for r in rig.agent.records if r["path"].endswith("/responses")][-1]
    block, *rest = answer["content"]

    assert block["type"] == "compaction"
    assert block["content"].endswith(SUMMARY)
    assert rest == [{"type": "text", "text": "ok"}]
    [edit] = answer["context_management"]["applied_edits"]
    assert edit["type"] == COMPACT
    assert edit["cleared_input_tokens"] > 2000
    assert "context_management" not in sent_first
    assert sent_first["messages"] == messages  # the request that triggered it is sent as it came
    assert len(rig.summarizer.requests) == 1
    assert "context_management" not in second.http_response.json()  # under the trigger now: nothing to say
    assert block["content"] in json.dumps(sent_second["input"][0])
    assert "function_call_output" not in json.dumps(sent_second["input"])  # the tool history is gone
    assert "context_management" not in sent_second


def test_a_streamed_compaction_starts_with_the_block(rig: Rig) -> None:
    """Streamed from an Anthropic upstream: the SDK's final message starts with the compaction block, says the edit."""
    asked = {"edits": [{"type": COMPACT, "trigger": {"type": "input_tokens", "value": 2000}}]}
    _, messages = from_chat(agent_session(12, 300, question="Compact this stream."))
    with (
        anthropic_client(rig.a.proxy) as client,
        client.beta.messages.stream(
            model="claude",
            max_tokens=256,
            messages=messages,  # type: ignore[arg-type]
            context_management=asked,  # type: ignore[arg-type]
            betas=["compact-2026-01-12"],
        ) as stream,
    ):
        events = [event.type for event in stream]
        final = stream.get_final_message()
    sent = [r["body"] for r in rig.agent.records if r["path"].endswith("/messages")][-1]

    block, text = final.content
    assert block.type == "compaction"
    assert (block.content or "").endswith(SUMMARY)  # type: ignore[union-attr]
    assert (text.type, getattr(text, "text", None)) == ("text", "ok")
    assert final.context_management is not None
    [edit] = final.context_management.applied_edits
    assert edit.type == COMPACT
    assert events.count("message_delta") == 1
    assert "context_management" not in sent
