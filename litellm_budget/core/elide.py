"""Quantized elision: replace the text of old bulky tool and assistant outputs with a placeholder."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ._content import map_texts, texts_of
from ._draft import Draft, Entry, Request
from ._notices import placeholder_for

_ELIDABLE_ROLES = frozenset({"assistant", "tool", "function"})


def fit_elide(request: Request) -> Draft:
    """The ``elide`` policy: elide oldest first until the quantized target is saved."""
    draft = Draft.of(request)
    return elide_oldest(draft, request, request.limits.target(draft.total))


def elide_oldest(draft: Draft, request: Request, target: int) -> Draft:
    """
    Elide bulky outputs before the protected tail, oldest first, until ``target`` is saved.

    The message stays, with its ``tool_calls`` and ``tool_call_id``, so every tool pair
    stays valid by construction; only its bulky text is swapped for a fixed placeholder.
    """
    return _elide_in(draft, request, range(_tail_start(request)), target)


def elide_tail(draft: Draft, request: Request, target: int) -> Draft:
    """
    Elide bulky outputs inside the protected tail, oldest first, until ``target`` is saved.

    Only ``auto`` does this, under pressure: the final step stays pinned, and an elision
    this close to the end keeps the cached prompt prefix, where a further drop would not.
    """
    return _elide_in(draft, request, range(_tail_start(request), request.final), target)


def _elide_in(draft: Draft, request: Request, indices: Iterable[int], target: int) -> Draft:
    if target <= 0:
        return draft
    present = {entry.source for entry in draft.entries}.difference(draft.elided)
    saved = 0
    replacements: dict[int, Entry] = {}
    for index in indices:
        if saved >= target:
            break
        if index in present and elidable(request, index):
            replacements[index] = elided_entry(request, index)
            saved += request.counts[index] - replacements[index].tokens
    if not replacements:
        return draft
    return draft.replaced(replacements, elided=tuple(sorted((*draft.elided, *replacements))))


def _tail_start(request: Request) -> int:
    return max(0, min(len(request.messages) - request.settings.protected_tail, request.final))


def elidable(request: Request, index: int) -> bool:
    """A bulky output that is not pinned."""
    return index not in request.layout.pinned and _elision(request).bulky[index]


def settled_sizes(request: Request) -> Sequence[int]:
    """Each message's tokens as it would settle: elided if it is a bulky output, else as it is."""
    return _elision(request).tokens


class _Elision(NamedTuple):
    """Per message of a request: is it a bulky output, and what would it cost once elided."""

    bulky: list[bool]
    tokens: list[int]


def _elision(request: Request) -> _Elision:
    """Read every message once per request; an elided copy differs only in its bulky texts,
    so its count follows from the original's without building it."""
    found: _Elision | None = request.memo.get("elision")
    if found is None:
        threshold = request.settings.elide_min_tokens
        count_text = request.counter.count_text
        placeholders = {role: count_text(placeholder_for(role)) for role in _ELIDABLE_ROLES}
        found = _Elision([], [])
        for message, tokens in zip(request.messages, request.counts, strict=True):
            role = message["role"]
            sizes = map(count_text, texts_of(message.get("content"))) if role in _ELIDABLE_ROLES else ()
            bulky = [n for n in sizes if n > threshold]
            found.bulky.append(bool(bulky))
            found.tokens.append(tokens - sum(bulky) + placeholders[role] * len(bulky) if bulky else tokens)
        request.memo["elision"] = found
    return found


def elided_entry(request: Request, index: int) -> Entry:
    """The message at ``index`` with every bulky text replaced by its placeholder."""
    key = ("elided", index)
    if key not in request.memo:
        copy = _elided_copy(request.messages[index], request)
        request.memo[key] = Entry(index, copy, _elision(request).tokens[index])
    entry: Entry = request.memo[key]
    return entry


def _elided_copy(message: Any, request: Request) -> dict[str, Any]:
    placeholder = placeholder_for(message["role"])
    return map_texts(message, lambda text: placeholder if _is_bulky(text, request) else text)


def _is_bulky(text: str, request: Request) -> bool:
    return request.counter.count_text(text) > request.settings.elide_min_tokens
