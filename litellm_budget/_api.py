"""The public ``fit()``: the core with LiteLLM's error for requests that cannot fit."""

from __future__ import annotations

from collections.abc import Sequence

from ._errors import context_window_exceeded
from ._fit import DEFAULT_SETTINGS, Fitted, fit_request
from ._settings import BudgetSettings
from ._types import Message, Tools


def fit(  # noqa: PLR0913 - the public signature is fixed
    messages: Sequence[Message],
    *,
    model: str,
    window: int | None = None,
    tools: Tools | None = None,
    max_tokens: int | None = None,
    settings: BudgetSettings | None = None,
) -> Fitted:
    """
    Fit a chat request into ``model``'s context window.

    Args:
        messages: OpenAI-format messages; never mutated.
        model: The model as LiteLLM names it (``openai/gpt-4o`` and ``gpt-4o`` both work).
        window: The context window in tokens; default: ``max_input_tokens`` from
            LiteLLM's model map, then ``settings.default_window``.
        tools: The request's ``tools`` schema, counted but never trimmed.
        max_tokens: The client's ``max_tokens`` / ``max_completion_tokens``.
        settings: The knobs; default ``BudgetSettings()``.

    Returns:
        A ``Fitted`` with the messages and ``max_tokens`` to send and a ``BudgetReport``.
        Malformed requests come back untouched with action ``unsupported`` and a reason;
        unknown models with action ``unknown_window``.

    Raises:
        litellm.ContextWindowExceededError: When nothing sensible fits; the report is in
            ``provider_specific_fields["litellm_budget"]`` and in ``.report``.
        ValueError: When ``window`` is not a positive int.
    """
    fitted = fit_request(
        messages, model=model, window=window, tools=tools, max_tokens=max_tokens, settings=settings or DEFAULT_SETTINGS
    )
    if fitted.report.action == "rejected":
        raise context_window_exceeded(fitted.report)
    return fitted
