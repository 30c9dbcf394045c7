"""Learn how a provider counts: the ratio of reported ``usage.prompt_tokens`` to our own count."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from litellm_budget.adapter.replicas.shared import shared_get, shared_set
from litellm_budget.adapter.report.publish import report_in
from litellm_budget.adapter.request.shapes import format_of_call
from litellm_budget.bounded import BoundedDict, BoundedLRU
from litellm_budget.core.api import BudgetReport, BudgetSettings, is_int, is_number
from litellm_budget.logs import get_logger

log = get_logger()

#: Requests smaller than this say little about a ratio (framing dominates).
MIN_COUNTED = 200
#: How often, per model, a proxy re-reads the ratio other replicas wrote to the shared cache.
REFRESH_SECONDS = 10.0
CACHE_PREFIX = "litellm_budget:token_ratio:"
#: The applied ratio moves only when the learned one is further than this share from it.
HYSTERESIS = 0.03
#: A learned ratio outlives a quiet day, not a model upgrade.
SHARED_TTL = 7 * 24 * 3600


class Calibration:
    """Per-model token ratios, damped and clamped, learned from successes and shared through Redis across replicas."""

    def __init__(self, max_models: int = 4096) -> None:
        self._ratios: BoundedLRU[float] = BoundedLRU(max_models)
        self._refreshed: BoundedDict[float] = BoundedDict(max_models)
        self._applied: BoundedLRU[float] = BoundedLRU(max_models)
        self._shared: BoundedDict[tuple[float, float]] = BoundedDict(max_models)

    def ratio(self, model: str) -> float | None:
        """
        The ratio to apply for ``model`` (``None``: nothing learned yet), moved only past ``HYSTERESIS``: every response
        moves the learned one a little, and each move would shift every conversation's edits and cached prefixes.
        """
        learned = self._ratios.get(model)
        if learned is None:
            return None
        applied = self._applied.get(model)
        if applied is None or abs(learned - applied) > HYSTERESIS * applied:
            self._applied.put(model, learned)
            return learned
        return applied

    def learned(self, model: str, settings: BudgetSettings) -> float:
        """The learned ratio itself, as the last response moved it; until then where the core starts."""
        return self._ratios.get(model) or settings.ratio_for(model)

    def observe(self, model: str, counted: int, reported: object, settings: BudgetSettings) -> float | None:
        """
        Fold one response's usage into the ratio; ``None`` when ignored: no usage, tiny requests, and ratios far outside
        the bounds (mock responses, providers that bill cached tokens separately) say nothing about counting.
        """
        if not is_int(reported) or reported <= 0 or counted < MIN_COUNTED:
            return None
        low, high = settings.calibration_bounds
        observed = reported / counted
        if not low / 2 <= observed <= high * 2:
            return None
        current = self.learned(model, settings)
        updated = min(high, max(low, current + settings.calibration_weight * (observed - current)))
        self._ratios.put(model, updated)
        return updated

    def adopt(self, model: str, shared: object, settings: BudgetSettings) -> None:
        """Take a ratio another replica wrote, if it is a sane number."""
        low, high = settings.calibration_bounds
        if is_number(shared) and low <= shared <= high:
            self._ratios.put(model, float(shared))

    async def learn(self, report: Mapping[str, Any], reported: object, settings: BudgetSettings, cache: Any) -> None:
        """Fold a success's usage into the ratio of the report's model; share it when there is a cache."""
        model = str(report.get("model"))
        updated = self.observe(model, int(report.get("tokens_after") or 0), reported, settings)
        if updated is not None:
            log.debug("token_ratio_learned", model=model, ratio=round(updated, 4))
            if self._worth_sharing(model, updated):
                await shared_set(cache, CACHE_PREFIX + model, updated, SHARED_TTL)

    def _worth_sharing(self, model: str, ratio: float) -> bool:
        """A ratio moved by 0.5% or more since this replica last shared it, or one that went unshared for a while."""
        now = time.monotonic()
        last = self._shared.get(model)
        if last is not None and abs(ratio - last[0]) < 0.005 * last[0] and now - last[1] < REFRESH_SECONDS:
            return False
        self._shared.put(model, (ratio, now))
        return True

    async def learn_from(
        self,
        kwargs: dict[str, Any],
        response: Any,
        settings: BudgetSettings,
        cache: Any,
        served: BudgetReport | None = None,
    ) -> None:
        """
        Only a response to a request this plugin counted, in its format, says how the provider counts; a report of the
        size gate's bound (``tokens_exact`` false) gives way to ``served``, this replica's, once that is counted.
        """
        payload = kwargs.get("standard_logging_object") or {}
        counted_as = format_of_call(payload.get("call_type") or kwargs.get("call_type"))
        report = report_in(payload.get("metadata")) or report_in((kwargs.get("litellm_params") or {}).get("metadata"))
        if report is not None and report.get("tokens_exact") is False:
            report = served.as_dict() if served is not None and served.tokens_exact else None
        if (
            report is not None
            and report.get("format", "chat") == counted_as
            and report.get("action") in {"passthrough", "trimmed"}
        ):
            await self.learn(report, reported_prompt_tokens(kwargs, response), settings, cache)

    async def refresh(self, cache: Any, model: str, settings: BudgetSettings) -> None:
        self.adopt(model, await shared_get(cache, CACHE_PREFIX + model), settings)

    def due_for_refresh(self, model: str) -> bool:
        """Whether the shared value of ``model`` should be read again (at most every few seconds)."""
        now = time.monotonic()
        last = self._refreshed.get(model)
        if last is not None and now - last < REFRESH_SECONDS:
            return False
        self._refreshed.put(model, now)
        return True


def reported_prompt_tokens(kwargs: dict[str, Any], response: Any) -> object:
    """``usage.prompt_tokens`` of a success: from the logging payload, else from the response."""
    payload = kwargs.get("standard_logging_object") or {}
    tokens = payload.get("prompt_tokens") if isinstance(payload, dict) else None
    if is_int(tokens) and tokens > 0:
        return tokens
    usage = getattr(response, "usage", None)
    return getattr(usage, "prompt_tokens", None)
