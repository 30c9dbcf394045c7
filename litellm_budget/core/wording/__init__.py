"""What the model reads of what was removed: placeholders, the marker, its digest and names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from litellm_budget.core._later import loaded_on_use
from litellm_budget.core.wording._digest import (
    call_text,
    outcome_of,
    outline_of,
    outputs_of,
    quoted,
    step_entries,
    steps_of,
)
from litellm_budget.core.wording._names import (
    NAMES_HEAD,
    InText,
    StepNames,
    is_name,
    names_beyond,
    names_in,
    names_line,
)
from litellm_budget.core.wording._notices import (
    CONTINUES,
    MARKER_END,
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
from litellm_budget.core.wording._recall import HANDLE, NOTHING_STORED, TOOL_NAME, RecallScope, joined_texts

if TYPE_CHECKING:
    from litellm_budget.core.wording._marker_digest import marker_digest, newest_within, shares, step_names
    from litellm_budget.core.wording._placeholders import outline_limit, placeholder_of, text_names_limit

__all__ = (
    "CONTINUES",
    "HANDLE",
    "MARKER_END",
    "NAMES_HEAD",
    "NOTHING_STORED",
    "NOTICE_PREFIX",
    "TEXT_ELIDED",
    "TOOL_ELIDED",
    "TOOL_NAME",
    "TOOL_PLACEHOLDER",
    "InText",
    "RecallScope",
    "StepNames",
    "call_text",
    "cut_note",
    "is_name",
    "joined_texts",
    "marker_digest",
    "marker_start",
    "names_beyond",
    "names_in",
    "names_line",
    "newest_within",
    "omitted_note",
    "outcome_of",
    "outline_limit",
    "outline_of",
    "outputs_of",
    "placeholder_for",
    "placeholder_of",
    "quoted",
    "shares",
    "step_entries",
    "step_names",
    "steps_of",
    "summary_note",
    "text_names_limit",
)

# Names loaded on first use, not with the package: ``_marker_digest`` and ``_placeholders``
# import ``policies/_ledger.py``, which imports ``_names`` and ``_recall`` here.
__getattr__ = loaded_on_use(
    __name__,
    {
        "marker_digest": "_marker_digest",
        "newest_within": "_marker_digest",
        "shares": "_marker_digest",
        "step_names": "_marker_digest",
        "outline_limit": "_placeholders",
        "placeholder_of": "_placeholders",
        "text_names_limit": "_placeholders",
    },
)
