"""
LiteLLM's own ``litellm.compress()`` as a replay peer, on chat messages: it replaces the messages
least relevant to the last user message (BM25) with stubs naming a key, and keeps their text in a
cache its ``litellm_content_retrieve`` tool serves. Two runs: its defaults (compress past 200,000
tokens, to 70% of that) and with ``auto``'s budget as its trigger (its target: 70% of it, its own
default share, near ``auto``'s watermark).

It raises on some requests (an assistant message whose content is ``None`` beside its tool calls,
in LiteLLM 1.108.5): such a request is sent as it came, and counted in ``FAILURES``, which the
replay's description of the peer reports.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Any

from litellm_budget.tools.replay import Outcome, Strategy
from litellm_budget.typing import Message

from .outcome import baseline_outcome
from .peers import prompt_budget

#: LiteLLM's defaults (``litellm/compression/compress.py``).
DEFAULT_TRIGGER = 200_000
#: Requests ``compress()`` raised on, by peer and window, and the first error's type.
FAILURES: collections.Counter[tuple[str, int]] = collections.Counter()
ERRORS: dict[tuple[str, int], str] = {}


def compress_peer(name: str, model: str, window: int) -> Strategy:
    """The peer ``name`` (``litellm_compress``: defaults; ``litellm_compress_budget``: auto's budget)."""
    from litellm import compress

    trigger = DEFAULT_TRIGGER if name == "litellm_compress" else prompt_budget(window)

    def run(messages: list[Message]) -> Outcome:
        try:
            result: Any = compress(messages=list(messages), model=model, compression_trigger=trigger)
        except Exception as exc:  # noqa: BLE001 - whatever it raises is what a user of it meets
            FAILURES[(name, window)] += 1
            ERRORS.setdefault((name, window), type(exc).__name__)
            return baseline_outcome(messages, messages)
        sent = list(result["messages"])
        cache: Mapping[str, str] = result.get("cache") or {}
        outcome = baseline_outcome(messages, sent)
        return Outcome(outcome.messages, outcome.action, outcome.elided, outcome.dropped, stored=dict(cache))

    return run


COMPRESS_PEERS = ("litellm_compress", "litellm_compress_budget")


def describe_compress(name: str, windows: list[int]) -> str:
    """The peer's parameters and how often it raised, per window."""
    failed = ", ".join(f"{w:,}: {FAILURES[(name, w)]} ({ERRORS[(name, w)]})" for w in windows if FAILURES[(name, w)])
    raised = f"; raised on (sent as they came) {failed}" if failed else "; raised on none"
    if name == "litellm_compress":
        return f"litellm.compress() defaults: trigger {DEFAULT_TRIGGER:,} tokens, target 70% of it{raised}"
    budgets = ", ".join(f"{w:,}: {prompt_budget(w):,}" for w in windows)
    return f"litellm.compress(compression_trigger = auto's budget ({budgets})), target 70% of it{raised}"
