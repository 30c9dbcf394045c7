"""``FitRequest``: everything one fit reads, as one value."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from litellm_budget.core._report import BudgetReport
from litellm_budget.core.budget import BudgetSettings, WindowLookup, model_map_window
from litellm_budget.core.formats import MessageFormat
from litellm_budget.core.formats._chat import CHAT
from litellm_budget.core.policies._ledger import SentEdits
from litellm_budget.core.wording._recall import NOTHING_STORED, RecallScope
from litellm_budget.typing import Message, Tools

DEFAULT_SETTINGS = BudgetSettings()


@dataclasses.dataclass(frozen=True, slots=True)
class FitRequest:
    """One request as ``fit_request`` takes it: the core's list in ``fmt``, and all a fit reads beside it."""

    messages: Sequence[Message]
    _: dataclasses.KW_ONLY
    model: str
    #: The window to fit; ``None``: the model map's (``lookup``), then ``settings.default_window``.
    window: int | None = None
    #: Where ``window`` came from (``BudgetReport.window_source``); ``None``: the caller's own (``given``).
    window_source: str | None = None
    tools: Tools | None = None
    max_tokens: int | None = None
    settings: BudgetSettings = DEFAULT_SETTINGS
    #: The provider's tokens per counted token, learned from its usage; ``None``: ``BudgetSettings.ratio_for``.
    ratio: float | None = None
    lookup: WindowLookup = model_map_window
    fmt: MessageFormat = CHAT
    #: The edits sent last for this conversation (conversation state), if any.
    previous: SentEdits | None = None
    #: The summaries learned for dropped blocks, by the block's digest.
    summaries: Mapping[str, str] | None = None
    #: Whether a request whose size bound is under the budget may pass uncounted (the size gate).
    gate: bool = False
    #: The scope recall handles are named in; ``None``: nothing is named or stored (``recall.py``).
    recall: RecallScope | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Fitted:
    """The request to send: a new list (unchanged dicts shared), ``max_tokens`` (maybe lowered), the report."""

    messages: list[Message]
    max_tokens: int | None
    report: BudgetReport
    #: Each message's content key, where a count after the request left looks its counts up by them.
    keys: Sequence[int] | None = None
    #: What the sent messages name by recall handle, by handle (with a ``FitRequest.recall`` scope).
    stored: Mapping[str, str] = dataclasses.field(default_factory=lambda: NOTHING_STORED)
