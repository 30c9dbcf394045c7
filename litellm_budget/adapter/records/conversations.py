"""Conversation state: each conversation's last edits, kept here and in the proxy's Redis (if any) for every replica."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from litellm_budget.adapter.replicas.shared import shared_get, shared_set, shared_store
from litellm_budget.adapter.request.targets import Target
from litellm_budget.bounded import BoundedDict, BoundedLRU
from litellm_budget.core.api import (
    SYSTEM,
    USER,
    BudgetReport,
    MessageFormat,
    SentEdits,
    content_key,
    digest_known,
    edits_sent,
    history_digest,
)
from litellm_budget.typing import Message

CACHE_PREFIX = "litellm_budget:conversation:"


def conversation_key(model: str, fmt: MessageFormat, messages: Sequence[Message]) -> str | None:
    """Names a conversation: its model (or ``fit_scope``), system messages and first user message (the task), if any."""
    try:
        kinds = fmt.kinds(messages)
    # A malformed request is the core's to report (``unsupported``); it has no conversation.
    except (KeyError, TypeError, AttributeError, IndexError):
        return None
    first_user = next((i for i, kind in enumerate(kinds) if kind == USER), None)
    if first_user is None:
        return None
    named = [model, fmt.name, *(m for m, kind in zip(messages, kinds, strict=True) if kind == SYSTEM)]
    named.append(messages[first_user])
    # Every request of a conversation names the same messages: their digest is remembered by content.
    return CACHE_PREFIX + digest_known(named, 32, (model, fmt.name, hash(tuple(map(content_key, named[2:])))))


class KnownKey(NamedTuple):
    """The conversation key read for one message list before its fit, handed to the fit."""

    messages: object
    scope: str
    key: str

    def of(self, messages: object, scope: str) -> str | None:
        """The key, if ``messages`` is the very list it was read for (a list rebuilt since may differ)."""
        return self.key if messages is self.messages and scope == self.scope else None


class Conversations:
    """
    The last edits of each conversation: read from memory while a hook fits (the fit is synchronous), refreshed
    from the shared cache before it and written back after. An entry lives as long as the provider keeps the
    prompt cached (``cache_lifetime``): a quieter one's cache is cold anyway, so it is fitted afresh for the best fill.
    """

    def __init__(self, max_conversations: int = 8192) -> None:
        self._local: BoundedLRU[tuple[SentEdits, float]] = BoundedLRU(max_conversations)
        self._pending: BoundedDict[tuple[SentEdits, float]] = BoundedDict(max_conversations)
        # What this replica last wrote per conversation: the edits, when, and for how long.
        self._written: BoundedLRU[tuple[tuple[object, ...], float, float]] = BoundedLRU(max_conversations)

    def recall(self, key: str, messages: Sequence[Message]) -> SentEdits | None:
        """The edits remembered for ``key`` if they are still warm and ``messages`` continue them."""
        found = self._local.get(key)
        if found is None:
            return None
        edits, expires = found
        if time.monotonic() > expires or history_digest(messages, edits.messages) != edits.digest:
            return None
        return edits

    def keep(
        self, target: Target, fmt: MessageFormat, messages: object, report: BudgetReport, *, key: str | None = None
    ) -> None:
        """A trimmed request that is sent (``messages``: what it was fitted from) becomes its conversation's state."""
        if not target.settings.conversation_state or report.action != "trimmed" or not isinstance(messages, list):
            return
        key = key or conversation_key(target.fit_scope, fmt, messages)
        edits = edits_sent(messages, report)
        if key and edits is not None:
            self.remember(key, edits, target.settings.lifetime_for(target.model))

    def remember(self, key: str, edits: SentEdits, lifetime: float) -> None:
        """Keep ``edits`` for ``lifetime`` seconds, here now and in the shared cache on the next flush."""
        entry = (edits, time.monotonic() + lifetime)
        self._local.put(key, entry)
        self._pending.put(key, entry)

    async def refresh(
        self, cache: Any, scope: str, fmt: MessageFormat, messages: Any, lifetime: float
    ) -> KnownKey | None:
        """Adopt another replica's edits for the conversation (same ``fit_scope``) if they go further; the key read."""
        key = conversation_key(scope, fmt, messages) if shared_store(cache) and isinstance(messages, list) else None
        if key is None:
            return None
        known = KnownKey(messages, scope, key)
        shared = SentEdits.from_dict(await shared_get(cache, key))
        if shared is None or history_digest(messages, shared.messages) != shared.digest:
            return known
        mine = self.recall(key, messages)
        if mine is None or shared.messages >= mine.messages:
            self._local.put(key, (shared, time.monotonic() + lifetime))
        return known

    async def flush(self, cache: Any) -> None:
        """Write what was remembered since the last flush to the shared cache, if there is one."""
        pending = self._pending.drain()
        if shared_store(cache) is None:
            return
        now = time.monotonic()
        for key, (edits, expires) in pending:
            edited = (edits.dropped, edits.elided, edits.dropped_units)
            last = self._written.get(key)
            # Unchanged edits are written again only after a quarter of their lifetime: Redis still holds the same ones.
            if last is not None and last[0] == edited and now - last[1] < last[2] / 4:
                continue
            self._written.put(key, (edited, now, expires - now))
            await shared_set(cache, str(key), edits.as_dict(), expires - now)
