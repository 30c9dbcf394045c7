"""Conversation state: the edits sent last, kept while they fit, and the outputs they hid."""

from __future__ import annotations

from litellm_budget.core.state._conversation import (
    continues,
    continues_from,
    edits_sent,
    history_digest,
    kept_as_sent,
    kept_edits,
    with_state,
)
from litellm_budget.core.state._rereads import rereads

__all__ = (
    "continues",
    "continues_from",
    "edits_sent",
    "history_digest",
    "kept_as_sent",
    "kept_edits",
    "rereads",
    "with_state",
)
