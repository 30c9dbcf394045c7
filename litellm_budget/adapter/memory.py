"""
What the plugin remembers between requests: each model's learned token ratio, each
conversation's last edits, and the summaries of dropped blocks. Read before a hook's fit
(the fit itself is synchronous), shared through Redis where the proxy has one, written after.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litellm_budget.core.fit import Fitted
from litellm_budget.core.memo import BoundedDict

from .calibration import Calibration
from .compaction import serve_compaction
from .conversations import Conversations
from .failopen import guarded_async
from .shapes import ANTHROPIC_SHAPE, Shape
from .shared import shared_store
from .summarizer import Summarizer
from .summarizing import summary_ahead
from .targets import Target


class Memory:
    """The three kinds of memory, and what a hook does with them around its fit."""

    def __init__(self) -> None:
        self.calibration = Calibration()
        self.conversations = Conversations()
        self.summarizer = Summarizer()
        #: The context_management edits served here for a request (by call id), for its response.
        self.client_edits: BoundedDict[list[dict[str, Any]]] = BoundedDict(4096)

    def record_edits(self, call_id: str, applied: list[dict[str, Any]]) -> None:
        """Keep what the response to ``call_id`` reports, after what an earlier hook kept for it."""
        self.client_edits.put(call_id, [*(self.client_edits.get(call_id) or []), *applied])

    def ratio(self, target: Target) -> float | None:
        """The learned token ratio to apply for ``target``; ``None``: the configured or prior one."""
        return self.calibration.ratio(target.model) if target.settings.calibrate else None

    async def before_fit(  # noqa: PLR0913 - what the hook knows of the request
        self,
        cache: Any,
        request: Any,
        target: Target,
        shape: Shape,
        *,
        trial: Callable[[], Fitted | None],
        router: Any,
    ) -> dict[str, Any]:
        """
        Serve a client's compaction edit (``compaction.py``), adopt what other replicas learned
        (ratio, the conversation's edits), then get the summary a fit wants (``trial`` fits
        silently; at most ``summary_timeout``). Returns keywords for ``fit_once``. Never raises:
        anything shared is an optimisation.
        """
        settings = target.settings
        if shape is ANTHROPIC_SHAPE and request.get("context_management"):
            compaction = serve_compaction(self.summarizer, request, target, router=router, cache=cache)
            served = await guarded_async("compaction", compaction)
            if served:
                self.record_edits(str(request.get("litellm_call_id") or ""), served)
        if cache is not None and settings.calibrate and self.calibration.due_for_refresh(target.model):
            await guarded_async("calibration", self.calibration.refresh(cache, target.model, settings))
        refresh_state = settings.conversation_state and shared_store(cache) is not None
        if not refresh_state and settings.summary_model is None:
            return {}  # the common case: nothing to read the request for
        messages = shape.read(request).messages  # once, for both steps below
        known: dict[str, Any] = {}
        if refresh_state:
            lifetime = settings.lifetime_for(target.model)
            refresh = self.conversations.refresh(cache, target.model, shape.format, messages, lifetime)
            known["conversation"] = await guarded_async("conversation_state", refresh)
        if settings.summary_model is None:
            return known
        step = summary_ahead(self.summarizer, trial(), messages, shape.format, settings, router=router, cache=cache)
        summaries, outcome = await guarded_async("summary_step", step) or (None, None)
        return {**known, "summaries": summaries, "summary": outcome}

    async def after_fit(self, cache: Any) -> None:
        """Share the conversation edits remembered during the fit."""
        await guarded_async("conversation_state", self.conversations.flush(cache))
