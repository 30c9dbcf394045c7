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
#: ... and this one for the ``elide`` policy, which drops nothing, so it must elide smaller
#: outputs to fit: at 8k it fits more requests and keeps more evidence than 500, 150 or 250 did
#: on the shared sessions.
ELIDE_ONLY_MIN_TOKENS = 200


def elide_oldest(draft: Draft, ledger: Ledger, target: int, *, texts_last: bool = False) -> Draft:
    """
    Elide bulky outputs before the protected tail, stale ones first (``superseded``), then
    oldest first, until ``target`` is saved. With ``texts_last`` an assistant's own text goes
    only after every tool output, else where its placeholder names what it held
    (``text_names_limit``) before them (each group oldest first).

    The message stays, with its tool calls and the id it answers, so every tool pair stays
    valid by construction; only its bulky text is swapped for a placeholder.
    """
    start = _tail_start(ledger)
    stale = superseded(ledger)
    order = [
        *sorted(index for index in stale if index < start),
        *(index for index in range(start) if index not in stale),
    ]
    if texts_last or text_names_limit(ledger):
        # Stable: each group keeps its order.
        order.sort(key=lambda index: (ledger.kinds[index] == ASSISTANT) == texts_last)
    return _elide_in(draft, ledger, order, target)


def elide_tail(draft: Draft, ledger: Ledger, target: int) -> Draft:
    """
    Elide bulky outputs inside the protected tail, oldest first, until ``target`` is saved.

    ``auto`` and ``elide`` do this under pressure, before a drop or a rejection: the final step
    stays pinned, and an elision this close to the end keeps the cached prompt prefix, where a
    further drop would not.
    """
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
    The outputs a later call of the same tool with the same arguments made stale (a file read
    again, a test run again), and, with ``stale_reads``, those of a file read again in any way
    (``tool_calls.read_path``): what they said was said again after them, so they go first. Read
    once per request: ``auto`` elides again on each pass of its loop.
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
    """A bulky output that is not pinned."""
    return index not in ledger.layout.pinned and _facts(ledger, index)[0]


def settled_sizes(ledger: Ledger) -> Sequence[int]:
    """Each message's tokens as it would settle: elided if it is a bulky output, else as it is."""
    known = ledger.derived.elision
    if known.settled is None:
        known.settled = [tokens - _facts(ledger, i)[1] for i, tokens in enumerate(ledger.counts)]
    return known.settled


def _facts(ledger: Ledger, index: int) -> tuple[bool, int]:
    """
    Whether the message at ``index`` has a bulky text, and the tokens eliding them saves: an
    elided copy differs only in its bulky texts, so its count follows from the original's without
    building it. Read once per request for the messages a step asks about; not remembered across
    requests: a memo by content saved less than a memo must (BENCHMARKS.md §2).
    """
    facts = ledger.derived.elision.facts
    found = facts.get(index)
    if found is None:
        kind = ledger.kinds[index]
        found = (False, 0)
        if kind in _ELIDABLE_KINDS:
            found = _read_facts(ledger, index, _threshold(ledger, index))
        facts[index] = found
    return found


def _read_facts(ledger: Ledger, index: int, threshold: int) -> tuple[bool, int]:
    count_text, kind = ledger.counter.count_text, ledger.kinds[index]
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
        entry = Entry(index, _elided_copy(ledger, index), tokens)
        elided[index] = entry
    return entry


def _elided_copy(ledger: Ledger, index: int) -> Message:
    kind, outline = ledger.kinds[index], outline_limit(ledger)
    count_text, threshold = ledger.counter.count_text, _threshold(ledger, index)
    return ledger.format.map_texts(
        ledger.messages[index],
        lambda text: placeholder_of(ledger, kind, text, outline) if count_text(text) > threshold else text,
    )


def _threshold(ledger: Ledger, index: int) -> int:
    """
    The most tokens a text of the message at ``index`` may have and never be elided. The text
    an assistant writes beside its tool calls goes sooner than outputs: the call says what was
    done, and its arguments hold more of what the agent uses next than its reasoning does.
    """
    base = threshold_base(ledger)
    if _opens_calling_step(ledger, index):
        return min(base, ledger.settings.elide_step_text_min_tokens)
    return base


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
