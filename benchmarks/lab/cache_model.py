"""
A provider's prompt cache as the replay models it, so that replay and production speak the same
figure: the share of each prompt the provider's cache reads (``cache_hit_ratio``, as the plugin's
``cache_observed`` reports it in production) and what the prompt costs at the provider's own
prices, its cache writes included (``cache_cost``).

- ``openai``: automatic. Every prompt is cached; a later one reads the longest prefix of whole
  messages it shares with one cached before, and the text before a marker merged into the next
  (``user_note``: the cache is a token prefix), if at least ``minimum`` tokens, in steps of 128.
- ``anthropic``: only at ``cache_control`` breakpoints. A request writes an entry at each of its
  breakpoints (at least ``minimum`` tokens), reads at each the longest entry that ends at most 20
  blocks before it, and pays the write price for what lies between that read and its last
  breakpoint. The client's own breakpoints are ``client``: ``last`` marks the system prompt and
  the last message, as agent CLIs do; ``none`` marks nothing (an OpenAI-SDK client of Claude).
  With ``plugin`` the plugin adds its own, as ``cache_breakpoints`` does (``core/cache/_breakpoints.py``).

Every request of a session comes within the cache's lifetime, as the recorded ones did.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

from litellm_budget.core.cache._breakpoints import stable_ends, with_breakpoints
from litellm_budget.core.cache._cache_truth import LOOKBACK_BLOCKS, STEP_TOKENS
from litellm_budget.core.cache._sent_prompt import sent_prompt
from litellm_budget.core.formats import SYSTEM, MessageFormat
from litellm_budget.typing import Message

from .pricing import Prices

CACHE_KINDS = ("openai", "anthropic")
CLIENT_BREAKPOINTS = ("last", "none")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CacheSetup:
    """Which provider's cache, whose breakpoints, and its minimum."""

    kind: str = "openai"
    client: str = "last"
    plugin: bool = False
    minimum: int = 1024

    def describe(self) -> str:
        """One line for the replay's notes."""
        if self.kind == "openai":
            return f"OpenAI's automatic prefix cache (at least {self.minimum} tokens, in steps of {STEP_TOKENS})"
        marks = {"last": "the client's on the system prompt and the last message", "none": "none of the client's"}
        plugin = ", and the plugin's (cache_breakpoints)" if self.plugin else ""
        return f"Anthropic's cache at breakpoints ({marks[self.client]}{plugin}; at least {self.minimum} tokens)"


def cache_cost(prices: Prices, *, sent: int, read: int, written: int) -> float:
    """Dollars for ``sent`` prompt tokens of which ``read`` came from the cache and ``written`` went into it."""
    return read * prices.reused + written * prices.reprefilled + max(0, sent - read - written) * prices.input


class CacheModel:
    """One session's cache: what each prompt sent reads from it and writes to it, in counted tokens."""

    def __init__(self, setup: CacheSetup, fmt: MessageFormat) -> None:
        self.setup, self.fmt = setup, fmt
        self._cached: set[object] = set()

    def serve(self, sent: Sequence[Message], sizes: Sequence[int]) -> tuple[int, int]:
        """``(read, written)`` for the prompt ``sent``, whose messages count ``sizes`` tokens."""
        if self.setup.kind == "anthropic":
            return self._anthropic(self.marked(sent), sizes)
        return self._openai(sent, sizes)

    def marked(self, sent: Sequence[Message]) -> list[Message]:
        """``sent`` with the client's breakpoints, then the plugin's."""
        messages = list(sent)
        if self.setup.client == "last" and messages:
            kinds = self.fmt.kinds(messages)
            system = [i for i, kind in enumerate(kinds) if kind == SYSTEM][-1:]
            messages, _ = with_breakpoints(messages, [*system, len(messages) - 1])
        if self.setup.plugin:
            messages, _ = with_breakpoints(messages, stable_ends(messages, self.fmt))
        return messages

    def _openai(self, sent: Sequence[Message], sizes: Sequence[int]) -> tuple[int, int]:
        prompt = sent_prompt(sent)
        chain, total, read = 0, 0, 0.0
        ids = []
        for digest, head, chars, head_chars, size in zip(
            prompt.digests, prompt.heads, prompt.sizes, prompt.head_sizes, sizes, strict=True
        ):
            head_id = hash((chain, "head", head))
            if head_id in self._cached and chars:
                read = max(read, total + size * head_chars / chars)
            chain = hash((chain, digest))
            total += size
            ids += [chain, head_id]
            if chain in self._cached:
                read = total
        self._cached.update(ids)
        whole = int(read)
        return (whole - whole % STEP_TOKENS if whole >= self.setup.minimum else 0), 0

    def _anthropic(self, sent: Sequence[Message], sizes: Sequence[int]) -> tuple[int, int]:
        prompt = sent_prompt(sent)
        starts = [0, *itertools.accumulate(prompt.blocks)]
        before = [0, *itertools.accumulate(sizes)]
        chains = [0]
        for digest in prompt.digests:
            chains.append(hash((chains[-1], digest)))

        def position(entry: int, block: int) -> tuple[object, int, float]:
            key = (chains[entry], prompt.digests[entry], block)
            tokens = before[entry] + sizes[entry] * (block + 1) / prompt.blocks[entry]
            return key, starts[entry] + block, tokens

        candidates = [position(e, b) for e in range(len(sizes)) for b in range(prompt.blocks[e])]
        marks = [position(entry, block) for entry, block in prompt.marks]
        read = 0.0
        for _, at, _ in marks:
            for key, where, tokens in candidates:
                if at - LOOKBACK_BLOCKS < where <= at and key in self._cached:
                    read = max(read, tokens)
        written = 0.0
        for key, _, tokens in marks:
            if tokens >= self.setup.minimum:
                self._cached.add(key)
                written = max(written, tokens - read)
        return int(read), int(written)
