"""
A conversation's last edits (held in LiteLLM's cache by the adapter), reapplied while they fit so they only grow: fitted
afresh, a moving learned ratio or a heavy final step would change them for a turn and re-prefill the prompt. Against
them, a request's re-reads: the calls it makes again for what they hid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple

from litellm_budget.core._canonical import content_key, digest_known
from litellm_budget.core._memo import MEMOS
from litellm_budget.core._report import BudgetReport, parse_ranges
from litellm_budget.core.budget._settings import BudgetSettings
from litellm_budget.core.formats._tool_calls import CallKey, calls_made
from litellm_budget.core.policies._drop import drop_units
from litellm_budget.core.policies._elide import elide_indices, threshold_base
from litellm_budget.core.policies._ledger import Draft, Entry, Ledger, SentEdits
from litellm_budget.core.policies._summary import summaries_wanted
from litellm_budget.core.policies._units import Unit
from litellm_budget.typing import Message


def history_digest(messages: Sequence[Message], count: int, key: int | None = None) -> str:
    """
    A digest of a request's first ``count`` messages, read at the last (``key``: its ``content_key``, if known) and
    remembered by it: requests read it several times. Cheap on purpose: a rewritten history changes its length or last
    message, and edits kept for a wrong history stay valid (whole units dropped, outputs elided), just not the best.
    """
    if count <= 0 or count > len(messages):
        return f"{count}:"
    last = messages[count - 1]
    return f"{count}:{digest_known(last, 24, content_key(last) if key is None else key)}"


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
    known = ledger.derived.conversation
    if known.continues is None:
        known.continues = continues_from(ledger.previous, ledger.messages, ledger.keys)
    return known.continues


def continues_from(sent: SentEdits | None, messages: Sequence[Message], keys: Sequence[int] | None = None) -> bool:
    """``continues`` without a ledger (the size gate has none): ``messages`` (``keys``: if read) extend ``sent``."""
    if sent is None or not (sent.dropped or sent.elided):
        return False
    key = keys[sent.messages - 1] if keys is not None and 0 < sent.messages <= len(keys) else None
    return sent.digest == history_digest(messages, sent.messages, key)


def kept_as_sent(ledger: Ledger, draft: Draft) -> bool:
    """Whether ``draft`` makes exactly the edits remembered for this conversation."""
    sent, edits = ledger.previous, (draft.dropped, draft.elided, draft.dropped_units)
    return sent is not None and continues(ledger) and edits == (sent.dropped, sent.elided, sent.dropped_units)


def kept_edits(ledger: Ledger) -> Draft:
    """The remembered edits (drops, marker, elisions) on this request, made once and then extended (``_KeptDraft``)."""
    sent = ledger.previous
    assert sent is not None  # noqa: S101 - callers check ``continues`` first
    if summaries_wanted(ledger):  # their marker depends on the summaries learned since
        return _kept_whole(ledger, sent)
    known = ledger.derived.conversation
    if known.kept is None:
        memo_key = _kept_key(ledger, sent)
        found: _KeptDraft | None = MEMOS.kept_drafts.get(*memo_key)
        kept = None if found is None else found.extended(ledger)
        if found is not None and kept is not None:
            known.kept, known.hidden = kept, found.hidden
        else:
            known.kept = _kept_whole(ledger, sent)
            MEMOS.kept_drafts.put(_KeptDraft.of(known.kept, ledger), *memo_key)
    return known.kept


def hidden_calls(ledger: Ledger) -> frozenset[CallKey]:
    """The calls whose outputs the remembered request hid (dropped, or answered by elided outputs), for ``rereads``."""
    known, sent = ledger.derived.conversation, ledger.previous
    if known.hidden is None:
        known.hidden = frozenset() if sent is None else _hidden_calls(ledger, sent)
    return known.hidden


def _hidden_calls(ledger: Ledger, sent: SentEdits) -> frozenset[CallKey]:
    fmt, messages, keys = ledger.format, ledger.messages, ledger.keys
    bound = min(sent.messages, len(messages))
    last_edited = max((index for index in (*sent.dropped, *sent.elided) if index < bound), default=None)
    if last_edited is None:
        return frozenset()
    read = range(last_edited + 1)
    hidden = {
        key for index in sent.dropped if index in read for _, key in calls_made(fmt, messages[index], keys[index])
    }
    answering = {answered for index in sent.elided if index in read for answered in fmt.answered_ids(messages[index])}
    if answering:
        for index in read:
            hidden.update(key for call_id, key in calls_made(fmt, messages[index], keys[index]) if call_id in answering)
    return frozenset(hidden)


def _kept_whole(ledger: Ledger, sent: SentEdits) -> Draft:
    draft = drop_units(Draft.of(ledger), ledger, _atoms_within(ledger, set(sent.dropped)), sent.dropped_units)
    return elide_indices(draft, ledger, sent.elided)


class _KeptDraft(NamedTuple):
    """
    The kept edits as applied to one request. A later request starting with the same messages (equal keys), under the
    settings, tools and limits the draft reads (``_kept_key``), gets the same draft, then what it appends untouched:

    - every edit lies before the remembered request's pinned final step, and what makes it (dropped atoms,
      the marker's digest, placeholders and their sizes) reads only those messages, settings and limits;
    - an appended message only opens units after those the edits name: a unit closes where the next
      user or assistant message opens one, and a tool result cannot open one (pairing);
    - a message left as it came is this request's own, at the same count: ``rows`` name it by index;
    - an edited one (the marker, a placeholder's message) is kept as a copy and sent as another, as a
      fresh fit would: what LiteLLM or a client does to a sent request's dicts never reaches the next.
    """

    keys: tuple[int, ...]
    #: Each entry of the draft: the source index of a message sent as it came, else the entry itself.
    rows: tuple[int | Entry, ...]
    settings: BudgetSettings
    edits: Draft
    #: The calls the edits hid (``hidden_calls``): they read only messages before the newest edit.
    hidden: frozenset[CallKey]

    @classmethod
    def of(cls, draft: Draft, ledger: Ledger) -> _KeptDraft:
        messages = ledger.messages
        rows = tuple(
            entry.source
            if entry.source is not None and entry.message is messages[entry.source]
            else entry._replace(message=_fresh(entry.message))  # its own: the draft's copy is sent
            for entry in draft.entries
        )
        edits = dataclasses.replace(draft, entries=())
        return cls(tuple(ledger.keys), rows, ledger.settings, edits, hidden_calls(ledger))

    def extended(self, ledger: Ledger) -> Draft | None:
        """This draft for ``ledger``'s request, or ``None`` when it does not begin with the same messages."""
        held = len(self.keys)
        keys = ledger.keys
        if len(keys) < held or tuple(keys[:held]) != self.keys or ledger.settings != self.settings:
            return None
        messages, counts = ledger.messages, ledger.counts
        entries = [
            row._replace(message=_fresh(row.message))
            if isinstance(row, Entry)
            else Entry(row, messages[row], counts[row])
            for row in self.rows
        ]
        entries.extend(map(Entry._make, zip(range(held, len(messages)), messages[held:], counts[held:], strict=True)))
        return dataclasses.replace(self.edits, entries=tuple(entries))


def _fresh(value: object) -> Any:
    """``value`` with new dicts and lists all the way down; texts and numbers are shared (they cannot change)."""
    if type(value) is dict:
        return {key: _fresh(item) for key, item in value.items()}
    if type(value) is list:
        return [_fresh(item) for item in value]
    return value


def _kept_key(ledger: Ledger, sent: SentEdits) -> tuple[Hashable, ...]:
    """
    What a kept draft reads besides the messages and settings. Of the limits, only what the marker and placeholders
    read: the budget moves with the learned ratio almost every request; the draft reads it only via ``threshold_base``.
    """
    limits = ledger.limits
    read = (limits.window, limits.reserve, limits.margin, threshold_base(ledger), ledger.tools_and_priming)
    edits = (sent.dropped, sent.dropped_units, sent.elided)
    return (ledger.format.name, ledger.counter.name, tuple(ledger.keys[:2]), edits, read, ledger.recall)


def with_state(policy: Callable[[Ledger], Draft]) -> Callable[[Ledger], Draft]:
    """
    ``policy`` honouring conversation state: the last edits while they fit, else the fresh fit if it
    keeps them all, else both combined, so drops and elisions only grow within a conversation.
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


def rereads(ledger: Ledger) -> int:
    """
    How many calls made since the conversation's last request are re-reads: the model calling a tool again, with
    the same arguments, for an output this gateway hid; the one quality figure a proxy sees. 0 without state.
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
    hidden = hidden_calls(ledger)
    return sum(1 for key in made if key in hidden)
