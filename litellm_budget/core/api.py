"""
The core's front door: everything the adapter uses of the core, and nothing else.

The adapter imports from this module only (``tests/test_layers.py`` holds it to that), so what the
LiteLLM layer depends on is this list: fitting a request (``fit_request``), its report and
settings, the formats, conversation state and the sent prompt, the cache and summary steps, and
the few checks and bounded stores every layer shares. The modules behind it may move freely.
"""

from __future__ import annotations

from litellm_budget.core._canonical import content_key, digest, digest_known
from litellm_budget.core._checks import is_int, is_mapping, is_number, positive_int
from litellm_budget.core._errors import context_window_exceeded, provider_of
from litellm_budget.core._fit import fit_request
from litellm_budget.core._fit_input import FitRequest, Fitted
from litellm_budget.core._memo import BoundedDict, BoundedLRU, Memo
from litellm_budget.core._report import BudgetReport, parse_ranges, unsent
from litellm_budget.core._untouched import passed_through
from litellm_budget.core.budget._served_limit import is_context_error, served_limit
from litellm_budget.core.budget._setting_problems import SettingProblem, apply_valid
from litellm_budget.core.budget._settings import SETTING_NAMES, BudgetSettings
from litellm_budget.core.budget._window import WINDOW_FIX, model_map_window
from litellm_budget.core.cache._breakpoints import stable_ends, with_breakpoints
from litellm_budget.core.cache._cache_truth import CacheReport, CacheRules, CacheUsage, cache_report
from litellm_budget.core.cache._sent_prompt import SentPrompt, sent_prompt
from litellm_budget.core.client_edits._compaction import (
    COMPACT,
    COMPACTION_BLOCK,
    after_compaction,
    compact_edit,
    compact_trigger,
    compaction_note,
    split_applied,
    without_compact_edit,
)
from litellm_budget.core.client_edits._context_edits import apply_context_edits
from litellm_budget.core.counting._size_gate import GateRead, counted, new_bytes
from litellm_budget.core.counting._tokens import counter_for, preload_counters
from litellm_budget.core.formats import SYSTEM, USER, MessageFormat, format_named, joined, unjoin_for
from litellm_budget.core.formats._anthropic import ANTHROPIC
from litellm_budget.core.formats._chat import CHAT
from litellm_budget.core.formats._parts import texts_of
from litellm_budget.core.formats._responses import RESPONSES
from litellm_budget.core.policies._ledger import SentEdits
from litellm_budget.core.policies._summary import SummaryJob, block_digest, summary_job
from litellm_budget.core.state._conversation import edits_sent, history_digest
from litellm_budget.core.wording._recall import HANDLE, TOOL_NAME, RecallScope

__all__ = [
    "ANTHROPIC",
    "CHAT",
    "COMPACT",
    "COMPACTION_BLOCK",
    "HANDLE",
    "RESPONSES",
    "SETTING_NAMES",
    "SYSTEM",
    "TOOL_NAME",
    "USER",
    "WINDOW_FIX",
    "BoundedDict",
    "BoundedLRU",
    "BudgetReport",
    "BudgetSettings",
    "CacheReport",
    "CacheRules",
    "CacheUsage",
    "FitRequest",
    "Fitted",
    "GateRead",
    "Memo",
    "MessageFormat",
    "RecallScope",
    "SentEdits",
    "SentPrompt",
    "SettingProblem",
    "SummaryJob",
    "after_compaction",
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
    "fit_request",
    "format_named",
    "history_digest",
    "is_context_error",
    "is_int",
    "is_mapping",
    "is_number",
    "joined",
    "model_map_window",
    "new_bytes",
    "parse_ranges",
    "passed_through",
    "positive_int",
    "preload_counters",
    "provider_of",
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
]
