"""What the prompt cache could read, and where the plugin's breakpoints go."""

from __future__ import annotations

from litellm_budget.core.cache._breakpoints import (
    BREAKPOINT,
    MAX_BREAKPOINTS,
    breakpoints_in,
    stable_ends,
    with_breakpoints,
)
from litellm_budget.core.cache._cache_truth import CacheReport, CacheRules, CacheUsage, cache_report, moved_by
from litellm_budget.core.cache._sent_prompt import MARKER, TOOLS, SentPrompt, origins, sent_prompt

__all__ = (
    "BREAKPOINT",
    "MARKER",
    "MAX_BREAKPOINTS",
    "TOOLS",
    "CacheReport",
    "CacheRules",
    "CacheUsage",
    "SentPrompt",
    "breakpoints_in",
    "cache_report",
    "moved_by",
    "origins",
    "sent_prompt",
    "stable_ends",
    "with_breakpoints",
)
