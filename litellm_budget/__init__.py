"""Keep every LiteLLM chat request inside its model's context window, cache-stably."""

from __future__ import annotations

import typing

from ._api import fit
from ._fit import Fitted
from ._report import BudgetReport
from ._settings import BudgetSettings

if typing.TYPE_CHECKING:
    from ._callback import ContextBudget

    handler: ContextBudget

__all__ = [
    "BudgetReport",
    "BudgetSettings",
    "ContextBudget",
    "Fitted",
    "fit",
    "handler",
]


def __getattr__(name: str) -> typing.Any:
    # LiteLLM's CustomLogger is imported only when the plugin itself is wanted, so that
    # `fit()` and the CLI start fast. `handler` is the instance the proxy's
    # `callbacks: ["litellm_budget.handler"]` resolves to, created once.
    if name in {"ContextBudget", "handler"}:
        from . import _callback

        return getattr(_callback, name)
    if name == "__version__":
        from importlib.metadata import version

        return version("litellm-budget")
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
