"""Conversation state: the edits sent last, kept while they fit, and the outputs they hid."""

from __future__ import annotations

from litellm_budget.core.state._conversation import (
    continues,
    edits_sent,
    history_digest,
    kept_as_sent,
    kept_edits,
    rereads,
)

__all__ = ("continues", "edits_sent", "history_digest", "kept_as_sent", "kept_edits", "rereads")
