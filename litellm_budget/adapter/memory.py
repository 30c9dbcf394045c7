"""What the plugin remembers; what replicas share is read before a hook's (synchronous) fit and written after."""

from __future__ import annotations

from .recall.scope import RecallState
from .records.calls import Calls
from .records.conversations import Conversations
from .report.cache_observed import PromptHistory
from .report.later_counts import LaterCounts
from .request.targets import Target
from .settings.invalid import InvalidSettings
from .summaries.summarizer import Summarizer
from .windows.calibration import Calibration
from .windows.served_windows import ServedWindows


class Memory:
    """The plugin's memory of calls, ratios, conversations, prompts, summaries and invalid settings; all bounded."""

    __slots__ = (
        "calibration",
        "calls",
        "conversations",
        "invalid",
        "later",
        "prompts",
        "recall",
        "served",
        "summarizer",
    )

    def __init__(self) -> None:
        self.calls = Calls()
        #: The requests the size gate passed, waiting for their count.
        self.later = LaterCounts(self.calls)
        self.calibration = Calibration()
        self.conversations = Conversations()
        self.prompts = PromptHistory()
        self.summarizer = Summarizer()
        self.invalid = InvalidSettings()
        #: The windows learned from deployments' backends (``served_windows.py``).
        self.served = ServedWindows()
        #: What fits stored for the recall tool, and each call's recalls.
        self.recall = RecallState()

    def ratio(self, target: Target) -> float | None:
        """The learned token ratio to apply for ``target``; ``None``: the configured or prior one."""
        return self.calibration.ratio(target.model) if target.settings.calibrate else None
