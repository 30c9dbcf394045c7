"""The budget a request is fitted to: the settings, the window, the limits they make."""

from __future__ import annotations

from litellm_budget.core.budget._limits import limits_for, max_tokens_to_send
from litellm_budget.core.budget._served_limit import ServedLimit, is_context_error, served_limit
from litellm_budget.core.budget._setting_problems import SettingProblem, apply_valid, closest_setting, not_a_setting
from litellm_budget.core.budget._settings import SETTING_NAMES, SHOWN_CHARS, BudgetSettings, SettingError
from litellm_budget.core.budget._window import (
    WINDOW_FIX,
    WindowLookup,
    model_map_window,
    resolve_window,
    shipped_windows,
)

__all__ = (
    "SETTING_NAMES",
    "SHOWN_CHARS",
    "WINDOW_FIX",
    "BudgetSettings",
    "ServedLimit",
    "SettingError",
    "SettingProblem",
    "WindowLookup",
    "apply_valid",
    "closest_setting",
    "is_context_error",
    "limits_for",
    "max_tokens_to_send",
    "model_map_window",
    "not_a_setting",
    "resolve_window",
    "served_limit",
    "shipped_windows",
)
