"""
What the plugin remembers: about each call, its life in one record (``calls.py``: a list the
Router's filter hook lent among it), the requests waiting for their count (``later_counts.py``),
and between requests each model's learned token ratio, each conversation's last edits and the
summaries of dropped blocks. The latter are read before a hook's fit (the fit itself is
synchronous), shared through Redis where the proxy has one, and written after it (``hook_pass.py``).
"""

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
    """
    The plugin's one memory of calls, ratios, conversations, prompts, summaries and the invalid
    settings requests showed; every store in it is bounded.
    """

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
