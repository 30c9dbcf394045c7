"""Quantized elision: replace the text of old bulky tool and assistant outputs with a placeholder."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from litellm_budget.core.formats import ASSISTANT, TOOL
from litellm_budget.core.formats._tool_calls import CallKey, calls_made, read_path
from litellm_budget.core.policies._ledger import Draft, Entry, Ledger
from litellm_budget.core.wording._placeholders import outline_limit, placeholder_of, text_names_limit
from litellm_budget.typing import Message

_ELIDABLE_KINDS = (ASSISTANT, TOOL)
#: With ``elide_min_tokens: None``: texts above this share of the budget are bulky ...
ELIDE_MIN_SHARE = 0.09
#: ... up to this size, from an 8k window up ...
ELIDE_MIN_TOKENS = 500
#: ... and this one for the ``elide`` policy, which drops nothing, so it must elide smaller outputs to fit.
ELIDE_ONLY_MIN_TOKENS = 200


def elide_oldest(draft: Draft, ledger: Ledger, target: int, *, texts_last: bool = False) -> Draft:
    """
    Elide bulky outputs before the protected tail, stale ones (``superseded``) then oldest, until ``target``
    is saved; assistant texts after every tool output with ``texts_last``, before them where their
    placeholder names what they held. A message keeps its calls and the id it answers: tool pairs stay valid.
    """
    start, stale = _tail_start(ledger), superseded(ledger)
    order = sorted(index for index in stale if index < start) + [i for i in range(start) if i not in stale]
    if texts_last or text_names_limit(ledger):
        # Stable: each group keeps its order.
        order.sort(key=lambda index: (ledger.kinds[index] == ASSISTANT) == texts_last)
    return _elide_in(draft, ledger, order, target)


def elide_tail(draft: Draft, ledger: Ledger, target: int) -> Draft:
    """Elide bulky outputs in the protected tail, oldest first, to ``target``: so late, it keeps the cached prefix."""
    return _elide_in(draft, ledger, range(_tail_start(ledger), ledger.final), target)


def elide_indices(draft: Draft, ledger: Ledger, indices: Iterable[int]) -> Draft:
    """Elide exactly these outputs (those still present and elidable): edits a conversation keeps."""
    return _elide_in(draft, ledger, sorted(indices), target=math.inf)


def _elide_in(draft: Draft, ledger: Ledger, indices: Iterable[int], target: float) -> Draft:
    if target <= 0:
        return draft
    present = {entry.source for entry in draft.entries}.difference(draft.elided)
    saved = 0
    replacements: dict[int, Entry] = {}
    for index in indices:
        if saved >= target:
            break
        if index in present and elidable(ledger, index):
            replacements[index] = elided_entry(ledger, index)
            saved += ledger.counts[index] - replacements[index].tokens
    if not replacements:
        return draft
    return draft.replaced(replacements, elided=tuple(sorted((*draft.elided, *replacements))))


def superseded(ledger: Ledger) -> frozenset[int]:
    """
    The outputs a later identical call made stale (a file read again, a test run again), and with ``stale_reads``
    those of a file read again in any way, so they go first; once per request, as ``auto`` elides on each pass.
    """
    known = ledger.derived.elision
    if known.superseded is not None:
        return known.superseded
    fmt, keys = ledger.format, ledger.keys
    latest: dict[CallKey, str] = {}
    answers: dict[str, list[int]] = {}
    for index, message in enumerate(ledger.messages):
        for answered in fmt.answered_ids(message):
            answers.setdefault(answered, []).append(index)
    stale: set[int] = set()
    for index, message in enumerate(ledger.messages):
        for call_id, key in calls_made(fmt, message, keys[index]):
            if key in latest:
                stale.update(answers.get(latest[key], ()))
            latest[key] = call_id
        for call_id, name, arguments in fmt.calls(message) if ledger.settings.stale_reads else ():
            path = read_path(name, arguments)
            if path is not None:
                read = ("read", path)
                if read in latest and latest[read] != call_id:
                    stale.update(answers.get(latest[read], ()))
                latest[read] = call_id
    known.superseded = frozenset(stale)
    return known.superseded


def _tail_start(ledger: Ledger) -> int:
    return max(0, min(len(ledger.messages) - ledger.settings.protected_tail, ledger.final))


def elidable(ledger: Ledger, index: int) -> bool:
    return index not in ledger.layout.pinned and _facts(ledger, index)[0]


def settled_sizes(ledger: Ledger) -> Sequence[int]:
    """Each message's tokens as it would settle: elided if it is a bulky output, else as it is."""
    known = ledger.derived.elision
    if known.settled is None:
        known.settled = [tokens - _facts(ledger, i)[1] for i, tokens in enumerate(ledger.counts)]
    return known.settled


def _facts(ledger: Ledger, index: int) -> tuple[bool, int]:
    """Whether the message has a bulky text and what eliding it saves, read per request: a wider memo did not pay."""
    facts = ledger.derived.elision.facts
    found = facts.get(index)
    if found is None:
        found = facts[index] = _read_facts(ledger, index) if ledger.kinds[index] in _ELIDABLE_KINDS else (False, 0)
    return found


def _read_facts(ledger: Ledger, index: int) -> tuple[bool, int]:
    count_text, kind, threshold = ledger.counter.count_text, ledger.kinds[index], _threshold(ledger, index)
    bulky = [text for text in ledger.format.texts(ledger.messages[index]) if count_text(text) > threshold]
    outline = outline_limit(ledger)
    return bool(bulky), sum(
        count_text(text) - count_text(placeholder_of(ledger, kind, text, outline)) for text in bulky
    )


def elided_entry(ledger: Ledger, index: int) -> Entry:
    """The message at ``index`` with every bulky text replaced by its placeholder."""
    elided = ledger.derived.elision.elided
    entry = elided.get(index)
    if entry is None:
        tokens = ledger.counts[index] - _facts(ledger, index)[1]
        entry = elided[index] = Entry(index, _elided_copy(ledger, index), tokens)
    return entry


def _elided_copy(ledger: Ledger, index: int) -> Message:
    kind, outline = ledger.kinds[index], outline_limit(ledger)
    count_text, threshold = ledger.counter.count_text, _threshold(ledger, index)
    return ledger.format.map_texts(
        ledger.messages[index],
        lambda text: placeholder_of(ledger, kind, text, outline) if count_text(text) > threshold else text,
    )


def _threshold(ledger: Ledger, index: int) -> int:
    """The most tokens a text may keep unelided; fewer beside tool calls, which hold more of what comes next."""
    base = threshold_base(ledger)
    return min(base, ledger.settings.elide_step_text_min_tokens) if _opens_calling_step(ledger, index) else base


def threshold_base(ledger: Ledger) -> int:
    """The most tokens an output may have and never be elided: ``elide_min_tokens``, else a share of the budget."""
    base = ledger.settings.elide_min_tokens
    if base is None:
        # A small window elides smaller outputs: at 4k a 440-token output is a sixth of the budget.
        most = ELIDE_ONLY_MIN_TOKENS if ledger.settings.policy == "elide" else ELIDE_MIN_TOKENS
        base = min(most, round(ledger.limits.budget * ELIDE_MIN_SHARE))
    return base


def _opens_calling_step(ledger: Ledger, index: int) -> bool:
    """An assistant message that opens a step making tool calls (its calls may be items of their own after it)."""
    kinds, messages, calls = ledger.kinds, ledger.messages, ledger.format.calls
    if kinds[index] != ASSISTANT:
        return False
    step = index
    while not calls(messages[step]):
        step += 1
        if step >= len(kinds) or kinds[step] != TOOL:
            return False
    return True
