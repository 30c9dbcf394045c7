"""
Keep every LiteLLM chat request inside its model's context window, cache-stably.

The package has three layers: ``core`` (pure: fit a list of messages), ``adapter`` (the
LiteLLM callback) and ``tools`` (the operator's CLI and the demo). Beside them: ``logs.py``,
``process.py`` (the process-wide state, one object) and ``bounded.py`` (the bounded stores of
what traffic teaches). The public names are the ones below, plus the ``typing`` and
``exceptions`` modules.
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
    # LiteLLM is imported only when the plugin or its error class is wanted, so that `fit()`
    # and the CLI start fast. `handler` is the instance the proxy's
    # `callbacks: ["litellm_budget.handler"]` resolves to, created once.
    if name in {"ContextBudget", "handler"}:
        from .adapter import callback

        return getattr(callback, name)
    if name == "BudgetGuardrail":
        # The guardrail form, ``guardrail: litellm_budget.BudgetGuardrail``: a short path, so LiteLLM
        # imports the installed package (a file beside the config would be run again for each use).
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
