"""The one place that maps a policy's name to the function that applies it."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ._auto import fit_auto
from ._draft import Policy
from ._elide import fit_elide
from ._plan import fit_plan
from ._types import PolicyName

POLICIES: Mapping[PolicyName, Policy] = MappingProxyType({"auto": fit_auto, "elide": fit_elide, "plan": fit_plan})
