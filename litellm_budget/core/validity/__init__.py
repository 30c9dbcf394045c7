"""Whether a request is well-formed enough to trim safely, per format; verdicts remembered by content."""

from __future__ import annotations

from litellm_budget.core.validity._anthropic_checks import CALL_TYPES as ANTHROPIC_CALL_TYPES
from litellm_budget.core.validity._anthropic_checks import COMPACTION as ANTHROPIC_COMPACTION
from litellm_budget.core.validity._anthropic_checks import HISTORY_MARKS, RESULT_TYPE
from litellm_budget.core.validity._anthropic_checks import check as anthropic_check
from litellm_budget.core.validity._anthropic_checks import unsupported_reason as anthropic_unsupported
from litellm_budget.core.validity._chat_checks import SYSTEM_ROLES
from litellm_budget.core.validity._chat_checks import check as chat_check
from litellm_budget.core.validity._chat_checks import unsupported_reason as chat_unsupported
from litellm_budget.core.validity._responses_checks import (
    BUILTIN_CALLS,
    OUTPUT_TYPES,
    PAIRED_CALLS,
    PAIRED_OUTPUTS,
    PINNED_TYPES,
    STEP_TYPES,
    item_type,
)
from litellm_budget.core.validity._responses_checks import CALL_TYPES as RESPONSES_CALL_TYPES
from litellm_budget.core.validity._responses_checks import COMPACTION as RESPONSES_COMPACTION
from litellm_budget.core.validity._responses_checks import SYSTEM_ROLES as RESPONSES_SYSTEM_ROLES
from litellm_budget.core.validity._responses_checks import check as responses_check
from litellm_budget.core.validity._responses_checks import unsupported_reason as responses_unsupported
from litellm_budget.core.validity._verdicts import START, Resume, Verdict, remember_passed, resume_from

# The three formats' modules share their names (``check``, ``unsupported_reason``, ``CALL_TYPES``...):
# here each takes its format's name; chat's ``SYSTEM_ROLES`` keeps its own.
__all__ = (
    "ANTHROPIC_CALL_TYPES",
    "ANTHROPIC_COMPACTION",
    "BUILTIN_CALLS",
    "HISTORY_MARKS",
    "OUTPUT_TYPES",
    "PAIRED_CALLS",
    "PAIRED_OUTPUTS",
    "PINNED_TYPES",
    "RESPONSES_CALL_TYPES",
    "RESPONSES_COMPACTION",
    "RESPONSES_SYSTEM_ROLES",
    "RESULT_TYPE",
    "START",
    "STEP_TYPES",
    "SYSTEM_ROLES",
    "Resume",
    "Verdict",
    "anthropic_check",
    "anthropic_unsupported",
    "chat_check",
    "chat_unsupported",
    "item_type",
    "remember_passed",
    "responses_check",
    "responses_unsupported",
    "resume_from",
)
