"""
Re-reads: the model calling a tool again, with the same arguments, for an output this gateway hid.

It is the one quality figure a proxy can see in production. A model that lost what it needs
asks for it again: when the newest step of a conversation repeats a call whose output the
conversation's last request had elided, or whose step it had dropped, that call is a re-read.
"""

from __future__ import annotations

from collections.abc import Sequence

from litellm_budget.core.formats._tool_calls import CallKey, calls_made
from litellm_budget.core.policies._ledger import Ledger
from litellm_budget.core.state._conversation import continues


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
    hidden = _hidden_calls(ledger, sent.messages, sent.dropped, sent.elided)
    return sum(1 for key in made if key in hidden)


def _hidden_calls(ledger: Ledger, count: int, dropped: Sequence[int], elided: Sequence[int]) -> frozenset[CallKey]:
    """
    The calls whose outputs the first ``count`` messages did not send: those of dropped messages,
    and those elided outputs answer, made before them. Read afresh each request: each message's
    calls are remembered (``calls_made``), and a memo of the whole showed no gain in the replay.
    """
    fmt, messages, keys = ledger.format, ledger.messages, ledger.keys
    bound = min(count, len(messages))
    last_edited = max((index for index in (*dropped, *elided) if index < bound), default=None)
    if last_edited is None:
        return frozenset()
    read = range(last_edited + 1)
    hidden = {key for index in dropped if index in read for _, key in calls_made(fmt, messages[index], keys[index])}
    answering = {answered for index in elided if index in read for answered in fmt.answered_ids(messages[index])}
    if answering:
        for index in read:
            hidden.update(key for call_id, key in calls_made(fmt, messages[index], keys[index]) if call_id in answering)
    return frozenset(hidden)
