"""
Conversation state: the edits sent last for a conversation, so the next request keeps them.

Stateless, every request is fitted afresh, and quantization keeps the edits still for most
turns; but a learned ratio that moves, or a heavy final step that needs a block dropped for
one turn only, changes them and re-prefills the whole prompt. With the edits of the last
request remembered (the adapter keeps them per conversation, in LiteLLM's cache), edits stay
put exactly while they fit and only ever grow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from litellm_budget.typing import Message

from .canonical import content_key, digest
from .drop import drop_units
from .elide import elide_indices
from .ledger import Draft, Ledger, SentEdits
from .memo import BoundedLRU, remembered
from .report import BudgetReport, parse_ranges
from .units import Unit

#: Digests of the last message of a request, by its content (24 hex digits each).
DIGEST_ENTRIES = 16_384
_DIGESTS: BoundedLRU[str] = remembered(DIGEST_ENTRIES)


def history_digest(messages: Sequence[Message], count: int) -> str:
    """
    A digest of a request's first ``count`` messages, read at the last of them.

    Cheap on purpose (one message, not the whole history): a client that rewrites its
    history changes its length or its last message, and edits kept for a wrong history are
    still valid ones (whole units dropped, outputs elided), only not the best. Each request
    reads it several times (state, re-reads, the state it leaves): remembered by content.
    """
    if count <= 0 or count > len(messages):
        return f"{count}:"
    last = messages[count - 1]
    key = content_key(last)
    found = _DIGESTS.get(key)
    if found is None:
        found = digest(last, 24)
        _DIGESTS.put(key, found)
    return f"{count}:{found}"


def edits_sent(messages: Sequence[Message], report: BudgetReport) -> SentEdits | None:
    """The state to remember once the request ``messages`` (in the core's list) was sent as ``report`` says."""
    if report.action not in {"trimmed", "passthrough"}:
        return None
    count = len(messages)
    return SentEdits(
        messages=count,
        digest=history_digest(messages, count),
        dropped=tuple(parse_ranges(report.dropped_at)),
        dropped_units=report.dropped_units,
        elided=tuple(parse_ranges(report.elided_at)),
    )


def continues(ledger: Ledger) -> bool:
    """Whether the request is the remembered one with messages appended, and that one was edited."""
    return continues_from(ledger.previous, ledger.messages)


def continues_from(sent: SentEdits | None, messages: Sequence[Message]) -> bool:
    """``continues`` without a ledger (the size gate has none): ``messages`` extend the edited ``sent``."""
    return (
        sent is not None
        and bool(sent.dropped or sent.elided)
        and sent.digest == history_digest(messages, sent.messages)
    )


def kept_as_sent(ledger: Ledger, draft: Draft) -> bool:
    """Whether ``draft`` makes exactly the edits remembered for this conversation."""
    sent = ledger.previous
    return (
        sent is not None
        and continues(ledger)
        and (draft.dropped, draft.elided, draft.dropped_units) == (sent.dropped, sent.elided, sent.dropped_units)
    )


def kept_edits(ledger: Ledger) -> Draft:
    """The remembered edits applied to this request: the same drops, marker and elisions."""
    sent = ledger.previous
    assert sent is not None  # noqa: S101 - callers check ``continues`` first
    draft = drop_units(Draft.of(ledger), ledger, _atoms_within(ledger, set(sent.dropped)), sent.dropped_units)
    return elide_indices(draft, ledger, sent.elided)


def with_state(policy: Callable[[Ledger], Draft]) -> Callable[[Ledger], Draft]:
    """
    ``policy`` made to honour conversation state: the last edits while they fit; when they
    no longer do, the fresh fit if it keeps them all, else both combined, so drops and
    elisions only grow within a conversation.
    """

    def stateful(ledger: Ledger) -> Draft:
        if not continues(ledger):
            return policy(ledger)
        kept = kept_edits(ledger)
        if kept.total <= ledger.limits.budget:
            return kept
        fresh = policy(ledger)
        if set(fresh.dropped) >= set(kept.dropped) and set(fresh.elided) >= set(kept.elided).difference(fresh.dropped):
            return fresh
        merged = _merged(ledger, kept, fresh)
        return merged if merged.total <= ledger.limits.budget else fresh

    stateful.__doc__ = policy.__doc__
    return stateful


def _merged(ledger: Ledger, kept: Draft, fresh: Draft) -> Draft:
    dropped = set(kept.dropped) | set(fresh.dropped)
    atoms = _atoms_within(ledger, dropped)
    # The marker counts what was dropped before as it said then, plus each new atom.
    counted = kept.dropped_units + sum(1 for atom in atoms if not set(kept.dropped).issuperset(atom))
    draft = drop_units(Draft.of(ledger), ledger, atoms, counted)
    return elide_indices(draft, ledger, sorted((set(kept.elided) | set(fresh.elided)) - dropped))


def _atoms_within(ledger: Ledger, dropped: set[int]) -> list[Unit]:
    """The smallest droppable units (steps, and the task's user message) inside ``dropped``."""
    return [atom for atom in ledger.layout.atoms if dropped.issuperset(atom)]
