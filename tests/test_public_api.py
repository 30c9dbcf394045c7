"""The public surface: a sorted, complete __all__ and nothing exported by accident."""

from __future__ import annotations

import litellm_budget


def test_all_is_sorted_and_complete() -> None:
    """__all__ is sorted and every name in it resolves."""
    assert litellm_budget.__all__ == sorted(litellm_budget.__all__)
    for name in litellm_budget.__all__:
        assert getattr(litellm_budget, name) is not None


def test_public_names_are_exactly_all() -> None:
    """Everything public in the module is in __all__ (modules and future-imports aside)."""
    public = {
        n
        for n, v in vars(litellm_budget).items()
        if not n.startswith("_") and not isinstance(v, type(litellm_budget)) and n != "annotations"
    }

    assert public <= set(litellm_budget.__all__)


def test_version() -> None:
    """The version comes from the installed distribution."""
    assert isinstance(litellm_budget.__version__, str)
