"""
The pure core: the budget, counting, the policies and the report, over plain lists of messages.
It never imports the adapter or the tools, and imports ``litellm`` only lazily: for the model map,
the tokenizers it ships and the error ``fit()`` raises. The adapter and the CLI call it through
``api.py``.

The request path, in order: ``_fit.py`` (``fit_request``: check it is well-formed in
``validity/``, resolve the window in ``budget/``, take the shortcuts of ``_shortcuts.py``, count in
``counting/``, reading the format in ``formats/``) -> ``policies/`` (``elide``, ``plan``, ``auto``,
``summarize``: the ledger, the units, elision, drops, the cut, what is stored for recall) ->
``wording/`` (what the model reads of what was removed) -> ``_sending.py`` and ``_report.py``. A
request it will not trim goes through ``_untouched.py``; ``state/`` keeps a conversation's edits,
``cache/`` what a prompt cache reads, ``client_edits/`` a client's own context management. Beside
them: ``_fit_input.py`` (what a fit reads and returns), ``_errors.py`` (the one place a rejection
becomes LiteLLM's error), ``_checks.py`` and ``_canonical.py`` (the checks and the stable keys
every module uses), ``_memo.py`` (the one memo mechanism, and every memo), ``_later.py`` (names a
face loads on first use); ``budget/_served_limit.py`` reads the window a backend's error states.
"""

from __future__ import annotations

from litellm_budget.core._canonical import EXACT_KEY_CHARS, content_key, digest, digest_known, text_key
from litellm_budget.core._checks import candidate_names
from litellm_budget.core._memo import DECLARED, MEMO_OFF, MEMOS, Memo, forget_all, memo_is_off, memos
from litellm_budget.core._report import BudgetReport, format_ranges, parse_ranges, unsent

# The names of the modules above that tests use; the adapter, the CLI and the package import
# ``api.py``, and each folder's own names are in its ``__init__.py``.
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
