"""Whether a request is well-formed enough to trim safely, per format; verdicts remembered by content."""

from __future__ import annotations

from litellm_budget.core.validity._anthropic_checks import unsupported_reason as anthropic_unsupported
from litellm_budget.core.validity._chat_checks import SYSTEM_ROLES
from litellm_budget.core.validity._chat_checks import unsupported_reason as chat_unsupported
from litellm_budget.core.validity._responses_checks import unsupported_reason as responses_unsupported
from litellm_budget.core.validity._verdicts import START, remember_passed, resume_from

# The format modules share names (``check``, ``unsupported_reason``...): here each takes its format's name.
__all__ = (
    "START",
    "SYSTEM_ROLES",
    "anthropic_unsupported",
    "chat_unsupported",
    "remember_passed",
    "responses_unsupported",
    "resume_from",
)
