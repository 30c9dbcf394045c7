"""
The core's front door: all the adapter, the tools and the package root use of the core, and nothing
else (``tests/test_layers.py`` holds the adapter to it), so the modules behind it may move freely.
"""

from __future__ import annotations

from litellm_budget.core._canonical import content_key, digest, digest_known
from litellm_budget.core._checks import is_int, is_mapping, is_number, positive_int
from litellm_budget.core._errors import context_window_exceeded, provider_of
from litellm_budget.core._fit import fit, fit_request
from litellm_budget.core._fit_input import FitRequest, Fitted
from litellm_budget.core._report import BudgetReport, parse_ranges, unsent
from litellm_budget.core._untouched import passed_through
from litellm_budget.core.budget import (
    SETTING_NAMES,
    WINDOW_FIX,
    BudgetSettings,
    SettingError,
    SettingProblem,
    apply_valid,
    is_context_error,
    model_map_window,
    not_a_setting,
    served_limit,
)
from litellm_budget.core.cache import (
    CacheReport,
    CacheRules,
    CacheUsage,
    SentPrompt,
    cache_report,
    sent_prompt,
    stable_ends,
    with_breakpoints,
)
from litellm_budget.core.client_edits import (
    COMPACT,
    COMPACTION_BLOCK,
    after_compaction,
    apply_context_edits,
    compact_edit,
    compact_trigger,
    compaction_note,
    split_applied,
    without_compact_edit,
)
from litellm_budget.core.counting import GateRead, counted, counter_for, new_bytes, preload_counters
from litellm_budget.core.formats import (
    ANTHROPIC,
    CHAT,
    RESPONSES,
    SYSTEM,
    USER,
    MessageFormat,
    anthropic_from_chat,
    format_named,
    join_system,
    joined,
    responses_from_chat,
    texts_of,
    unjoin_for,
)
from litellm_budget.core.policies import POLICIES, SentEdits, SummaryJob, block_digest, summary_job
from litellm_budget.core.state import edits_sent, history_digest
from litellm_budget.core.validity import SYSTEM_ROLES
from litellm_budget.core.wording import HANDLE, TOOL_NAME, RecallScope

__all__ = (
    "ANTHROPIC",
    "CHAT",
    "COMPACT",
    "COMPACTION_BLOCK",
    "HANDLE",
    "POLICIES",
    "RESPONSES",
    "SETTING_NAMES",
    "SYSTEM",
    "SYSTEM_ROLES",
    "TOOL_NAME",
    "USER",
    "WINDOW_FIX",
    "BudgetReport",
    "BudgetSettings",
    "CacheReport",
    "CacheRules",
    "CacheUsage",
    "FitRequest",
    "Fitted",
    "GateRead",
    "MessageFormat",
    "RecallScope",
    "SentEdits",
    "SentPrompt",
    "SettingError",
    "SettingProblem",
    "SummaryJob",
    "after_compaction",
    "anthropic_from_chat",
    "apply_context_edits",
    "apply_valid",
    "block_digest",
    "cache_report",
    "compact_edit",
    "compact_trigger",
    "compaction_note",
    "content_key",
    "context_window_exceeded",
    "counted",
    "counter_for",
    "digest",
    "digest_known",
    "edits_sent",
    "fit",
    "fit_request",
    "format_named",
    "history_digest",
    "is_context_error",
    "is_int",
    "is_mapping",
    "is_number",
    "join_system",
    "joined",
    "model_map_window",
    "new_bytes",
    "not_a_setting",
    "parse_ranges",
    "passed_through",
    "positive_int",
    "preload_counters",
    "provider_of",
    "responses_from_chat",
    "sent_prompt",
    "served_limit",
    "split_applied",
    "stable_ends",
    "summary_job",
    "texts_of",
    "unjoin_for",
    "unsent",
    "with_breakpoints",
    "without_compact_edit",
)
