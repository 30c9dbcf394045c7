"""The one flat record of what was done to a request, safe to log: no message contents."""

from __future__ import annotations

import dataclasses
import operator
import re
import time
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from litellm_budget.typing import Action, PolicyName


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetReport:
    """
    What ``fit()`` measured and changed, in the caller's indices; ranges such as ``"2,5-9"`` keep it one short log line.
    Inside the plugin it is over the core's list (``lead``); ``as_dict`` and ``for_caller`` give the caller's.
    """

    #: The model as the request named it (for a deployment: its ``litellm_params.model``).
    model: str
    #: The policy that fitted it.
    policy: PolicyName
    #: The message format of the request: ``chat`` (chat completions), or another API's.
    format: str = "chat"
    #: ``passthrough``, ``trimmed``, ``rejected``, ``deferred``, ``unknown_window`` or ``unsupported``.
    action: Action
    #: Why it was rejected, deferred, unsupported or fitted against a default window; else ``None``.
    reason: str | None = None
    #: The context window fitted against, in the provider's tokens.
    window: int | None = None
    #: Where the window came from: ``deployment`` (its ``model_info``), ``model_map`` (LiteLLM's, as
    #: shipped), ``default_window``, ``override`` (a key's, team's or request's, lowering it),
    #: ``context_error`` or ``truncation`` (learned from the backend), ``given`` (``fit()``'s caller).
    window_source: str | None = None
    #: What the prompt may use: window less reserve and margin, in counted tokens.
    budget: int | None = None
    #: Tokens held back for the answer.
    reserve: int = 0
    #: Tokens of the window never filled.
    margin: int = 0
    #: Where trimming aims once triggered, in counted tokens.
    watermark: int | None = None
    #: The step savings are rounded up to, in counted tokens.
    quantum: int | None = None
    #: The prompt as it came in, tools schema and priming included.
    tokens_before: int = 0
    #: The prompt as sent; for a request not sent (rejected, deferred): as it came in.
    tokens_after: int = 0
    #: For a request not sent (rejected, deferred): the fewest tokens the policy could reach.
    tokens_needed: int | None = None
    #: Messages that came in.
    messages_before: int = 0
    #: Messages sent, the marker included.
    messages_after: int = 0
    #: Messages whose bulky text was replaced by a placeholder.
    elided: int = 0
    #: Whole units (turns or steps) dropped.
    dropped_units: int = 0
    #: Messages those units held.
    dropped_messages: int = 0
    #: Messages cut by the last resort (head and tail kept, a note in between).
    cut: int = 0
    #: Indices of the elided messages, as ranges (``"2,5-9"``).
    elided_at: str = ""
    #: Indices of the dropped messages, as ranges.
    dropped_at: str = ""
    #: Indices of the cut messages, as ranges.
    cut_at: str = ""
    #: Whether a marker saying what was dropped was inserted (a summary is one: ``summarized``).
    marker: bool = False
    #: Whether that marker holds a summary of what was dropped.
    summarized: bool = False
    #: The digest of a dropped block that got the plain marker for want of a summary (safe to log).
    summary_needed: str | None = None
    #: Tokens of the summary's message as sent.
    summary_tokens: int = 0
    #: Calls made to the summary model for this request.
    summary_calls: int = 0
    #: What those calls cost, when LiteLLM knows; ``None``: no call, or the cost is unknown.
    summary_cost: float | None = None
    #: Why a summary was wanted and not sent: ``summary_model not configured``, a timeout, an error.
    summary_failed: str | None = None
    #: Whether the conversation's last edits were kept as they were, so its cached prefix holds.
    edits_kept: bool = False
    #: Calls since the conversation's last request that repeat one (same tool and arguments) whose output it hid.
    rereads: int = 0
    #: The first index where what was sent differs from what came in; ``None``: nothing.
    first_changed_index: int | None = None
    #: The client's ``max_tokens`` (or ``max_completion_tokens``).
    max_tokens_requested: int | None = None
    #: ``max_tokens`` as sent: lowered to the room left when it would overflow.
    max_tokens_sent: int | None = None
    #: What counted: ``tiktoken:<encoding>`` or ``estimate``.
    counter: str = ""
    #: The provider's tokens per counted token applied (configured times learned).
    token_ratio: float = 1.0
    #: Whether the size gate let the request go untokenized, untouched or with its kept edits (``_size_gate.py``).
    size_gate: bool = False
    #: Whether ``tokens_before`` and ``tokens_after`` are the tokenizer's count, not the gate's bound.
    tokens_exact: bool = True
    #: The size bound the gate compared with the budget; ``None``: the gate did not let it go.
    tokens_bound: int | None = None
    #: Time the fit took.
    duration_ms: float = 0.0
    #: Entries of the core's list before the caller's messages: a system or ``instructions`` given apart (unpublished).
    lead: int = dataclasses.field(default=0, repr=False)

    @property
    def tokens_saved(self) -> int:
        """Tokens taken out of the prompt (never negative)."""
        return max(0, self.tokens_before - self.tokens_after)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-safe types only, in field order, in the caller's indices."""
        return dict(zip(_FIELDS, _VALUES(self.for_caller() if self.lead else self), strict=True))

    def for_caller(self) -> BudgetReport:
        """This report in the caller's indices and counts (a change to a system given apart is at index 0)."""
        lead = self.lead
        if not lead:
            return self
        changed = self.first_changed_index
        return dataclasses.replace(
            self,
            reason=_shifted_reason(self.reason, lead),
            messages_before=max(0, self.messages_before - lead),
            messages_after=max(0, self.messages_after - lead),
            elided_at=_shifted(self.elided_at, lead),
            dropped_at=_shifted(self.dropped_at, lead),
            cut_at=_shifted(self.cut_at, lead),
            first_changed_index=None if changed is None else max(0, changed - lead),
            lead=0,
        )


#: The published field names in order, and one getter of all their values: ``as_dict`` runs often.
_FIELDS = tuple(field.name for field in dataclasses.fields(BudgetReport) if field.name != "lead")
_VALUES = operator.attrgetter(*_FIELDS)
#: How a reason names a message or an item of the core's list (``message 3: ...``).
_NAMED_INDEX = re.compile(r"\b(message|item) (\d+)\b")


def _shifted(ranges: str, lead: int) -> str:
    return format_ranges(index - lead for index in parse_ranges(ranges) if index >= lead) if ranges else ranges


def _shifted_reason(reason: str | None, lead: int) -> str | None:
    """A reason's ``message N`` in the caller's indices; the entry given apart by its own name."""

    def caller(match: re.Match[str]) -> str:
        index = int(match.group(2)) - lead
        return f"{match.group(1)} {index}" if index >= 0 else "the system part"

    return _NAMED_INDEX.sub(caller, reason) if reason else reason


def elapsed_ms(started: float) -> float:
    """``duration_ms`` of a fit that started at ``started`` (``time.perf_counter``)."""
    return round((time.perf_counter() - started) * 1000, 3)


#: What a report of a request not sent says was edited and summarized: nothing.
_NO_EDITS: Mapping[str, Any] = MappingProxyType(
    {
        **dict.fromkeys(("elided", "dropped_units", "dropped_messages", "cut", "summary_tokens"), 0),
        **dict.fromkeys(("elided_at", "dropped_at", "cut_at"), ""),
        **dict.fromkeys(("marker", "edits_kept", "summarized"), False),
        **dict.fromkeys(("summary_needed", "summary_failed", "first_changed_index"), None),
    }
)


def unsent(report: BudgetReport, action: Action, reason: str) -> BudgetReport:
    """The report of a request not sent as fitted (``rejected``, or ``deferred`` to a fallback), claiming no edit."""
    return dataclasses.replace(
        report,
        action=action,
        reason=reason,
        tokens_needed=report.tokens_after,
        tokens_after=report.tokens_before,
        messages_after=report.messages_before,
        max_tokens_sent=report.max_tokens_requested,
        **_NO_EDITS,
    )


def format_ranges(indices: Iterable[int]) -> str:
    """Render indices compactly: ``[1, 2, 3, 7]`` becomes ``"1-3,7"``."""
    spans: list[list[int]] = []  # [first, last] of each run
    for index in sorted(set(indices)):
        if spans and index == spans[-1][1] + 1:
            spans[-1][1] = index
        else:
            spans.append([index, index])
    return ",".join(str(first) if first == last else f"{first}-{last}" for first, last in spans)


def parse_ranges(ranges: str) -> list[int]:
    """The inverse of ``format_ranges``: ``"1-3,7"`` becomes ``[1, 2, 3, 7]``."""
    indices: list[int] = []
    for part in filter(None, ranges.split(",")):
        start, _, end = part.partition("-")
        indices.extend(range(int(start), int(end or start) + 1))
    return indices
