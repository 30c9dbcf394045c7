"""
All the plugin's process-wide state: what outlives a plugin instance because it concerns the process (the log stream,
Redis clients, LiteLLM's callback lists, Prometheus' registry). A plugin's ``Memory`` holds what it learns from traffic.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

from litellm_budget.bounded import BoundedLRU


@dataclasses.dataclass(slots=True)
class ProcessState:
    """Each field says which module writes it and why it is the process's."""

    #: The logger built for the last choice of stream, level and format, with that choice (``logs.py``).
    logger: tuple[Any, Any] | None = None
    #: The second last formatted into a log line, and its text (``logs.py``: a time zone lookup per second).
    stamp: tuple[int, str] = (-1, "")
    #: When a Redis failure was last warned of (``adapter/replicas/shared.py``: one warning a minute).
    redis_warned_at: float = 0.0
    #: Per Redis layer after a failure: until when it is left alone, and for how long it was.
    redis_resting: weakref.WeakKeyDictionary[Any, tuple[float, float]] = dataclasses.field(
        default_factory=weakref.WeakKeyDictionary
    )
    #: One pipe per Redis client and event loop, by their ids (``adapter/replicas/redis_pipe.py``).
    redis_pipes: BoundedLRU[tuple[Any, Any, Any]] = dataclasses.field(default_factory=lambda: BoundedLRU(16))
    #: Whether LiteLLM's own compression was said to own Anthropic requests (``adapter/settings/config.py``).
    compression_said: bool = False
    #: The Prometheus collectors, made once per registry (``adapter/report/metrics.py``); ``None``: not yet.
    metrics: dict[str, Any] | None = None


PROCESS = ProcessState()
