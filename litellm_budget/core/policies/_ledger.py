"""The ledger a policy reads (what is in the window, in tokens) and the drafts it makes of it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from litellm_budget.core.budget._limits import Limits
from litellm_budget.core.budget._settings import BudgetSettings
from litellm_budget.core.formats import MessageFormat
from litellm_budget.core.formats._message_keys import message_keys
from litellm_budget.core.formats._protocol import TokenCounter
from litellm_budget.core.policies._units import Layout, layout_of_kinds
from litellm_budget.core.wording._names import InText, StepNames
from litellm_budget.typing import Message

if TYPE_CHECKING:
    from litellm_budget.core.formats._tool_calls import CallKey
    from litellm_budget.core.wording._recall import RecallScope

#: An atom's digest lines read alone, the ids of the calls it makes and answers, and its actions' names.
AtomLines = tuple[tuple[str, ...], frozenset[str], frozenset[str], tuple[StepNames, ...]]
#: No summaries known: every dropped block gets the marker.
NO_SUMMARIES: Mapping[str, str] = MappingProxyType({})


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SentEdits:
    """What was sent for a conversation's last request and what it was fitted from (a rewritten history fits afresh)."""

    messages: int
    digest: str
    dropped: tuple[int, ...] = ()
    dropped_units: int = 0
    elided: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """Plain JSON types, for a shared cache."""
        return {**dataclasses.asdict(self), "dropped": list(self.dropped), "elided": list(self.elided)}

    @classmethod
    def from_dict(cls, data: object) -> SentEdits | None:
        """The inverse of ``as_dict``; ``None`` for anything else (a cache may hold junk)."""
        try:
            assert isinstance(data, dict)  # noqa: S101 - caught below, like every other shape error
            return cls(
                messages=int(data["messages"]),
                digest=str(data["digest"]),
                dropped=tuple(int(i) for i in data["dropped"]),
                dropped_units=int(data["dropped_units"]),
                elided=tuple(int(i) for i in data["elided"]),
            )
        except (AssertionError, KeyError, TypeError, ValueError):
            return None


class Entry(NamedTuple):
    """One outgoing message (``source``: its caller index, ``None`` if inserted); a named tuple: cheap to build."""

    source: int | None
    message: Message
    tokens: int


@dataclasses.dataclass(slots=True)
class ElisionFacts:
    """What eliding reads of a request (``elide.py``), whichever policy and pass asks."""

    #: Per message asked about: has it a bulky output, and what eliding it saves.
    facts: dict[int, tuple[bool, int]] = dataclasses.field(default_factory=dict)
    #: Each message's tokens as it would settle, elided where it is a bulky output.
    settled: list[int] | None = None
    #: The elided copies made so far, by source index.
    elided: dict[int, Entry] = dataclasses.field(default_factory=dict)
    #: The outputs a later identical call made stale (``elide.superseded``).
    superseded: frozenset[int] | None = None


@dataclasses.dataclass(slots=True)
class MarkerFacts:
    """What pricing a marker reads of a request (``marker_digest.py``, ``stored.py``); no count among it."""

    #: The system messages and the task (``marker_digest.given_messages``).
    given: tuple[int, ...] | None = None
    #: Whether a name is in the system or the task, answered once per name.
    in_given: InText | None = None
    #: Per atom priced in a marker: its digest lines, the calls it makes and answers.
    atom_lines: dict[tuple[int, ...], AtomLines] = dataclasses.field(default_factory=dict)
    #: Per dropped block priced in a marker, the recall handle of its text (``wording/_recall.py``).
    block_handles: dict[tuple[int, ...], str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(slots=True)
class KeptFacts:
    """What keeping the conversation's last edits reads of a request (``state/_conversation.py``)."""

    #: Whether the request continues the conversation's edited last one (``conversation.continues``).
    continues: bool | None = None
    #: The kept edits applied to this request (``conversation.kept_edits``).
    kept: Draft | None = None
    #: The calls whose outputs those edits hid (``conversation.hidden_calls``), kept with the kept draft.
    hidden: frozenset[CallKey] | None = None


@dataclasses.dataclass(slots=True)
class Derived:
    """What steps derive from a ledger (its keys, layout, untouched draft), once per request however many ask."""

    keys: list[int] | None = None
    layout: Layout | None = None
    untouched: Draft | None = None
    elision: ElisionFacts = dataclasses.field(default_factory=ElisionFacts)
    markers: MarkerFacts = dataclasses.field(default_factory=MarkerFacts)
    conversation: KeptFacts = dataclasses.field(default_factory=KeptFacts)

    def recounted(self, counts: Sequence[int], since: int) -> Derived:
        """
        What holds once the messages from ``since`` on are counted anew: all but what eliding settled and the
        later elided copies, with the untouched and kept drafts at the new counts (kept edits never reach them).
        """
        untouched, kept = (
            None if draft is None else draft.recounted(counts, since)
            for draft in (self.untouched, self.conversation.kept)
        )
        elided = {index: entry for index, entry in self.elision.elided.items() if index < since}
        return dataclasses.replace(
            self,
            untouched=untouched,
            elision=dataclasses.replace(self.elision, settled=None, elided=elided),
            conversation=dataclasses.replace(self.conversation, kept=kept),
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class Ledger:
    """Everything a policy may read: the messages in their format, their tokens, the layout and the limits."""

    messages: Sequence[Message]
    kinds: Sequence[str]
    counts: Sequence[int]
    tools_and_priming: int
    limits: Limits
    settings: BudgetSettings
    counter: TokenCounter
    format: MessageFormat
    #: The edits sent last for this conversation (conversation state); ``None``: fit afresh.
    previous: SentEdits | None = None
    #: Summaries of dropped blocks known so far, by the block's digest (``core/policies/_summary.py``).
    summaries: Mapping[str, str] = dataclasses.field(default_factory=lambda: NO_SUMMARIES)
    #: The scope placeholders and digest lines name recall handles in (``recall.py``); ``None``: none.
    recall: RecallScope | None = None
    derived: Derived = dataclasses.field(default_factory=Derived, compare=False, repr=False)

    @property
    def layout(self) -> Layout:
        """Where the request may be cut, read when a step first asks (a request that keeps its edits never does)."""
        if self.derived.layout is None:
            self.derived.layout = layout_of_kinds(self.kinds)
        return self.derived.layout

    @property
    def final(self) -> int:
        return len(self.messages) - 1

    @property
    def total(self) -> int:
        """Tokens of the request as it came in."""
        return self.tools_and_priming + sum(self.counts)

    def count(self, message: Message) -> int:
        """Tokens of a message this request would send."""
        return self.format.count_message(self.counter, message)

    @property
    def keys(self) -> Sequence[int]:
        """Each message's ``content_key``, read once per request: what the memos know a message by."""
        if self.derived.keys is None:
            self.derived.keys = message_keys(self.messages)
        return self.derived.keys


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Draft:
    """An immutable step of a policy: entries plus which caller indices were changed and how."""

    entries: tuple[Entry, ...]
    tools_and_priming: int
    elided: tuple[int, ...] = ()
    dropped: tuple[int, ...] = ()
    dropped_units: int = 0
    cut: tuple[int, ...] = ()
    marker: bool = False
    #: The digest of the dropped block whose summary stands where the marker would.
    summary: str | None = None
    #: The digest of the dropped block that has the marker for want of a summary.
    summary_needed: str | None = None
    total: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        # Policies compare the total after every step: sum it once per draft.
        object.__setattr__(self, "total", self.tools_and_priming + sum(entry.tokens for entry in self.entries))

    @classmethod
    def of(cls, ledger: Ledger) -> Draft:
        """The untouched request as a draft (built once per ledger: drafts are immutable)."""
        if ledger.derived.untouched is None:
            # ``_make`` builds each from a ready tuple, cheaper than a call per entry.
            rows = zip(range(len(ledger.messages)), ledger.messages, ledger.counts, strict=True)
            entries = tuple(map(Entry._make, rows))
            ledger.derived.untouched = cls(entries=entries, tools_and_priming=ledger.tools_and_priming)
        return ledger.derived.untouched

    def recounted(self, counts: Sequence[int], since: int) -> Draft:
        """This draft, which sends the messages from ``since`` on as they came and last, with them at ``counts``."""
        entries, first = self.entries, len(self.entries)
        while first and (source := entries[first - 1].source) is not None and source >= since:
            first -= 1
        tail = tuple(entry._replace(tokens=counts[entry.source]) for entry in entries[first:])  # type: ignore[index]
        return dataclasses.replace(self, entries=entries[:first] + tail)

    def replaced(self, replacements: dict[int, Entry], **changes: object) -> Draft:
        """A copy where the entries of the given source indices are swapped for new ones."""
        entries = tuple(replacements.get(e.source, e) if e.source is not None else e for e in self.entries)
        return dataclasses.replace(self, entries=entries, **changes)  # type: ignore[arg-type]


#: Every policy has this signature: take the ledger, return the best draft it can make.
Policy = Callable[[Ledger], Draft]
