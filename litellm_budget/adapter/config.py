"""The plugin's settings: defaults, then the proxy's ``callback_settings``, then the instance's knobs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from litellm_budget.core.settings import BudgetSettings

log = structlog.get_logger("litellm_budget")

#: The key of ``callback_settings`` (proxy config), of ``model_info`` and of request metadata.
SETTINGS_KEY = "litellm_budget"


class ConfiguredSettings:
    """
    The settings in force, re-read only when the proxy's ``callback_settings`` change, so the
    request path pays one dict comparison.

    They are checked when the plugin is created: the proxy creates it while loading its
    config (``callback_settings`` are set by then), so a wrong key or value stops the proxy at
    start with a message naming it. Settings that turn wrong later (a config reload) make every
    request pass through untouched, logged once: one bad line never fails the gateway.
    """

    def __init__(self, knobs: Mapping[str, Any]) -> None:
        self._knobs = dict(knobs)
        configured = _configured()
        self._seen: tuple[object, BudgetSettings | None] = (_copy(configured), self._build(configured))

    def current(self) -> BudgetSettings | None:
        """The settings for the next request; ``None`` while the configured ones are invalid."""
        configured = _configured()
        seen, settings = self._seen
        if configured != seen:  # the request path: a comparison, no copy
            try:
                settings = self._build(configured)
            except ValueError as exc:
                log.error("settings_invalid", source="callback_settings.litellm_budget", error=str(exc))
                settings = None
            self._seen = (_copy(configured), settings)
        return settings

    def _build(self, configured: object) -> BudgetSettings:
        overrides = configured if isinstance(configured, Mapping) else {"<not a mapping>": configured}
        try:
            return BudgetSettings().updated(overrides).updated(self._knobs)
        except ValueError as exc:
            msg = f"litellm_budget: invalid settings in callback_settings.litellm_budget or ContextBudget(...): {exc}"
            raise ValueError(msg) from exc


def _configured() -> object:
    """``callback_settings.litellm_budget`` as the proxy set it (``{}`` when unset)."""
    import litellm

    return (getattr(litellm, "callback_settings", None) or {}).get(SETTINGS_KEY) or {}


def _copy(configured: object) -> object:
    """What was seen, kept apart from the live value, which the operator's config may change in place."""
    return dict(configured) if isinstance(configured, Mapping) else configured
