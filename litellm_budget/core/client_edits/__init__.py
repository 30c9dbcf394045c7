"""A client's own edits: Anthropic's context management and compaction, served here."""

from __future__ import annotations

from litellm_budget.core.client_edits._compaction import (
    COMPACT,
    COMPACTION_BLOCK,
    DEFAULT_COMPACT_TRIGGER,
    after_compaction,
    compact_edit,
    compact_trigger,
    compaction_note,
    split_applied,
    without_compact_edit,
)
from litellm_budget.core.client_edits._context_edits import (
    CLEAR_THINKING,
    CLEAR_TOOL_USES,
    CLEARED_RESULT,
    apply_context_edits,
    clear_tool_uses,
)

__all__ = (
    "CLEARED_RESULT",
    "CLEAR_THINKING",
    "CLEAR_TOOL_USES",
    "COMPACT",
    "COMPACTION_BLOCK",
    "DEFAULT_COMPACT_TRIGGER",
    "after_compaction",
    "apply_context_edits",
    "clear_tool_uses",
    "compact_edit",
    "compact_trigger",
    "compaction_note",
    "split_applied",
    "without_compact_edit",
)
