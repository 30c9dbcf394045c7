"""
Recall handles: what a fit elided or dropped, named in its placeholder or digest line by a short
handle that the ``litellm_budget_recall`` tool serves back (the adapter stores and serves it).

A handle is a keyed hash of the content under its scope's salt (the adapter derives the salt from
a secret, the conversation and the API key): the same content reads the same bytes in every
request of the conversation, so the cached prompt prefix stays put, and a handle names nothing
outside its scope. Without a scope nothing is named, and a fit is byte for byte what it was.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

from litellm_budget.core.wording._digest import outputs_of, steps_of
from litellm_budget.typing import Message

if TYPE_CHECKING:
    from litellm_budget.core.policies._ledger import Draft, Ledger

#: The tool's name, in every format.
TOOL_NAME = "litellm_budget_recall"
#: A handle: ``r-`` and this many hex digits (32 bits: a conversation's handles do not collide).
HANDLE_HEX = 8
HANDLE = re.compile(r"\brecall (r-[0-9a-f]{%d})\b" % HANDLE_HEX)  # noqa: UP031 - a regex's braces
NOTHING_STORED: Mapping[str, str] = MappingProxyType({})


@dataclasses.dataclass(frozen=True, slots=True)
class RecallScope:
    """The scope handles are made in: one conversation of one API key (``salt``: at most 64 bytes)."""

    salt: bytes

    def handle(self, content: str) -> str:
        """
        The handle of ``content`` in this scope: made afresh (a keyed hash), as the placeholders and
        digest lines that name it are remembered whole.
        """
        data = content.encode("utf-8", "surrogatepass")
        return "r-" + hashlib.blake2b(data, key=self.salt, digest_size=HANDLE_HEX // 2).hexdigest()

    def named_placeholder(self, placeholder: str, content: str) -> str:
        """An elided text's placeholder, saying under which handle its text is stored."""
        return f"{placeholder[:-1]} Stored as recall {self.handle(content)}.]"

    def named_line(self, line: str, texts: Sequence[str], shown: int) -> str:
        """A dropped step's digest line, with the handle of its ``texts`` where it quotes less than them."""
        content = joined_texts(texts)
        return line if len(content) <= shown else f"{line} [recall {self.handle(content)}]"


def joined_texts(texts: Sequence[str]) -> str:
    """What one digest line stands for, as it is stored: a call's outputs, or a step's texts, one per line."""
    return "\n".join(texts).strip()


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
    found = ledger.derived.block_handles.get(key)
    if found is None:
        found = ledger.derived.block_handles[key] = ledger.recall.handle(block_text(ledger, gone))
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
