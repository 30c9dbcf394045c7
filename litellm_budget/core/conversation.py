"""Conversation state: the edits sent last for a conversation, so the next request keeps them."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SentEdits:
    """
    What was sent for the previous request of a conversation: which of its messages were
    dropped and which elided. ``messages`` and ``digest`` say what it was fitted from, so a
    request that does not continue it (the client rewrote its history) is fitted afresh.
    """

    messages: int
    digest: str
    dropped: tuple[int, ...] = ()
    elided: tuple[int, ...] = ()
