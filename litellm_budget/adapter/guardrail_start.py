"""
What the guardrail form refuses at start, as a ``RuntimeError``: LiteLLM logs a guardrail's ``ValueError`` or
``TypeError`` and starts the proxy without it, which would send every request unfitted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from litellm_budget.core.api import BudgetSettings, apply_valid

from .settings.invalid import InvalidSetting, refusal

#: The class names of the two forms, compared by name: LiteLLM may load a module twice.
CALLBACK_FORM = "ContextBudget"
GUARDRAIL_FORM = "BudgetGuardrail"
#: The one event the guardrail works in: before the request is sent.
PRE_CALL = "pre_call"


class StartRefusedError(RuntimeError):
    """The guardrail cannot start as configured; the message says what to change."""


def settings_in(params: Mapping[str, Any]) -> dict[str, Any]:
    """
    The plugin's settings among the keyword arguments LiteLLM built from a guardrail's ``litellm_params``: the keys
    none of LiteLLM's own (it passes each of its guardrail parameters, most with a default, plus the config's rest).
    """
    from litellm.types.guardrails import LitellmParams

    own = {"guardrail_name", "event_hook", "default_on", "supported_event_hooks", *LitellmParams.model_fields}
    return {key: value for key, value in params.items() if key not in own}


def check_guardrail_start(name: object, mode: object, knobs: Mapping[str, Any], callbacks: Iterable[Any]) -> None:
    """Raise ``StartRefusedError``, naming the problem and its fix, where the guardrail ``name`` may not start."""
    twice = registered_twice(name, callbacks)
    if twice is not None:
        raise StartRefusedError(twice)
    if mode != PRE_CALL:
        msg = (
            f"litellm_budget: guardrail {name!r}: mode {mode!r} cannot fit a request; "
            f"write `mode: {PRE_CALL}` (the plugin fits each request before it is sent)"
        )
        raise StartRefusedError(msg)
    problems = apply_valid(BudgetSettings(), knobs)[1]
    if problems:
        source = f"guardrail {name!r}: litellm_params"
        raise StartRefusedError(str(refusal([InvalidSetting(source=source, problem=p) for p in problems])))


def registered_twice(name: object, callbacks: Iterable[Any]) -> str | None:
    """Why the guardrail ``name`` may not start beside ``callbacks`` (made before it): two would fit a request twice."""
    forms = [callback for callback in callbacks if type(callback).__name__ in {CALLBACK_FORM, GUARDRAIL_FORM}]
    if not forms:
        return None
    first = forms[0]
    if type(first).__name__ == CALLBACK_FORM:
        return (
            f"litellm_budget is registered twice: as a callback (litellm_settings.callbacks) and as the "
            f'guardrail {name!r}; a request would be fitted twice. Remove "litellm_budget.handler" from '
            f"litellm_settings.callbacks to fit by LiteLLM's guardrail rules (default_on, a request's "
            f"guardrails, a key's or team's opt-out), or remove the guardrail {name!r} to fit every request."
        )
    return (
        f"litellm_budget is registered twice: as the guardrails {first.guardrail_name!r} and {name!r}; "
        f"a request asking for both would be fitted twice. Remove the guardrail {name!r} from guardrails: "
        f"(one guardrail is on by default with default_on: true, or asked for by a request's guardrails)."
    )
