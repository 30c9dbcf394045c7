"""The policies and what they work on: the ledger, the units, elision, drops, the cut, summaries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from litellm_budget.core._later import loaded_on_use
from litellm_budget.core.policies._ledger import Derived, Ledger, SentEdits
from litellm_budget.core.policies._summary import DIGEST_CHARS, SummaryJob, block_digest, summary_job
from litellm_budget.core.policies._units import layout_of, layout_of_kinds

if TYPE_CHECKING:
    from litellm_budget.core.policies._elide import superseded
    from litellm_budget.core.policies._registry import ELIDE_REFIT_GRAIN, POLICIES

__all__ = (
    "DIGEST_CHARS",
    "ELIDE_REFIT_GRAIN",
    "POLICIES",
    "Derived",
    "Ledger",
    "SentEdits",
    "SummaryJob",
    "block_digest",
    "layout_of",
    "layout_of_kinds",
    "summary_job",
    "superseded",
)

# Loaded on first use: ``_elide`` imports ``wording/`` and ``_registry`` ``state/``, which import modules here back.
__getattr__ = loaded_on_use(
    __name__, {"superseded": "_elide", "ELIDE_REFIT_GRAIN": "_registry", "POLICIES": "_registry"}
)
