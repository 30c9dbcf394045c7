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
        from_config = _from_config()
        self._seen: tuple[dict[str, Any], BudgetSettings | None] = (from_config, self._build(from_config))

    def current(self) -> BudgetSettings | None:
        """The settings for the next request; ``None`` while the configured ones are invalid."""
        from_config = _from_config()
        seen, settings = self._seen
        if from_config != seen:
            try:
                settings = self._build(from_config)
            except ValueError as exc:
                log.error("settings_invalid", source="callback_settings.litellm_budget", error=str(exc))
                settings = None
            self._seen = (from_config, settings)
        return settings

    def _build(self, from_config: Mapping[str, Any]) -> BudgetSettings:
        try:
            return BudgetSettings().updated(from_config).updated(self._knobs)
        except ValueError as exc:
            msg = f"litellm_budget: invalid settings in callback_settings.litellm_budget or ContextBudget(...): {exc}"
            raise ValueError(msg) from exc


def _from_config() -> dict[str, Any]:
    import litellm

    configured = (getattr(litellm, "callback_settings", None) or {}).get(SETTINGS_KEY) or {}
    return dict(configured) if isinstance(configured, Mapping) else {"<not a mapping>": configured}
