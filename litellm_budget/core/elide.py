"""Quantized elision: replace the text of old bulky tool and assistant outputs with a placeholder."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from litellm_budget.typing import Message

from .formats import ASSISTANT, TOOL
from .ledger import Draft, Elision, Entry, Ledger
from .notices import placeholder_for

_ELIDABLE_KINDS = (ASSISTANT, TOOL)


def elide_oldest(draft: Draft, ledger: Ledger, target: int) -> Draft:
    """
    Elide bulky outputs before the protected tail, oldest first, until ``target`` is saved.

    The message stays, with its tool calls and the id it answers, so every tool pair stays
    valid by construction; only its bulky text is swapped for a fixed placeholder.
    """
    return _elide_in(draft, ledger, range(_tail_start(ledger)), target)


def elide_tail(draft: Draft, ledger: Ledger, target: int) -> Draft:
    """
    Elide bulky outputs inside the protected tail, oldest first, until ``target`` is saved.

    Only ``auto`` does this, under pressure: the final step stays pinned, and an elision
    this close to the end keeps the cached prompt prefix, where a further drop would not.
    """
    return _elide_in(draft, ledger, range(_tail_start(ledger), ledger.final), target)


def elide_indices(draft: Draft, ledger: Ledger, indices: Iterable[int]) -> Draft:
    """Elide exactly these outputs (those still present and elidable): edits a conversation keeps."""
    return _elide_in(draft, ledger, sorted(indices), target=math.inf)


def _elide_in(draft: Draft, ledger: Ledger, indices: Iterable[int], target: float) -> Draft:
    if target <= 0:
        return draft
    present = {entry.source for entry in draft.entries}.difference(draft.elided)
    saved = 0
    replacements: dict[int, Entry] = {}
    for index in indices:
        if saved >= target:
            break
        if index in present and elidable(ledger, index):
            replacements[index] = elided_entry(ledger, index)
            saved += ledger.counts[index] - replacements[index].tokens
    if not replacements:
        return draft
    return draft.replaced(replacements, elided=tuple(sorted((*draft.elided, *replacements))))


def _tail_start(ledger: Ledger) -> int:
    return max(0, min(len(ledger.messages) - ledger.settings.protected_tail, ledger.final))


def elidable(ledger: Ledger, index: int) -> bool:
    """A bulky output that is not pinned."""
    return index not in ledger.layout.pinned and _elision(ledger).bulky[index]


def settled_sizes(ledger: Ledger) -> Sequence[int]:
    """Each message's tokens as it would settle: elided if it is a bulky output, else as it is."""
    return _elision(ledger).tokens


def _elision(ledger: Ledger) -> Elision:
    """Read every message once per request; an elided copy differs only in its bulky texts,
    so its count follows from the original's without building it."""
    found = ledger.derived.elision
    if found is None:
        threshold = ledger.settings.elide_min_tokens
        count_text = ledger.counter.count_text
        texts = ledger.format.texts
        placeholders = {kind: count_text(placeholder_for(kind)) for kind in _ELIDABLE_KINDS}
        found = Elision([], [])
        for message, kind, tokens in zip(ledger.messages, ledger.kinds, ledger.counts, strict=True):
            sizes = map(count_text, texts(message)) if kind in placeholders else ()
            bulky = [n for n in sizes if n > threshold]
            found.bulky.append(bool(bulky))
            found.tokens.append(tokens - sum(bulky) + placeholders[kind] * len(bulky) if bulky else tokens)
        ledger.derived.elision = found
    return found


def elided_entry(ledger: Ledger, index: int) -> Entry:
    """The message at ``index`` with every bulky text replaced by its placeholder."""
    entry = ledger.derived.elided.get(index)
    if entry is None:
        entry = Entry(index, _elided_copy(ledger, index), _elision(ledger).tokens[index])
        ledger.derived.elided[index] = entry
    return entry


def _elided_copy(ledger: Ledger, index: int) -> Message:
    placeholder = placeholder_for(ledger.kinds[index])
    count_text, threshold = ledger.counter.count_text, ledger.settings.elide_min_tokens
    return ledger.format.map_texts(
        ledger.messages[index], lambda text: placeholder if count_text(text) > threshold else text
    )
