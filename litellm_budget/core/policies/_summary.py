"""
Summaries of dropped blocks (a step, not a policy), named by their digest: a known one stands where the
marker would, else the block is reported as ``summary_needed``. Drops are priced with the marker, never by
which summaries are known, so a block stays the same once its summary arrives and sends the same bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from litellm_budget.core._canonical import as_json
from litellm_budget.core.formats import ASSISTANT, USER, MessageFormat
from litellm_budget.core.policies._ledger import Draft, Entry, Ledger, Policy
from litellm_budget.core.wording._notices import summary_note
from litellm_budget.typing import Message

#: Hex characters of a block digest: plenty against collisions, short enough for a log line.
DIGEST_CHARS = 32
#: Summaries switched off for one ledger: markers only, and no summary asked for.
MARKERS_ONLY: Mapping[str, str] = MappingProxyType({})
#: A block's leading sub-blocks offered for an earlier summary, longest first (one cache read).
MAX_LEADING = 256
#: Where a summary is shortened to fit its allowance.
_SHORTENED = " [...]"
_UNIT_OPENERS = frozenset({USER, ASSISTANT})


def summaries_wanted(ledger: Ledger) -> bool:
    """A summary model is configured, or the policy is ``summarize`` (which says so when none is)."""
    if ledger.summaries is MARKERS_ONLY:
        return False
    return ledger.settings.summary_model is not None or ledger.settings.policy == "summarize"


def block_digest(messages: Iterable[Message]) -> str:
    """The digest that names a dropped block: sha256 of its messages' canonical JSON list as they came, truncated."""
    hasher = hashlib.sha256(b"[")
    for count, message in enumerate(messages):
        hasher.update(b"," + as_json(message).encode() if count else as_json(message).encode())
    return _finished(hasher)


def leading_digests(messages: Sequence[Message], kinds: Sequence[str], indices: Sequence[int]) -> list[tuple[int, str]]:
    """
    The block's leading sub-blocks that end where a unit ends, longest first, as (messages, digest): a block
    that extends an earlier one (the next quantum of drops) starts with it, so its longest known summary is extended.
    """
    block = [messages[index] for index in indices]
    ends = {count for count in range(1, len(indices)) if kinds[indices[count]] in _UNIT_OPENERS}
    return list(_prefix_digests(block, ends))[::-1][:MAX_LEADING]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SummaryJob:
    """What a summarizer needs for one dropped block: its digest, messages and leading sub-blocks."""

    digest: str
    messages: tuple[Message, ...]
    leading: tuple[tuple[int, str], ...]


def summary_job(messages: Sequence[Message], fmt: MessageFormat, dropped: Sequence[int]) -> SummaryJob:
    """The job for the block a report names: ``messages`` as ``fit_request`` took, ``dropped`` its ``dropped_at``."""
    indices = sorted(dropped)
    block = tuple(messages[index] for index in indices)
    leading = leading_digests(messages, fmt.kinds(messages), indices)
    return SummaryJob(digest=block_digest(block), messages=block, leading=tuple(leading))


def summary_allowance(ledger: Ledger, messages: int, units: int) -> int:
    """The most a summary's notice may cost: its framing plus ``summary_max_tokens``."""
    frame = ledger.format.notice(summary_note("", messages, units), ledger.settings.marker_placement)
    return ledger.count(frame) + ledger.settings.summary_max_tokens


def summary_entry(ledger: Ledger, gone: Sequence[int], units: int) -> tuple[Entry | None, str]:
    """
    The notice holding the known summary of the block ``gone`` (``None`` if none), and its digest. A
    summary over its allowance is shortened, always the same way, to the room it was asked for.
    """
    digest = block_digest(ledger.messages[index] for index in gone)
    text = ledger.summaries.get(digest)
    if text is None:
        return None, digest
    allowance = summary_allowance(ledger, len(gone), units)
    frame = allowance - ledger.settings.summary_max_tokens
    keep = len(text)
    while True:
        shown = text if keep == len(text) else text[:keep].rstrip() + _SHORTENED
        message = ledger.format.notice(summary_note(shown, len(gone), units), ledger.settings.marker_placement)
        tokens = ledger.count(message)
        if tokens <= allowance or keep == 0:
            return Entry(None, message, tokens), digest
        scaled = int(keep * ledger.settings.summary_max_tokens / max(1, tokens - frame))
        keep = max(0, min(scaled, keep - max(1, keep // 16)))


def with_summaries(policy: Policy) -> Policy:
    """``policy`` whose summaries never cost a cut or a rejection: the draft with the marker is taken if it fits."""

    def summarizing(ledger: Ledger) -> Draft:
        draft = policy(ledger)
        budget = ledger.limits.budget
        if draft.summary is None or (draft.total <= budget and not draft.cut):
            return draft
        plain = policy(dataclasses.replace(ledger, summaries=MARKERS_ONLY))
        return plain if plain.total <= budget else draft

    summarizing.__doc__ = policy.__doc__
    return summarizing


def summary_fields(ledger: Ledger, draft: Draft) -> dict[str, Any]:
    """
    The report's summary fields that the fit knows (the adapter adds its calls and their cost). A summary
    is asked for only where one of the most allowed size fits: a heavy final step may leave room for the marker alone.
    """
    needed, failed = draft.summary_needed, None
    notice = sum(entry.tokens for entry in draft.entries if entry.source is None)
    if needed is not None:
        room = ledger.limits.budget - (draft.total - notice)
        if room < summary_allowance(ledger, len(draft.dropped), draft.dropped_units):
            needed, failed = None, "no room for a summary"
        elif ledger.settings.summary_model is None:
            failed = "summary_model not configured"
    elif draft.dropped and draft.summary is None and summaries_wanted(ledger):
        failed = "summary does not fit"
    return {
        "summarized": draft.summary is not None,
        "summary_needed": needed,
        "summary_tokens": notice if draft.summary is not None else 0,
        "summary_failed": failed,
    }


def _prefix_digests(messages: Iterable[Message], ends: Container[int]) -> Iterator[tuple[int, str]]:
    """One pass over ``messages``: the digest of each leading run whose length is in ``ends``."""
    hasher = hashlib.sha256(b"[")
    for count, message in enumerate(messages, start=1):
        hasher.update(b"," + as_json(message).encode() if count > 1 else as_json(message).encode())
        if count in ends:
            yield count, _finished(hasher.copy())


def _finished(hasher: hashlib._Hash) -> str:
    hasher.update(b"]")
    return hasher.hexdigest()[:DIGEST_CHARS]
