"""The last resort: cut the middle out of the biggest pinned messages, visibly."""

from __future__ import annotations

from collections.abc import Sequence

from litellm_budget.core.formats import SYSTEM, MessageFormat
from litellm_budget.core.policies._ledger import Draft, Entry, Ledger
from litellm_budget.core.wording._notices import cut_note
from litellm_budget.typing import Message

# Every retry keeps at least this much less text than the one before, so cutting ends.
_MIN_SHRINK = 1 / 16


def cut_to_fit(draft: Draft, ledger: Ledger) -> Draft:
    """Cut the middle out of the largest non-system messages left (the question, the final step) to fit."""
    excess = draft.total - ledger.limits.budget
    replacements: dict[int, Entry] = {}
    for index, entry in sorted(_cuttable(draft, ledger), key=lambda pair: (-pair[1].tokens, -pair[0])):
        if excess <= 0:
            break
        smaller = _cut_entry(entry, entry.tokens - excess, ledger)
        excess -= entry.tokens - smaller.tokens
        replacements[index] = smaller
    if not replacements:
        return draft
    return draft.replaced(replacements, cut=tuple(sorted((*draft.cut, *replacements))))


def _cuttable(draft: Draft, ledger: Ledger) -> list[tuple[int, Entry]]:
    elided = set(draft.elided)
    return [
        (entry.source, entry)
        for entry in draft.entries
        if entry.source is not None
        and entry.source not in elided
        and ledger.kinds[entry.source] != SYSTEM
        and any(ledger.format.texts(entry.message))
    ]


def _cut_entry(entry: Entry, allowed: int, ledger: Ledger) -> Entry:
    """
    The entry with the middle of its text cut out, to ``allowed`` tokens or the note alone; its parts are
    cut as one, so a note never costs more than the short parts it would stand for.
    """
    texts = list(ledger.format.texts(entry.message))
    length = sum(map(len, texts))
    text_tokens = sum(map(ledger.counter.count_text, texts))
    room = allowed - (entry.tokens - text_tokens)
    keep = int(length * max(0, room) / max(1, text_tokens))
    while True:
        message = with_texts(ledger.format, entry.message, _head_and_tail(texts, keep))
        tokens = ledger.count(message)
        if tokens <= allowed or keep == 0:
            return Entry(entry.source, message, tokens)
        over_share = (tokens - allowed) / max(1, tokens)
        keep = max(0, min(keep - max(1, int(keep * _MIN_SHRINK)), int(keep * (1 - over_share))))


def with_texts(fmt: MessageFormat, message: Message, texts: Sequence[str]) -> Message:
    """A copy of ``message`` whose texts, in order, are ``texts`` (see ``MessageFormat.map_texts``)."""
    replacements = iter(texts)
    return fmt.map_texts(message, lambda _: next(replacements))


def _head_and_tail(texts: Sequence[str], keep: int) -> list[str]:
    """``texts`` read as one: the first and last ``keep // 2`` characters, the note where the gap starts."""
    length = sum(map(len, texts))
    if keep >= length:
        return list(texts)
    head, tail = keep - keep // 2, keep // 2
    note = cut_note(head, tail, length)
    tail_start = length - tail
    kept = []
    start = 0
    for text in texts:
        end = start + len(text)
        shown_head = text[: max(0, head - start)]
        shown_tail = text[max(0, tail_start - start) :] if end > tail_start else ""
        if start <= head < end:
            kept.append(f"{shown_head}\n{note}\n{shown_tail}" if shown_tail else f"{shown_head}\n{note}")
        else:
            kept.append(shown_head + shown_tail)
        start = end
    return kept
