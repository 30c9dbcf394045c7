"""The error ``fit()`` and the plugin raise when a request cannot fit; unlike the package, it imports litellm."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import litellm

if TYPE_CHECKING:
    from litellm_budget.core._report import BudgetReport

__all__ = ("BudgetExceededError",)


class BudgetExceededError(litellm.ContextWindowExceededError):  # type: ignore[misc]  # litellm is untyped here
    """
    Nothing sensible fits the context window; ``report`` says what was measured and tried. It is a
    ``litellm.ContextWindowExceededError``, so the Router's ``context_window_fallbacks`` and callers catch it.
    """

    report: BudgetReport

    def __init__(self, message: str, model: str, llm_provider: str, *args: Any, report: BudgetReport, **kwargs: Any):
        super().__init__(message, model, llm_provider, *args, **kwargs)
        self.report = report

    @classmethod
    def from_report(cls, report: BudgetReport, *, llm_provider: str) -> BudgetExceededError:
        """
        The error for a rejected (or, for the router's fallbacks, deferred) request, its ``report`` in the
        caller's own indices. LiteLLM's constructor has no ``body``, so ``param``, ``code`` and
        ``provider_specific_fields`` are set afterwards; the proxy's 400 body echoes all but ``code``.
        """
        report = report.for_caller()
        if report.action == "deferred":
            message = (
                f"litellm_budget: this request does not fit the context window of {report.model} untrimmed "
                f"({report.tokens_before} prompt tokens, budget {report.budget}, window {report.window}); "
                f"it is left to the router's fallbacks. {report.reason or ''}".rstrip()
            )
        else:
            message = (
                f"litellm_budget: this request does not fit the context window of {report.model}: "
                f"{_size(report)}, but the budget is {report.budget} (window {report.window}, {report.reserve} "
                f"held back for the answer, {report.margin} safety margin). {report.reason or ''}".rstrip()
            )
        error = cls(message=message, model=report.model, llm_provider=llm_provider, report=report)
        error.param = "messages"
        error.code = "context_length_exceeded"
        error.provider_specific_fields = {"litellm_budget": report.as_dict()}
        return error


def _size(report: BudgetReport) -> str:
    """How big the request is, trimmed as far as the policy could; never a bigger "after" without why."""
    needed, before = report.tokens_needed, report.tokens_before
    if needed is not None and needed < before:
        return f"it needs {needed} prompt tokens after trimming ({before} before)"
    cannot = f"it has {before} prompt tokens, and trimming cannot make it smaller"
    if needed is not None and needed > before:
        return f"{cannot} (the markers and notes trimming adds would make it {needed})"
    return cannot
