"""Turn a rejection into LiteLLM's ``ContextWindowExceededError``: the one place that builds it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .report import BudgetReport

if TYPE_CHECKING:
    from litellm_budget.exceptions import BudgetExceededError


def context_window_exceeded(report: BudgetReport, *, llm_provider: str | None = None) -> BudgetExceededError:
    """
    The error LiteLLM's callers already handle, carrying the report.

    LiteLLM's constructor has no ``body``, so ``param``, ``code`` and
    ``provider_specific_fields`` are set afterwards; the proxy echoes ``param`` and
    ``provider_specific_fields`` in its 400 body, and ``report`` serves Python callers.
    """
    from litellm_budget.exceptions import BudgetExceededError

    if report.action == "deferred":
        message = (
            f"litellm_budget: this request does not fit the context window of {report.model} untrimmed "
            f"({report.tokens_before} prompt tokens, budget {report.budget}, window {report.window}); "
            f"it is left to the router's fallbacks. {report.reason or ''}".rstrip()
        )
    else:
        message = (
            f"litellm_budget: this request does not fit the context window of {report.model}: "
            f"it needs {report.tokens_needed} prompt tokens after trimming ({report.tokens_before} before) "
            f"but the budget is {report.budget} (window {report.window}, {report.reserve} held back "
            f"for the answer, {report.margin} safety margin). {report.reason or ''}".rstrip()
        )
    error = BudgetExceededError(
        message=message, model=report.model, llm_provider=llm_provider or provider_of(report.model), report=report
    )
    error.param = "messages"
    error.code = "context_length_exceeded"
    error.provider_specific_fields = {"litellm_budget": report.as_dict()}
    return error


def provider_of(model: str) -> str:
    """The provider LiteLLM routes ``model`` to, or ``litellm_budget`` when it cannot tell."""
    import litellm

    try:
        return str(litellm.get_llm_provider(model)[1])
    # get_llm_provider raises several undocumented types for names it cannot route; the
    # provider only labels the error, so any failure falls back to our own name.
    except Exception:  # noqa: BLE001
        return "litellm_budget"
