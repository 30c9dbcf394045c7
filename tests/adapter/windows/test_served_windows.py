"""
The window a deployment's backend serves: learned from its context-length error (scaled by its own
count), from a silent truncation, never from other errors; applied to later requests, for a while;
and a deployment without ``model_info`` never fitted to another deployment's window.
"""

from __future__ import annotations

from typing import Any

import litellm
import pytest

from litellm_budget import BudgetReport, BudgetSettings, ContextBudget
from litellm_budget.adapter.request.fallbacks import (
    REFIT_KEY,
    has_fallbacks,
    is_refit_of,
    open_refit,
    refit_on_any_error,
    with_refit,
)
from litellm_budget.adapter.request.targets import Target
from litellm_budget.adapter.windows import served_windows
from litellm_budget.adapter.windows.served_windows import Deployment, ServedWindows
from tests.support.builders import agent_session
from tests.support.shifted_clock import shift_module_clock

WHERE = Deployment("dep-1", "local")
SETTINGS = BudgetSettings()


def _sent(tokens: int, ratio: float = 1.0) -> BudgetReport:
    return BudgetReport(model="openai/m", policy="auto", action="passthrough", tokens_after=tokens, token_ratio=ratio)


def _target(window: int | None = 8192) -> Target:
    return Target(model="openai/m", group="local", window=window, settings=SETTINGS, window_source="deployment")


VLLM = (
    "litellm.BadRequestError: OpenAIException - This model's maximum context length is 2048 tokens. "
    "However, you requested 3000 tokens (2900 in the messages, 100 in the completion)."
)


@pytest.mark.asyncio
async def test_a_context_error_teaches_the_served_window_in_the_plugins_units() -> None:
    """The limit scaled by the plugin's count of what it sent over the backend's count of it."""
    served = ServedWindows()

    learned = await served.from_error(WHERE, Exception(VLLM), _sent(2320, ratio=1.25), SETTINGS, None)
    target = served.applied(_target(), "dep-1")

    assert learned == 2048 * 2900 // 2900  # 2320 counted at 1.25 is the backend's 2900
    assert (target.window, target.window_source) == (2048, "context_error")


@pytest.mark.parametrize(
    "error",
    [
        "litellm.RateLimitError: 429 Too Many Requests",
        "litellm.BadRequestError: messages must be a list",
        "litellm.InternalServerError: 500 internal error",
        "litellm.AuthenticationError: Invalid API key",
    ],
)
@pytest.mark.asyncio
async def test_other_errors_teach_nothing(error: str) -> None:
    served = ServedWindows()

    assert await served.from_error(WHERE, Exception(error), _sent(5000), SETTINGS, None) is None
    assert served.applied(_target(), "dep-1").window == 8192


@pytest.mark.asyncio
async def test_a_learned_window_lives_its_ttl_and_only_lowers(monkeypatch: pytest.MonkeyPatch) -> None:
    served = ServedWindows()
    await served.from_error(WHERE, Exception(VLLM), _sent(2900), BudgetSettings(learned_window_ttl=60), None)

    assert served.applied(_target(1000), "dep-1").window == 1000  # already lower: kept
    assert served.applied(_target(), "dep-2").window == 8192  # another deployment
    mapped = Target(model="openai/gpt-4o", group="local", window=None, settings=SETTINGS)
    assert served.applied(mapped, "dep-1").window == 2048  # under the model map's 128000
    shift_module_clock(monkeypatch, served_windows, 61)  # its life went by
    assert served.applied(_target(), "dep-1").window == 8192  # after its life: the configured one


@pytest.mark.asyncio
async def test_a_silent_truncation_is_learned_and_a_small_prompt_is_not() -> None:
    """Ollama's cut reads as its window; a prompt under any window's size (a template's doing) does not."""
    served = ServedWindows()

    assert await served.from_usage(WHERE, 35, _sent(900), SETTINGS, None) is False
    assert await served.from_usage(WHERE, 7000, _sent(9000), SETTINGS, None) is False  # within reason
    assert await served.from_usage(WHERE, 2048, _sent(7000), SETTINGS, None) is True
    target = served.applied(_target(), "dep-1")
    assert (target.window, target.window_source) == (2048, "truncation")


@pytest.mark.asyncio
async def test_a_conversation_whose_growth_is_not_read_was_cut() -> None:
    """A mild cut, far above ``TRUNCATED_BELOW``: the next request grew and the backend read no more of it."""
    served = ServedWindows()

    assert await served.from_usage(WHERE, 2900, _sent(2900), SETTINGS, None, "a") is False
    assert await served.from_usage(WHERE, 2990, _sent(3400), SETTINGS, None, "b") is False  # another one's
    assert await served.from_usage(WHERE, 3000, _sent(3100), SETTINGS, None, "a") is False  # grew too little
    assert await served.from_usage(WHERE, 3300, _sent(3500), SETTINGS, None, "a") is False  # read at its ratio
    assert served.learned("dep-1") is None
    assert await served.from_usage(WHERE, 3310, _sent(3900), SETTINGS, None, "a") is True
    assert served.applied(_target(), "dep-1").window == 3310


@pytest.mark.asyncio
async def test_a_deployment_without_model_info_is_fitted_to_its_own_models_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Router writes ``small``'s 4000 into LiteLLM's map entry of gpt-4o: ``big`` still gets 128000."""
    # The Router's write is process-wide: the map it writes into is this test's copy.
    monkeypatch.setattr(litellm, "model_cost", {name: dict(entry) for name, entry in litellm.model_cost.items()})
    plugin = ContextBudget()
    router = litellm.Router(
        model_list=[
            {
                "model_name": "small",
                "litellm_params": {"model": "openai/gpt-4o", "api_key": "sk-x", "mock_response": "ok"},
                "model_info": {"max_input_tokens": 4000},
            },
            {
                "model_name": "big",
                "litellm_params": {"model": "openai/gpt-4o", "api_key": "sk-x", "mock_response": "ok"},
            },
        ]
    )
    assert litellm.model_cost["gpt-4o"]["max_input_tokens"] == 4000  # what LiteLLM did to the shared map
    kwargs: dict[str, Any] = {
        "model": "openai/gpt-4o",
        "messages": agent_session(30, 700),
        "metadata": {"model_group": "big"},
        "model_info": {"id": "big-1"},
        "litellm_call_id": "big-call",
    }

    await plugin.async_pre_call_deployment_hook(kwargs, "acompletion")
    report = kwargs["metadata"]["spend_logs_metadata"]["litellm_budget"]

    assert (report["action"], report["window"], report["window_source"]) == ("passthrough", 128000, "model_map")
    del router


@pytest.mark.asyncio
async def test_a_context_error_without_a_number_teaches_a_quarter_less() -> None:
    served = ServedWindows()
    error = Exception("litellm.BadRequestError: BedrockException - Input is too long for requested model.")

    assert await served.from_error(WHERE, error, _sent(4000), SETTINGS, None) == 3000


class FallbackRouter:
    """The two fallback lists a Router holds."""

    def __init__(self) -> None:
        self.context_window_fallbacks: list[Any] | None = [{"small": ["big"]}, {"other": ["big"]}]
        self.fallbacks = [{"local": ["cloud"]}, {"*": ["anywhere"]}]


def test_the_refit_comes_first_and_the_operators_fallbacks_after_it() -> None:
    """The group itself, then its own context-window fallbacks, else its fallbacks, as LiteLLM would go on."""
    router = FallbackRouter()
    refit = {"model": "small", REFIT_KEY: "small"}

    assert with_refit("small", {}, router) == [{"small": [refit, "big"]}, {"other": ["big"]}]
    assert with_refit("local", {}, router)[0] == {"local": [{"model": "local", REFIT_KEY: "local"}]}
    assert with_refit("small", {"context_window_fallbacks": []}, router) == [{"small": [refit]}]
    router.context_window_fallbacks = None  # none configured: LiteLLM goes on to the plain fallbacks
    assert with_refit("local", {}, router)[0] == {"local": [{"model": "local", REFIT_KEY: "local"}, "cloud"]}
    assert with_refit("x", {}, router)[0] == {"x": [{"model": "x", REFIT_KEY: "x"}, "anywhere"]}
    assert not has_fallbacks("y", {"context_window_fallbacks": with_refit("y", {}, None)}, None)


def test_the_generic_fallbacks_open_to_the_refit_only_when_told() -> None:
    """A call's own copy of its fallbacks is theirs until a context error opens it; client lists are left alone."""
    router = FallbackRouter()
    copy = refit_on_any_error({}, router)

    assert copy == router.fallbacks
    assert copy is not router.fallbacks
    open_refit(copy, "local")
    open_refit(copy, "local")  # a second error of the call: still one refit, then the operator's
    assert copy == [{"local": [{"model": "local", REFIT_KEY: "local"}, "cloud"]}, {"*": ["anywhere"]}]
    assert router.fallbacks == [{"local": ["cloud"]}, {"*": ["anywhere"]}]
    other = refit_on_any_error({}, router)
    open_refit(other, "x")  # a group without its own: the ``*`` targets follow its refit
    assert other[0] == {"x": [{"model": "x", REFIT_KEY: "x"}, "anywhere"]}
    assert refit_on_any_error({"fallbacks": ["gpt-4o", "claude"]}, router) is None
    assert refit_on_any_error({"messages": "hello"}, router) is None  # nothing to refit: LiteLLM's words stay
    assert refit_on_any_error({"messages": [{"role": "user"}, 1]}, router) is None
    assert refit_on_any_error({}, None) == []
    keyed = {"router_settings_override": {"fallbacks": [{"local": ["keyed"]}]}}
    assert refit_on_any_error(keyed, router) == [{"local": ["keyed"]}]  # a key's own fallbacks win


def test_a_refit_key_is_taken_out_and_names_its_group() -> None:
    """The Router keeps a target's keys for later hops: only the named group's attempt is its refit."""
    request: dict[str, Any] = {"model": "big", REFIT_KEY: "small"}

    assert not is_refit_of(request, "big")
    assert REFIT_KEY not in request
    assert is_refit_of({REFIT_KEY: "small"}, "small")


def test_a_conversation_is_scoped_by_the_window_the_fit_resolves() -> None:
    """A hook that names the model map's window and one that looks it up keep one conversation's edits."""
    named = Target(model="openai/gpt-4o", group="g", window=128000, settings=SETTINGS)
    looked_up = Target(model="openai/gpt-4o", group="g", window=None, settings=SETTINGS)

    assert named.fit_scope == looked_up.fit_scope
    assert named.fit_scope != Target(model="openai/gpt-4o", group="g", window=4000, settings=SETTINGS).fit_scope
    assert (
        named.fit_scope
        != Target(model="openai/gpt-4o", group="g", window=128000, settings=BudgetSettings(policy="plan")).fit_scope
    )
