"""What an elided text's placeholder says of it, so the model knows what it was without its tokens."""

from __future__ import annotations

from litellm_budget.core.formats import ASSISTANT
from litellm_budget.core.policies._ledger import Ledger
from litellm_budget.core.wording._digest import OUTLINE_SHARE, outcome_of, outline_of
from litellm_budget.core.wording._marker_digest import given_messages, in_given
from litellm_budget.core.wording._names import names_beyond
from litellm_budget.core.wording._notices import placeholder_for

#: With ``outline_chars: None``, placeholders outline their text from a window of this many tokens up: below, an
#: outline's tokens bring refits and drops sooner, losing more than outlines keep. The window, not the budget, which
#: ``max_tokens`` and the learned token ratio move: an outline coming or going would move the cached prefix.
OUTLINE_MIN_WINDOW = 32_000
#: With ``text_names: None``, an elided assistant text's placeholder lists this many names from ``OUTLINE_MIN_WINDOW``
#: up, where ``auto`` elides texts before outputs: later answers take mostly names from a text, lines from an output.
TEXT_NAMES = 20


def placeholder_of(ledger: Ledger, kind: str, text: str, outline_chars: int) -> str:
    """The placeholder of ``text``: with digests on, what it was, named and defined; with recall, where it is stored."""
    limit = ledger.settings.digest_chars
    if not limit:
        placeholder = placeholder_for(kind)
    else:
        identified = outcome_of([text], limit)
        outline = outline_of([text], outline_chars)
        most = text_names_limit(ledger) if kind == ASSISTANT else 0
        if most:
            # What the model reads anyway (the quotes, the outline, the system, the task) is not named again.
            named = names_beyond(text, f"{identified}\n{outline or ''}", in_given(ledger, given_messages(ledger)), most)
            identified = identified if named is None else f"{identified}, naming {named}"
        placeholder = placeholder_for(kind, identified if outline is None else f"{identified}, defining {outline}")
    return placeholder if ledger.recall is None else ledger.recall.named_placeholder(placeholder, text)


def text_names_limit(ledger: Ledger) -> int:
    """The most names an elided assistant text's placeholder lists: ``text_names``, else by the window (as outlines)."""
    return _by_window(ledger, ledger.settings.text_names, TEXT_NAMES)


def outline_limit(ledger: Ledger) -> int:
    """The most characters a placeholder lists of the definitions its text showed (its outline)."""
    return _by_window(ledger, ledger.settings.outline_chars, round(ledger.settings.digest_chars * OUTLINE_SHARE))


def _by_window(ledger: Ledger, configured: int | None, default: int) -> int:
    """``configured`` where set, else ``default`` from ``OUTLINE_MIN_WINDOW`` up; 0 with digests off."""
    if not ledger.settings.digest_chars:
        return 0
    if configured is not None:
        return configured
    return default if ledger.limits.window >= OUTLINE_MIN_WINDOW else 0
