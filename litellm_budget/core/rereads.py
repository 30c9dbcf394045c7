"""
Re-reads: the model calling a tool again, with the same arguments, for an output this gateway hid.

It is the one quality figure a proxy can see in production. A model that lost what it needs
asks for it again: when the newest step of a conversation repeats a call whose output the
conversation's last request had elided, or whose step it had dropped, that call is a re-read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from litellm_budget.typing import Message

from .conversation import history_digest
from .formats import MessageFormat
from .ledger import Ledger
from .memo import BoundedLRU, remembered
from .tool_calls import CallKey, call_key

#: The calls each conversation's last request hid, by that request's content and edits.
HIDDEN_ENTRIES = 4096
_HIDDEN: BoundedLRU[frozenset[CallKey]] = remembered(HIDDEN_ENTRIES)


def rereads(ledger: Ledger) -> int:
    """
    How many calls made since the conversation's last request repeat a call whose output that
    request did not send (elided, or dropped with its step); 0 without conversation state.
    """
    sent = ledger.previous
    if (
        sent is None
        or not (sent.dropped or sent.elided)
        or sent.digest != history_digest(ledger.messages, sent.messages)
    ):
        return 0
    fmt, messages = ledger.format, ledger.messages
    made = list(_keys(fmt, messages[sent.messages :]))
    if not made:
        return 0
    # What the last request hid is the same for every request that continues it: read it once.
    key = hash((fmt.name, sent.dropped, sent.elided, *ledger.keys[: sent.messages]))
    hidden = _HIDDEN.get(key)
    if hidden is None:
        hidden = frozenset(_hidden_calls(fmt, messages[: sent.messages], sent.dropped, sent.elided))
        _HIDDEN.put(key, hidden)
    return sum(1 for made_key in made if made_key in hidden)


def _hidden_calls(
    fmt: MessageFormat, messages: Sequence[Message], dropped: Iterable[int], elided: Iterable[int]
) -> set[CallKey]:
    """The calls whose outputs were not sent: those of dropped messages, and those elided outputs answer."""
    hidden: set[CallKey] = set(_keys(fmt, (messages[index] for index in dropped if index < len(messages))))
    answering = {
        answered for index in elided if index < len(messages) for answered in fmt.answered_ids(messages[index])
    }
    if answering:
        for message in messages:
            hidden.update(call_key(name, args) for call_id, name, args in fmt.calls(message) if call_id in answering)
    return hidden


def _keys(fmt: MessageFormat, messages: Iterable[Message]) -> Iterable[CallKey]:
    for message in messages:
        for _, name, arguments in fmt.calls(message):
            yield call_key(name, arguments)
