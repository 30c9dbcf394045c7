"""
Re-reads: the model calling a tool again, with the same arguments, for an output this gateway hid.

It is the one quality figure a proxy can see in production. A model that lost what it needs
asks for it again: when the newest step of a conversation repeats a call whose output the
conversation's last request had elided, or whose step it had dropped, that call is a re-read.
"""

from __future__ import annotations

from collections.abc import Iterable

from .conversation import continues
from .ledger import Ledger
from .tool_calls import CallKey, calls_made


def rereads(ledger: Ledger) -> int:
    """
    How many calls made since the conversation's last request repeat a call whose output that
    request did not send (elided, or dropped with its step); 0 without conversation state.
    """
    sent = ledger.previous
    if sent is None or not continues(ledger):
        return 0
    fmt, messages, keys = ledger.format, ledger.messages, ledger.keys
    made = [
        key for index in range(sent.messages, len(messages)) for _, key in calls_made(fmt, messages[index], keys[index])
    ]
    if not made:
        return 0
    hidden = _hidden_calls(ledger, sent.messages, sent.dropped, sent.elided, set(made))
    return sum(1 for key in made if key in hidden)


def _hidden_calls(
    ledger: Ledger, count: int, dropped: Iterable[int], elided: Iterable[int], wanted: set[CallKey]
) -> set[CallKey]:
    """
    The calls among ``wanted`` whose outputs the first ``count`` messages did not send: those of
    dropped messages, and those elided outputs answer.
    """
    fmt, messages, keys = ledger.format, ledger.messages, ledger.keys
    old = range(min(count, len(messages)))
    hidden = {key for index in dropped if index in old for _, key in calls_made(fmt, messages[index], keys[index])}
    answering = {answered for index in elided if index in old for answered in fmt.answered_ids(messages[index])}
    if answering:
        for index in old:
            hidden.update(key for call_id, key in calls_made(fmt, messages[index], keys[index]) if call_id in answering)
    return hidden & wanted
