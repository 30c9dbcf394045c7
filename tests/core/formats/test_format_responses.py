"""The OpenAI Responses format: items read as kinds, texts and pairs; every policy through the seam."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from litellm_budget import BudgetSettings
from litellm_budget.core import parse_ranges
from litellm_budget.core.api import FitRequest, Fitted, fit_request
from litellm_budget.core.counting import counter_for
from litellm_budget.core.formats import (
    ASSISTANT,
    CHAT,
    NOTICE_KEY,
    RESPONSES,
    SYSTEM,
    TOOL,
    USER,
    MessageFormat,
    as_items,
    format_named,
    plain,
)
from litellm_budget.core.formats import responses_from_chat as from_chat
from litellm_budget.core.policies import layout_of_kinds
from litellm_budget.core.wording import NOTICE_PREFIX, TOOL_ELIDED
from litellm_budget.tools.sessions import requests_of
from tests.conftest import SessionSet
from tests.support.builders import text

COUNTER = counter_for("gpt-4o")
SIZES = st.sampled_from([0, 3, 40, 300, 700, 2500, 12_000])
#: What people write is rarely as big as what tools print.
SMALL_SIZES = st.sampled_from([0, 3, 40, 300, 700, 2500])
IMAGE = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}
#: Items the format must never edit: compared byte for byte between input and output.
VERBATIM_TYPES = {"reasoning", "compaction", "function_call", "custom_tool_call"}

Item = dict[str, Any]


def _next_id(ids: list[int], prefix: str) -> str:
    ids[0] += 1
    return f"{prefix}_{ids[0]}"


@st.composite
def contents(
    draw: st.DrawFn, text_type: str = "input_text", images: bool = True, sizes: st.SearchStrategy[int] = SIZES
) -> str | list[Item]:
    """A string, or a list of text parts with an occasional image."""
    seed = draw(st.integers(0, 11))
    if draw(st.booleans()):
        return text(draw(sizes), seed)
    count = draw(st.integers(1, 3))
    parts: list[Item] = [{"type": text_type, "text": text(draw(sizes), seed + i)} for i in range(count)]
    if images and draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), dict(IMAGE))
    return parts


@st.composite
def calls(draw: st.DrawFn, ids: list[int]) -> tuple[Item, Item]:
    """A function call or a custom tool call, and the output answering it."""
    call_id = _next_id(ids, "call")
    if draw(st.booleans()):
        arguments = json.dumps({"command": ["bash", "-lc", f"cat file_{ids[0]}.py"]})
        call = {"type": "function_call", "id": _next_id(ids, "fc"), "call_id": call_id, "name": "shell"}
        output = draw(contents())
        return {**call, "arguments": arguments}, {"type": "function_call_output", "call_id": call_id, "output": output}
    patch = f"*** Begin Patch\n*** Update File: f{ids[0]}.py\n@@\n-old\n+new\n*** End Patch"
    call = {"type": "custom_tool_call", "id": _next_id(ids, "ctc"), "call_id": call_id, "name": "apply_patch"}
    output = text(draw(SIZES), ids[0])
    return {**call, "input": patch}, {"type": "custom_tool_call_output", "call_id": call_id, "output": output}


@st.composite
def steps(draw: st.DrawFn, ids: list[int], answered: bool = True, min_calls: int = 0) -> list[Item]:
    """
    One response of the model and the outputs of its calls: reasoning, a message, calls.
    Outputs follow all calls; or (after reasoning) each its own call, as some clients send them;
    or one comes late, after more of the model's text.
    """
    items: list[Item] = []
    if reasoning := draw(st.booleans()):
        summary = [{"type": "summary_text", "text": text(draw(st.sampled_from([5, 200])), 3)}]
        encrypted = "gAAAAB" + "Zm9v" * draw(st.sampled_from([0, 100, 3000]))
        items.append(
            {
                "type": "reasoning",
                "id": _next_id(ids, "rs"),
                "summary": draw(st.sampled_from([[], summary])),
                "encrypted_content": encrypted,
            }
        )
    pairs = [draw(calls(ids)) for _ in range(draw(st.integers(min_calls, 3)))]
    if not pairs or draw(st.booleans()):
        content = draw(contents("output_text", images=False))
        items.append({"type": "message", "role": "assistant", "id": _next_id(ids, "msg"), "content": content})
    if not answered:
        return [*items, *(call for call, _ in pairs)]
    order = draw(st.sampled_from(["calls first", "interleaved", "late output"]))
    if order == "interleaved" and reasoning:
        return [*items, *(item for pair in pairs for item in pair)]
    if order == "late output" and len(pairs) > 1:
        # A call is still open when the model's commentary comes: it all stays one step.
        commentary = {"type": "message", "role": "assistant", "content": text(draw(SIZES), 5)}
        outputs = [output for _, output in pairs]
        return [*items, *(call for call, _ in pairs), *outputs[1:], commentary, outputs[0]]
    return [*items, *(call for call, _ in pairs), *(output for _, output in pairs)]


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[Item], list[list[int]]]:
    """
    Developer messages, turns of a user message and steps, an occasional compaction or item
    reference; ends on a user message, an output, or a step whose calls are not answered yet.
    Also returns each generated step as the indices of its items.
    """
    ids = [0]
    items: list[Item] = [
        {"type": "message", "role": "developer", "content": draw(contents(images=False, sizes=SMALL_SIZES))}
        for _ in range(draw(st.integers(0, 2)))
    ]
    groups: list[list[int]] = []

    def add_step(step: list[Item]) -> None:
        groups.append(list(range(len(items), len(items) + len(step))))
        items.extend(step)

    for turn in range(draw(st.integers(1, 5))):
        user = {"role": "user", "content": draw(contents(sizes=SMALL_SIZES))}
        items.append(user if draw(st.booleans()) else {"type": "message", **user})
        if turn == 0 and draw(st.integers(0, 5)) == 0:
            add_step([{"type": "compaction", "id": _next_id(ids, "cmp"), "encrypted_content": "gAAAAB" + "YmFy" * 500}])
        if draw(st.integers(0, 7)) == 0:
            items.append({"type": "item_reference", "id": _next_id(ids, "msg_stored")})
        for _ in range(draw(st.integers(0, 4))):
            add_step(draw(steps(ids)))
        if draw(st.integers(0, 7)) == 0:
            items.append({"type": "message", "role": "developer", "content": "Mind the sandbox."})
    if draw(st.booleans()):
        items.append({"type": "message", "role": "user", "content": draw(contents(sizes=SMALL_SIZES))})
    else:
        add_step(draw(steps(ids, answered=draw(st.booleans()), min_calls=1)))
    return items, groups


def _key(item: Item) -> str | None:
    """What identifies a generated item across input and output, whatever was elided or cut."""
    if item.get("type") in {"function_call_output", "custom_tool_call_output"}:
        return f"output:{item['call_id']}"
    return item.get("id")


def _unavoidable_floor(items: list[Item]) -> int:
    """What auto may never drop or cut: system items whole; of the task, the question and the final
    step, everything but their texts, plus room for a cut note each."""
    kinds = RESPONSES.kinds(items)
    first_user = kinds.index(USER) if USER in kinds else None
    kept = layout_of_kinds(kinds).pinned | ({first_user} if first_user is not None else set())
    floor = COUNTER.count_tools(None)
    for index in kept - set(range(_read_from(items))):
        item = items[index]
        if kinds[index] == SYSTEM or not any(RESPONSES.texts(item)):
            floor += RESPONSES.count_message(COUNTER, item)
        else:
            floor += RESPONSES.count_message(COUNTER, RESPONSES.map_texts(item, lambda _: "")) + 80
    return floor


def _read_from(items: Sequence[Item]) -> int:
    """Where the provider starts reading: the newest compaction item (what is before it is not counted)."""
    return max((i for i, item in enumerate(items) if item.get("type") == "compaction"), default=0)


def _recount(items: Sequence[Item]) -> int:
    read = items[_read_from(items) :]
    return sum(RESPONSES.count_message(COUNTER, item) for item in read) + COUNTER.count_tools(None)


def _fit(
    items: list[Item], policy: str, window: int, max_tokens: int | None = None, fmt: MessageFormat = RESPONSES
) -> Fitted:
    options = BudgetSettings(policy=policy)  # type: ignore[arg-type]
    return fit_request(
        FitRequest(items, model="gpt-4o", window=window, max_tokens=max_tokens, settings=options, fmt=fmt)
    )


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    generated=conversations(),
    policy=st.sampled_from(["auto", "plan", "elide"]),
    window=st.one_of(st.integers(300, 4_000), st.integers(4_000, 60_000)),
    max_tokens=st.one_of(st.none(), st.integers(0, 20_000)),
)
def test_invariants(
    generated: tuple[list[Item], list[list[int]]], policy: str, window: int, max_tokens: int | None
) -> None:
    """Fits or is rejected; pairs valid; steps whole; input kept; verbatim items; deterministic; idempotent."""
    items, groups = generated
    assert RESPONSES.unsupported_reason(items, None, max_tokens) is None
    snapshot = copy.deepcopy(items)
    fitted = _fit(items, policy, window, max_tokens)
    report, out = fitted.report, fitted.messages
    event(f"{policy}:{report.action}")
    assert items == snapshot
    if report.action == "rejected":
        assert out == items
        assert report.tokens_after > report.budget
        if policy == "auto":
            assert _unavoidable_floor(items) > report.budget
        return

    assert report.tokens_after <= report.budget
    assert report.tokens_after == _recount(out)
    assert RESPONSES.unsupported_reason(out, None, fitted.max_tokens) is None
    kept = {_key(item) for item in out} - {None}
    for group in groups:
        keys = {_key(items[index]) for index in group} - {None}
        assert keys <= kept or not keys & kept, "a step was split"
    order = [_key(item) for item in items if _key(item) in kept]
    assert [_key(item) for item in out if _key(item) in kept] == order
    originals = {json.dumps(item) for item in items if item.get("type") in VERBATIM_TYPES}
    assert all(json.dumps(item) in originals for item in out if item.get("type") in VERBATIM_TYPES)
    compactions = [item for item in items if item.get("type") == "compaction"]
    assert [item for item in out if item.get("type") == "compaction"] == compactions, "a compaction was dropped"
    assert out[: _read_from(items)] == items[: _read_from(items)], "the history before a compaction was edited"
    developer = [item for item in items if item.get("role") == "developer"]
    assert [item for item in out if item.get("role") == "developer" and item in items] == developer
    assert out[-1] is items[-1] or len(items) - 1 in parse_ranges(report.cut_at)

    again = _fit(items, policy, window, max_tokens)
    assert again.messages == out
    assert again.report.as_dict() | {"duration_ms": 0} == report.as_dict() | {"duration_ms": 0}
    twice = _fit(out, policy, window, fitted.max_tokens)
    assert (twice.messages, twice.max_tokens) == (out, fitted.max_tokens)


def test_format_named() -> None:
    """The registry knows the format by its name."""
    assert format_named("responses") is RESPONSES
    assert RESPONSES.name == "responses"


def test_string_input_is_one_user_message() -> None:
    """A string input is read as one user message item; a list is kept as it is."""
    listed = [{"role": "user", "content": "hi"}]
    assert as_items("hi") == [{"type": "message", "role": "user", "content": "hi"}]
    assert as_items(listed) is listed


def test_from_chat() -> None:
    """System becomes developer; text becomes parts; each tool call a function_call; tool messages outputs."""
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}
    image = {"type": "image_url", "image_url": {"url": "https://x/a.png"}}
    messages = [
        {"role": "system", "content": "Be careful."},
        {"role": "user", "content": [{"type": "text", "text": "Look:"}, image]},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
        {"role": "assistant", "content": "Done."},
    ]
    assert from_chat(messages) == [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be careful."}]},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look:"},
                {"type": "input_image", "image_url": "https://x/a.png"},
            ],
        },
        {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": '{"cmd": "ls"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "a.py"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
    ]


def test_from_chat_refuses_legacy_function_messages() -> None:
    """A legacy ``function`` message has no Responses item: converting it says so."""
    with pytest.raises(ValueError, match="role 'function'"):
        from_chat([{"role": "function", "name": "f", "content": "x"}])


def _call(call_id: str) -> Item:
    return {"type": "function_call", "call_id": call_id, "name": "shell", "arguments": "{}"}


def _output(call_id: str, output: object = "ok") -> Item:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB"}
ANSWER = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}


def test_kinds_keep_a_step_together() -> None:
    """Reasoning opens a step; its message, calls and outputs belong to it; the next response opens another."""
    items = [
        {"role": "developer", "content": "rules"},
        {"role": "user", "content": "go"},
        REASONING,
        _call("a"),
        _call("b"),
        _output("a"),
        {"role": "developer", "content": "note"},
        _output("b"),
        {**REASONING, "id": "rs_2"},
        ANSWER,
        {"type": "item_reference", "id": "msg_9"},
        {"role": "user", "content": "more"},
        _call("c"),
        _output("c"),
        _call("d"),
    ]
    first_turn = [SYSTEM, USER, ASSISTANT, TOOL, TOOL, TOOL, SYSTEM, TOOL, ASSISTANT, TOOL, TOOL]
    assert RESPONSES.kinds(items) == [*first_turn, USER, ASSISTANT, TOOL, ASSISTANT]


def test_kinds_no_step_opens_while_a_call_is_open() -> None:
    """Calls answered out of order, a message between: one step, so the pair is never split."""
    items = [{"role": "user", "content": "go"}, _call("a"), _call("b"), _output("a"), ANSWER, _output("b")]
    assert RESPONSES.kinds(items) == [USER, ASSISTANT, TOOL, TOOL, TOOL, TOOL]


def test_kinds_parallel_calls_of_a_reasoning_step_stay_with_it() -> None:
    """Outputs interleaved with a reasoning response's calls: the later call stays with its reasoning."""
    items = [{"role": "user", "content": "go"}, REASONING, _call("a"), _output("a"), _call("b"), _output("b")]
    assert RESPONSES.kinds(items) == [USER, ASSISTANT, TOOL, TOOL, TOOL, TOOL]
    plain = [{"role": "user", "content": "go"}, _call("a"), _output("a"), _call("b"), _output("b")]
    assert RESPONSES.kinds(plain) == [USER, ASSISTANT, TOOL, ASSISTANT, TOOL]


def test_texts_are_messages_and_outputs_only() -> None:
    """Message and output texts are editable; calls, reasoning, compaction and images are not."""
    custom = {"type": "custom_tool_call", "call_id": "c", "name": "apply_patch", "input": "patch"}
    compaction = {"type": "compaction", "encrypted_content": "gAAAAB"}
    parts = [{"type": "input_text", "text": "log"}, IMAGE]
    assert list(RESPONSES.texts(_output("a", parts))) == ["log"]
    assert list(RESPONSES.texts(ANSWER)) == ["Done."]
    for item in (_call("a"), custom, REASONING, compaction, {"type": "item_reference", "id": "x"}):
        assert list(RESPONSES.texts(item)) == []
        assert RESPONSES.map_texts(item, str.upper) == item


def test_map_texts_keeps_call_id_and_images_and_leaves_out_emptied_parts() -> None:
    """An output keeps its call_id and image; a text part rewritten to nothing is left out."""
    item = _output("a", [{"type": "input_text", "text": "log"}, IMAGE, {"type": "input_text", "text": "x"}])
    rewritten = RESPONSES.map_texts(item, lambda t: "" if t == "x" else t.upper())
    assert rewritten == _output("a", [{"type": "input_text", "text": "LOG"}, IMAGE])
    assert RESPONSES.map_texts(_output("b", "long"), str.upper) == _output("b", "LONG")


def test_call_ids_and_answered_ids() -> None:
    """Calls are known by their call_id, outputs by the call_id they answer."""
    custom_output = {"type": "custom_tool_call_output", "call_id": "c", "output": "ok"}
    assert ([call[0] for call in RESPONSES.calls(_call("a"))], RESPONSES.answered_ids(_call("a"))) == (["a"], [])
    assert ([call[0] for call in RESPONSES.calls(custom_output)], RESPONSES.answered_ids(custom_output)) == ([], ["c"])
    assert ([call[0] for call in RESPONSES.calls(ANSWER)], RESPONSES.answered_ids(ANSWER)) == ([], [])


def test_notice_is_a_user_note_or_a_developer_message() -> None:
    """By default the marker is a user-side note (chat templates refuse a developer item mid-input); else developer."""
    note = RESPONSES.notice("[litellm_budget: note]")
    developer = RESPONSES.notice("[litellm_budget: note]", "system_message")
    part = [{"type": "input_text", "text": "[litellm_budget: note]"}]

    assert plain(note) == {"type": "message", "role": "user", "content": part}
    assert plain(developer) == {"type": "message", "role": "developer", "content": part}
    assert RESPONSES.kinds([developer]) == [SYSTEM]


def test_a_note_joins_the_user_message_next_to_it() -> None:
    """Placed, the note is a part of the user item before it; a note between steps stays an item of its own."""
    task = {"type": "message", "role": "user", "content": "Fix it."}
    note = RESPONSES.notice("[note]")

    placed = RESPONSES.finish([task, note, _call("a"), {"type": "function_call_output", "call_id": "a", "output": "x"}])

    assert placed[0] == {**task, "content": [{"type": "input_text", "text": "Fix it."}, *note["content"]]}
    assert placed[1:] == [_call("a"), {"type": "function_call_output", "call_id": "a", "output": "x"}]
    assert all(NOTICE_KEY not in item for item in placed)


def test_count_message() -> None:
    """Chat's framing and content count, every other field as text, ciphertext at four characters a token."""
    message = {"type": "message", "role": "user", "content": "hello world"}
    assert RESPONSES.count_message(COUNTER, message) == 3 + 1 + 1 + 2
    bare = {**REASONING, "encrypted_content": None}
    ciphered = {**REASONING, "encrypted_content": "A" * 4001}
    assert RESPONSES.count_message(COUNTER, ciphered) - RESPONSES.count_message(COUNTER, bare) == 1001
    call = _call("call_1")
    assert RESPONSES.count_message(COUNTER, call) == 3 + sum(COUNTER.count_text(v) for v in call.values())
    framing = COUNTER.count_text("function_call_output") + COUNTER.count_text("a")
    assert RESPONSES.count_message(COUNTER, _output("a", [IMAGE])) == 3 + COUNTER.image_tokens + framing  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("items", "tools", "max_tokens", "reason"),
    [
        ("hi", None, None, "input is str, not a list"),
        ([], {"type": "function"}, None, "tools is not a list of objects"),
        ([], None, 1.5, "max_tokens is float, not an int"),
        ([], None, -1, "max_tokens is negative"),
        (["hi"], None, None, "item 0: is str, not an object"),
        ([{"type": "web_search_preview"}], None, None, "item 0: has an unknown type"),
        ([{"type": ["message"]}], None, None, "item 0: has a type that is not a string"),
        ([{"role": "tool", "content": "x"}], None, None, "item 0: is a message without a valid role"),
        ([{"role": "user", "content": [{"text": "x"}]}], None, None, "item 0: is a message without a valid content"),
        ([{**_call("a"), "arguments": {}}], None, None, "item 0: is a function_call without a valid arguments"),
        ([{**REASONING, "summary": None}], None, None, "item 0: is a reasoning without a valid summary"),
        ([_output("a")], None, None, "item 0: function_call_output answers no open call"),
        ([_call("a"), _output("a"), _output("a")], None, None, "item 2: function_call_output answers no open call"),
        (
            [_call("a"), {"type": "custom_tool_call_output", "call_id": "a", "output": "x"}],
            None,
            None,
            "item 1: custom_tool_call_output answers no open call",
        ),
        ([_call("a"), _output("a"), _call("a")], None, None, "item 2: duplicated call_id"),
        (
            [_call("a"), {"role": "user", "content": "?"}, _output("a")],
            None,
            None,
            "item 1: a user message follows a call that was not answered",
        ),
    ],
)
def test_unsupported_reason(items: object, tools: object, max_tokens: object, reason: str) -> None:
    """What cannot be trimmed safely is named, so the request passes through untouched."""
    assert RESPONSES.unsupported_reason(items, tools, max_tokens) == reason


def test_supported_shapes() -> None:
    """A call left open by the last step, custom tools, compaction and references are fine."""
    custom = {"type": "custom_tool_call", "call_id": "c", "name": "apply_patch", "input": "p"}
    items = [
        {"role": "user", "content": "go"},
        {"type": "compaction", "encrypted_content": "gAAAAB"},
        {"type": "item_reference", "id": "msg_1"},
        custom,
        {"type": "custom_tool_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "ok"}]},
        REASONING,
        _call("a"),
    ]
    assert RESPONSES.unsupported_reason(items, [{"type": "function", "name": "shell"}], 0) is None


def _codex_request(steps: int) -> list[Item]:
    """Shaped like Codex CLI's requests: the system prompt as developer messages, no instructions,
    earlier output items resent with their ids, reasoning with encrypted content, shell and
    apply_patch calls."""
    items: list[Item] = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": text(1500, 1)}]},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the failing test."}]},
    ]
    for step in range(steps):
        call_id = f"call_{step}"
        reasoning = {
            "type": "reasoning",
            "id": f"rs_{step}",
            "summary": [{"type": "summary_text", "text": "**Reading the test**"}],
            "content": None,
            "encrypted_content": "gAAAAB" + "QUJD" * 800,
        }
        if step % 3 == 2:
            call = {"type": "custom_tool_call", "id": f"ctc_{step}", "status": "completed", "call_id": call_id,
                    "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"}  # fmt: skip
            output = {"type": "custom_tool_call_output", "call_id": call_id, "output": text(200, step)}
        else:
            call = {"type": "function_call", "id": f"fc_{step}", "name": "shell", "call_id": call_id,
                    "arguments": json.dumps({"command": ["bash", "-lc", f"cat part{step}.py"]})}  # fmt: skip
            output = {"type": "function_call_output", "call_id": call_id, "output": text(2500, step)}
        items += [reasoning, call, output]
    return items


def test_codex_shaped_request() -> None:
    """auto fits a Codex request: developer prefix and task kept, reasoning with its call, outputs elided in place."""
    items = _codex_request(20)
    fitted = _fit(items, "auto", 32_000)
    out, report = fitted.messages, fitted.report
    assert (report.action, report.tokens_after <= report.budget) == ("trimmed", True)
    assert RESPONSES.unsupported_reason(out, None, None) is None
    assert out[:3] == items[:3]  # the developer prefix and the environment; the task gets the marker's note at its end
    assert out[3]["content"][: len(items[3]["content"])] == items[3]["content"]
    assert all(a is b for a, b in zip(out[-3:], items[-3:], strict=True))
    for index, item in enumerate(out):
        if item["type"] == "reasoning":
            assert item in items
            assert out[index + 1] == items[items.index(item) + 1]
    elided = [item for item in out if str(item.get("output")).startswith(TOOL_ELIDED)]
    assert elided
    assert {item["call_id"] for item in elided} <= {
        item["call_id"] for item in items if item["type"] == "function_call"
    }
    markers = [item for item in out if NOTICE_PREFIX in json.dumps(item) and " omitted " in json.dumps(item)]
    assert len(markers) == (1 if report.dropped_units else 0)
    assert all(item.get("role") == "user" for item in markers)


def _replay(sessions: dict[str, list[Item]], fmt: MessageFormat, window: int) -> tuple[int, int, int, int, float]:
    """Every request of every session in ``fmt``: (fitted, trimmed, overflow, invalid, prefix reuse);
    a request rejected or found unsupported is not fitted."""
    convert = from_chat if fmt is RESPONSES else list
    fitted = trimmed = overflow = invalid = shared = sent = 0
    for messages in sessions.values():
        previous: list[Item] = []
        for request in requests_of(messages):
            result = _fit(convert(request), "auto", window, fmt=fmt)
            out = result.messages
            if result.report.action not in {"passthrough", "trimmed"}:
                continue
            fitted += 1
            trimmed += result.report.action == "trimmed"
            sizes = [fmt.count_message(COUNTER, item) for item in out]
            total = sum(sizes) + COUNTER.count_tools(None)
            overflow += total > result.report.budget
            invalid += fmt.unsupported_reason(out, None, None) is not None
            sent += total
            for before, now, size in zip(previous, out, sizes, strict=False):
                if before is not now and before != now:
                    break
                shared += size
            previous = out
    return fitted, trimmed, overflow, invalid, shared / max(1, sent)


@pytest.mark.sessions
@pytest.mark.parametrize("window", [8000, 16_000, 32_000])
def test_sessions_replayed_as_responses(replay_set: SessionSet, window: int) -> None:
    """Every agent session as Responses items under auto: all fitted, none over or invalid, reuse next to chat's."""
    sessions = replay_set.sessions
    requests = sum(1 for messages in sessions.values() for _ in requests_of(messages))
    fitted, trimmed, overflow, invalid, reuse = _replay(sessions, RESPONSES, window)
    chat_reuse = _replay(sessions, CHAT, window)[-1]
    print(f"{replay_set.name} window {window}: prefix reuse chat {chat_reuse:.4f}, responses {reuse:.4f}")
    assert (fitted, overflow, invalid) == (requests, 0, 0)
    assert trimmed > 0
    assert abs(reuse - chat_reuse) <= 0.02
