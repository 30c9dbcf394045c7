"""What the model reads of what was removed: placeholders, the marker, its digest and names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from litellm_budget.core._later import loaded_on_use
from litellm_budget.core.wording._digest import call_text, outcome_of, outline_of, quoted, step_entries
from litellm_budget.core.wording._names import NAMES_HEAD, InText, is_name, names_beyond, names_in, names_line
from litellm_budget.core.wording._notices import (
    CONTINUES,
    NOTICE_PREFIX,
    TEXT_ELIDED,
    TOOL_ELIDED,
    TOOL_PLACEHOLDER,
    cut_note,
    marker_start,
    omitted_note,
    placeholder_for,
    summary_note,
)
from litellm_budget.core.wording._recall import HANDLE, TOOL_NAME, RecallScope

if TYPE_CHECKING:
    from litellm_budget.core.wording._marker_digest import marker_digest, newest_within, shares, step_names

__all__ = (
    "CONTINUES",
    "HANDLE",
    "NAMES_HEAD",
    "NOTICE_PREFIX",
    "TEXT_ELIDED",
    "TOOL_ELIDED",
    "TOOL_NAME",
    "TOOL_PLACEHOLDER",
    "InText",
    "RecallScope",
    "call_text",
    "cut_note",
    "is_name",
    "marker_digest",
    "marker_start",
    "names_beyond",
    "names_in",
    "names_line",
    "newest_within",
    "omitted_note",
    "outcome_of",
    "outline_of",
    "placeholder_for",
    "quoted",
    "shares",
    "step_entries",
    "step_names",
    "summary_note",
)

# Loaded on first use: ``_marker_digest`` imports ``policies/_ledger``, which imports ``_names`` and ``_recall`` here.
__getattr__ = loaded_on_use(
    __name__, dict.fromkeys(("marker_digest", "newest_within", "shares", "step_names"), "_marker_digest")
)
