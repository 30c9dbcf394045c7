"""
The shapes that Claude Code, Codex and the Agents SDKs send (late 2026), through ``fit()``: a fit never
drops or edits a compaction, a tool change, a signed block or a key it does not own, and its report
speaks the caller's indices. Each request is first validated against the SDKs' own request types
(anthropic and openai as the dev extra pins them), so the shapes are the ones the APIs take.
"""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

import pytest
from anthropic.types.beta import BetaMessageParam
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter

from litellm_budget import BudgetSettings, fit
from litellm_budget.core import parse_ranges
from litellm_budget.core.cache import MAX_BREAKPOINTS, breakpoints_in, with_breakpoints
from litellm_budget.core.counting import counter_for
from litellm_budget.core.formats import ANTHROPIC, RESPONSES, SYSTEM, join_system
from litellm_budget.core.validity import anthropic_unsupported
from litellm_budget.core.wording import NOTICE_PREFIX
from litellm_budget.exceptions import BudgetExceededError
from tests.core.formats.test_format_anthropic import conversations
from tests.support.builders import text

COUNTER = counter_for("claude-sonnet-4-5")
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
ENCRYPTED = "gAAAAB" + "QmFzZTY0" * 40


def _valid(adapter: TypeAdapter[Any], value: Any) -> Any:
    """``value`` after checking it against an SDK's own request type (pydantic validates TypedDicts)."""
    adapter.validate_python(value)
    return value


ANTHROPIC_MESSAGES: TypeAdapter[Any] = TypeAdapter(list[BetaMessageParam])
RESPONSES_INPUT: TypeAdapter[Any] = TypeAdapter(list[ResponseInputItemParam])
CHAT_MESSAGES: TypeAdapter[Any] = TypeAdapter(list[ChatCompletionMessageParam])


def _bash_steps(count: int, first: int = 0, name: str = "Bash", size: int = 700) -> list[dict[str, Any]]:
    """Anthropic tool steps: an assistant's ``tool_use`` and the user's ``tool_result``, ``size`` tokens each."""
    messages: list[dict[str, Any]] = []
    for n in range(first, first + count):
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": {"command": f"cat src/m{n}.py"}}
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {n}."}, call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": text(size, n)}
        messages.append({"role": "user", "content": [result]})
    return messages


def _compaction(summary: str = "The task: fix the parser. Done so far: read src/m0.py.") -> dict[str, Any]:
    return {"type": "compaction", "content": summary, "encrypted_content": ENCRYPTED, "signature": SIGNATURE}


def _compacted_history(steps: int = 20) -> list[dict[str, Any]]:
    """The issue's example: an old task, 3 steps, the compaction, "go on", then ``steps`` tool steps."""
    resumed = {"role": "assistant", "content": [_compaction(), {"type": "text", "text": "Resuming."}]}
    return _valid(
        ANTHROPIC_MESSAGES,
        [
            {"role": "user", "content": "old task"},
            *_bash_steps(3),
            resumed,
            {"role": "user", "content": "go on"},
            *_bash_steps(steps, first=3),
            {"role": "assistant", "content": "All steps done."},
            {"role": "user", "content": "Now summarize."},
        ],
    )


def _options(policy: str) -> BudgetSettings:
    return BudgetSettings(policy=policy)  # type: ignore[arg-type]


def _tokens(messages: list[dict[str, Any]]) -> int:
    return sum(ANTHROPIC.count_message(COUNTER, message) for message in messages)


class TestAnthropicCompaction:
    @pytest.mark.parametrize("policy", ["auto", "plan", "elide"])
    def test_the_compaction_and_what_it_stands_for_are_kept(self, policy: str) -> None:
        """Everything up to the compaction goes as the client sent it; the fit works on what follows."""
        messages = _compacted_history()
        snapshot = copy.deepcopy(messages)
        fitted = fit(messages, model="claude-sonnet-4-5", window=8000, settings=_options(policy), format="anthropic")
        out = fitted.messages

        assert messages == snapshot
        assert fitted.report.action == "trimmed"
        assert out[:8] == messages[:8], "the compaction or the history it replaces was edited"
        assert out[7] is messages[7]
        assert all(index > 7 for index in parse_ranges(fitted.report.dropped_at + "," + fitted.report.elided_at))
        assert anthropic_unsupported(out, None, None) is None

    def test_what_the_compaction_replaces_is_not_counted(self) -> None:
        """tokens_before is what the provider reads: from the compaction on (the fit sends the rest as it came)."""
        messages = _compacted_history(steps=2)
        window = 100_000
        fitted = fit(messages, model="claude-sonnet-4-5", window=window, format="anthropic")
        alone = fit(messages[7:], model="claude-sonnet-4-5", window=window, format="anthropic")

        assert fitted.report.action == "passthrough"
        assert fitted.report.tokens_before == alone.report.tokens_before
        assert fitted.report.tokens_before < alone.report.tokens_before + _tokens(messages[:7])

    def test_the_marker_lands_after_the_compaction(self) -> None:
        """A notice before the compaction would be ignored by the API: the marker follows it."""
        messages = _compacted_history()
        fitted = fit(messages, model="claude-sonnet-4-5", window=8000, settings=_options("plan"), format="anthropic")
        texts = [
            i
            for i, message in enumerate(fitted.messages)
            if any(t.startswith(NOTICE_PREFIX) for t in ANTHROPIC.texts(message))
        ]

        assert fitted.report.marker
        assert texts
        assert min(texts) > 7

    @pytest.mark.parametrize("policy", ["auto", "plan", "elide"])
    def test_a_history_that_opens_with_a_compaction_is_fitted(self, policy: str) -> None:
        """The newest round trip: the first message is the assistant's compaction alone."""
        messages = _valid(
            ANTHROPIC_MESSAGES,
            [
                {"role": "assistant", "content": [_compaction()]},
                {"role": "user", "content": "go on"},
                *_bash_steps(20),
                {"role": "assistant", "content": "Done."},
                {"role": "user", "content": "And now?"},
            ],
        )
        assert anthropic_unsupported(join_system("sys", messages), None, None) is None
        fitted = fit(
            messages,
            model="claude-sonnet-4-5",
            window=8000,
            settings=_options(policy),
            format="anthropic",
            system="sys",
        )

        assert fitted.report.action == "trimmed"
        assert fitted.messages[0] is messages[0]
        assert fitted.report.tokens_after <= fitted.report.budget  # type: ignore[operator]

    def test_a_failed_compaction_is_kept_and_reads_nothing_away(self) -> None:
        """A compaction without a summary is a no-op for the API: the history before it still counts, and it stays."""
        failed = {"type": "compaction", "content": None, "encrypted_content": None}
        messages = [
            {"role": "user", "content": "task"},
            *_bash_steps(2),
            {"role": "assistant", "content": [failed, {"type": "text", "text": "Compaction failed."}]},
            {"role": "user", "content": "go on"},
            *_bash_steps(14, first=2),
            {"role": "user", "content": "Next?"},
        ]
        messages[-2]["content"] = [*messages[-2]["content"], {"type": "text", "text": "Next?"}]
        messages.pop()
        _valid(ANTHROPIC_MESSAGES, messages)
        fitted = fit(messages, model="claude-sonnet-4-5", window=6000, settings=_options("plan"), format="anthropic")
        whole = fit(messages, model="claude-sonnet-4-5", window=1_000_000, format="anthropic")

        assert whole.report.tokens_before >= _tokens(messages)
        assert messages[5] in fitted.messages


class TestToolChanges:
    def _history(self, block: dict[str, Any]) -> list[dict[str, Any]]:
        return _valid(
            ANTHROPIC_MESSAGES,
            [
                {"role": "user", "content": "task"},
                *_bash_steps(3),
                {"role": "assistant", "content": "Shall I use the linter?"},
                {"role": "user", "content": [{"type": "text", "text": "Yes."}, block]},
                *_bash_steps(16, first=3, name="Lint"),
                {"role": "assistant", "content": "Linted."},
                {"role": "user", "content": "Go on."},
            ],
        )

    @pytest.mark.parametrize("policy", ["auto", "plan"])
    def test_an_addition_stays_while_its_tool_is_called(self, policy: str) -> None:
        """A dropped tool_addition would leave tool_use blocks of a tool the request no longer defines."""
        addition = {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "Lint"}}
        messages = self._history(addition)
        fitted = fit(messages, model="claude-sonnet-4-5", window=6000, settings=_options(policy), format="anthropic")
        blocks = [block for message in fitted.messages for block in message["content"] if isinstance(block, dict)]

        assert fitted.report.action == "trimmed"
        assert addition in blocks
        lint_calls = [i for i, block in enumerate(blocks) if block["type"] == "tool_use" and block["name"] == "Lint"]
        assert all(blocks.index(addition) < i for i in lint_calls)

    def test_a_removal_stays(self) -> None:
        """A dropped tool_removal would make the removed tool available again."""
        removal = {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "Bash"}}
        messages = self._history(removal)
        fitted = fit(messages, model="claude-sonnet-4-5", window=6000, settings=_options("plan"), format="anthropic")

        assert fitted.report.action == "trimmed"
        assert any(removal in message["content"] for message in fitted.messages if isinstance(message["content"], list))

    def test_their_messages_read_as_system_with_their_step(self) -> None:
        """The kinds pin the message and the step it belongs to, so no pair is split."""
        addition = {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "Lint"}}
        step = _bash_steps(1)
        step[1]["content"] = [*step[1]["content"], addition]
        messages = [{"role": "user", "content": "task"}, *step, {"role": "user", "content": "next"}]

        assert ANTHROPIC.kinds(messages) == ["user", SYSTEM, SYSTEM, "user"]


class TestBreakpoints:
    def test_marks_are_counted_wherever_the_api_counts_them(self) -> None:
        """The request's own cache_control and the marks inside a tool_result's content count against the four."""
        mark = {"type": "ephemeral"}
        result = {
            "type": "tool_result",
            "tool_use_id": "toolu_0",
            "content": [{"type": "text", "text": "x", "cache_control": mark}],
        }
        messages = [
            {"role": "system", "content": [{"type": "text", "text": "sys", "cache_control": mark}]},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_0", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [result]},
            {"role": "assistant", "content": [{"type": "text", "text": "ok", "cache_control": mark}]},
            {"role": "user", "content": "next"},
        ]

        assert breakpoints_in(messages) == 3
        assert breakpoints_in(messages, automatic=mark) == 4
        marked, at = with_breakpoints(messages, [5, 1], automatic=mark)
        assert at == []
        assert marked == messages
        assert len(with_breakpoints(messages, [5, 1])[1]) == MAX_BREAKPOINTS - 3


def shell_items(first: int = 0) -> list[dict[str, Any]]:
    """Responses items: a task (its text part with a cache breakpoint), 20 shell calls of 700 tokens, a question."""
    items: list[dict[str, Any]] = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "task", "prompt_cache_breakpoint": {"mode": "explicit"}}],
        }
    ]
    for n in range(first, first + 20):
        items.append(
            {
                "type": "function_call",
                "call_id": f"call_{n}",
                "name": "shell",
                "arguments": json.dumps({"cmd": f"cat m{n}.py"}),
            }
        )
        items.append({"type": "function_call_output", "call_id": f"call_{n}", "output": text(700, n)})
    items.append({"type": "message", "role": "user", "content": "next"})
    return items


class TestResponses:
    def test_a_merged_text_part_keeps_its_other_keys(self) -> None:
        """The marker merged into a text part leaves prompt_cache_breakpoint (and any key it does not own) on it."""
        items = shell_items()
        fitted = fit(items, model="gpt-4o", window=8000, settings=_options("plan"), format="responses")
        parts = [
            part
            for item in fitted.messages
            if item.get("type") == "message"
            for part in item["content"]
            if isinstance(part, dict)
        ]

        assert fitted.report.marker
        assert {"type": "input_text", "text": "task", "prompt_cache_breakpoint": {"mode": "explicit"}} in parts

    @pytest.mark.parametrize("policy", ["auto", "plan", "elide"])
    def test_a_compaction_item_is_the_start_of_history(self, policy: str) -> None:
        """The compaction item and what precedes it go as sent; the fit works on what follows, uncounted before."""
        compaction = {"type": "compaction", "id": "cmp_1", "encrypted_content": ENCRYPTED}
        items = _valid(RESPONSES_INPUT, [*shell_items()[:7], compaction, *shell_items(first=100)[1:]])
        fitted = fit(items, model="gpt-4o", window=8000, settings=_options(policy), format="responses")

        assert fitted.report.action == "trimmed"
        assert fitted.messages[:8] == items[:8]
        assert RESPONSES.kinds(items)[:8] == [SYSTEM] * 8
        assert all(index > 7 for index in parse_ranges(fitted.report.dropped_at + "," + fitted.report.elided_at))

    def test_codex_items_are_fitted(self) -> None:
        """shell_call, apply_patch_call, additional_tools and a final compaction_trigger are known items."""
        items = shell_items()[:-1]
        items += [
            {
                "type": "additional_tools",
                "role": "developer",
                "tools": [{"type": "function", "name": "lint", "parameters": {}, "strict": False}],
            },
            {"type": "shell_call", "call_id": "sh_1", "action": {"commands": ["pytest -q"]}, "status": "completed"},
            {
                "type": "shell_call_output",
                "call_id": "sh_1",
                "output": [{"stdout": "ok", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
            },
            {
                "type": "apply_patch_call",
                "call_id": "ap_1",
                "status": "completed",
                "operation": {"type": "update_file", "path": "m.py", "diff": "-a\n+b"},
            },
            {"type": "apply_patch_call_output", "call_id": "ap_1", "status": "completed"},
            {"type": "message", "role": "user", "content": "compact now"},
            {"type": "compaction_trigger"},
        ]
        _valid(RESPONSES_INPUT, items)
        fitted = fit(items, model="gpt-4o", window=8000, format="responses")

        assert fitted.report.action == "trimmed"
        assert fitted.messages[-7:] == items[-7:]
        assert RESPONSES.unsupported_reason(fitted.messages, None, None) is None


def custom_tool_session() -> list[dict[str, Any]]:
    """Chat messages of 20 ``type: custom`` tool calls (a patch tool's free-form input), 700 tokens of output each."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
    for n in range(20):
        call = {"id": f"c{n}", "type": "custom", "custom": {"name": "apply_patch", "input": f"*** Update {n}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": text(700, n)},
        ]
    return [*messages, {"role": "user", "content": "next"}]


class TestRefusedValidShapes:
    def test_a_system_message_of_only_output_config(self) -> None:
        """A mid-conversation system message may carry output_config and no content."""
        messages = [*_compacted_history()[8:]]
        messages.insert(2, {"role": "system", "output_config": {"effort": "low"}})
        _valid(ANTHROPIC_MESSAGES, messages)
        fitted = fit(messages, model="claude-sonnet-4-5", window=8000, format="anthropic")

        assert fitted.report.action == "trimmed"
        assert messages[2] in fitted.messages

    def test_chat_custom_tool_calls(self) -> None:
        """A chat assistant's ``type: custom`` tool call is a call like a function's."""
        messages = _valid(CHAT_MESSAGES, custom_tool_session())
        fitted = fit(messages, model="gpt-4o", window=8000)

        assert fitted.report.action == "trimmed"


class TestCallerIndices:
    @pytest.mark.parametrize("fmt", ["anthropic", "responses"])
    def test_a_report_counts_and_names_the_callers_messages(self, fmt: str) -> None:
        """With a system (or instructions) given apart, indices and counts are those of the caller's list."""
        if fmt == "anthropic":
            messages: list[dict[str, Any]] = [
                {"role": "user", "content": "task"},
                *_bash_steps(20),
                {"role": "user", "content": "next"},
            ]
        else:
            messages = shell_items()
        fitted = fit(messages, model="gpt-4o", window=8000, settings=_options("plan"), format=fmt, system="Be careful.")
        report = fitted.report
        dropped = parse_ranges(report.dropped_at)

        assert report.messages_before == len(messages)
        assert report.messages_after == len(fitted.messages)
        assert dropped
        assert all(messages[index] not in fitted.messages for index in dropped)
        assert report.as_dict()["dropped_at"] == report.dropped_at

    def test_a_reason_names_the_callers_message(self) -> None:
        """An unsupported request's reason names the caller's index, not the core's."""
        messages = [{"role": "user", "content": 42}]
        fitted = fit(messages, model="gpt-4o", window=8000, format="anthropic", system="Be careful.")

        assert fitted.report.action == "unsupported"
        assert str(fitted.report.reason).startswith("message 0:")
        assert fitted.report.messages_before == 1


OWNED_BLOCKS = ("compaction", "tool_addition", "tool_removal")


def _marked(draw: st.DrawFn, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with a compaction in some assistant message and tool changes in some user messages."""
    marked = copy.deepcopy(messages)
    for message in marked:
        content = message["content"]
        if message["role"] == "assistant" and draw(st.integers(0, 3)) == 0:
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            summary = draw(st.sampled_from([None, "Summary of the work so far."]))
            message["content"] = [{"type": "compaction", "content": summary, "encrypted_content": ENCRYPTED}, *blocks]
        elif message["role"] == "user" and draw(st.integers(0, 4)) == 0:
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            kind = draw(st.sampled_from(["tool_addition", "tool_removal"]))
            message["content"] = [*blocks, {"type": kind, "tool": {"type": "tool_reference", "name": "Bash"}}]
    return marked


@st.composite
def marked_conversations(draw: st.DrawFn) -> tuple[Any, list[dict[str, Any]]]:
    system, messages = draw(conversations())
    return system, _marked(draw, messages)


def _owned(messages: list[dict[str, Any]]) -> list[str]:
    """Every block the client owns (compactions, tool changes, signed thinking), as JSON, in order."""
    return [
        json.dumps(block, sort_keys=True)
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and (block.get("type") in OWNED_BLOCKS)
    ]


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    conversation=marked_conversations(),
    policy=st.sampled_from(["auto", "plan", "elide"]),
    window=st.integers(300, 30_000),
)
def test_no_fit_removes_or_alters_what_the_client_owns(
    conversation: tuple[Any, list[dict[str, Any]]], policy: str, window: int
) -> None:
    """
    Compactions and tool changes all reach the provider unchanged, signed blocks that do are
    unchanged, and so is what precedes the newest compaction.
    """
    system, messages = conversation
    assert anthropic_unsupported(join_system(system, messages), None, None) is None
    with contextlib.suppress(BudgetExceededError):  # a rejection is a fine outcome here
        fitted = fit(
            messages,
            model="claude-sonnet-4-5",
            window=window,
            settings=_options(policy),
            format="anthropic",
            system=system,
        )
        _assert_owned_kept(messages, fitted.messages, system)


def _assert_owned_kept(messages: list[dict[str, Any]], out: list[dict[str, Any]], system: Any) -> None:
    start = ANTHROPIC.history_start(messages)

    assert _owned(out) == _owned(messages)
    signed = {
        json.dumps(b, sort_keys=True)
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if "signature" in b
    }
    assert all(
        json.dumps(b, sort_keys=True) in signed
        for m in out
        if isinstance(m["content"], list)
        for b in m["content"]
        if "signature" in b
    )
    if start is not None:
        assert out[: start + 1] == messages[: start + 1]
    assert anthropic_unsupported(join_system(system, out), None, None) is None
