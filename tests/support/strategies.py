"""Hypothesis strategies for OpenAI-format agent conversations, valid by construction."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.support.builders import text

SIZES = st.sampled_from([0, 3, 40, 300, 700, 2500, 12_000])
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


@st.composite
def contents(draw: st.DrawFn) -> str | list[dict[str, Any]]:
    """A string, or a list of text parts with an occasional image."""
    seed = draw(st.integers(0, 11))
    if draw(st.booleans()):
        return text(draw(SIZES), seed)
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": text(draw(SIZES), seed + i)} for i in range(draw(st.integers(1, 3)))
    ]
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), dict(IMAGE))
    return parts


@st.composite
def steps(draw: st.DrawFn, ids: list[int]) -> list[dict[str, Any]]:
    """An assistant step: text, or tool calls each answered by one tool message."""
    calls = draw(st.integers(0, 3))
    content = draw(st.one_of(st.none(), contents())) if calls else draw(contents())
    if not calls:
        return [{"role": "assistant", "content": content}]
    call_ids = []
    for _ in range(calls):
        ids[0] += 1
        call_ids.append(f"call_{ids[0]}")
    tool_calls = [
        {"id": cid, "type": "function", "function": {"name": "run", "arguments": f'{{"n": {i}}}'}}
        for i, cid in enumerate(call_ids)
    ]
    results = [{"role": "tool", "tool_call_id": cid, "content": draw(contents())} for cid in call_ids]
    return [{"role": "assistant", "content": content, "tool_calls": tool_calls}, *results]


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """System messages, an optional stray assistant, turns of steps; ends on a user or tool message."""
    ids = [0]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": draw(contents())} for _ in range(draw(st.integers(0, 2)))
    ]
    if draw(st.booleans()):
        messages += [m for m in draw(steps(ids)) if m["role"] == "assistant" and not m.get("tool_calls")]
    for _ in range(draw(st.integers(1, 6))):
        messages.append({"role": "user", "content": draw(contents())})
        for _ in range(draw(st.integers(0, 4))):
            messages += draw(steps(ids))
    if messages[-1]["role"] == "assistant":
        if draw(st.booleans()):
            messages.append({"role": "user", "content": draw(contents())})
        else:
            messages += draw(steps(ids).filter(lambda s: len(s) > 1))
    return messages
