"""The plugin's settings in force, and whether LiteLLM's own compression owns the Anthropic Messages requests."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from litellm_budget.core.api import BudgetSettings, SettingProblem, apply_valid
from litellm_budget.logs import get_logger
from litellm_budget.process import PROCESS

from .invalid import IN_CALLBACK_SETTINGS, IN_KNOBS, SETTINGS_KEY, InvalidSetting, InvalidSettings, proxy_config_state

log = get_logger()

#: The proxy config's section whose ``litellm_budget`` entry LiteLLM hands the plugin.
CALLBACK_SETTINGS = "callback_settings"


class ConfiguredSettings:
    """
    The settings in force, re-read only when the proxy's ``callback_settings`` change. The proxy creates the plugin
    while loading its config, so a wrong key or value stops it at start (``found_at_start``); one that turns wrong later
    (a config reload) is left out and logged once: a bad line neither fails the gateway nor sends requests unfitted.
    """

    def __init__(self, knobs: Mapping[str, Any], invalid: InvalidSettings) -> None:
        self._knobs = dict(knobs)
        self._invalid = invalid
        configured = _configured()
        settings, found = self._build(configured)
        self.found_at_start = tuple(found)
        self._seen: tuple[object, BudgetSettings] = (_copy(configured), settings)

    def current(self) -> BudgetSettings:
        configured = _configured()
        seen, settings = self._seen
        if configured != seen:  # the request path: a comparison, no copy
            settings, found = self._build(configured)
            self._invalid.note(found)
            self._seen = (_copy(configured), settings)
        return settings

    def _build(self, configured: object) -> tuple[BudgetSettings, list[InvalidSetting]]:
        settings, configured_problems = apply_valid(BudgetSettings(), configured)
        settings, knob_problems = apply_valid(settings, self._knobs)
        found = [InvalidSetting(source=IN_CALLBACK_SETTINGS, problem=problem) for problem in configured_problems]
        found += [InvalidSetting(source="callback_settings", problem=problem) for problem in _misspelled_sections()]
        found += [InvalidSetting(source="config", problem=problem) for problem in _misspelled_top_level()]
        return settings, found + [InvalidSetting(source=IN_KNOBS, problem=problem) for problem in knob_problems]


def _configured() -> object:
    """``callback_settings.litellm_budget`` as the proxy set it (``{}`` when unset)."""
    import litellm

    return (getattr(litellm, "callback_settings", None) or {}).get(SETTINGS_KEY) or {}


def _misspelled_sections() -> list[SettingProblem]:
    """The ``callback_settings`` sections like ``litellm_budget`` but not it: LiteLLM ignores them without a word."""
    import litellm

    sections = getattr(litellm, "callback_settings", None) or {}
    why = f"is not a section LiteLLM gives the plugin; did you mean {SETTINGS_KEY!r}?"
    return [
        SettingProblem.of(name, sections[name], why)
        for name in sections
        if isinstance(name, str) and name != SETTINGS_KEY and _looks_like(name)
    ]


def _misspelled_top_level() -> list[SettingProblem]:
    """Top-level sections like ``callback_settings`` but not it, or the plugin's own misplaced: the proxy skips them."""
    config = proxy_config_state()
    sections = [name for name in config if isinstance(name, str)]
    problems = [
        SettingProblem.of(name, config[name], f"is not a section LiteLLM reads; did you mean {CALLBACK_SETTINGS!r}?")
        for name in sections
        if name != CALLBACK_SETTINGS and _looks_like(name, CALLBACK_SETTINGS)
    ]
    where = f"belongs under {CALLBACK_SETTINGS!r}: write {CALLBACK_SETTINGS}: {{{SETTINGS_KEY}: {{...}}}}"
    return problems + [SettingProblem.of(name, config[name], where) for name in sections if _looks_like(name)]


def _looks_like(name: str, wanted: str = SETTINGS_KEY) -> bool:
    folded = name.lower().replace("-", "_").replace(" ", "_")
    return folded == wanted or difflib.SequenceMatcher(None, folded, wanted).ratio() >= 0.85


def _copy(configured: object) -> object:
    """What was seen, kept apart from the live value, which the operator's config may change in place."""
    return dict(configured) if isinstance(configured, Mapping) else configured


# LiteLLM's ``compression_interception``, where registered, owns Anthropic Messages requests, forwarded untouched here
# (``unsupported``): two editors would read each other's placeholders as content, and offer two retrieval tools.
COMPRESSION_CALLBACK = "compression_interception"
COMPRESSION_CLASS = "CompressionInterceptionLogger"
REASON = f"{COMPRESSION_CALLBACK} is registered: LiteLLM's own compression owns Anthropic Messages requests"


def compression_registered() -> bool:
    """Whether LiteLLM's compression interception is among its callbacks (logged the first time it is seen)."""
    import litellm

    found = any(
        callback == COMPRESSION_CALLBACK or type(callback).__name__ == COMPRESSION_CLASS
        for callback in (*litellm.callbacks, *litellm.success_callback)
    )
    if found and not PROCESS.compression_said:
        PROCESS.compression_said = True
        log.warning(
            "compression_interception_registered",
            effect="Anthropic Messages requests are left to it and forwarded untouched here; chat and "
            "Responses requests are fitted here",
        )
    return found
