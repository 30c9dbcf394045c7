"""
The pure core: the budget, counting, the policies and the report, over plain lists of messages. It never
imports the adapter or the tools, and ``litellm`` only lazily (the model map, its tokenizers, the error
``fit()`` raises); the layers above call it through ``api.py``, and a request's way starts at ``_fit.py``.
"""

from __future__ import annotations

from litellm_budget.core._canonical import EXACT_KEY_CHARS, content_key, digest, digest_known, text_key
from litellm_budget.core._checks import candidate_names
from litellm_budget.core._memo import DECLARED, MEMO_OFF, MEMOS, Memo, forget_all, memo_is_off, memos
from litellm_budget.core._report import BudgetReport, format_ranges, parse_ranges, unsent

# What tests use of the modules above; the layers above import ``api.py``.
__all__ = (
    "DECLARED",
    "EXACT_KEY_CHARS",
    "MEMOS",
    "MEMO_OFF",
    "BudgetReport",
    "Memo",
    "candidate_names",
    "content_key",
    "digest",
    "digest_known",
    "forget_all",
    "format_ranges",
    "memo_is_off",
    "memos",
    "parse_ranges",
    "text_key",
    "unsent",
)
