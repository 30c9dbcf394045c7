"""A streamed Messages answer, rewritten frame by frame: the compaction block first, the edits on message_delta."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from litellm_budget.adapter.served_edits.stream_edits import streamed_with_edits

EVENTS = [
    {"type": "message_start", "message": {"id": "msg_1", "content": []}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok é"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
    {"type": "message_stop"},
]
APPLIED = [
    {"type": "compaction", "content": "The summary."},
    {"type": "compact_20260112", "cleared_input_tokens": 900},
]


def _sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events).encode()


def _run(chunks: list[Any], applied: list[dict[str, Any]] | None, guard: Callable[..., Any] | None = None) -> list[Any]:
    async def source() -> AsyncIterator[Any]:
        for chunk in chunks:
            yield chunk

    async def collect() -> list[Any]:
        return [chunk async for chunk in streamed_with_edits(source(), applied, guard or (lambda work: work()))]

    return asyncio.run(collect())


def _events(out: list[Any]) -> list[dict[str, Any]]:
    text = b"".join(out).decode() if isinstance(out[0], bytes) else "".join(out)
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def test_frames_split_and_joined_anyhow_are_rewritten_whole() -> None:
    """Bytes cut mid-frame and mid-character: the compaction block first, indices moved, the edit on the delta."""
    raw = _sse(EVENTS)
    cut = raw.index("é".encode()) + 1
    events = _events(_run([raw[:7], raw[7:cut], raw[cut:]], APPLIED))

    assert [e["type"] for e in events[:4]] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    ]
    assert events[1]["content_block"]["type"] == "compaction"
    assert events[2]["delta"] == {"type": "compaction_delta", "content": "The summary."}
    assert [e["index"] for e in events[4:7]] == [1, 1, 1]
    assert events[5]["delta"]["text"] == "ok é"
    assert events[7]["context_management"] == {"applied_edits": [APPLIED[1]]}


def test_nothing_served_goes_as_it_came_and_so_does_a_frame_that_fails() -> None:
    """No edits: the very chunks; a rewrite the guard refuses: that frame unchanged."""
    chunks = [_sse([event]) for event in EVENTS]

    assert _run(chunks, None) == chunks
    assert b"".join(_run(chunks, APPLIED, guard=lambda _work: None)) == b"".join(chunks)
    text = [chunk.decode() for chunk in chunks]
    assert _events(_run(text, APPLIED))[-2]["context_management"]["applied_edits"] == [APPLIED[1]]
