"""Drop whole units, oldest first and in quantized blocks, and say so in one marker."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from litellm_budget.core.policies._ledger import Draft, Entry, Ledger
from litellm_budget.core.policies._stored import block_handle
from litellm_budget.core.policies._summary import summaries_wanted, summary_entry
from litellm_budget.core.policies._units import Unit
from litellm_budget.core.wording._marker_digest import marker_digest
from litellm_budget.core.wording._notices import omitted_note

#: Shortening tries before the digest goes: the first nearly always fits, the joins cost a few tokens.
_ROOM_TRIES = 3


def drop_oldest(draft: Draft, ledger: Ledger, units: Sequence[Unit], target: int) -> Draft:
    """Drop the oldest ``units`` until their current tokens, less the marker, reach ``target``."""
    tokens = {entry.source: entry.tokens for entry in draft.entries}
    count = units_worth(units, lambda index: tokens[index], target, ledger)
    return drop_units(draft, ledger, units[:count])


def units_worth(units: Sequence[Unit], size: Callable[[int], int], target: int, ledger: Ledger) -> int:
    """How many of the oldest ``units`` must go to save ``target`` tokens, the marker paid for."""
    if target <= 0:
        return 0
    saved = 0
    gone: list[int] = []
    for count, unit in enumerate(units, start=1):
        saved += sum(size(index) for index in unit)
        gone.extend(unit)
        # The marker always costs something, so it is only priced once the target is in reach.
        if saved >= target and saved - marker_entry(ledger, sorted(gone), count).tokens >= target:
            return count
    return len(units)


def drop_units(draft: Draft, ledger: Ledger, units: Sequence[Unit], counted: int | None = None) -> Draft:
    """
    Remove ``units`` (whole, so no call loses its results) and put one marker at the oldest gap, so all before
    it stays a stable prompt prefix; it says ``counted`` units (default: how many), so a kept drop reads the same.
    """
    gone = {index for unit in units for index in unit}
    if not gone:
        return draft
    at = min(gone)
    counted = len(units) if counted is None else counted
    marker = marker_entry(ledger, sorted(gone), counted)
    summary, digest = summary_entry(ledger, sorted(gone), counted) if summaries_wanted(ledger) else (None, None)
    entries: list[Entry] = []
    for entry in draft.entries:
        if entry.source == at:
            entries.append(marker if summary is None else summary)
        if entry.source not in gone:
            entries.append(entry)
    return dataclasses.replace(
        draft,
        entries=tuple(entries),
        elided=tuple(index for index in draft.elided if index not in gone),
        dropped=tuple(sorted(gone)),
        dropped_units=counted,
        marker=True,
        summary=None if summary is None else digest,
        summary_needed=digest if summary is None else None,
    )


def marker_entry(
    ledger: Ledger, gone: Sequence[int], units: int, *, digest: bool = True, room: int | None = None
) -> Entry:
    """The marker for the dropped messages ``gone`` (``units`` of them), its digest within ``room`` where given."""
    listed = marker_digest(ledger, gone, room) if digest else ([], 0)
    note = omitted_note(len(gone), units, *listed, stored=block_handle(ledger, gone))
    marker = ledger.format.notice(note, ledger.settings.marker_placement)
    return Entry(None, marker, ledger.count(marker))


def digest_to_fit(draft: Draft, ledger: Ledger) -> Draft:
    """Shorten the marker's digest (oldest lines first) or take it out, sparing the question and final step a cut."""
    if not draft.marker or draft.summary is not None:
        return draft
    fitted = _with_marker(draft, marker_entry(ledger, draft.dropped, draft.dropped_units, digest=False))
    room = ledger.limits.budget - fitted.total
    for _ in range(_ROOM_TRIES):
        if room <= 0:
            break
        shortened = _with_marker(draft, marker_entry(ledger, draft.dropped, draft.dropped_units, room=room))
        over = shortened.total - ledger.limits.budget
        if over <= 0:
            return shortened
        # The marker's text joins its lines, so it may count a little above their sum.
        room -= over
    return fitted


def _with_marker(draft: Draft, marker: Entry) -> Draft:
    return dataclasses.replace(draft, entries=tuple(marker if e.source is None else e for e in draft.entries))
