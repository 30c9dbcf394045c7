"""The settings a command runs with, checked as the plugin checks them, so a mistyped key fails the command."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from litellm_budget.adapter.settings.invalid import SETTINGS_KEY
from litellm_budget.core.api import SETTING_NAMES, BudgetSettings, SettingError, is_mapping, not_a_setting


def settings_from(config: Path | None, assignments: Sequence[str]) -> BudgetSettings:
    """
    The defaults, then ``config``'s ``callback_settings.litellm_budget``, then each ``KEY=VALUE`` of ``assignments``
    (its value read as YAML); anything it cannot use is a ``ValueError`` naming it.
    """
    settings = BudgetSettings()
    if config is not None:
        settings = _updated(settings, configured_settings(config), f"{config}: callback_settings.{SETTINGS_KEY}")
    for assignment in assignments:
        key, sep, text = assignment.partition("=")
        if not sep or not key.strip():
            msg = f"--set {assignment!r}: give a setting as KEY=VALUE, e.g. --set watermark=0.8"
            raise ValueError(msg)
        settings = _updated(settings, {key.strip(): _value(text)}, f"--set {assignment}")
    return settings


def configured_settings(config: Path) -> Mapping[str, Any]:
    """A proxy config's ``callback_settings.litellm_budget``: what the plugin would read at start."""
    import yaml

    try:
        loaded = yaml.safe_load(config.read_text(encoding="utf-8"))
    except OSError as exc:
        msg = f"{config}: cannot read the config ({exc.strerror or exc})"
        raise ValueError(msg) from exc
    except yaml.YAMLError as exc:
        msg = f"{config}: not YAML ({exc})"
        raise ValueError(msg) from exc
    section = loaded.get("callback_settings") if is_mapping(loaded) else None
    found = section.get(SETTINGS_KEY) if is_mapping(section) else None
    if not is_mapping(found):
        # Replaying the defaults under the operator's file name would report settings never used.
        msg = f"{config}: no callback_settings.{SETTINGS_KEY} mapping, so nothing to replay with"
        raise ValueError(msg)
    return found


def non_defaults(settings: BudgetSettings) -> dict[str, Any]:
    """The settings that differ from the defaults, as plain values: what a report says it ran with."""
    default = BudgetSettings()
    changed = {}
    for key in sorted(field.name for field in dataclasses.fields(settings)):
        value = getattr(settings, key)
        if value != getattr(default, key):
            changed[key] = dict(value) if isinstance(value, Mapping) else value
    return changed


def _updated(settings: BudgetSettings, overrides: Mapping[str, Any], where: str) -> BudgetSettings:
    try:
        return settings.updated(overrides)
    except SettingError as exc:
        known = exc.key in SETTING_NAMES
        msg = f"{where}: {exc}" if known else f"{where}: {exc.key!r} {not_a_setting(exc.key)}"
        raise ValueError(msg) from exc
    except TypeError as exc:  # a value no check foresaw (a list where a mapping goes): still named
        msg = f"{where}: {exc}"
        raise ValueError(msg) from exc


def _value(text: str) -> object:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text  # not YAML: the setting's own check names what it must be
