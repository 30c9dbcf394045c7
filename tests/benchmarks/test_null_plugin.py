"""``benchmarks/null_plugin.py`` has the plugin's hooks, so the proxy takes the same paths for it."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from litellm_budget.adapter.callback import ContextBudget

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def null_plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    sys.modules.pop("null_plugin", None)
    yield importlib.import_module("null_plugin")
    sys.modules.pop("null_plugin", None)


def public_methods(cls: type) -> dict[str, list[str]]:
    """Each public method a class defines itself, with its parameters' names."""
    return {
        name: list(inspect.signature(value).parameters)
        for name, value in vars(cls).items()
        if callable(value) and not name.startswith("_")
    }


def test_every_hook_of_the_plugin_with_its_parameters(null_plugin: ModuleType) -> None:
    assert public_methods(null_plugin.NullPlugin) == public_methods(ContextBudget)


@pytest.mark.asyncio
async def test_each_hook_leaves_the_request_as_it_came(null_plugin: ModuleType) -> None:
    handler, data, deployments = null_plugin.handler, {"messages": []}, [{"model_name": "m"}]

    assert await handler.async_pre_call_hook(None, None, data, "completion") is data
    assert await handler.async_filter_deployments("m", deployments, []) is deployments
    assert await handler.async_pre_call_deployment_hook(data, "completion") is None
    assert await handler.async_post_call_success_hook(data, None, "response") == "response"
