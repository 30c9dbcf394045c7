"""A request's window and settings: from deployment, group, key, team and the request itself, each over the last."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from litellm_budget.adapter.settings.invalid import (
    IN_KEY,
    IN_REQUEST,
    IN_TEAM,
    SETTINGS_KEY,
    InvalidSetting,
    deployment_settings,
    window_override_problem,
)
from litellm_budget.core.api import (
    SETTING_NAMES,
    BudgetSettings,
    FitRequest,
    MessageFormat,
    SettingProblem,
    apply_valid,
    digest,
    model_map_window,
    positive_int,
)

from .kwargs import read_metadata

if TYPE_CHECKING:
    from .shapes import Parts

#: The knobs a request may set for itself, and only when the operator allows it.
REQUEST_KNOBS = frozenset({"policy", "protected_tail", "elide_min_tokens", "watermark", "response_reserve", "window"})
#: The settings a request may not set: asking for one is refused, not invalid.
_NOT_FOR_REQUESTS = SETTING_NAMES - REQUEST_KNOBS


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """The window (``None``: look the model up) and settings one request is fitted against."""

    model: str
    group: str
    window: int | None
    settings: BudgetSettings
    #: Where ``window`` came from (``BudgetReport.window_source``); ``None``: the model map's, looked up by the fit.
    window_source: str | None = None
    refused: tuple[str, ...] = ()
    #: Settings left out of ``settings`` because they are invalid (``settings/invalid.py`` logs them once).
    invalid: tuple[InvalidSetting, ...] = ()

    @property
    def fit_scope(self) -> str:
        """
        What decides a fit besides the messages (model, window, settings): a conversation's edits are reused only under
        the same. The window as the fit resolves it, so a hook that names it and one that looks it up agree.
        """
        window = self.window or _known_window(self.model) or self.settings.default_window
        return f"{self.model}:{window}:{digest(repr(self.settings), 16)}"

    def fit_request(self, parts: Parts, fmt: MessageFormat, ratio: float | None, **known: Any) -> FitRequest:
        """The core's request for ``parts`` at the learned ``ratio`` (``None``: the settings'), plus all ``known``."""
        return FitRequest(
            parts.messages,
            model=self.model,
            window=self.window,
            window_source=self.window_source,
            tools=parts.tools,
            max_tokens=parts.max_tokens,
            settings=self.settings,
            ratio=ratio,
            fmt=fmt,
            **known,
        )


def deployment_target(kwargs: Mapping[str, Any], settings: BudgetSettings) -> Target:
    """
    The chosen deployment's window and settings. Its own ``model_info.max_input_tokens`` wins over the model map,
    which a Router may have overwritten with another deployment's value for the same backend model.
    """
    model_info = kwargs.get("model_info") or {}
    metadata = read_metadata(kwargs)
    model = str(kwargs.get("model"))
    group = str(metadata.get("model_group") or model)
    own, invalid = deployment_settings(model_info, settings, group=group)
    window = positive_int(model_info.get("max_input_tokens"))
    source = None if window is None else "deployment"
    target = Target(model=model, group=group, window=window, settings=own, invalid=invalid, window_source=source)
    return with_request_overrides(with_key_settings(target, metadata), metadata)


def group_target(group: str, deployments: Iterable[Mapping[str, Any]], settings: BudgetSettings) -> Target | None:
    """
    The largest known window among a model group's deployments, before routing (``None``: none known, the deployment
    hook decides). Whichever deployment serves the request needs at least the trimming the largest one needs, so this
    is never wrong; the Router's ``enable_pre_call_checks`` can still prefer a deployment the request fits.
    """
    known = deployment_windows(group, deployments)
    if not known:
        return None
    window, model_info, model = max(known, key=lambda item: item[0])
    own, invalid = deployment_settings(model_info, settings, group=group)
    source = "deployment" if positive_int(model_info.get("max_input_tokens")) == window else "model_map"
    return Target(model=model, group=group, window=window, settings=own, invalid=invalid, window_source=source)


def group_deployments(router: Any, group: str) -> list[Any]:
    """
    The deployments of ``group`` in ``router``, by LiteLLM 1.110's ``registry().deployments`` where there is one: its
    ``get_model_list`` warns on every call that it is deprecated, which fails the hook under ``-W error``.
    """
    if router is None:
        return []
    registry = getattr(router, "registry", None)
    found = registry().deployments(group) if callable(registry) else router.get_model_list(model_name=group)
    return list(found or [])


def pre_call_target(request: Mapping[str, Any], settings: BudgetSettings, router: Any) -> Target | None:
    """What the proxy's pre-call hook fits against (``group_target``), with the request's own overrides."""
    group = str(request.get("model"))
    target = group_target(group, group_deployments(router, group), settings)
    if target is None:
        return None
    metadata = read_metadata(request)
    return with_request_overrides(with_key_settings(target, metadata), metadata)


def deployment_windows(
    group: str, deployments: Iterable[Mapping[str, Any]]
) -> list[tuple[int, Mapping[str, Any], str]]:
    """``(window, model_info, model)`` of each deployment whose window is known."""
    known: list[tuple[int, Mapping[str, Any], str]] = []
    for deployment in deployments:
        model_info = deployment.get("model_info") or {}
        model = str((deployment.get("litellm_params") or {}).get("model", group))
        window = positive_int(model_info.get("max_input_tokens")) or _known_window(model)
        if window is not None:
            known.append((window, model_info, model))
    return known


#: Where the proxy puts the metadata of the request's virtual key and of its team, for every hook
#: (a client cannot write them: the proxy replaces what a body sends under these names).
KEY_METADATA = ("user_api_key_metadata", "user_api_key_alias", "user_api_key_hash")
TEAM_METADATA = ("user_api_key_team_metadata", "user_api_key_team_alias", "user_api_key_team_id")


def with_key_settings(target: Target, metadata: Mapping[str, Any]) -> Target:
    """
    Apply ``litellm_budget: {...}`` of the request's team metadata, then of its key's, over the deployment's: every
    setting a deployment takes, plus ``window``. What cannot be taken is ``invalid``, logged once with the key or team.
    """
    for source, (field, alias, identity) in ((IN_TEAM, TEAM_METADATA), (IN_KEY, KEY_METADATA)):
        written = metadata.get(field)
        wanted = written.get(SETTINGS_KEY) if isinstance(written, Mapping) else None
        if wanted is not None:
            owner = metadata.get(alias) or metadata.get(identity)
            target = overridden(target, wanted, source, owner=None if owner is None else str(owner))
    return target


def with_request_overrides(target: Target, metadata: Mapping[str, Any]) -> Target:
    """
    Apply the request's own ``metadata.litellm_budget`` where the operator allows it: a few knobs, and a ``window``
    that can only lower the model's, so a client never makes the gateway forward more than the model takes. Other
    settings are ``refused``, unknown keys and bad values ``invalid``: both are left out, the rest applied.
    """
    wanted = metadata.get(SETTINGS_KEY)
    if not isinstance(wanted, Mapping) or not wanted:
        return target
    if not target.settings.allow_request_overrides:
        return dataclasses.replace(target, refused=tuple(sorted(map(str, wanted))))
    refused = tuple(sorted(str(key) for key in wanted if key in _NOT_FOR_REQUESTS))
    taken = {key: value for key, value in wanted.items() if key not in _NOT_FOR_REQUESTS}
    return dataclasses.replace(overridden(target, taken, IN_REQUEST), refused=refused)


def overridden(target: Target, wanted: object, source: str, *, owner: str | None = None) -> Target:
    """``target`` with ``wanted``'s valid settings applied, and its ``window`` where lower; the rest is ``invalid``."""
    if not isinstance(wanted, Mapping):
        settings, problems = apply_valid(target.settings, wanted)  # the problem: not a mapping
        return _with_invalid(target, settings, problems, source, owner)
    settings, problems = apply_valid(target.settings, {k: v for k, v in wanted.items() if k != "window"})
    window_problem = window_override_problem(wanted.get("window"))
    requested = positive_int(wanted.get("window"))
    if requested is not None:
        ceiling = target.window or _known_window(target.model) or target.settings.default_window
        if ceiling is None or requested < ceiling:
            target = dataclasses.replace(target, window=requested, window_source="override")
        else:
            target = dataclasses.replace(target, window=ceiling)
    return _with_invalid(target, settings, (*problems, *([window_problem] if window_problem else [])), source, owner)


def _with_invalid(
    target: Target, settings: BudgetSettings, problems: Iterable[SettingProblem], source: str, owner: str | None
) -> Target:
    invalid = tuple(
        InvalidSetting(source=source, problem=problem, model_group=target.group, model=target.model, owner=owner)
        for problem in problems
    )
    return dataclasses.replace(target, settings=settings, invalid=target.invalid + invalid)


def _known_window(model: str) -> int | None:
    try:
        return model_map_window(model)
    # Same reasoning as in fit: the model map is LiteLLM's; a failed lookup means "unknown".
    except Exception:  # noqa: BLE001
        return None
