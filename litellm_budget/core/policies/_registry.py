"""The policies, each a composition of the elide, drop and cut steps, and the registry that names them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from litellm_budget.core.counting._tokens import REPLY_PRIMING
from litellm_budget.core.formats import SYSTEM
from litellm_budget.core.policies._cut import cut_to_fit
from litellm_budget.core.policies._drop import digest_to_fit, drop_oldest, drop_units, units_worth
from litellm_budget.core.policies._elide import elide_oldest, elide_tail, settled_sizes
from litellm_budget.core.policies._ledger import Draft, Ledger, Policy
from litellm_budget.core.policies._summary import with_summaries
from litellm_budget.core.policies._units import Unit
from litellm_budget.core.state._conversation import with_state
from litellm_budget.typing import PolicyName

#: With conversation state, a refit of ``auto`` that only elides saves to this share of a quantum.
AUTO_REFIT_GRAIN = 1 / 8
#: ... and one of ``elide``, which also elides assistant text: a finer grain, or whole quanta, made its
#: refits elide the newest file views, which the next answers quote, where outputs alone had room.
ELIDE_REFIT_GRAIN = 1 / 2


def fit_elide(ledger: Ledger) -> Draft:
    """
    The ``elide`` policy: elide oldest first to the quantized target, tool outputs before assistant texts;
    still over the budget, inside the protected tail too: a rejection sends nothing, this still answers.
    """
    target = _elision_target(ledger, ledger.total, dropping=False, grain=ELIDE_REFIT_GRAIN)
    draft = elide_oldest(Draft.of(ledger), ledger, target, texts_last=True)
    return elide_tail(draft, ledger, draft.total - ledger.limits.budget)


def fit_plan(ledger: Ledger) -> Draft:
    """The ``plan`` policy: drop the oldest whole turns to the quantized target, keeping the task where it fits."""
    draft = drop_oldest(Draft.of(ledger), ledger, ledger.layout.turns, ledger.limits.target(ledger.total))
    return _cut_if_over(_with_task(draft, ledger), ledger)


def _with_task(draft: Draft, ledger: Ledger) -> Draft:
    """The draft with the task kept out of its dropped turn where it fits: an agent's whole run is one turn."""
    task = ledger.layout.first_user
    if task is None or task not in draft.dropped or draft.total + ledger.counts[task] > ledger.limits.watermark:
        return draft
    dropped = set(draft.dropped)
    rest = [kept for kept in (tuple(i for i in turn if i != task) for turn in ledger.layout.turns) if kept]
    return drop_units(Draft.of(ledger), ledger, [turn for turn in rest if dropped.issuperset(turn)])


def fit_auto(ledger: Ledger) -> Draft:
    """
    The ``auto`` policy, the default. Elision keeps the most context, so units are dropped only when
    eliding every bulky output could not reach the watermark, counted on that settled size, which only
    grows, so the dropped set holds still for a quantum of growth. Under more pressure the protected
    tail is elided before more is dropped (it keeps the cached prefix); cutting is the last resort.
    """
    limits, steps, settled = ledger.limits, ledger.layout.steps, settled_sizes(ledger)
    count = units_worth(steps, settled.__getitem__, limits.target(ledger.tools_and_priming + sum(settled)), ledger)
    draft = _drop_then_elide(ledger, steps[:count])
    while draft.total > limits.budget and count < len(steps):
        # A heavy tail can still overflow: drop another block (stateless, the next request may give it back).
        tokens = {entry.source: entry.tokens for entry in draft.entries}
        count += max(1, units_worth(steps[count:], tokens.__getitem__, limits.target(draft.total), ledger))
        draft = _drop_then_elide(ledger, steps[:count])
    return _cut_if_over(draft, ledger)


def _cut_if_over(draft: Draft, ledger: Ledger) -> Draft:
    """The last resort, when the draft still overflows: the marker's digest shortens first, then the cut."""
    if draft.total <= ledger.limits.budget:
        return draft
    return cut_to_fit(digest_to_fit(draft, ledger), ledger)


def _drop_then_elide(ledger: Ledger, units: Sequence[Unit]) -> Draft:
    draft = drop_units(Draft.of(ledger), ledger, units)
    draft = elide_oldest(draft, ledger, _elision_target(ledger, draft.total, dropping=bool(units)))
    return elide_tail(draft, ledger, draft.total - ledger.limits.budget)


def _elision_target(ledger: Ledger, total: int, *, dropping: bool, grain: float = AUTO_REFIT_GRAIN) -> int:
    """
    What elision saves from ``total``: whole quanta, so a stateless fit holds still for a quantum of growth.
    With conversation state the kept edits hold still by themselves, so a refit that only elides lands within
    ``grain`` of a quantum under the watermark: whole quanta elided every output before the tail, the newest
    that the next answers quote too. A drop keeps whole quanta: it moves the marker and re-prefills after it.
    """
    limits = ledger.limits
    if dropping or not ledger.settings.conversation_state:
        return limits.target(total)
    return limits.target(total, grain=round(limits.quantum * grain))


def _explain_elide(_ledger: Ledger) -> str:
    return "elide: nothing else may be elided (system, user and the last messages stay)"


def _explain_dropping(ledger: Ledger) -> str:
    kept = [i for i in sorted(ledger.layout.pinned) if ledger.kinds[i] == SYSTEM]
    need = ledger.tools_and_priming + sum(ledger.counts[i] for i in kept)
    name = ledger.settings.policy
    if need > ledger.limits.budget:
        # Every request pays the reply priming; only a request with tools has a schema to blame.
        tools = max(ledger.tools_and_priming - REPLY_PRIMING, 0)
        priming = f"{REPLY_PRIMING} of reply priming"
        if not tools:
            return f"{name}: the system messages alone need {need} tokens ({priming} included)"
        what = "the system messages and the tools schema alone need" if kept else "the tools schema alone needs"
        return f"{name}: {what} {need} tokens ({tools} for the tools schema, {priming})"
    return f"{name}: what may not be dropped (system, question, final step) still overflows after cutting"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PolicySpec:
    """One policy: what applies it, whether it holds room back for the answer, how it explains a rejection."""

    name: PolicyName
    apply: Policy
    #: ``elide`` only rewrites old outputs: it keeps the whole window unless a reserve is asked for.
    holds_reserve: bool
    explain_rejection: Callable[[Ledger], str]


def _dropping(name: PolicyName, fit: Policy) -> PolicySpec:
    """A policy that drops: it holds a reserve, and a summary may stand for what it dropped."""
    return PolicySpec(
        name=name, apply=with_summaries(with_state(fit)), holds_reserve=True, explain_rejection=_explain_dropping
    )


POLICIES: Mapping[PolicyName, PolicySpec] = MappingProxyType(
    {
        "auto": _dropping("auto", fit_auto),
        "elide": PolicySpec(
            name="elide", apply=with_state(fit_elide), holds_reserve=False, explain_rejection=_explain_elide
        ),
        "plan": _dropping("plan", fit_plan),
        # auto whose marker is a summary: elide first, summarize what must go (core/policies/_summary.py).
        "summarize": _dropping("summarize", fit_auto),
    }
)
