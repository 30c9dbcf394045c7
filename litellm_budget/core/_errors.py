"""A rejection as LiteLLM's ``ContextWindowExceededError`` (built by ``BudgetExceededError.from_report``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from litellm_budget.core._report import BudgetReport
    from litellm_budget.exceptions import BudgetExceededError


def context_window_exceeded(report: BudgetReport, *, llm_provider: str | None = None) -> BudgetExceededError:
    """The error LiteLLM's callers already handle, carrying the report; ``llm_provider`` labels its metrics and logs."""
    from litellm_budget.exceptions import BudgetExceededError

    return BudgetExceededError.from_report(report, llm_provider=llm_provider or provider_of(report.model))


def provider_of(model: str) -> str:
    """The provider LiteLLM routes ``model`` to, or ``litellm_budget`` when it cannot tell."""
    import litellm

    try:
        return str(litellm.get_llm_provider(model)[1])
    # get_llm_provider raises undocumented types for names it cannot route; the provider only labels the error.
    except Exception:  # noqa: BLE001
        return "litellm_budget"
