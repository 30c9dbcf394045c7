"""The last resort: cut the middle out of the biggest pinned messages, visibly."""

from __future__ import annotations

from ._content import map_texts, texts_of
from ._draft import Draft, Entry, Request
from ._notices import cut_note
from ._shape import SYSTEM_ROLES

# Every retry keeps at least this much less text than the one before, so cutting ends.
_MIN_SHRINK = 1 / 16


def cut_to_fit(draft: Draft, request: Request) -> Draft:
    """
    Cut the largest remaining non-system messages until the draft fits, largest first.

    Only what survived dropping is left by now: the current question and the final step.
    Each cut keeps the head and the tail of the text and says in between how much it shows.
    """
    excess = draft.total - request.limits.budget
    replacements: dict[int, Entry] = {}
    for index, entry in sorted(_cuttable(draft), key=lambda pair: (-pair[1].tokens, -pair[0])):
        if excess <= 0:
            break
        smaller = _cut_entry(entry, entry.tokens - excess, request)
        excess -= entry.tokens - smaller.tokens
        replacements[index] = smaller
    if not replacements:
        return draft
    return draft.replaced(replacements, cut=tuple(sorted((*draft.cut, *replacements))))


def _cuttable(draft: Draft) -> list[tuple[int, Entry]]:
    elided = set(draft.elided)
    return [
        (entry.source, entry)
        for entry in draft.entries
        if entry.source is not None
        and entry.source not in elided
        and entry.message["role"] not in SYSTEM_ROLES
        and any(texts_of(entry.message.get("content")))
    ]


def _cut_entry(entry: Entry, allowed: int, request: Request) -> Entry:
    """The entry with its texts cut, largest first, until the message costs at most ``allowed``."""
    for text in sorted(texts_of(entry.message.get("content")), key=len, reverse=True):
        if entry.tokens <= allowed:
            break
        entry = _cut_text(entry, text, allowed, request)
    return entry


def _cut_text(entry: Entry, text: str, allowed: int, request: Request) -> Entry:
    """Keep the head and tail of ``text``, shrinking until the message fits or only the note is left."""
    text_tokens = request.counter.count_text(text)
    room = allowed - (entry.tokens - text_tokens)
    keep = int(len(text) * max(0, room) / max(1, text_tokens))
    while True:
        message = _with_text(entry, text, _head_and_tail(text, keep))
        tokens = request.counter.count_message(message)
        if tokens <= allowed or keep == 0:
            return Entry(entry.source, message, tokens)
        over_share = (tokens - allowed) / max(1, tokens)
        keep = max(0, min(keep - max(1, int(keep * _MIN_SHRINK)), int(keep * (1 - over_share))))


def _with_text(entry: Entry, old: str, new: str) -> dict[str, object]:
    return map_texts(entry.message, lambda text: new if text is old else text)


def _head_and_tail(text: str, keep: int) -> str:
    if keep >= len(text):
        return text
    head = keep - keep // 2
    tail = keep // 2
    note = cut_note(head, tail, len(text))
    return f"{text[:head]}\n{note}\n{text[len(text) - tail :]}" if tail else f"{text[:head]}\n{note}"
