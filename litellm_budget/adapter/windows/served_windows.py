"""
The window a deployment's backend really serves, where less than configured, learned from its context-length error
or a silent truncation; later requests to it are fitted to that for ``learned_window_ttl`` seconds (a backend
restarted with a larger context is trusted again after), on every replica where the proxy has Redis.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from litellm_budget.adapter.replicas.shared import shared_get, shared_set
from litellm_budget.adapter.report.metrics import record_window_learned
from litellm_budget.adapter.request.kwargs import read_metadata
from litellm_budget.adapter.request.targets import Target
from litellm_budget.bounded import BoundedLRU
from litellm_budget.core.api import (
    BudgetReport,
    BudgetSettings,
    is_context_error,
    is_int,
    is_mapping,
    model_map_window,
    served_limit,
)
from litellm_budget.logs import get_logger

log = get_logger()

CACHE_PREFIX = "litellm_budget:served_window:"
#: How often, per deployment, a proxy reads what other replicas learned.
REFRESH_SECONDS = 10.0
#: A success whose prompt tokens are under this share of what the plugin counted it sent was cut upstream.
TRUNCATED_BELOW = 0.6
#: ... and only where it read this many or more: no backend serves less (Ollama's least default is 2048), while a
#: chat template that leaves whole messages out (llama.cpp's Llama 3 one drops tool results) reads a large request
#: as a small prompt, which is no cut of the window.
TRUNCATED_WINDOW_AT_LEAST = 1024
#: A conversation's next request, this many tokens or more larger than its last, whose prompt tokens grew by less than
#: this share of what its last ratio says, was cut: more mildly than ``TRUNCATED_BELOW`` catches, before calibration.
STALLED_GROWTH_AT_LEAST = 256
STALLED_BELOW = 0.25


@dataclasses.dataclass(frozen=True, slots=True)
class ServedWindow:
    """A learned window, in the provider's tokens as the plugin counts them, and what taught it."""

    window: int
    #: ``context_error`` or ``truncation``.
    source: str
    expires: float

    def as_dict(self, now: float) -> dict[str, Any]:
        return {"window": self.window, "source": self.source, "ttl": max(0.0, self.expires - now)}


class Deployment(NamedTuple):
    """The deployment a call went to (``deployment_of``), and its model group (for the event and the counter)."""

    id: str
    group: str

    @classmethod
    def of(cls, kwargs: Mapping[str, Any]) -> Deployment:
        """Where the call of LiteLLM's ``kwargs`` (a hook's, or a logged event's) went."""
        metadata = read_metadata(kwargs)
        params = kwargs.get("litellm_params")
        if not metadata and is_mapping(params):
            metadata = read_metadata(params)
        return cls(deployment_of(kwargs), str(metadata.get("model_group") or kwargs.get("model")))


def deployment_of(kwargs: Mapping[str, Any]) -> str:
    """A deployment's name across hooks and replicas: its ``model_info.id`` (stable per config), else model@api_base."""
    params = kwargs.get("litellm_params")
    params = params if is_mapping(params) else {}
    for info in (kwargs.get("model_info"), params.get("model_info"), read_metadata(kwargs).get("model_info")):
        if is_mapping(info) and isinstance(info.get("id"), str):
            return str(info["id"])
    base = kwargs.get("api_base") or params.get("api_base") or ""
    return f"{kwargs.get('model') or params.get('model')}@{base}"


class ServedWindows:
    """The learned window of each deployment (bounded), and when it was last read from the shared cache."""

    def __init__(self, max_deployments: int = 4096) -> None:
        self._learned: BoundedLRU[ServedWindow] = BoundedLRU(max_deployments)
        self._read: BoundedLRU[float] = BoundedLRU(max_deployments)
        #: Each conversation's last success on each deployment: what was sent, and what the backend read.
        self._last_read: BoundedLRU[tuple[int, int]] = BoundedLRU(max_deployments)

    def applied(self, target: Target, deployment: str) -> Target:
        """``target`` with its window lowered to the learned one, where one is learned and lower."""
        learned = self.learned(deployment)
        if learned is None:
            return target  # the common case: nothing learned, nothing looked up
        current = target.window or model_map_window(target.model)
        if current is not None and current <= learned.window:
            return target
        return dataclasses.replace(target, window=learned.window, window_source=learned.source)

    def learned(self, deployment: str) -> ServedWindow | None:
        """The deployment's learned window while it lives."""
        found = self._learned.get(deployment)
        return found if found is not None and time.monotonic() <= found.expires else None

    async def from_error(
        self, deployment: Deployment, error: object, sent: BudgetReport | None, settings: BudgetSettings, cache: Any
    ) -> int | None:
        """
        Learn the window a context-length error teaches (returned). Its limit is in the backend's tokens: scaled by the
        plugin's count of what was sent over the backend's count of the same, it is in the plugin's units.
        """
        text = str(error) if error is not None else ""
        said, sent_tokens = served_limit(text), _sent_tokens(sent)
        if said is not None:
            window = said.limit * sent_tokens // said.counted if said.counted and sent_tokens else said.limit
            return await self._learn(deployment, window, "context_error", settings, cache, backend=said.backend)
        if not sent_tokens or not is_context_error(text):
            return None
        # A context-length error without a number (Bedrock's, Ollama's): three quarters of what was sent, each time.
        return await self._learn(deployment, sent_tokens * 3 // 4, "context_error", settings, cache, backend="unnamed")

    async def from_usage(
        self,
        deployment: Deployment,
        reported: object,
        sent: BudgetReport | None,
        settings: BudgetSettings,
        cache: Any,
        conversation: str | None = None,
    ) -> bool:
        """
        Whether a success's prompt tokens say the backend cut what was sent (far less read than sent, or no more of a
        grown request); if so, that count is the learned window (Ollama keeps the last ``num_ctx`` tokens, reports it).
        """
        expected = _sent_tokens(sent)
        if not is_int(reported) or not expected:
            return False
        stalled = self._stalled(deployment, conversation, expected, reported)
        if reported < TRUNCATED_WINDOW_AT_LEAST or not (stalled or reported < expected * TRUNCATED_BELOW):
            return False
        log.warning(
            "upstream_truncated", deployment=deployment.id, model_group=deployment.group, sent=expected, read=reported
        )
        await self._learn(deployment, reported, "truncation", settings, cache)
        return True

    def _stalled(self, deployment: Deployment, conversation: str | None, expected: int, reported: int) -> bool:
        """Whether a conversation's request grew and what the backend read did not (the read-to-sent ratio holds)."""
        if conversation is None:
            return False  # requests of different conversations count differently: no comparing them
        key = f"{deployment.id}\0{conversation}"
        last = self._last_read.get(key)
        self._last_read.put(key, (expected, reported))
        if last is None or expected - last[0] < STALLED_GROWTH_AT_LEAST:
            return False
        grown_by = (expected - last[0]) * last[1] / last[0]
        return reported - last[1] < grown_by * STALLED_BELOW

    async def refresh(self, cache: Any, deployment: str) -> None:
        """Adopt the window another replica learned for ``deployment``, if it is smaller or ours is gone."""
        now, last = time.monotonic(), self._read.get(deployment)
        if last is not None and now - last < REFRESH_SECONDS:
            return  # read a moment ago: at most one shared read per deployment every few seconds
        self._read.put(deployment, now)
        shared = await shared_get(cache, CACHE_PREFIX + deployment)
        if not is_mapping(shared) or not is_int(shared.get("window")) or shared["window"] <= 0:
            return
        mine = self.learned(deployment)
        if mine is None or shared["window"] < mine.window:
            ttl = float(shared.get("ttl") or 0)
            entry = ServedWindow(int(shared["window"]), str(shared.get("source")), time.monotonic() + ttl)
            self._learned.put(deployment, entry)

    async def _learn(
        self, deployment: Deployment, window: int, source: str, settings: BudgetSettings, cache: Any, **said: Any
    ) -> int:
        now, key = time.monotonic(), deployment.id
        mine = self.learned(key)
        if mine is not None and mine.window <= window:
            return mine.window  # a window learned already holds: a later error says nothing new
        entry = ServedWindow(window, source, now + settings.learned_window_ttl)
        self._learned.put(key, entry)
        log.warning(
            "window_learned", deployment=key, model_group=deployment.group, window=window, source=source, **said
        )
        record_window_learned(deployment.group, source)
        await shared_set(cache, CACHE_PREFIX + key, entry.as_dict(now), settings.learned_window_ttl)
        return window


def _sent_tokens(sent: BudgetReport | None) -> int:
    """The plugin's count of what a call sent, in the provider's tokens (its ratio applied); 0: unknown."""
    if sent is None or sent.action not in {"passthrough", "trimmed", "unsupported", "unknown_window"}:
        return 0
    return round(sent.tokens_after * (sent.token_ratio or 1.0)) if sent.tokens_exact else 0
