"""
Keep every LiteLLM chat request inside its model's context window, cache-stably. The public names
are the ones below, plus the ``typing`` and ``exceptions`` modules.
"""

from __future__ import annotations

import typing as _typing

from litellm_budget.core.api import BudgetReport, BudgetSettings, Fitted, fit

if _typing.TYPE_CHECKING:
    from .adapter.callback import ContextBudget
    from .adapter.guardrail import BudgetGuardrail
    from .exceptions import BudgetExceededError

    handler: ContextBudget

__all__ = (
    "BudgetExceededError",
    "BudgetGuardrail",
    "BudgetReport",
    "BudgetSettings",
    "ContextBudget",
    "Fitted",
    "fit",
    "handler",
)


def __getattr__(name: str) -> _typing.Any:
    # LiteLLM is imported only when the plugin or its error class is wanted, so `fit()` and the CLI start
    # fast. `handler` is the instance the proxy's `callbacks: ["litellm_budget.handler"]` resolves to, created once.
    if name in {"ContextBudget", "handler"}:
        from .adapter import callback

        return getattr(callback, name)
    if name == "BudgetGuardrail":
        # ``guardrail: litellm_budget.BudgetGuardrail`` is a short path, so LiteLLM imports the installed
        # package (a file beside the config would be run again for each use).
        from .adapter.guardrail import BudgetGuardrail

        return BudgetGuardrail
    if name == "BudgetExceededError":
        from .exceptions import BudgetExceededError

        return BudgetExceededError
    if name == "__version__":
        from importlib.metadata import version

        return version("litellm-budget")
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
