"""The fallback chain: elide; if still over, drop oldest units; if still over, cut; else give up."""

from __future__ import annotations

from collections.abc import Sequence

from ._cut import cut_to_fit
from ._draft import Draft, Request
from ._drop import drop_units, units_worth
from ._elide import elide_oldest, elide_tail, settled_sizes
from ._units import Unit


def fit_auto(request: Request) -> Draft:
    """
    The ``auto`` policy, the default.

    Elision keeps the most context, so units are dropped only when eliding every bulky
    output could not bring the request under the watermark. How many go is decided on that
    settled size, where each message counts the same wherever it stands, so it only grows
    with the conversation: the dropped set only grows too, and holds still for a quantum
    of growth. Under more pressure, outputs inside the protected tail are elided before
    anything else is dropped, because a change near the end keeps the cached prefix and a
    change at the front does not. Cutting is the last resort.
    """
    limits = request.limits
    steps = request.layout.steps
    settled = settled_sizes(request)
    count = units_worth(steps, settled.__getitem__, limits.target(request.fixed + sum(settled)), request)
    draft = _drop_then_elide(request, steps[:count])
    while draft.total > limits.budget and count < len(steps):
        # A heavy protected tail can still overflow: drop another quantized block.
        tokens = {entry.source: entry.tokens for entry in draft.entries}
        count += max(1, units_worth(steps[count:], tokens.__getitem__, limits.target(draft.total), request))
        draft = _drop_then_elide(request, steps[:count])
    if draft.total > limits.budget:
        draft = cut_to_fit(draft, request)
    return draft


def _drop_then_elide(request: Request, units: Sequence[Unit]) -> Draft:
    budget = request.limits.budget
    draft = drop_units(Draft.of(request), request, units)
    draft = elide_oldest(draft, request, request.limits.target(draft.total))
    return elide_tail(draft, request, draft.total - budget) if draft.total > budget else draft
