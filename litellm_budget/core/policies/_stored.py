"""
What a fit stores for recall: the texts its placeholders and the marker's digest name by handle
(``wording/_recall.py`` makes the handles), read off the ledger and the draft that was sent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType

from litellm_budget.core.policies._ledger import Draft, Ledger
from litellm_budget.core.wording._digest import outputs_of, steps_of
from litellm_budget.core.wording._recall import HANDLE, NOTHING_STORED, joined_texts
from litellm_budget.typing import Message


def stored_items(ledger: Ledger, draft: Draft, sent: Sequence[Message]) -> Mapping[str, str]:
    """
    What the sent request names by handle, by handle: the original texts of its elided outputs
    and of its dropped steps that a placeholder or the marker's digest names.
    """
    scope = ledger.recall
    if scope is None or not (draft.elided or draft.dropped):
        return NOTHING_STORED
    originals = {id(message) for message in ledger.messages}
    named = {
        handle
        for message in sent
        if id(message) not in originals
        for text in ledger.format.texts(message)
        for handle in HANDLE.findall(text)
    }
    found: dict[str, str] = {}
    for content in _candidates(ledger, draft):
        handle = scope.handle(content)
        if handle in named:
            found[handle] = content
    return MappingProxyType(found)


def block_text(ledger: Ledger, gone: Sequence[int]) -> str:
    """What a dropped block is stored as: its messages' texts, one per line, oldest first."""
    fmt, messages = ledger.format, ledger.messages
    return joined_texts([text for index in gone for text in fmt.texts(messages[index])])


def block_handle(ledger: Ledger, gone: Sequence[int]) -> str | None:
    """
    The handle a marker names for its whole dropped block (older steps its digest does not list
    included); ``None`` without a scope. Made once per block a request: a policy prices several.
    """
    if ledger.recall is None or not gone:
        return None
    key = tuple(gone)
    found = ledger.derived.markers.block_handles.get(key)
    if found is None:
        found = ledger.derived.markers.block_handles[key] = ledger.recall.handle(block_text(ledger, gone))
    return found


def _candidates(ledger: Ledger, draft: Draft) -> Iterator[str]:
    """Every text a placeholder or a digest line of ``draft`` may stand for."""
    fmt, messages = ledger.format, ledger.messages
    for entry in draft.entries:
        if entry.source in draft.elided:
            before, after = fmt.texts(messages[entry.source]), fmt.texts(entry.message)
            yield from (text for text, placeholder in zip(before, after, strict=False) if text != placeholder)
    if draft.dropped:
        yield block_text(ledger, draft.dropped)
    gone = [messages[index] for index in draft.dropped]
    yield from map(joined_texts, outputs_of(fmt, gone).values())
    kinds = [ledger.kinds[index] for index in draft.dropped]
    for group in steps_of(kinds):
        yield joined_texts([text for index in group for text in fmt.texts(gone[index])])
