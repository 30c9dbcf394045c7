"""An override's valid settings applied, and its wrong ones named and left out: never why a request goes unfitted."""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from litellm_budget.core._checks import is_mapping
from litellm_budget.core.budget._settings import SETTING_NAMES, BudgetSettings, SettingError, shown


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SettingProblem:
    """One setting that cannot be taken: its key, its value (as shown) and why."""

    key: str
    value: str
    reason: str

    @classmethod
    def of(cls, key: object, value: object, reason: str) -> SettingProblem:
        return cls(key=str(key), value=shown(value), reason=reason)

    def describe(self, where: str = "") -> str:
        """``where.key = value: reason``, as a message names it (``where``: the mapping it is written in)."""
        return f"{'.'.join(filter(None, (where, self.key)))} = {self.value}: {self.reason}"

    def as_dict(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "reason": self.reason}


def apply_valid(settings: BudgetSettings, overrides: object) -> tuple[BudgetSettings, tuple[SettingProblem, ...]]:
    """
    ``settings`` with every valid key of ``overrides`` applied, and the problems of the others. A key may
    be valid only beside another (``reserve_floor`` under a new ``reserve_cap``): keys are taken till none can be.
    """
    if not is_mapping(overrides):
        return settings, (SettingProblem.of("", overrides, "must be a mapping of settings"),)
    try:
        return settings.updated(overrides), ()
    except (ValueError, TypeError):
        pass  # some key is wrong: find which, below
    accepted: dict[Any, Any] = {}
    pending = dict(overrides)
    progress = True
    while progress and pending:
        progress = False
        for key, value in list(pending.items()):
            try:
                settings.updated({**accepted, key: value})
            except (ValueError, TypeError):
                continue
            accepted[key] = pending.pop(key)
            progress = True
    base = settings.updated(accepted)
    return base, tuple(_problem(base, key, value) for key, value in pending.items())


def closest_setting(key: str) -> str | None:
    """The setting ``key`` is most likely a typo of, if any is close."""
    found = difflib.get_close_matches(key, sorted(SETTING_NAMES), n=1, cutoff=0.6)
    return found[0] if found else None


def not_a_setting(key: str) -> str:
    """Why ``key`` is refused, in words: it is no setting, and the one it is most likely a typo of."""
    closest = closest_setting(key)
    return f"is not a setting (did you mean {closest!r}?)" if closest else "is not a setting"


def _problem(settings: BudgetSettings, key: object, value: object) -> SettingProblem:
    if key not in SETTING_NAMES:
        return SettingProblem.of(key, value, not_a_setting(str(key)))
    try:
        settings.updated({key: value})
    except SettingError as exc:
        reason = exc.reason if exc.key == key else f"makes {exc.key} invalid ({exc.key} {exc.reason})"
        return SettingProblem.of(key, value, reason)
    except (ValueError, TypeError) as exc:
        return SettingProblem.of(key, value, f"is not valid ({exc})")
    return SettingProblem.of(key, value, "is not valid beside the other settings given with it")
