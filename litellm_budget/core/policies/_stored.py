"""What a fit stores for recall: the texts its placeholders and the marker's digest name by handle."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType

from litellm_budget.core.policies._ledger import Draft, Ledger
from litellm_budget.core.wording._digest import outputs_of, steps_of
from litellm_budget.core.wording._recall import HANDLE, NOTHING_STORED, joined_texts
from litellm_budget.typing import Message


def stored_items(ledger: Ledger, draft: Draft, sent: Sequence[Message]) -> Mapping[str, str]:
    """By handle, the original texts of the elided outputs and dropped steps the sent request names."""
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
    handles = ((scope.handle(content), content) for content in _candidates(ledger, draft))
    return MappingProxyType({handle: content for handle, content in handles if handle in named})


def block_text(ledger: Ledger, gone: Sequence[int]) -> str:
    """What a dropped block is stored as: its messages' texts, one per line, oldest first."""
    return joined_texts([text for index in gone for text in ledger.format.texts(ledger.messages[index])])


def block_handle(ledger: Ledger, gone: Sequence[int]) -> str | None:
    """
    The handle a marker names for its whole dropped block (the older steps its digest leaves out too),
    ``None`` without a scope; made once per block a request, as a policy prices several markers.
    """
    if ledger.recall is None or not gone:
        return None
    handles, key = ledger.derived.markers.block_handles, tuple(gone)
    found = handles.get(key)
    if found is None:
        found = handles[key] = ledger.recall.handle(block_text(ledger, gone))
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
    for group in steps_of([ledger.kinds[index] for index in draft.dropped]):
        yield joined_texts([text for index in group for text in fmt.texts(gone[index])])
