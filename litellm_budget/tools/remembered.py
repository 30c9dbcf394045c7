"""What a replay remembers of a conversation, as the plugin does: the edits sent last."""

from __future__ import annotations

from litellm_budget.core.api import BudgetSettings, Fitted, SentEdits, edits_sent
from litellm_budget.typing import Message


class Remembered:
    """
    The edits sent last, as the plugin remembers them per conversation (``conversation_state``;
    every replayed request comes within the cache lifetime). A session's first request does not
    continue the last one of the session before, so it is fitted afresh.
    """

    def __init__(self, settings: BudgetSettings) -> None:
        self.enabled = settings.conversation_state
        self.previous: SentEdits | None = None

    def sent(self, messages: list[Message], fitted: Fitted) -> None:
        """``fitted`` was sent for ``messages``: a trim becomes the conversation's state."""
        if self.enabled and fitted.report.action == "trimmed":
            self.previous = edits_sent(messages, fitted.report)
