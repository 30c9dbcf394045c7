"""
No policy keeps less of the evidence than the release before issue 20 did (``dfe976d``), on the
shared sessions replayed as the plugin runs them (with conversation state): issue 20's "no policy
loses recall". Without ../shared/sessions, the made sessions keep no less than they keep today.
A change that keeps less has to be measured and the floor moved on purpose.
"""

from __future__ import annotations

import pytest

from benchmarks.lab.evidence import recall_of, session_evidence
from litellm_budget import BudgetSettings
from litellm_budget.core.api import FitRequest, fit_request
from litellm_budget.tools.replay import Remembered
from litellm_budget.tools.sessions import requests_of
from tests.conftest import SessionSet

pytestmark = pytest.mark.sessions

#: (policy, window): learned strings kept over all 785 requests, then those of them that are old,
#: as ``dfe976d`` kept them (BENCHMARKS §1, the "before" rows: 2,865 learned, 650 old).
BEFORE_ISSUE_20 = {
    ("auto", 8000): (2317, 245),
    ("auto", 16_000): (2700, 491),
    ("auto", 32_000): (2791, 576),
    ("plan", 8000): (2270, 218),
    ("plan", 16_000): (2639, 453),
    ("plan", 32_000): (2806, 591),
    ("elide", 8000): (1410, 261),
    ("elide", 16_000): (2402, 502),
    ("elide", 32_000): (2848, 633),
}

#: The same on this repository's made sessions (151 requests), a little under what they keep (this
#: test with -s and LITELLM_BUDGET_SESSIONS=/nonexistent): auto 274, 112 at 8k; 320, 155 at 16k;
#: 346, 181 at 32k; plan 259, 98; 315, 150; 334, 169; elide 251, 96; 317, 152; 352, 187. Plan's
#: floors moved with its own digest and names shares (0.15 and 0.02; the CHANGELOG says why): with the
#: shares of the other policies (0.11 and 0.08) it keeps 273, 110; 323, 158; 340, 175 here, as
#: before, while on the shared sessions those shares gain it 0.12 to 0.16 of the old evidence.
MADE = {
    ("auto", 8000): (270, 110),
    ("auto", 16_000): (315, 150),
    ("auto", 32_000): (340, 175),
    ("plan", 8000): (255, 95),
    ("plan", 16_000): (310, 145),
    ("plan", 32_000): (330, 165),
    ("elide", 8000): (245, 90),
    ("elide", 16_000): (310, 150),
    ("elide", 32_000): (345, 180),
}


@pytest.mark.parametrize(("policy", "window"), list(BEFORE_ISSUE_20))
def test_no_policy_keeps_less_evidence_than_before_issue_20(replay_set: SessionSet, policy: str, window: int) -> None:
    settings = BudgetSettings(policy=policy)  # type: ignore[arg-type]
    kept = old_kept = 0
    for messages in replay_set.sessions.values():
        remembered = Remembered(settings)
        for request, evidence in zip(requests_of(messages), session_evidence(messages), strict=True):
            previous = remembered.previous
            fitted = fit_request(
                FitRequest(request, model="gpt-4o", window=window, settings=settings, previous=previous)
            )
            remembered.sent(request, fitted)
            recall = recall_of(evidence, None if fitted.report.action == "rejected" else fitted.messages)
            kept += recall.kept
            old_kept += recall.old_kept

    floor_all, floor_old = (BEFORE_ISSUE_20 if replay_set.name == "shared" else MADE)[(policy, window)]
    print(f"{replay_set.name} {policy} {window}: kept {kept}, old {old_kept}")  # the figures, shown with -s
    assert kept >= floor_all
    assert old_kept >= floor_old
