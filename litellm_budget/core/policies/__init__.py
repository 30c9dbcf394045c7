"""The policies and what they work on: the ledger, the units, elision, drops, the cut, summaries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from litellm_budget.core._later import loaded_on_use
from litellm_budget.core.policies._ledger import NO_SUMMARIES, AtomLines, Derived, Draft, Entry, Ledger, SentEdits
from litellm_budget.core.policies._stored import stored_items
from litellm_budget.core.policies._summary import (
    DIGEST_CHARS,
    SummaryJob,
    block_digest,
    summaries_wanted,
    summary_fields,
    summary_job,
)
from litellm_budget.core.policies._units import Unit, layout_of, layout_of_kinds

if TYPE_CHECKING:
    from litellm_budget.core.policies._drop import drop_units
    from litellm_budget.core.policies._elide import elide_indices, superseded, threshold_base
    from litellm_budget.core.policies._registry import ELIDE_REFIT_GRAIN, POLICIES

__all__ = (
    "DIGEST_CHARS",
    "ELIDE_REFIT_GRAIN",
    "NO_SUMMARIES",
    "POLICIES",
    "AtomLines",
    "Derived",
    "Draft",
    "Entry",
    "Ledger",
    "SentEdits",
    "SummaryJob",
    "Unit",
    "block_digest",
    "drop_units",
    "elide_indices",
    "layout_of",
    "layout_of_kinds",
    "stored_items",
    "summaries_wanted",
    "summary_fields",
    "summary_job",
    "superseded",
    "threshold_base",
)

# Names loaded on first use, not with the package: ``_drop`` and ``_elide`` import ``wording/``
# modules that import ``_ledger`` back, and ``_registry`` imports ``state/``, which imports them.
__getattr__ = loaded_on_use(
    __name__,
    {
        "drop_units": "_drop",
        "elide_indices": "_elide",
        "superseded": "_elide",
        "threshold_base": "_elide",
        "ELIDE_REFIT_GRAIN": "_registry",
        "POLICIES": "_registry",
    },
)
