"""
Settings that cannot be taken: those seen when the proxy or a Router starts stop it; those only a request shows (a
config reload, a key's settings, an override) are left out of it, logged once: a typo never sends it unfitted.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from litellm_budget.core.api import (
    SETTING_NAMES,
    WINDOW_FIX,
    BudgetSettings,
    SettingProblem,
    apply_valid,
    is_mapping,
    model_map_window,
    positive_int,
)
from litellm_budget.logs import get_logger

log = get_logger()

#: The key of ``callback_settings`` (proxy config), of ``model_info`` and of request metadata.
SETTINGS_KEY = "litellm_budget"
#: Where a setting is written, as a message names it.
IN_CALLBACK_SETTINGS = "callback_settings.litellm_budget"
IN_KNOBS = "ContextBudget"
IN_MODEL_INFO = "model_info.litellm_budget"
IN_REQUEST = "metadata.litellm_budget"
IN_KEY = "key metadata.litellm_budget"
IN_TEAM = "team metadata.litellm_budget"
#: A deployment's window, read by the plugin from its ``model_info``.
WINDOW_KEY = "max_input_tokens"
#: The most distinct invalid settings remembered (a client's metadata may vary without end).
REMEMBERED = 512


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class InvalidSetting:
    """One setting that cannot be taken, and where it is written: the mapping, the model group, the deployment."""

    source: str
    problem: SettingProblem
    model_group: str | None = None
    #: The deployment's ``model_info.id``, where it has one.
    deployment: str | None = None
    #: The model a request's override was for (a deployment's is its group and id).
    model: str | None = None
    #: The key or team whose metadata holds it: its alias, else its id (a key's: the hash LiteLLM logs).
    owner: str | None = None

    def describe(self) -> str:
        """``deployment 'm' (model_info.id 'd1'): model_info.litellm_budget.polcy = 'plan': is not a setting ...``."""
        where = ""
        if self.model_group is not None:
            where = f"deployment {self.model_group!r}"
            where += f" (model_info.id {self.deployment!r}): " if self.deployment else ": "
        return where + self.problem.describe(self.source)

    def as_event(self) -> dict[str, Any]:
        where = {name: getattr(self, name) for name in ("model_group", "deployment", "model", "owner")}
        return {"source": self.source, **self.problem.as_dict(), **{k: v for k, v in where.items() if v is not None}}


def deployment_settings(
    model_info: Mapping[str, Any], settings: BudgetSettings, *, group: str | None
) -> tuple[BudgetSettings, tuple[InvalidSetting, ...]]:
    """A deployment's settings: its valid ``model_info.litellm_budget`` over ``settings``; the rest, named."""
    written = model_info.get(SETTINGS_KEY)
    window = window_problem(model_info)
    if written is None and window is None:
        return settings, ()  # the common case
    info_id = model_info.get("id")
    at = functools.partial(InvalidSetting, model_group=group, deployment=None if info_id is None else str(info_id))
    applied, problems = apply_valid(settings, written if written is not None else {})
    found = [at(source=IN_MODEL_INFO, problem=problem) for problem in problems]
    if window is not None:
        found.append(at(source="model_info", problem=window))
    return applied, tuple(found)


def window_problem(model_info: Mapping[str, Any]) -> SettingProblem | None:
    """What is wrong with a deployment's ``max_input_tokens``, which the plugin reads as its window."""
    value = model_info.get(WINDOW_KEY)
    if value is None or positive_int(value) is not None:
        return None
    hint = f"; write {int(value)}" if isinstance(value, float) and value.is_integer() and value > 0 else ""
    return SettingProblem.of(WINDOW_KEY, value, f"must be a positive integer, the deployment's window{hint}")


def window_override_problem(value: object) -> SettingProblem | None:
    """What is wrong with a request's ``window`` override (it can only lower the model's window)."""
    if value is None or positive_int(value) is not None:
        return None
    return SettingProblem.of("window", value, "must be a positive integer (it can only lower the model's window)")


def deployments_invalid(deployments: Iterable[Any], settings: BudgetSettings) -> list[InvalidSetting]:
    found: list[InvalidSetting] = []
    for deployment in deployments:
        model_info = deployment.get("model_info") if is_mapping(deployment) else None
        if is_mapping(model_info):
            found += deployment_settings(model_info, settings, group=str(deployment.get("model_name")))[1]
    return found


def check_at_start(found: Sequence[InvalidSetting], router: Any, settings: BudgetSettings) -> None:
    """Raise the ``refusal`` of any invalid setting: ``found``, then ``router``'s deployments, else the proxy's."""
    deployments = proxy_config_deployments() if router is None else getattr(router, "model_list", None) or []
    invalid = [*found, *deployments_invalid(deployments, settings)]
    if invalid:
        raise refusal(invalid)
    unknown = unknown_windows(deployments, settings)
    if unknown:
        # Not a refusal (its requests go as they came, each saying so), but warned at start, where the operator looks.
        log.warning("window_unknown_at_start", model_groups=unknown, fix=WINDOW_FIX)


def unknown_windows(deployments: Iterable[Any], settings: BudgetSettings) -> list[str]:
    """
    The model groups with a deployment whose window no one knows: no ``model_info.max_input_tokens``,
    none in LiteLLM's model map, no ``default_window`` (the plugin's or the deployment's).
    """
    groups: list[str] = []
    for deployment in deployments:
        params = deployment.get("litellm_params") if is_mapping(deployment) else None
        model = params.get("model") if is_mapping(params) else None
        model_info = deployment.get("model_info") if is_mapping(deployment) else None
        model_info = model_info if is_mapping(model_info) else {}
        if not isinstance(model, str) or positive_int(model_info.get(WINDOW_KEY)) is not None:
            continue
        default = deployment_settings(model_info, settings, group=None)[0].default_window
        group = str(deployment.get("model_name"))
        if default is None and model_map_window(model) is None and group not in groups:
            groups.append(group)
    return groups


def refusal(invalid: Sequence[InvalidSetting]) -> ValueError:
    """The error that stops the proxy (or the Router's plugin) at start: every invalid setting, one a line."""
    count = f"{len(invalid)} invalid setting{'s' if len(invalid) > 1 else ''}"
    lines = [f"litellm_budget: {count}; fix or remove each before starting:"]
    lines += [f"  {entry.describe()}" for entry in invalid]
    if any(entry.problem.reason.startswith("is not a setting") for entry in invalid):
        lines.append(f"the settings are: {', '.join(sorted(SETTING_NAMES))}")
    return ValueError("\n".join(lines))


def proxy_config_deployments() -> list[Any]:
    """
    The proxy's ``model_list`` while it loads its config: LiteLLM (1.108.5) keeps the config it read before it creates
    the ``callbacks``, and builds the Router only after them. Empty outside a proxy, or before it read its config.
    """
    model_list = proxy_config_state().get("model_list")
    return list(model_list) if isinstance(model_list, list) else []


def proxy_config_state() -> Mapping[str, Any]:
    """The config the proxy read, its top-level sections (``proxy_config_deployments`` says when); else empty."""
    server = sys.modules.get("litellm.proxy.proxy_server")
    state_of = getattr(getattr(server, "proxy_config", None), "get_config_state", None)
    state = state_of() if callable(state_of) else None
    return state if is_mapping(state) else {}


class InvalidSettings:
    """The invalid settings requests showed: each logged once as ``settings_invalid``, then counted."""

    __slots__ = ("_router", "_seen")

    def __init__(self) -> None:
        self._seen: dict[InvalidSetting, int] = {}
        self._router: tuple[Any, int] | None = None

    def note(self, invalid: Iterable[InvalidSetting]) -> None:
        """Log each new one; count a repeat (a debug line at the 10th, 100th, ... time)."""
        for entry in invalid:
            times = self._seen.pop(entry, 0) + 1
            self._seen[entry] = times  # the newest last: the oldest is forgotten first
            if times == 1:
                log.error("settings_invalid", **entry.as_event(), left_out=True)
                if len(self._seen) > REMEMBERED:
                    del self._seen[next(iter(self._seen))]
            elif math.log10(times).is_integer():
                log.debug("settings_invalid_again", **entry.as_event(), times=times)

    def times(self, entry: InvalidSetting) -> int:
        """How often ``entry`` was seen (0: never, or forgotten)."""
        return self._seen.get(entry, 0)

    def check_router(self, router: Any, settings: BudgetSettings) -> None:
        """A router first seen at request time (or grown since): its deployments' invalid settings, logged."""
        model_list = getattr(router, "model_list", None)
        if router is None or not isinstance(model_list, list):
            return
        seen = (router, len(model_list))
        if self._router is None or self._router[0] is not router or self._router[1] != seen[1]:
            self._router = seen
            self.note(deployments_invalid(model_list, settings))

    def checked(self, router: Any) -> None:
        """``router`` was checked at start: no need to look at it again on first use."""
        model_list = getattr(router, "model_list", None)
        self._router = (router, len(model_list)) if isinstance(model_list, list) else None
