"""
Re-reads: the model calling a tool again, with the same arguments, for an output this gateway hid
(elided or dropped): the one quality figure a proxy can see in production.
"""

from __future__ import annotations

from litellm_budget.core.formats._tool_calls import calls_made
from litellm_budget.core.policies._ledger import Ledger
from litellm_budget.core.state._conversation import continues, hidden_calls


def rereads(ledger: Ledger) -> int:
    """How many calls made since the conversation's last request are re-reads; 0 without conversation state."""
    sent = ledger.previous
    if sent is None or not continues(ledger):
        return 0
    fmt, messages, keys = ledger.format, ledger.messages, ledger.keys
    made = [
        key for index in range(sent.messages, len(messages)) for _, key in calls_made(fmt, messages[index], keys[index])
    ]
    if not made:
        return 0
    hidden = hidden_calls(ledger)
    return sum(1 for key in made if key in hidden)
