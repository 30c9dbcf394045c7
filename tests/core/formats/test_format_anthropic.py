"""The Anthropic Messages format: its seam methods, its checks, its converter, and every policy through it."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from litellm_budget import BudgetSettings
from litellm_budget.core.api import FitRequest, Fitted, fit_request
from litellm_budget.core.counting import counter_for
from litellm_budget.core.formats import (
    ANTHROPIC,
    ASSISTANT,
    CHAT,
    JOINED_KEY,
    SYSTEM,
    TOOL,
    USER,
    format_named,
    join_system,
    plain,
    split_system,
)
from litellm_budget.core.formats import anthropic_from_chat as from_chat
from litellm_budget.core.policies import layout_of
from litellm_budget.core.validity import anthropic_unsupported as unsupported_reason
from litellm_budget.core.wording import NOTICE_PREFIX, TOOL_ELIDED
from litellm_budget.tools.prefix import text_heads
from litellm_budget.tools.sessions import requests_of
from litellm_budget.typing import Message
from tests.conftest import SessionSet
from tests.support.builders import text

MODEL = "claude-sonnet-4-5"
COUNTER = counter_for(MODEL)
SIZES = st.sampled_from([1, 3, 40, 300, 700, 2500, 12_000])
POLICIES = st.sampled_from(["auto", "plan", "elide"])
EPHEMERAL = {"type": "ephemeral"}
SIGNATURE = "EqQBCkgIARABGAIiQLm8c2lnbmF0dXJlIG9mIGEgdGhpbmtpbmcgYmxvY2s="
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
UNTOUCHABLE = ("thinking", "redacted_thinking", "tool_use", "server_tool_use", "web_search_tool_result")


# Strategies: valid Anthropic conversations, built in the API's own shapes.


@st.composite
def text_blocks(draw: st.DrawFn, seed: int) -> list[dict[str, Any]]:
    """One to three text blocks, sometimes a cache breakpoint, sometimes an image."""
    blocks: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 3))):
        block: dict[str, Any] = {"type": "text", "text": text(draw(SIZES), seed + i)}
        if draw(st.integers(0, 4)) == 0:
            block["cache_control"] = EPHEMERAL
        blocks.append(block)
    if draw(st.integers(0, 3)) == 0:
        blocks.insert(draw(st.integers(0, len(blocks))), copy.deepcopy(IMAGE))
    return blocks


@st.composite
def user_contents(draw: st.DrawFn) -> str | list[dict[str, Any]]:
    """A string, or text blocks with an occasional image."""
    seed = draw(st.integers(0, 11))
    return text(draw(SIZES), seed) if draw(st.booleans()) else draw(text_blocks(seed))


def as_blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


@st.composite
def tool_results(draw: st.DrawFn, ids: list[str]) -> list[dict[str, Any]]:
    """One ``tool_result`` per id: string content, text (and image) blocks, or none; some errors and breakpoints."""
    results = []
    for i, tool_use_id in enumerate(ids):
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id}
        shape = draw(st.integers(0, 5))
        if shape < 3:
            result["content"] = text(draw(SIZES), i)
        elif shape < 5:
            result["content"] = draw(text_blocks(i))
        if draw(st.integers(0, 5)) == 0:
            result["is_error"] = True
        if draw(st.integers(0, 5)) == 0:
            result["cache_control"] = EPHEMERAL
        results.append(result)
    return results


@st.composite
def assistant_turns(draw: st.DrawFn, counter: Iterator[int], calls: int) -> dict[str, Any]:
    """An assistant message: thinking with a signature (or redacted), text, server tools, ``calls`` tool uses."""
    blocks: list[dict[str, Any]] = []
    if draw(st.booleans()):
        blocks.append({"type": "thinking", "thinking": text(draw(SIZES), 3), "signature": SIGNATURE})
    elif draw(st.integers(0, 4)) == 0:
        blocks.append({"type": "redacted_thinking", "data": "RWRhY3RlZCB0aGlua2luZw=="})
    if draw(st.integers(0, 6)) == 0:
        server_id = f"srvtoolu_{next(counter)}"
        blocks += [
            {"type": "server_tool_use", "id": server_id, "name": "web_search", "input": {"query": "release notes"}},
            {"type": "web_search_tool_result", "tool_use_id": server_id, "content": []},
        ]
    if not calls or draw(st.booleans()):
        blocks += draw(text_blocks(draw(st.integers(0, 11))))
    for n in range(calls):
        blocks.append(
            {"type": "tool_use", "id": f"toolu_{next(counter)}", "name": "Bash", "input": {"command": f"ls {n}"}}
        )
    if not calls and draw(st.booleans()):
        return {"role": "assistant", "content": text(draw(SIZES), 5)}
    return {"role": "assistant", "content": blocks}


@st.composite
def conversations(draw: st.DrawFn) -> tuple[Any, list[dict[str, Any]]]:
    """
    ``(system, messages)``: turns of a question and assistant steps; a step's tool results
    come in one user message, which may also carry the next question as text, as Claude Code
    sends it. Ends on a user message, or now and then on an assistant's.
    """
    counter = itertools.count(1)
    system = draw(st.one_of(st.none(), st.just(text(40, 1)), text_blocks(7)))
    messages: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 5))):
        question = draw(user_contents())
        if messages and messages[-1]["role"] == "user":
            messages[-1]["content"] = [*as_blocks(messages[-1]["content"]), *as_blocks(question)]
        else:
            messages.append({"role": "user", "content": question})
        for _ in range(draw(st.integers(0, 4))):
            step = draw(assistant_turns(counter, draw(st.integers(0, 3))))
            messages.append(step)
            ids = [call[0] for call in ANTHROPIC.calls(step)]
            calls = [i for i in ids if i.startswith("toolu_")]
            if not calls:
                break
            messages.append({"role": "user", "content": draw(tool_results(calls))})
    if messages[-1]["role"] == "user" and draw(st.integers(0, 5)) == 0:
        messages.append(draw(assistant_turns(counter, draw(st.integers(0, 2)))))
    return system, messages


# Helpers


def fitted(messages: Sequence[Message], policy: str, window: int, max_tokens: int | None = None) -> Fitted:
    options = BudgetSettings(policy=policy)  # type: ignore[arg-type]
    return fit_request(
        FitRequest(messages, model=MODEL, window=window, max_tokens=max_tokens, settings=options, fmt=ANTHROPIC)
    )


def tokens(messages: Sequence[Message]) -> int:
    """What the format counts for ``messages``, the reply priming included."""
    return sum(ANTHROPIC.count_message(COUNTER, m) for m in messages) + COUNTER.count_tools(None)


def blocks_of(messages: Sequence[Message], *types: str) -> list[str]:
    """Every block of these types, as canonical JSON."""
    found = []
    for message in messages:
        content = message["content"]
        for block in content if isinstance(content, list) else ():
            if block["type"] in types:
                found.append(json.dumps(block, sort_keys=True))
    return found


def final_step(messages: Sequence[Message]) -> Sequence[Message]:
    """The assistant message of the step in progress, which every policy keeps whole."""
    kinds = ANTHROPIC.kinds(messages)
    if kinds[-1] == ASSISTANT:
        return messages[-1:]
    return messages[-2:-1] if kinds[-1] == TOOL else []


def least_sendable(messages: Sequence[Message], *, keeps_task: bool) -> int:
    """
    A bound under what a dropping policy could send: the system, and every message it may not
    drop (the question, the final step; for ``auto`` the task too) with each text cut down to
    a note of at most 80 tokens. A rejection is warranted only when even this overflows.
    """
    layout = layout_of(messages, ANTHROPIC)
    kinds = ANTHROPIC.kinds(messages)
    kept = {i for i in layout.pinned if kinds[i] != SYSTEM} | (
        {kinds.index(USER)} if keeps_task and USER in kinds else set()
    )
    systems = [m for m, kind in zip(messages, kinds, strict=True) if kind == SYSTEM]
    cut_down = [ANTHROPIC.map_texts(messages[i], lambda _: "") for i in kept]
    return tokens([*systems, *cut_down]) + 80 * len(kept)


def alternates(messages: Sequence[Message]) -> bool:
    roles = [m["role"] for m in messages]
    return bool(roles) and roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))


# Properties


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(conversation=conversations(), policy=POLICIES, window=st.integers(300, 60_000))
def test_invariants(conversation: tuple[Any, list[dict[str, Any]]], policy: str, window: int) -> None:
    """Fits or is rejected; valid, alternating; input kept; thinking, tool inputs intact; deterministic; idempotent."""
    system, messages = conversation
    joined = join_system(system, messages)
    snapshot = copy.deepcopy(joined)
    assert unsupported_reason(joined, None, None) is None

    result = fitted(joined, policy, window)

    report = result.report
    event(f"{policy}:{report.action}")
    assert joined == snapshot
    if report.action == "rejected":
        assert report.tokens_after > report.budget
        assert result.messages == joined
        if policy != "elide":
            assert least_sendable(joined, keeps_task=policy == "auto") > report.budget
        return
    out = result.messages
    assert tokens(out) == report.tokens_after <= report.budget
    out_system, out_messages = split_system(out)
    assert out_system is system
    assert unsupported_reason(out, None, result.max_tokens) is None
    assert alternates(out_messages)
    assert set(blocks_of(out, *UNTOUCHABLE)) <= set(blocks_of(joined, *UNTOUCHABLE))
    assert set(blocks_of(final_step(messages), "thinking")) <= set(blocks_of(out, "thinking"))

    again = fitted(joined, policy, window)
    assert again.messages == out
    assert again.report.as_dict() | {"duration_ms": 0} == report.as_dict() | {"duration_ms": 0}

    twice = fitted(out, policy, window, result.max_tokens)
    assert twice.messages == out
    assert twice.report.action == "passthrough"


# The seam, method by method

TASK: dict[str, Any] = {"role": "user", "content": "Fix the failing test."}
CALL: dict[str, Any] = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "Look first.", "signature": SIGNATURE},
        {"type": "text", "text": "Running it."},
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "pytest"}},
        {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"path": "a.py"}},
    ],
}
RESULTS: dict[str, Any] = {
    "role": "user",
    "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1 failed", "cache_control": EPHEMERAL},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "x = 1"}, IMAGE]},
        {"type": "text", "text": "<system-reminder>keep going</system-reminder>"},
    ],
}


class TestSystem:
    @pytest.mark.parametrize(
        "system", [None, "Be brief.", [{"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}]]
    )
    def test_join_and_split_round_trip(self, system: Any) -> None:
        """split_system(join_system(s, m)) gives back the very same system object and equal messages."""
        joined = join_system(system, [TASK])

        back_system, back_messages = split_system(joined)

        assert back_system is system
        assert back_messages == [TASK]
        assert back_messages[0] is TASK
        assert len(joined) == (1 if system is None else 2)

    def test_format_is_registered(self) -> None:
        """format_named finds the format under its name."""
        assert format_named("anthropic") is ANTHROPIC
        assert ANTHROPIC.name == "anthropic"


class TestSeam:
    def test_kinds(self) -> None:
        """The system pseudo-message, a question, an assistant step and the user message holding its results."""
        joined = join_system("Be brief.", [TASK, CALL, RESULTS, {"role": "assistant", "content": "Done."}])

        assert ANTHROPIC.kinds(joined) == [SYSTEM, USER, ASSISTANT, TOOL, ASSISTANT]

    def test_texts_are_text_blocks_and_tool_result_contents(self) -> None:
        """Text blocks and tool results' texts, in order; never thinking, tool inputs or images."""
        assert list(ANTHROPIC.texts(CALL)) == ["Running it."]
        assert list(ANTHROPIC.texts(RESULTS)) == ["1 failed", "x = 1", "<system-reminder>keep going</system-reminder>"]
        assert list(ANTHROPIC.texts(TASK)) == ["Fix the failing test."]

    def test_map_texts_keeps_everything_else(self) -> None:
        """Only texts change: ids, cache_control, images, thinking and tool inputs stay the same objects."""
        mapped = ANTHROPIC.map_texts(RESULTS, lambda t: t.upper())
        assistant = ANTHROPIC.map_texts(CALL, lambda t: t.upper())

        assert mapped["content"] == [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1 FAILED", "cache_control": EPHEMERAL},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "X = 1"}, IMAGE]},
            {"type": "text", "text": "<SYSTEM-REMINDER>KEEP GOING</SYSTEM-REMINDER>"},
        ]
        assert mapped["content"][1]["content"][1] is IMAGE
        assert [b is a for a, b in zip(CALL["content"], assistant["content"], strict=True)] == [True, False, True, True]
        assert RESULTS["content"][0]["content"] == "1 failed"

    def test_emptied_texts_leave_out_blocks_but_keep_tool_results(self) -> None:
        """An emptied text block goes (the API refuses empty text); a tool_result keeps its id without content."""
        mapped = ANTHROPIC.map_texts(RESULTS, lambda _: "")

        assert mapped["content"] == [
            {"type": "tool_result", "tool_use_id": "toolu_1", "cache_control": EPHEMERAL},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": [IMAGE]},
        ]

    def test_elision_puts_the_placeholder_in_the_tool_result(self) -> None:
        """Elided, a bulky tool_result's content becomes the placeholder; its id and the call stay."""
        huge = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": text(3000)}]}
        call = {"role": "assistant", "content": [CALL["content"][2]]}
        steps = [call, huge] * 6
        joined = join_system("Be brief.", [TASK, *steps, {"role": "assistant", "content": "Done."}, TASK])

        result = fitted(joined, "elide", 12_000)

        assert result.report.elided > 0
        elided = result.messages[2 + 1]
        (block,) = elided["content"]
        assert (block["type"], block["tool_use_id"]) == ("tool_result", "toolu_1")
        assert block["content"].startswith(TOOL_ELIDED)
        assert result.messages[2] is call

    def test_call_and_answered_ids(self) -> None:
        """Calls are tool_use and server_tool_use ids; answers are tool_result ids (server results answer in place)."""
        server = {
            "role": "assistant",
            "content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            ],
        }

        assert [call[0] for call in ANTHROPIC.calls(CALL)] == ["toolu_1", "toolu_2"]
        assert ANTHROPIC.answered_ids(RESULTS) == ["toolu_1", "toolu_2"]
        assert [call[0] for call in ANTHROPIC.calls(server)] == ["srvtoolu_1"]
        assert ANTHROPIC.answered_ids(server) == ["srvtoolu_1"]
        assert ([call[0] for call in ANTHROPIC.calls(TASK)], ANTHROPIC.answered_ids(TASK)) == ([], [])

    def test_notice_is_a_user_text_block(self) -> None:
        """The marker is what the Messages API accepts: a user message of one text block (marked until placed)."""
        assert plain(ANTHROPIC.notice("[note]")) == {"role": "user", "content": [{"type": "text", "text": "[note]"}]}
        assert plain(ANTHROPIC.notice("[note]", "system_message")) == plain(ANTHROPIC.notice("[note]"))

    def test_a_leading_notice_goes_into_the_system(self) -> None:
        """leading_system: the notice's text block ends the request's system, which stays a system."""
        joined = join_system("Be brief.", [TASK, ANTHROPIC.notice("[note]", "leading_system"), CALL, RESULTS])

        system, messages = split_system(ANTHROPIC.finish(joined))

        assert system == [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "[note]"}]
        assert messages == [TASK, CALL, RESULTS]

    def test_finish_merges_neighbours_of_one_role(self) -> None:
        """A notice joins the user message next to it; the system and unchanged messages stay the same objects."""
        notice = ANTHROPIC.notice("[note]")
        joined = join_system("Be brief.", [TASK, notice, CALL, RESULTS, notice])

        out = ANTHROPIC.finish(joined)

        assert out[1] == {
            "role": "user",
            "content": [{"type": "text", "text": "Fix the failing test."}, notice["content"][0]],
        }
        assert out[3]["content"] == [*RESULTS["content"], notice["content"][0]]
        assert [out[0], out[2]] == [joined[0], CALL]
        assert out[0] is joined[0]
        assert out[2] is CALL
        assert len(out) == 4
        assert ANTHROPIC.finish(out) == out

    def test_a_request_that_fits_is_forwarded_as_sent(self) -> None:
        """Two user messages in a row that fit come back as they were: only edits are written back merged."""
        request = [TASK, {"role": "user", "content": "Quickly."}]

        result = fitted(request, "auto", 10_000)

        assert result.messages == request
        assert result.report.action == "passthrough"

    def test_tool_result_text_counts_as_text(self) -> None:
        """A tool_result's text costs what the same text costs in a text block, plus a fixed stub."""

        def result(content: str) -> dict[str, Any]:
            return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": content}]}

        long, short = text(2000), text(10)

        grown = ANTHROPIC.count_message(COUNTER, result(long)) - ANTHROPIC.count_message(COUNTER, result(short))

        assert grown == COUNTER.count_text(long) - COUNTER.count_text(short)


class TestChecks:
    @pytest.mark.parametrize(
        ("messages", "reason"),
        [
            ("hi", "messages is str, not a list"),
            ([], "no messages besides the system"),
            ([{"role": "system", "content": "s"}], "no messages besides the system"),
            (
                [TASK, {"role": "system", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]}],
                "message 1: has a malformed tool_use block",
            ),
            ([{"role": "tool", "content": "x"}], "message 0: has an unknown role"),
            ([{"content": "x"}], "message 0: has no role"),
            ([{"role": "user"}], "message 0: content is NoneType, not text or a list of blocks"),
            (
                [{"role": "user", "content": [{"text": "x"}]}],
                "message 0: content is list, not text or a list of blocks",
            ),
            ([CALL], "message 0: the first message is not a user message"),
            ([TASK, CALL, TASK], "message 2: does not answer every tool_use of the assistant message before it"),
            (
                [TASK, CALL, {"role": "assistant", "content": "x"}],
                "message 2: follows an assistant tool_use that was not answered",
            ),
            (
                [TASK, {"role": "assistant", "content": "x"}, RESULTS],
                "message 2: tool_result answers no tool_use of the assistant message before it",
            ),
            (
                [TASK, CALL, {**RESULTS, "content": RESULTS["content"][::-1]}],
                "message 2: has a tool_result after another block (tool results come first)",
            ),
            (
                [TASK, {"role": "assistant", "content": [{"type": "tool_use", "name": "Bash"}]}],
                "message 1: has a malformed tool_use block",
            ),
            (
                [{"role": "user", "content": [{"type": "tool_use", "id": "t"}]}],
                "message 0: has a malformed tool_use block",
            ),
            (
                [TASK, CALL, {"role": "user", "content": [*RESULTS["content"][:2], RESULTS["content"][0]]}],
                "message 2: duplicated tool ids",
            ),
        ],
    )
    def test_reasons(self, messages: Any, reason: str) -> None:
        """A request the policies could break is named with a short reason."""
        assert unsupported_reason(messages, None, None) == reason

    @pytest.mark.parametrize(
        ("tools", "max_tokens", "reason"),
        [
            ({"name": "x"}, None, "tools is not a list of objects"),
            (None, 1.5, "max_tokens is float, not an int"),
            (None, True, "max_tokens is bool, not an int"),
            (None, -1, "max_tokens is negative"),
        ],
    )
    def test_request_fields(self, tools: Any, max_tokens: Any, reason: str) -> None:
        """tools must be a list of objects and max_tokens an int >= 0 or None."""
        assert unsupported_reason([TASK], tools, max_tokens) == reason

    def test_valid_requests(self) -> None:
        """A tool loop, a final unanswered tool_use, and a final assistant prefill are accepted."""
        assert unsupported_reason(join_system("s", [TASK, CALL, RESULTS]), [{"name": "Bash"}], 0) is None
        assert unsupported_reason([TASK, CALL], None, None) is None
        assert unsupported_reason([TASK, {"role": "assistant", "content": "Sure"}], None, 100) is None

    def test_unsupported_request_is_forwarded_untouched(self) -> None:
        """fit_request passes a malformed request through with the reason."""
        result = fitted([CALL, RESULTS], "auto", 1000)

        assert (result.report.action, result.report.reason) == (
            "unsupported",
            "message 0: the first message is not a user message",
        )
        assert result.messages == [CALL, RESULTS]


class TestFromChat:
    def test_conversion(self) -> None:
        """System and developer texts become the system; calls become tool_use; results share one user message."""
        chat: list[dict[str, Any]] = [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
                    {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "ls -la"}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
            {"role": "tool", "tool_call_id": "c2", "content": ""},
            {"role": "user", "content": "And now?"},
        ]

        system, messages = from_chat(chat)

        assert system == "Be brief.\n\nUse tools."
        assert messages == [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "c1", "name": "bash", "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "c2", "name": "bash", "input": {"raw": "ls -la"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "a.py"},
                    {"type": "tool_result", "tool_use_id": "c2"},
                    {"type": "text", "text": "And now?"},
                ],
            },
        ]
        assert unsupported_reason(join_system(system, messages), None, None) is None

    @pytest.mark.sessions
    def test_every_session_converts_to_a_valid_request(self, replay_set: SessionSet) -> None:
        """from_chat of every agent session gives a request the Messages API takes."""
        reasons = {
            name: unsupported_reason(join_system(*from_chat(messages)), None, None)
            for name, messages in replay_set.sessions.items()
        }

        assert reasons == dict.fromkeys(replay_set.sessions)


# A Claude Code-shaped request, from the public API docs


def claude_code_request(steps: int = 25) -> dict[str, Any]:
    """Three system blocks (two cached), 24 tools, thinking, a Bash loop with large outputs, metadata."""
    tools = [
        {
            "name": f"Tool{i}",
            "description": text(250, i),
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        }
        for i in range(24)
    ]
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>" + text(300, 2) + "</system-reminder>"},
                {"type": "text", "text": "Find out why the build fails and fix it."},
            ],
        }
    ]
    for n in range(steps):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": text(80, n), "signature": f"{SIGNATURE}{n}"},
                    {"type": "text", "text": "Checking the next file."},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{n:04}",
                        "name": "Bash",
                        "input": {"command": f"cat part{n}.log"},
                    },
                ],
            }
        )
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": f"toolu_{n:04}", "content": text(1500, n)}
        if n == steps - 1:
            result["cache_control"] = EPHEMERAL
        messages.append({"role": "user", "content": [result]})
    return {
        "model": MODEL,
        "max_tokens": 32_000,
        "thinking": {"type": "enabled", "budget_tokens": 31_999},
        "system": [
            {
                "type": "text",
                "text": "You are Claude Code, Anthropic's official CLI for Claude.",
                "cache_control": EPHEMERAL,
            },
            {"type": "text", "text": text(2500, 1), "cache_control": EPHEMERAL},
            {"type": "text", "text": "<env>Working directory: /repo</env>"},
        ],
        "tools": tools,
        "metadata": {"user_id": "user_0123_account__session_4567"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "stream": True,
        "messages": messages,
    }


def test_claude_code_request_fits_32k_with_system_and_tools_untouched() -> None:
    """Fitted into 32k: system (same object) and tools untouched, metadata outside the list, the last step intact."""
    request = claude_code_request()
    snapshot = copy.deepcopy(request)
    joined = join_system(request["system"], request["messages"])

    result = fit_request(
        FitRequest(
            joined,
            model=MODEL,
            window=32_000,
            tools=request["tools"],
            max_tokens=request["max_tokens"],
            settings=BudgetSettings(),
            fmt=ANTHROPIC,
        )
    )

    report = result.report
    system, messages = split_system(result.messages)
    assert report.action == "trimmed"
    assert report.tokens_before > 32_000 > report.budget >= report.tokens_after
    assert system is request["system"]
    assert request == snapshot
    assert unsupported_reason(result.messages, request["tools"], result.max_tokens) is None
    assert alternates(messages)
    assert messages[-2] is request["messages"][-2]
    assert messages[-1] is request["messages"][-1]
    assert (NOTICE_PREFIX in json.dumps(messages[0])) == report.marker
    assert set(blocks_of(messages, *UNTOUCHABLE)) <= set(blocks_of(request["messages"], *UNTOUCHABLE))


# Every request of the agent sessions (the shared ones, else the made), replayed in both formats

WINDOWS = (8000, 16_000, 32_000)


def replay(sessions: dict[str, list[dict[str, Any]]], window: int, *, anthropic: bool) -> dict[str, Any]:
    """
    Fit every request (the history before each assistant message) with ``auto``; count
    overflow (by our own count) and invalid requests, and the prefix reuse: the share of the
    tokens sent that repeat the previous prompt sent, message by message, and block by block
    inside the first message that differs (what a KV prefix cache reuses).
    """
    fmt = ANTHROPIC if anthropic else CHAT
    totals = dict.fromkeys(("requests", "rejected", "overflow", "invalid", "sent", "shared", "shared_blocks"), 0)
    for messages in sessions.values():
        previous: Sequence[Message] = []
        for request in requests_of(messages):
            listed = join_system(*from_chat(request)) if anthropic else request
            result = fit_request(FitRequest(listed, model=MODEL, window=window, settings=BudgetSettings(), fmt=fmt))
            totals["requests"] += 1
            if result.report.action == "rejected":
                totals["rejected"] += 1
                continue
            out = result.messages
            sizes = [fmt.count_message(COUNTER, m) for m in out]
            sent = sum(sizes) + COUNTER.count_tools(None)
            shared, shared_blocks = _shared(previous, out, sizes, anthropic=anthropic)
            totals["overflow"] += sent > result.report.budget
            totals["invalid"] += fmt.unsupported_reason(out, None, result.max_tokens) is not None
            totals["sent"] += sent
            totals["shared"] += shared
            totals["shared_blocks"] += shared_blocks
            previous = out
    return totals | {
        "reuse": round(totals["shared"] / totals["sent"], 4),
        "reuse_blocks": round(totals["shared_blocks"] / totals["sent"], 4),
    }


def _shared(
    previous: Sequence[Message], current: Sequence[Message], sizes: list[int], *, anthropic: bool
) -> tuple[int, int]:
    shared = 0
    for before, now, size in zip(previous, current, sizes, strict=False):
        if before != now:
            if not anthropic:  # chat's string content is cached as text: its unchanged head is a prefix
                return shared, shared + _CHAT_HEADS(before, now)
            pairs = zip(_parts(before), _parts(now), strict=False)
            same = [part for part, _ in itertools.takewhile(lambda pair: pair[0] == pair[1], pairs)]
            return shared, shared + ANTHROPIC.count_message(COUNTER, {"content": same}) - _EMPTY
        shared += size
    return shared, shared


_EMPTY = ANTHROPIC.count_message(COUNTER, {"content": []})
_CHAT_HEADS = text_heads(COUNTER.count_text, CHAT.texts)


def _parts(message: Message) -> list[Any]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


@pytest.mark.sessions
@pytest.mark.parametrize("window", WINDOWS)
def test_session_replay(replay_set: SessionSet, window: int) -> None:
    """
    0 rejected, 0 overflow, 0 invalid in Anthropic format; reuse block by block within 0.03 of chat's,
    whose cache is credited by text (a note appended to the task keeps the task's tokens cached).
    """
    chat = replay(replay_set.sessions, window, anthropic=False)
    anthropic = replay(replay_set.sessions, window, anthropic=True)

    print(f"\n{window}: chat {chat}\n{window}: anthropic {anthropic}")  # the numbers, shown with -s
    assert (anthropic["rejected"], anthropic["overflow"], anthropic["invalid"]) == (0, 0, 0)
    assert anthropic["requests"] == chat["requests"] > 0
    assert abs(anthropic["reuse_blocks"] - chat["reuse_blocks"]) <= 0.03


class TestMidConversationSystem:
    """
    Claude Code on newer models sends ``system`` messages inside ``messages`` (the
    ``mid-conversation-system`` beta): the agent listing right after the task, reminders later.
    """

    @staticmethod
    def claude_code_like(steps: int) -> list[Message]:
        listing = {"role": "system", "content": "Available agent types: general-purpose, explore."}
        messages: list[Message] = [TASK, listing]
        for step in range(steps):
            call = {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"toolu_{step}", "name": "Bash", "input": {"command": "seq"}}],
            }
            result = {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{step}", "content": text(1500, step)}],
            }
            messages += [call, result]
            if step % 10 == 9:
                messages.append({"role": "system", "content": f"<system-reminder>step {step}</system-reminder>"})
        return join_system([{"type": "text", "text": "You are Claude Code.", "cache_control": EPHEMERAL}], messages)

    def test_is_supported_and_its_system_messages_are_system(self) -> None:
        joined = self.claude_code_like(3)
        assert unsupported_reason(joined, None, None) is None
        assert ANTHROPIC.kinds(joined)[:3] == [SYSTEM, USER, SYSTEM]

    @pytest.mark.parametrize("policy", ["auto", "plan", "elide"])
    def test_fitted_keeps_them_and_stays_valid(self, policy: str) -> None:
        joined = self.claude_code_like(40)
        result = fitted(joined, policy, 16_000)
        if result.report.action == "rejected":
            assert policy == "elide"
            return
        assert result.report.action == "trimmed"
        system, messages = split_system(result.messages)
        assert system is joined[0]["content"]
        assert unsupported_reason(join_system(system, messages), None, None) is None
        assert [m["content"] for m in messages if m["role"] == "system"] == [
            m["content"] for m in joined[1:] if m["role"] == "system"
        ]
        turns = [m["role"] for m in messages if m["role"] != "system"]
        assert all(a != b for a, b in itertools.pairwise(turns)), "user and assistant alternate"
        assert not any(JOINED_KEY in m for m in messages)
        assert sum(COUNTER.count_message(m) for m in result.messages) <= result.report.budget

    def test_a_client_system_message_first_is_not_taken_for_the_request_system(self) -> None:
        own = [{"role": "system", "content": "Reminder."}, TASK]
        joined = join_system(None, own)
        assert split_system(joined) == (None, own)
        assert unsupported_reason(joined, None, None) is None
