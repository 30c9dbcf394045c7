"""Counting in real tokens, and the size bound that lets a request pass uncounted."""

from __future__ import annotations

from litellm_budget.core.counting._encodings import load_offline
from litellm_budget.core.counting._size_gate import (
    GateContext,
    GateRead,
    bound_with,
    bounded_counts,
    counted,
    new_bytes,
    passed_untouched,
    remembered_counts,
    size_bound,
    utf8_bytes,
)
from litellm_budget.core.counting._tokens import (
    CHUNK_CHARS,
    REPLY_PRIMING,
    MemoCounter,
    counter_for,
    counts_exactly,
    encoding_name_for,
    estimate_tokens,
    forget_counts,
    preload_counters,
    reset_counters,
    split_chunks,
)

__all__ = (
    "CHUNK_CHARS",
    "REPLY_PRIMING",
    "GateContext",
    "GateRead",
    "MemoCounter",
    "bound_with",
    "bounded_counts",
    "counted",
    "counter_for",
    "counts_exactly",
    "encoding_name_for",
    "estimate_tokens",
    "forget_counts",
    "load_offline",
    "new_bytes",
    "passed_untouched",
    "preload_counters",
    "remembered_counts",
    "reset_counters",
    "size_bound",
    "split_chunks",
    "utf8_bytes",
)
