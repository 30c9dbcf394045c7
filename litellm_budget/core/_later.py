"""
A package face's names that load on first use (PEP 562's ``__getattr__``): where its modules import a
neighbour package that imports this one back, so importing them with the face finds it half loaded.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def loaded_on_use(package: str, modules: Mapping[str, str]) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package`` that loads each name in ``modules`` from its module when first asked for."""

    def __getattr__(name: str) -> object:
        module = modules.get(name)
        if module is None:
            msg = f"module {package!r} has no attribute {name!r}"
            raise AttributeError(msg)
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
