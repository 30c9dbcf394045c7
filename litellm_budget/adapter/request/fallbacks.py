"""The operator's router: which fallbacks a model group has, and the largest window they lead to."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from .targets import Target, deployment_windows, group_deployments

#: Where LiteLLM looks for fallbacks after a context-window error, in its order.
FALLBACK_KEYS = ("context_window_fallbacks", "fallbacks")
#: The key of the plugin's own fallback target: the same group again, fitted to the window its backend's error
#: taught. The Router copies a target's keys into the request and keeps them for later hops: its value names the
#: group it is for, and the deployment hook takes it out.
REFIT_KEY = "litellm_budget_refit"


def with_refit(group: str, request: Mapping[str, Any], router: Any) -> list[Any]:
    """
    The request's ``context_window_fallbacks`` with the group itself first, as a target the Router tries once (a
    ``{"model": group}`` alone would count as attempted already): a backend's context-length error is then answered
    within the same client call, refitted to the window the error stated, before the operator's fallbacks.
    """
    entries = _entries(FALLBACK_KEYS[0], request, router)
    if _configured(FALLBACK_KEYS[0], request, router) is None:
        # With no context-window fallbacks configured at all, LiteLLM sends a context error to the
        # group's ``fallbacks`` (or the ``*`` ones): those come after the refit, as they would have.
        theirs = _targets(_entries(FALLBACK_KEYS[1], request, router), (group, "*"))
    else:
        theirs = _targets(entries, (group,))
    refit = {group: [{"model": group, REFIT_KEY: group}, *theirs]}
    return [refit, *(entry for entry in entries if group not in entry)]


def refit_on_any_error(request: Mapping[str, Any], router: Any) -> list[Any] | None:
    """
    A copy of the request's generic ``fallbacks`` (else the router's), which the Router reads for an error it did not
    map to a context error: ``open_refit`` puts the refit first in it only once a backend's error proved a context
    error LiteLLM left unmapped, so every other error takes the operator's fallbacks as before. ``None`` for
    client-side fallbacks (a list of models, not groups) and for messages this plugin cannot read. Where none are
    configured, LiteLLM words a failure's end "no fallback model group was found", not "No fallback was attempted".
    """
    messages = request.get("messages", [])
    if not isinstance(messages, list) or not all(isinstance(message, Mapping) for message in messages):
        return None  # nothing this plugin could refit: LiteLLM's answer to it stays its own, word for word
    configured = _configured(FALLBACK_KEYS[1], request, router) or []
    by_group = all(
        isinstance(entry, Mapping) and all(isinstance(t, list) for t in entry.values()) for entry in configured
    )
    return [dict(entry) for entry in configured] if isinstance(configured, list) and by_group else None


def open_refit(fallbacks: list[Any], group: str) -> None:
    """Put the refit of ``group`` first among its generic ``fallbacks``, before the operator's own (in place)."""
    theirs = [target for target in _targets(fallbacks, (group, "*")) if not is_refit(target)]
    fallbacks[:] = [entry for entry in fallbacks if group not in entry]
    fallbacks.insert(0, {group: [{"model": group, REFIT_KEY: group}, *theirs]})


def _configured(key: str, request: Mapping[str, Any], router: Any) -> Any:
    """The request's fallbacks of ``key``, else its key's, else the router's (``None``: none has any)."""
    configured = request.get(key)
    if configured is None:
        # A key's or team's router settings, which the proxy merges into the request after the hooks.
        override = request.get("router_settings_override")
        configured = override.get(key) if isinstance(override, Mapping) else None
    return getattr(router, key, None) if configured is None else configured


def _entries(key: str, request: Mapping[str, Any], router: Any) -> list[Mapping[str, Any]]:
    return [entry for entry in _configured(key, request, router) or () if isinstance(entry, Mapping)]


def _targets(entries: list[Mapping[str, Any]], names: tuple[str, ...]) -> list[Any]:
    """The targets of the first of ``names`` that ``entries`` have, as a list."""
    for name in names:
        found = next((entry[name] for entry in entries if name in entry), None)
        if found:
            return list(found) if isinstance(found, list) else [found]
    return []


def refit_refused(request: Mapping[str, Any]) -> Exception:
    """The refit's answer where LiteLLM mapped the error to a context error in words ``served_limit`` cannot read."""
    import litellm

    msg = "litellm_budget: the backend refused the request as over its context, and said no limit to refit it to"
    error: Exception = litellm.ContextWindowExceededError(msg, str(request.get("model")), "litellm_budget")
    return error


def is_refit_of(request: Mapping[str, Any], group: str) -> bool:
    """Whether ``request`` is the refit attempt of ``group``; the key is taken out of it either way."""
    return isinstance(request, MutableMapping) and request.pop(REFIT_KEY, None) == group


def is_refit(target: object) -> bool:
    """Whether a fallback target is the plugin's own refit of the group (``with_refit``)."""
    return isinstance(target, Mapping) and bool(target.get(REFIT_KEY))


def has_fallbacks(group: str, request: Mapping[str, Any], router: Any) -> bool:
    """Whether LiteLLM would retry this group elsewhere after a context-window error, where a bigger model may fit."""
    return next(_fallback_groups(group, request, router), None) is not None


def fallback_window(target: Target, request: Mapping[str, Any], router: Any) -> int | None:
    """The largest window the router's fallbacks lead to, when the settings put them first."""
    return largest_fallback_window(target.group, request, router) if target.settings.prefer_fallbacks else None


def leads_to_bigger_window(target: Target, request: Mapping[str, Any], router: Any) -> bool:
    """Whether a fallback has a bigger window than ``target``: then nothing is trimmed for it here."""
    bigger = fallback_window(target, request, router)
    return bigger is not None and bigger > (target.window or 0)


def largest_fallback_window(group: str, request: Mapping[str, Any], router: Any) -> int | None:
    """The largest known window along the group's fallback chain, where a request too big for the group goes first."""
    seen, queue = {group}, [group]
    largest: int | None = None
    while queue and router is not None:
        for target in _fallback_groups(queue.pop(0), request, router):
            if target in seen:
                continue
            seen.add(target)
            queue.append(target)
            windows = [window for window, _, _ in deployment_windows(target, group_deployments(router, target))]
            largest = max([*windows, *([largest] if largest is not None else [])], default=None)
    return largest


def _fallback_groups(group: str, request: Mapping[str, Any], router: Any) -> Iterator[str]:
    for key in FALLBACK_KEYS:
        for entry in _entries(key, request, router):
            for name in (group, "*"):
                targets = entry.get(name)
                listed = targets if isinstance(targets, list) else [targets] if targets else []
                yield from (str(t) for t in listed if not is_refit(t))
