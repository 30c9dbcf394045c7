"""The plugin's settings: defaults, then the proxy's ``callback_settings``, then the instance's knobs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litellm_budget.core.settings import BudgetSettings

#: The key of ``callback_settings`` (proxy config), of ``model_info`` and of request metadata.
SETTINGS_KEY = "litellm_budget"


class ConfiguredSettings:
    """
    The settings in force, re-read only when the proxy's ``callback_settings`` change, so the
    request path pays one dict comparison.
    """

    def __init__(self, knobs: Mapping[str, Any]) -> None:
        self._knobs = dict(knobs)
        self._seen: tuple[dict[str, Any], BudgetSettings] = ({}, BudgetSettings().updated(self._knobs))

    def current(self) -> BudgetSettings:
        """The settings for the next request."""
        import litellm

        from_config = (getattr(litellm, "callback_settings", None) or {}).get(SETTINGS_KEY) or {}
        seen, settings = self._seen
        if from_config != seen:
            settings = BudgetSettings().updated(from_config).updated(self._knobs)
            self._seen = (dict(from_config), settings)
        return settings
