"""A provider's prompt cache, as the fake upstream plays it: stdlib only, no import of the code under test.

What it models, from the providers' documentation (notes/anchors-2026.md §6):

* OpenAI (``breakpoints=False``): automatic. Every prompt served is cached whole; a later prompt
  reads the longest prefix it shares with a cached one, if that prefix is at least ``minimum``
  tokens (1024), rounded down to ``increment`` tokens (128 at OpenAI; 1 by default, so a test
  can predict it exactly).
* Anthropic (``breakpoints=True``): only at ``cache_control`` breakpoints. A served prompt writes
  one entry per breakpoint (the prefix up to the end of that block, when it is at least
  ``minimum`` tokens); a later prompt reads, at each of its own breakpoints, the longest entry
  that ends at most 20 blocks before it; what lies between the read and its last breakpoint is
  written (``cache_creation_input_tokens``). The breakpoints themselves are not part of the
  prefix: moving one keeps the cache.

An entry lives ``lifetime`` seconds after it was last written or read, by ``clock`` (a test
passes ``tests/support/shifted_clock.ShiftedClock`` to make a conversation idle without waiting).

Tokens are the fake's own: each block is serialised as JSON, and the prompt's tokens (whatever
the fake reports as ``prompt_tokens``) are spread over its characters, so what is read is the
share of those characters the prefix holds.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LOOKBACK_BLOCKS", "CacheUse", "PrefixCache", "anthropic_blocks", "openai_blocks"]

#: How far back from a breakpoint Anthropic looks for an earlier entry.
LOOKBACK_BLOCKS = 20
#: The most entries one cache keeps (the least recently used go first).
MAX_ENTRIES = 256


@dataclass(frozen=True)
class CacheUse:
    """What one request did with the cache, in the fake's prompt tokens (``prompt``: all of them)."""

    read: int
    written: int
    prompt: int = 0


@dataclass
class PrefixCache:
    """A prompt cache of one deployment (one fake upstream): see the module's docstring."""

    lifetime: float = 300.0
    minimum: int = 1024
    increment: int = 1
    breakpoints: bool = False
    clock: Callable[[], float] = time.monotonic
    #: Every request's use of the cache, oldest first.
    uses: list[CacheUse] = field(default_factory=list)
    _entries: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self, blocks: Sequence[tuple[str, bool]], prompt_tokens: int) -> CacheUse:
        """
        Read and write the cache for one prompt: ``blocks`` in order, each its text and whether
        it carries a breakpoint; ``prompt_tokens`` what the prompt counts in all.
        """
        ends, total = [], 0
        for text, _ in blocks:
            total += len(text)
            ends.append(total)
        whole = "".join(text for text, _ in blocks)

        def tokens(chars: int) -> int:
            return prompt_tokens * chars // total if total else 0

        with self._lock:
            now = self.clock()
            live = sorted((seen, key) for key, seen in self._entries.items() if now - seen <= self.lifetime)
            self._entries = {key: seen for seen, key in live[-MAX_ENTRIES:]}
            use = (
                self._anthropic(whole, blocks, ends, tokens, now)
                if self.breakpoints
                else self._openai(whole, tokens, now)
            )
            use = CacheUse(read=use.read, written=use.written, prompt=prompt_tokens)
            self.uses.append(use)
            return use

    def _openai(self, whole: str, tokens: Callable[[int], int], now: float) -> CacheUse:
        best_key, best = None, 0
        for key in self._entries:
            shared = _common_prefix(key, whole)
            if shared > best:
                best_key, best = key, shared
        read = tokens(best)
        read = read - read % self.increment if read >= self.minimum else 0
        if read and best_key is not None:
            self._entries[best_key] = now
        self._entries[whole] = now
        return CacheUse(read=read, written=0)

    def _anthropic(
        self,
        whole: str,
        blocks: Sequence[tuple[str, bool]],
        ends: list[int],
        tokens: Callable[[int], int],
        now: float,
    ) -> CacheUse:
        marks = [index for index, (_, marked) in enumerate(blocks) if marked]
        read_at = -1
        for mark in marks:
            for end in range(mark, max(-1, mark - LOOKBACK_BLOCKS), -1):
                if whole[: ends[end]] in self._entries:
                    read_at = max(read_at, end)
                    break
        read = tokens(ends[read_at]) if read_at >= 0 else 0
        if read_at >= 0:
            self._entries[whole[: ends[read_at]]] = now
        written = 0
        for mark in marks:
            if tokens(ends[mark]) >= self.minimum:
                self._entries[whole[: ends[mark]]] = now
                written = max(written, tokens(ends[mark]) - read)
        return CacheUse(read=read, written=written)


def _common_prefix(a: str, b: str) -> int:
    size = min(len(a), len(b))
    low, high = 0, size
    while low < high:  # binary search on equal prefixes: long prompts compare in a few slices
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def openai_blocks(parts: Sequence[Any]) -> list[tuple[str, bool]]:
    """A chat or Responses prompt as blocks: each of ``parts`` (tools, then messages or items), no breakpoints."""
    return [(json.dumps(part, sort_keys=True), False) for part in parts if part is not None]


def anthropic_blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """An Anthropic prompt as the API caches it: tools, system blocks, then each message's content blocks."""
    found: list[tuple[str, bool]] = []
    for tool in body.get("tools") or []:
        found.append(_block("tool", tool))
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
        found.append(_block("system", block))
    for message in body.get("messages") or []:
        content = message.get("content")
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            found.append(_block(str(message.get("role")), block))
    return found


def _block(role: str, block: Any) -> tuple[str, bool]:
    if not isinstance(block, dict):
        return json.dumps([role, block], sort_keys=True), False
    marked = isinstance(block.get("cache_control"), dict)
    plain = {key: value for key, value in block.items() if key != "cache_control"}
    return json.dumps([role, plain], sort_keys=True), marked
