"""Turn planning: keep whole units newest first, drop the oldest in quantized blocks."""

from __future__ import annotations

from ._cut import cut_to_fit
from ._draft import Draft, Request
from ._drop import drop_oldest


def fit_plan(request: Request) -> Draft:
    """The ``plan`` policy: drop the oldest whole turns to the quantized target; cut the question last."""
    draft = Draft.of(request)
    draft = drop_oldest(draft, request, request.layout.turns, request.limits.target(draft.total))
    if draft.total > request.limits.budget:
        draft = cut_to_fit(draft, request)
    return draft
