"""
The core's front door: everything the adapter uses of the core, and nothing else.

The adapter imports from this module only (``tests/test_layers.py`` holds it to that), so what the
LiteLLM layer depends on is this list: fitting a request (``fit_request``), its report and
settings, the formats, conversation state and the sent prompt, the cache and summary steps, and
the few checks and bounded stores every layer shares. The modules behind it may move freely.
"""

from __future__ import annotations

from .breakpoints import stable_ends, with_breakpoints
from .cache_truth import CacheReport, CacheRules, CacheUsage, cache_report
from .canonical import content_key, digest
from .checks import is_int, is_mapping, is_number, positive_int
from .compaction import (
    COMPACT,
    COMPACTION_BLOCK,
    after_compaction,
    compact_edit,
    compact_trigger,
    compaction_note,
    split_applied,
    without_compact_edit,
)
from .context_edits import apply_context_edits
from .conversation import edits_sent, history_digest
from .errors import context_window_exceeded, provider_of
from .fit import Fitted, fit_request, passed_through
from .fit_input import FitRequest
from .formats import SYSTEM, USER, MessageFormat, format_named, joined, unjoin_for
from .formats.anthropic import ANTHROPIC
from .formats.chat import CHAT
from .formats.parts import texts_of
from .formats.responses import RESPONSES
from .ledger import SentEdits
from .memo import BoundedDict, BoundedLRU, content_memo
from .recall import HANDLE, TOOL_NAME, RecallScope
from .report import BudgetReport, parse_ranges, unsent
from .sent_prompt import SentPrompt, sent_prompt
from .setting_problems import SettingProblem, apply_valid
from .settings import SETTING_NAMES, BudgetSettings
from .size_gate import GateRead, counted, new_bytes
from .summary import SummaryJob, block_digest, summary_job
from .tokens import counter_for, preload_counters
from .window import WINDOW_FIX, model_map_window

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
    "content_memo",
    "context_window_exceeded",
    "counted",
    "counter_for",
    "digest",
    "edits_sent",
    "fit_request",
    "format_named",
    "history_digest",
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
    "split_applied",
    "stable_ends",
    "summary_job",
    "texts_of",
    "unjoin_for",
    "unsent",
    "with_breakpoints",
    "without_compact_edit",
]
