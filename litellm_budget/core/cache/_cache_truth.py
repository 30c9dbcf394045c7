"""
Cache truth: what the provider's prompt cache read of a request (its usage), against what it could have read (the prefix
shared with the conversation's previous request, as the plugin sent both), and why it read less (``MISS_REASONS``).
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from litellm_budget.core.cache._sent_prompt import MARKER, TOOLS, SentPrompt

#: Every reason a report may give, in the order they are looked for.
MISS_REASONS = tuple(
    "deployment idle client_edit plugin_drop plugin_elision plugin_cut below_minimum no_breakpoint unknown".split()
)
#: A read this close to the shared prefix is a hit: OpenAI caches in steps of 128 tokens, and the
#: plugin shares the provider's tokens out over the prompt by size, which is near, not exact.
STEP_TOKENS = 128
SHARE_TOLERANCE = 0.05
#: Anthropic reads a cached prefix only if it ends at most this many blocks before a breakpoint.
LOOKBACK_BLOCKS = 20


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CacheUsage:
    """What the provider says a request did with its cache, in its own tokens."""

    #: Every prompt token, those read from and written to the cache included.
    input: int
    #: Read from the cache; ``None``: the provider does not say.
    read: int | None
    #: Written to the cache (Anthropic's ``cache_creation_input_tokens``).
    written: int = 0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CacheRules:
    """How the provider's cache behaves, as far as the plugin models it."""

    #: Seconds a prefix stays cached (``cache_lifetime``).
    lifetime: float
    #: The fewest tokens a cached prefix has (``cache_min_tokens``).
    minimum: int
    #: Whether only ``cache_control`` breakpoints are cached (Anthropic).
    breakpoints: bool = False


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CacheReport:
    """What the prompt cache did with one request (the provider's usage), and what the plugin expected."""

    #: Prompt tokens the provider counted, cached ones included.
    input_tokens: int
    #: Of those, what it read from its cache; ``None``: it does not say.
    cache_read_tokens: int | None
    #: What it wrote to its cache (Anthropic).
    cache_write_tokens: int = 0
    #: Leading tokens shared with the conversation's previous request as sent (0: none seen).
    shared_tokens: int = 0
    #: What the plugin expected the cache to read: the shared prefix, if served by the same deployment within
    #: the cache's lifetime, at least the provider's minimum and (Anthropic) ending at a breakpoint in reach.
    predicted_tokens: int = 0
    #: The previous request's entries (the tools schema, then each message sent).
    previous_entries: int = 0
    #: Leading entries shared with it; below ``previous_entries`` the prefix moved.
    shared_entries: int = 0
    #: Seconds since the previous request; ``None``: none seen for this conversation.
    idle_seconds: float | None = None
    #: Whether the previous request was served by the same deployment.
    same_deployment: bool | None = None
    #: Why less was read than the shared prefix allowed, or why the prefix moved (``MISS_REASONS``).
    cache_miss: str | None = None

    @property
    def hit_ratio(self) -> float | None:
        """The share of the prompt read from the cache."""
        if self.cache_read_tokens is None or self.input_tokens <= 0:
            return None
        return round(self.cache_read_tokens / self.input_tokens, 4)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-safe types only, in field order, then the hit ratio."""
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return {**fields, "cache_hit_ratio": self.hit_ratio}


def cache_report(previous: SentPrompt | None, current: SentPrompt, usage: CacheUsage, rules: CacheRules) -> CacheReport:
    """Join what was sent, what was sent before in the conversation, and what the provider says."""
    observed = CacheReport(input_tokens=usage.input, cache_read_tokens=usage.read, cache_write_tokens=usage.written)
    if previous is None:
        return observed
    total = current.size_before(len(current.sizes))

    def tokens(size: float) -> int:
        return int(usage.input * size / total) if total else 0

    entries = current.shared_with(previous)
    shared = tokens(current.shared_size(previous))
    idle = max(0.0, current.at - previous.at)
    same = current.deployment == previous.deployment
    warm = same and idle <= rules.lifetime and shared >= rules.minimum
    reachable = _reachable(previous, current, entries, rules, tokens) if rules.breakpoints else shared
    predicted = reachable if warm else 0
    moved = entries < len(previous.digests)
    tolerance = STEP_TOKENS + SHARE_TOLERANCE * shared
    lost = usage.read is not None and usage.read < shared - tolerance
    reason = None
    if lost and not same:
        reason = "deployment"
    elif lost and idle > rules.lifetime:
        reason = "idle"
    elif moved:
        reason = moved_by(previous, current, entries)
    elif lost and shared < rules.minimum:
        reason = "below_minimum"
    elif lost and reachable < shared - tolerance:
        reason = "no_breakpoint"
    elif lost:
        reason = "unknown"
    return dataclasses.replace(
        observed,
        shared_tokens=shared,
        predicted_tokens=predicted,
        previous_entries=len(previous.digests),
        shared_entries=entries,
        idle_seconds=round(idle, 3),
        same_deployment=same,
        cache_miss=reason,
    )


def moved_by(previous: SentPrompt, current: SentPrompt, at: int) -> str:
    """
    Who changed entry ``at``, the first that differs from the previous request: the plugin (its marker, or an edit it
    made to one request only) or the client (the same message, edited alike in both, says something else). An entry
    differing only by a merged marker (``user_note``, Anthropic's alternation), or after the same text before it (the
    marker joined the next user turn too), is the plugin's. Where the edits do not add up to what was sent, only a
    changed drop is known to move the prefix near its start; else ``unknown``.
    """
    marked = current.same_body(previous, at) or current.same_head(previous, at)
    if marked or not previous.origins or not current.origins:
        return "plugin_drop" if marked or previous.dropped != current.dropped else "unknown"
    before = previous.origins[at] if at < len(previous.origins) else TOOLS
    now = current.origins[at] if at < len(current.origins) else TOOLS
    if before is MARKER or now is MARKER:
        return "plugin_drop"
    if TOOLS in (before, now):
        return "client_edit"  # the tools schema, or a history the client made shorter
    if before != now:
        return "plugin_drop" if previous.dropped != current.dropped else "client_edit"
    for kind, edited in (("plugin_elision", "elided"), ("plugin_cut", "cut")):
        if (now in getattr(previous, edited)) != (now in getattr(current, edited)):
            return kind
    return "plugin_cut" if now in current.cut else "client_edit"


def _reachable(previous: SentPrompt, current: SentPrompt, entries: int, rules: CacheRules, tokens: Any) -> int:
    """
    Anthropic: the longest prefix the previous request wrote at one of its breakpoints (inside the
    shared entries, at least the minimum) that one of this request's breakpoints reaches back to.
    """
    starts = list(itertools.accumulate(current.blocks, initial=0))  # each entry's first block
    reach = [starts[entry] + block for entry, block in current.marks]
    best = 0
    for entry, block in previous.marks:
        if entry >= entries:
            continue
        position = starts[entry] + block
        if not any(position <= mark < position + LOOKBACK_BLOCKS for mark in reach):
            continue
        size = current.size_before(entry) + current.sizes[entry] * (block + 1) / current.blocks[entry]
        written = tokens(size)
        if written >= rules.minimum:
            best = max(best, written)
    return best
