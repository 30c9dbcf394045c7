"""The public surface: exactly these names, the typing and exceptions modules, nothing by accident."""

from __future__ import annotations

import dataclasses
from importlib.metadata import version
from typing import get_args

import litellm
import pytest

import litellm_budget
from litellm_budget import exceptions
from litellm_budget import typing as budget_typing
from litellm_budget.core.policies import POLICIES

PUBLIC = [
    "BudgetExceededError",
    "BudgetGuardrail",
    "BudgetReport",
    "BudgetSettings",
    "ContextBudget",
    "Fitted",
    "fit",
    "handler",
]


def test_all_is_exactly_the_public_names() -> None:
    """__all__ lists the public names, sorted, and nothing else."""
    assert litellm_budget.__all__ == tuple(PUBLIC)


def test_nothing_else_is_public() -> None:
    """No other name in the package namespace lacks a leading underscore, submodules aside."""
    public = {
        name
        for name, value in vars(litellm_budget).items()
        if not name.startswith("_") and not isinstance(value, type(litellm_budget)) and name != "annotations"
    }

    assert public <= set(PUBLIC)


def test_each_name_is_what_it_says() -> None:
    """The lazy names resolve to the plugin class, its ready instance and LiteLLM's error subclass."""
    assert callable(litellm_budget.fit)
    assert isinstance(litellm_budget.handler, litellm_budget.ContextBudget)
    assert issubclass(litellm_budget.BudgetExceededError, litellm.ContextWindowExceededError)
    assert dataclasses.is_dataclass(litellm_budget.BudgetReport)
    assert dataclasses.is_dataclass(litellm_budget.BudgetSettings)
    assert dataclasses.is_dataclass(litellm_budget.Fitted)


def test_unknown_name_raises_attribute_error() -> None:
    """A misspelt name fails like any module attribute."""
    with pytest.raises(AttributeError, match="no attribute 'Handler'"):
        _ = litellm_budget.Handler  # type: ignore[attr-defined]


def test_version_is_the_distributions() -> None:
    """The version comes from the installed distribution."""
    assert litellm_budget.__version__ == version("litellm-budget")  # type: ignore[attr-defined]


def test_typing_module_names_the_policies_and_actions() -> None:
    """PolicyName lists exactly the registered policies; Action every action a report can carry."""
    assert tuple(sorted(budget_typing.__all__)) == budget_typing.__all__
    assert set(get_args(budget_typing.PolicyName)) == set(POLICIES)
    assert set(get_args(budget_typing.Action)) == {
        "passthrough",
        "trimmed",
        "rejected",
        "deferred",
        "unknown_window",
        "unsupported",
    }


def test_exceptions_module_exports_the_error() -> None:
    """The exceptions module holds the one error class, the same object the package exports."""
    assert exceptions.__all__ == ("BudgetExceededError",)
    assert exceptions.BudgetExceededError is litellm_budget.BudgetExceededError
