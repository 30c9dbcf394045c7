"""The marker's digest of a dropped block, remembered by atom and by block: policies price it many times a request."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TypeVar

from litellm_budget.core._memo import MEMOS
from litellm_budget.core.budget._settings import BudgetSettings
from litellm_budget.core.formats import ASSISTANT, SYSTEM, USER, MessageFormat
from litellm_budget.core.formats._tool_calls import decoded_arguments
from litellm_budget.core.policies._ledger import AtomLines, Ledger
from litellm_budget.core.policies._units import Unit
from litellm_budget.core.wording._digest import LineNamer, outputs_of, step_entries, steps_of
from litellm_budget.core.wording._names import InText, StepNames, names_in, names_line
from litellm_budget.typing import Message

_T = TypeVar("_T")
#: Each policy's ``digest_share`` and ``names_share`` where the settings leave them ``None``: ``plan`` drops whole turns
#: for every marker token, so its digest spends its room on lines, which quote what was run verbatim, and few names.
POLICY_SHARES: Mapping[str, tuple[float, float]] = MappingProxyType({"plan": (0.15, 0.02)})
#: ... and every other policy's.
SHARES = (0.11, 0.08)
#: Where ``step_entries`` starts a group of its own (a unit opens there).
_OPENERS = frozenset({USER, ASSISTANT, SYSTEM})


def marker_digest(ledger: Ledger, gone: Sequence[int], room: int | None = None) -> tuple[Sequence[str], int]:
    """What the dropped messages ``gone`` did, newest first within the digest's cap (or ``room``), and how many more."""
    settings = ledger.settings
    if not settings.digest_chars or not gone:
        return [], 0
    digest_share, names_share = shares(settings)
    cap = _room(ledger, digest_share)
    cap = cap if room is None else min(room, cap)
    if cap <= 0:
        return [], 0
    keys, kinds = ledger.keys, ledger.kinds
    names_cap = _room(ledger, names_share)
    seen = (ledger.format.name, ledger.counter.name, settings.digest_chars, cap, names_cap, settings.names_per_step)
    given = given_messages(ledger)
    key = (*seen, ledger.recall, room, hash((_picked(keys, gone), _picked(kinds, gone))), hash(_picked(keys, given)))
    found = MEMOS.block_digests.get(*key)
    if found is None:
        lines, names = _lines(ledger, gone)
        cost = lambda line: ledger.counter.count_text(line) + 1  # noqa: E731 - the one cost both share
        listed, unlisted = newest_within(lines, cost, cap)
        # Beside the lines, within their own share; where the room is short, only what the lines left of it.
        left = names_cap if room is None else min(names_cap, room - sum(map(cost, listed)))
        # What the model reads anyway (the lines, the system, the task) need not be named again.
        shown = ("\n".join(listed), in_given(ledger, given))
        line = names_line(names, shown, per_step=settings.names_per_step, cap=left, cost=cost)
        found = ((*listed, line) if line else tuple(listed), unlisted)
        MEMOS.block_digests.put(found, *key)
    return found


def in_given(ledger: Ledger, given: Sequence[int]) -> InText:
    """Whether a name is in the system or the task, searched once per name a request asks about."""
    known = ledger.derived.markers
    if known.in_given is None:
        known.in_given = InText("\n".join(t for i in given for t in ledger.format.texts(ledger.messages[i])))
    return known.in_given


def given_messages(ledger: Ledger) -> tuple[int, ...]:
    """The messages every fit keeps as they are: the system ones and the task (the first user message)."""
    known = ledger.derived.markers
    if known.given is None:
        kinds = ledger.kinds
        task = next((i for i, kind in enumerate(kinds) if kind == USER), None)  # the layout's first_user, unread
        known.given = tuple(i for i, kind in enumerate(kinds) if kind == SYSTEM or i == task)
    return known.given


def shares(settings: BudgetSettings) -> tuple[float, float]:
    """``digest_share`` and ``names_share``, each the policy's own (``POLICY_SHARES``) where it is ``None``."""
    digest, names = POLICY_SHARES.get(settings.policy, SHARES)
    return (
        digest if settings.digest_share is None else settings.digest_share,
        names if settings.names_share is None else settings.names_share,
    )


def _room(ledger: Ledger, share: float) -> int:
    """
    ``share`` of the prompt's room in the window, in tokens: not of the budget, which moves with the learned token
    ratio and would move the cached prefix with it.
    """
    return int((ledger.limits.window - ledger.limits.reserve - ledger.limits.margin) * share)


def _lines(ledger: Ledger, gone: Sequence[int]) -> tuple[list[str], list[StepNames]]:
    """
    ``step_entries`` of the messages ``gone``, from their atoms' lines where that reads the same: where ``gone`` is
    whole atoms that each open a group (so no group spans two) and no atom answers a call another makes (a call reads
    its outputs from the whole block). That is every block a policy drops; anything else is read whole.
    """
    atoms = _atoms_in(ledger, gone)
    facts = None if atoms is None else [_atom_lines(ledger, atom) for atom in atoms]
    if facts is None or not _answered_within(facts):
        fmt, messages, kinds = ledger.format, [ledger.messages[i] for i in gone], [ledger.kinds[i] for i in gone]
        lines = step_entries(fmt, messages, kinds, ledger.settings.digest_chars, _namer(ledger))
        return lines, step_names(fmt, messages, kinds)
    return [line for lines, _, _, _ in facts for line in lines], [names for *_, held in facts for names in held]


def _atoms_in(ledger: Ledger, gone: Sequence[int]) -> list[Unit] | None:
    """The atoms ``gone`` is made of, in order; ``None`` when it is not whole atoms that each open a group."""
    wanted = set(gone)
    atoms = [atom for atom in ledger.layout.atoms if atom[0] in wanted and wanted.issuperset(atom)]
    if [index for atom in atoms for index in atom] != list(gone):
        return None
    if any(ledger.kinds[atom[0]] not in _OPENERS for atom in atoms[1:]):
        return None
    return atoms


def _atom_lines(ledger: Ledger, atom: Unit) -> AtomLines:
    known = ledger.derived.markers.atom_lines
    found = known.get(atom)
    if found is not None:
        return found
    fmt, keys, kinds, limit = ledger.format, ledger.keys, ledger.kinds, ledger.settings.digest_chars
    key = (fmt.name, limit, ledger.recall, hash((_picked(keys, atom), _picked(kinds, atom))))
    found = MEMOS.atom_lines.get(*key)
    if found is None:
        messages = [ledger.messages[i] for i in atom]
        atom_kinds = [kinds[i] for i in atom]
        lines = tuple(step_entries(fmt, messages, atom_kinds, limit, _namer(ledger)))
        made = frozenset(call_id for message in messages for call_id, _, _ in fmt.calls(message))
        answered = frozenset(answered for message in messages for answered in fmt.answered_ids(message))
        found = (lines, made, answered, tuple(step_names(fmt, messages, atom_kinds)))
        MEMOS.atom_lines.put(found, *key)
    known[atom] = found
    return found


def _namer(ledger: Ledger) -> LineNamer | None:
    return None if ledger.recall is None else ledger.recall.named_line


def _picked(values: Sequence[_T], indices: Sequence[int]) -> tuple[_T, ...]:
    """``values`` at ``indices``, a tuple built in C: a block of hundreds of messages is keyed in microseconds."""
    if len(indices) == 1:
        return (values[indices[0]],)
    return operator.itemgetter(*indices)(values) if indices else ()


def _answered_within(facts: Sequence[AtomLines]) -> bool:
    """No atom answers a call another atom makes."""
    owner: dict[str, int] = {}
    for index, (_, _, answered, _) in enumerate(facts):
        for call_id in answered:
            owner[call_id] = index if owner.get(call_id, index) == index else -1
    return all(owner.get(call_id, index) == index for index, (_, made, _, _) in enumerate(facts) for call_id in made)


def step_names(fmt: MessageFormat, messages: Sequence[Message], kinds: Sequence[str]) -> list[StepNames]:
    """The names of each action of ``messages`` as ``step_entries`` lists them: a call's arguments' and output's."""
    outputs = outputs_of(fmt, messages)
    found: list[StepNames] = []
    for group in steps_of(kinds):
        step = [messages[i] for i in group]
        calls = [call for message in step for call in fmt.calls(message)]
        for call_id, _, arguments in calls:
            found.append((names_in(_strings(decoded_arguments(arguments))), names_in(outputs.get(call_id, ()))))
        if not calls:
            found.append(((), names_in(t for message in step for t in fmt.texts(message))))
    return found


def _strings(value: object) -> Iterator[str]:
    """Every string in a decoded value, its keys' too (a patch's path may be one)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def newest_within(entries: Sequence[str], cost: Callable[[str], int], cap: int) -> tuple[list[str], int]:
    """The newest ``entries`` costing at most ``cap`` in all, in order, and how many older ones are left out."""
    kept: list[str] = []
    spent = 0
    for entry in reversed(entries):
        spent += cost(entry)
        if spent > cap:
            break
        kept.append(entry)
    return kept[::-1], len(entries) - len(kept)
