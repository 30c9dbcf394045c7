"""
What one request put in front of the provider's prompt cache, in hashes and sizes only: enough to tell
how long a prefix it shares with the conversation's previous request, and who changed the rest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from litellm_budget.core._memo import MEMOS
from litellm_budget.core._report import BudgetReport, format_ranges, parse_ranges
from litellm_budget.core.cache._breakpoints import has_breakpoint
from litellm_budget.core.formats import lead_of
from litellm_budget.core.formats._message_keys import message_keys
from litellm_budget.core.wording._notices import MARKER_END, marker_start

#: The entry that stands for the tools schema, which every provider caches ahead of the messages.
TOOLS = -1
#: The entry of a marker (or summary) the plugin put where dropped messages were.
MARKER = None
#: An entry's hash, size, blocks, breakpoints (blocks), head hash and size, body hash.
_Facts = tuple[int, int, int, tuple[int, ...], int, int, int]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SentPrompt:
    """One request as it reached the provider: the tools schema (if any), then each message of the core's list."""

    #: This process's hash of each entry, breakpoints left out (they do not change the prefix).
    digests: tuple[int, ...]
    #: Each entry's size, the characters of its keys and values: the provider's tokens are shared out by it.
    sizes: tuple[int, ...]
    #: Content blocks in each entry (Anthropic looks back for cached prefixes in blocks).
    blocks: tuple[int, ...]
    #: The breakpoints (``cache_control``) sent, as (entry, block within it).
    marks: tuple[tuple[int, int], ...] = ()
    #: What each entry was: ``TOOLS``, a client message's index, or ``MARKER``; empty where its edits do not add up.
    origins: tuple[int | None, ...] = ()
    #: The client's messages the plugin elided, dropped and cut, by their index.
    elided: frozenset[int] = frozenset()
    dropped: frozenset[int] = frozenset()
    cut: frozenset[int] = frozenset()
    #: The deployment that served it (LiteLLM's model id, else its address).
    deployment: str = ""
    #: When it was served, in seconds of the adapter's clock.
    at: float = 0.0
    #: Each entry's hash and size up to a marker merged into it (``user_note``; else its own), as a
    #: token-prefix cache still reads the text before a changed marker; empty: not known.
    heads: tuple[int, ...] = ()
    head_sizes: tuple[int, ...] = ()
    #: Each entry's hash with the merged marker taken out (its own where it holds none): an entry
    #: whose body is the same in both prompts changed only by the marker, the plugin's doing.
    bodies: tuple[int, ...] = ()

    def size_before(self, entries: int) -> int:
        """Characters of the first ``entries`` entries."""
        return sum(self.sizes[:entries])

    def shared_with(self, other: SentPrompt) -> int:
        """How many leading entries this prompt and ``other`` have in common."""
        shared = 0
        for mine, theirs in zip(self.digests, other.digests, strict=False):
            if mine != theirs:
                break
            shared += 1
        return shared

    def same_head(self, other: SentPrompt, entry: int) -> bool:
        """Whether entry ``entry`` of both is the same up to a marker merged into one or both."""
        return entry < min(len(self.heads), len(other.heads)) and self.heads[entry] == other.heads[entry]

    def same_body(self, other: SentPrompt, entry: int) -> bool:
        """Whether entry ``entry`` of both is the same but for a marker merged into one or both."""
        return entry < min(len(self.bodies), len(other.bodies)) and self.bodies[entry] == other.bodies[entry]

    def shared_size(self, other: SentPrompt) -> int:
        """Characters of the prefix shared with ``other``: the shared entries, and the head of the next one."""
        entries = self.shared_with(other)
        head = self.head_sizes[entries] if self.same_head(other, entries) else 0
        return self.size_before(entries) + head


def sent_prompt(
    messages: Sequence[Any],
    *,
    tools: object = None,
    report: BudgetReport | Mapping[str, Any] | None = None,
    deployment: str = "",
    at: float = 0.0,
) -> SentPrompt:
    """The ``SentPrompt`` of the core's list as sent; ``report`` (or its ``as_dict()``) maps it to the client's."""
    keys = message_keys(messages, lane="sent")
    facts = [_tools_facts(tools)] if tools else []
    lead = len(facts)
    facts += [_message_facts(message, keys[index]) for index, message in enumerate(messages)]
    # Each fact's column (seven empty ones when nothing was sent).
    digests, sizes, blocks, marked, heads, head_sizes, bodies = list(zip(*facts, strict=True)) or [()] * 7
    fields = _edits_of(report, lead_of(messages))
    layout = origins(len(messages), fields) if report is not None else tuple(range(len(messages)))
    return SentPrompt(
        digests=digests,
        sizes=sizes,
        blocks=blocks,
        marks=tuple((index, block) for index, blocks_marked in enumerate(marked) for block in blocks_marked),
        origins=(TOOLS,) * lead + layout if layout else (),
        elided=frozenset(parse_ranges(fields["elided_at"])),
        dropped=frozenset(parse_ranges(fields["dropped_at"])),
        cut=frozenset(parse_ranges(fields["cut_at"])),
        deployment=deployment,
        at=at,
        heads=heads,
        head_sizes=head_sizes,
        bodies=bodies,
    )


def _tools_facts(tools: Any) -> _Facts:
    parts = list(tools) if isinstance(tools, list) else [tools]
    frozen, size = _frozen(parts)
    digest = hash(frozen)
    marked = tuple(i for i, part in enumerate(parts) if has_breakpoint(part))
    return digest, size, max(1, len(parts)), marked, digest, size, digest


def _message_facts(message: Any, key: int) -> _Facts:
    """A message's facts, remembered by content (``key``): each message already sent costs a lookup."""
    facts: _Facts | None = MEMOS.prompt_facts.get(key)
    if facts is None:
        (frozen, size), count, marked = _entry(message)
        digest = hash(frozen)
        head, body = _around_marker(message)
        head_frozen, head_size = _entry(head)[0] if head is not None else (frozen, size)
        body_digest = hash(_entry(body)[0][0]) if body is not None else digest
        facts = (digest, size, count, tuple(marked), hash(head_frozen), head_size, body_digest)
        MEMOS.prompt_facts.put(facts, key)
    return facts


def origins(sent: int, fields: Mapping[str, Any]) -> tuple[int | None, ...]:
    """
    Which of the client's messages each sent message was: the received ones in order, the dropped
    left out and one ``MARKER`` where the first of them was (``drop.py`` puts it there), or no entry
    of its own where the marker was merged into the user message before or after it (``user_note``),
    and one for both when it joined the two; ``()`` when none of these adds up to ``sent`` messages.
    """
    received = int(fields.get("messages_before") or 0)
    dropped = set(parse_ranges(str(fields.get("dropped_at") or "")))
    kept: list[int | None] = [index for index in range(received) if index not in dropped]
    if not fields.get("marker") or not dropped:
        return tuple(kept) if len(kept) == sent else ()
    at = sum(1 for index in kept if index is not None and index < min(dropped))
    layouts = [[*kept[:at], MARKER, *kept[at:]], kept]
    if 0 < at < len(kept):
        layouts.append(kept[:at] + kept[at + 1 :])  # joined the user turns on both sides: the first's
    return next((tuple(layout) for layout in layouts if len(layout) == sent), ())


def _around_marker(entry: Any) -> tuple[Any, Any]:
    """``entry`` up to its merged marker (``None``: nothing before it), and without it; ``(None, None)``: none."""
    content = entry.get("content") if isinstance(entry, Mapping) else None
    if isinstance(content, str):
        start = marker_start(content)
        if start is None:
            return None, None
        end = content.find(MARKER_END, start)
        rest = content[end + len(MARKER_END) :] if end != -1 else ""
        body = content[:start] + (rest if start else rest.removeprefix("\n\n"))
        return ({**entry, "content": content[:start]} if start else None), {**entry, "content": body}
    parts: list[Any] = content if isinstance(content, list) else []
    for index, part in enumerate(parts):
        text = part.get("text") if isinstance(part, Mapping) else None
        if isinstance(text, str) and marker_start(text) == 0:
            without = {**entry, "content": parts[:index] + parts[index + 1 :]}
            return ({**entry, "content": parts[:index]} if index else None), without
    return None, None


def _edits_of(report: BudgetReport | Mapping[str, Any] | None, apart: int) -> dict[str, Any]:
    """The report's edits in the core's list, which holds ``apart`` entries (a system part) before the caller's."""
    if report is None:
        return {"elided_at": "", "dropped_at": "", "cut_at": ""}
    fields = report.as_dict() if isinstance(report, BudgetReport) else report
    ranges = {key: str(fields.get(key) or "") for key in ("elided_at", "dropped_at", "cut_at")}
    before = fields.get("messages_before")
    if apart:
        ranges = {key: format_ranges(index + apart for index in parse_ranges(value)) for key, value in ranges.items()}
        before = int(before or 0) + apart
    return ranges | {"messages_before": before, "marker": fields.get("marker")}


def _entry(entry: Any) -> tuple[tuple[object, int], int, list[int]]:
    """A message frozen without its breakpoints (and its size), its number of blocks, and the blocks that carry one."""
    if not isinstance(entry, Mapping):
        return _frozen(entry), 1, []
    content = entry.get("content")
    if not isinstance(content, list):
        return _frozen(entry), 1, [0] if has_breakpoint(entry) else []
    marked = [i for i, part in enumerate(content) if has_breakpoint(part)]
    if has_breakpoint(entry):
        marked = marked or [len(content) - 1]
    parts = [_unmarked(part) for part in content] if marked else content
    # One plain text block is its string, as the API reads it and a breakpoint on a string leaves it: one prefix.
    alone = len(parts) == 1 and _is_plain_text(parts[0])
    if marked or alone:
        entry = {**_unmarked(entry), "content": parts[0]["text"] if alone else parts}
    return _frozen(entry), max(1, len(content)), marked


def _is_plain_text(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "text" and set(part) == {"type", "text"}


def _unmarked(value: Any) -> Any:
    if isinstance(value, Mapping) and "cache_control" in value:
        return {key: item for key, item in value.items() if key != "cache_control"}
    return value


def _frozen(value: Any) -> tuple[object, int]:
    """``value`` as tuples hashing alike when its JSON does (breakpoints left out), and its size: cheaper than JSON."""
    if isinstance(value, str):
        return value, len(value)
    if isinstance(value, Mapping):
        items, size = [], 0
        for key, item in value.items():
            if key != "cache_control":
                frozen, inner = _frozen(item)
                items.append((key, frozen))
                size += len(str(key)) + inner + 4
        return ("{", *items), size + 2
    if isinstance(value, list | tuple):
        frozen_items = [_frozen(item) for item in value]
        return ("[", *(frozen for frozen, _ in frozen_items)), sum(size + 1 for _, size in frozen_items) + 2
    if value is None or isinstance(value, bool | int | float):
        return value, len(str(value))
    text = str(value)
    return text, len(text)
