"""The operator's router: which fallbacks a model group has, and the largest window they lead to."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .targets import Target, deployment_windows, group_deployments

#: Where LiteLLM looks for fallbacks after a context-window error, in its order.
FALLBACK_KEYS = ("context_window_fallbacks", "fallbacks")


def has_fallbacks(group: str, request: Mapping[str, Any], router: Any) -> bool:
    """
    Whether LiteLLM would retry this group elsewhere after a context-window error.

    Then a request that cannot fit the group is left for the router, so a bigger model can
    answer it; otherwise it is refused at once, with the report.
    """
    return next(_fallback_groups(group, request, router), None) is not None


def fallback_window(target: Target, request: Mapping[str, Any], router: Any) -> int | None:
    """The largest window the router's fallbacks lead to, when the settings put them first."""
    return largest_fallback_window(target.group, request, router) if target.settings.prefer_fallbacks else None


def leads_to_bigger_window(target: Target, request: Mapping[str, Any], router: Any) -> bool:
    """Whether a fallback has a bigger window than ``target``: then nothing is trimmed for it here."""
    bigger = fallback_window(target, request, router)
    return bigger is not None and bigger > (target.window or 0)


def largest_fallback_window(group: str, request: Mapping[str, Any], router: Any) -> int | None:
    """
    The largest known window anywhere along the group's fallback chain; ``None`` without one.

    A request that does not fit its deployment goes to a fallback with a bigger window first:
    the operator configured it for exactly this, and it can read more of the request.
    """
    seen = {group}
    queue = [group]
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
        configured = request.get(key)
        if configured is None:
            configured = getattr(router, key, None)
        for entry in configured or ():
            if isinstance(entry, Mapping):
                for name in (group, "*"):
                    targets = entry.get(name)
                    yield from (
                        str(t) for t in (targets if isinstance(targets, list) else [targets] if targets else [])
                    )
