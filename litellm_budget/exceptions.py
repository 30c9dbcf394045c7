"""
The error ``fit()`` and the plugin raise when a request cannot fit.

::

    litellm.ContextWindowExceededError     (LiteLLM's; what routers and callers already catch)
     └── BudgetExceededError               (ours, with the report that says why)

Importing this module imports litellm; ``import litellm_budget`` alone does not.
"""

from __future__ import annotations

from typing import Any

import litellm

from .core.report import BudgetReport

__all__ = ["BudgetExceededError"]


class BudgetExceededError(litellm.ContextWindowExceededError):  # type: ignore[misc]  # litellm is untyped here
    """
    Nothing sensible fits the context window; ``report`` says what was measured and tried.

    It is LiteLLM's own ``ContextWindowExceededError``, so the Router's
    ``context_window_fallbacks`` and every ``except litellm.ContextWindowExceededError`` take it.
    """

    report: BudgetReport

    def __init__(self, message: str, model: str, llm_provider: str, *args: Any, report: BudgetReport, **kwargs: Any):
        super().__init__(message, model, llm_provider, *args, **kwargs)
        self.report = report
