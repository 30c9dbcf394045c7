"""Counting in real tokens, and the size bound that lets a request pass uncounted."""

from __future__ import annotations

from litellm_budget.core.counting._encodings import load_offline
from litellm_budget.core.counting._size_gate import (
    GateRead,
    bound_with,
    counted,
    new_bytes,
    remembered_counts,
    size_bound,
    utf8_bytes,
)
from litellm_budget.core.counting._tokens import (
    CHUNK_CHARS,
    REPLY_PRIMING,
    MemoCounter,
    counter_for,
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
    "GateRead",
    "MemoCounter",
    "bound_with",
    "counted",
    "counter_for",
    "encoding_name_for",
    "estimate_tokens",
    "forget_counts",
    "load_offline",
    "new_bytes",
    "preload_counters",
    "remembered_counts",
    "reset_counters",
    "size_bound",
    "split_chunks",
    "utf8_bytes",
)
