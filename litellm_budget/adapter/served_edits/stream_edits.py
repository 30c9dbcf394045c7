"""
A streamed answer whose ``context_management`` was served here says so, as Anthropic's streams do. The proxy hands
over server-sent events one frame a chunk (LiteLLM's bridge) or split anyhow (Anthropic's): frames are rewritten whole.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from litellm_budget.core.api import COMPACTION_BLOCK, split_applied

_SEPARATOR = "\n\n"
_INDEXED = frozenset({"content_block_start", "content_block_delta", "content_block_stop"})


class FrameRewriter:
    """The rewrite of one stream's frames, given what its response reports (``Calls.take_edits``)."""

    def __init__(self, applied: list[dict[str, Any]]) -> None:
        self.blocks, self.edits = split_applied(applied)

    def frame(self, text: str) -> str:
        """One whole frame (``event:`` and ``data:`` lines, its separator included) as it is to be sent."""
        lines = text.split("\n")
        at = next((i for i, line in enumerate(lines) if line.startswith("data:")), None)
        if at is None:
            return text
        event = json.loads(lines[at][len("data:") :])
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "message_start":
            return text + "".join(self._block_frames())
        if kind in _INDEXED and self.blocks and isinstance(event.get("index"), int):
            event["index"] += len(self.blocks)
        elif kind == "message_delta":
            event["context_management"] = {"applied_edits": self.edits}
        else:
            return text
        lines[at] = "data: " + json.dumps(event)
        return "\n".join(lines)

    def _block_frames(self) -> Iterator[str]:
        """The compaction blocks' events, first in the answer's content."""
        for index, block in enumerate(self.blocks):
            opened = {"type": COMPACTION_BLOCK, "content": None}
            delta = {"type": "compaction_delta", "content": block.get("content")}
            for event in (
                {"type": "content_block_start", "index": index, "content_block": opened},
                {"type": "content_block_delta", "index": index, "delta": delta},
                {"type": "content_block_stop", "index": index},
            ):
                yield f"event: {event['type']}\ndata: {json.dumps(event)}{_SEPARATOR}"


async def streamed_with_edits(
    chunks: AsyncIterator[Any], applied: list[dict[str, Any]] | None, guard: Callable[[Callable[[], str]], str | None]
) -> AsyncIterator[Any]:
    """``chunks`` with ``applied`` in their frames; a frame the hook's ``guard`` cannot rewrite goes as it came."""
    if applied is None:
        async for chunk in chunks:
            yield chunk
        return
    rewriter, pending, as_bytes = FrameRewriter(applied), "", True
    # Bytes are decoded as they come (a character may be split between chunks), and given back byte for byte.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
    async for chunk in chunks:
        if not isinstance(chunk, bytes | str):
            yield chunk
            continue
        as_bytes = isinstance(chunk, bytes)
        pending += decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        *frames, pending = pending.split(_SEPARATOR)
        out = "".join(_rewritten(rewriter, frame + _SEPARATOR, guard) for frame in frames)
        if out:
            yield _as_sent(out, as_bytes=as_bytes)
    pending += decoder.decode(b"", final=True)
    if pending:
        yield _as_sent(pending, as_bytes=as_bytes)


def _as_sent(text: str, *, as_bytes: bool) -> bytes | str:
    return text.encode(errors="surrogateescape") if as_bytes else text


def _rewritten(rewriter: FrameRewriter, frame: str, guard: Callable[[Callable[[], str]], str | None]) -> str:
    found = guard(lambda: rewriter.frame(frame))
    return frame if found is None else found
