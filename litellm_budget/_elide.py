"""Quantized elision: replace the text of old bulky tool and assistant outputs with a placeholder."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
    return index not in request.layout.pinned and bulky_output(request, index)


def bulky_output(request: Request, index: int) -> bool:
    """A tool or assistant message with a text above the threshold, wherever it stands."""
    key = ("bulky", index)
    if key not in request.memo:
        message = request.messages[index]
        request.memo[key] = message["role"] in _ELIDABLE_ROLES and any(
            _is_bulky(text, request) for text in texts_of(message.get("content"))
        )
    return bool(request.memo[key])


def elided_tokens(request: Request, index: int) -> int:
    """What the message at ``index`` would cost once elided, without building the copy."""
    if not bulky_output(request, index):
        return request.counts[index]
    key = ("elided_tokens", index)
    if key not in request.memo:
        # The copy differs only in the replaced texts, so its count follows from the original's.
        message = request.messages[index]
        placeholder = request.counter.count_text(placeholder_for(message["role"]))
        threshold = request.settings.elide_min_tokens
        bulky = [n for text in texts_of(message.get("content")) if (n := request.counter.count_text(text)) > threshold]
        request.memo[key] = request.counts[index] - sum(bulky) + placeholder * len(bulky)
    tokens: int = request.memo[key]
    return tokens


def elided_entry(request: Request, index: int) -> Entry:
    """The message at ``index`` with every bulky text replaced by its placeholder."""
    key = ("elided", index)
    if key not in request.memo:
        copy = _elided_copy(request.messages[index], request)
        request.memo[key] = Entry(index, copy, elided_tokens(request, index))
    entry: Entry = request.memo[key]
    return entry


def _elided_copy(message: Any, request: Request) -> dict[str, Any]:
    placeholder = placeholder_for(message["role"])
    return map_texts(message, lambda text: placeholder if _is_bulky(text, request) else text)


def _is_bulky(text: str, request: Request) -> bool:
    return request.counter.count_text(text) > request.settings.elide_min_tokens
