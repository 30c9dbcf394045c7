"""Invariants of every policy on generated conversations."""

from __future__ import annotations

import copy
from typing import Any

import litellm
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from litellm_budget import BudgetSettings, fit
from litellm_budget.core import parse_ranges
from litellm_budget.core.counting import counter_for
from litellm_budget.core.policies import layout_of
from litellm_budget.core.validity import SYSTEM_ROLES
from litellm_budget.core.validity import chat_unsupported as unsupported_reason
from tests.support.builders import tokens_of
from tests.support.strategies import conversations

COUNTER = counter_for("gpt-4o")
POLICIES = st.sampled_from(["auto", "plan", "elide"])
WINDOWS = st.integers(300, 60_000)
MAX_TOKENS = st.one_of(st.none(), st.integers(0, 20_000))
_WORDS = "the is with to for and it as in on of that "


@settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(messages=conversations(), policy=POLICIES, window=WINDOWS, max_tokens=MAX_TOKENS)
# Found in CI: a task of several short text parts got one cut note per part and was rejected.
@example(
    messages=[
        {
            "role": "user",
            "content": [{"type": "text", "text": _WORDS * repeats} for repeats in (3, 3, 50)],
        },
        {"role": "user", "content": [{"type": "text", "text": ""}]},
        {"role": "user", "content": [{"type": "text", "text": ""}]},
    ],
    policy="auto",
    window=300,
    max_tokens=None,
)
def test_invariants(messages: list[dict[str, Any]], policy: str, window: int, max_tokens: int | None) -> None:
    """Fits or raises; pairs valid; input kept; deterministic; idempotent; system and final kept."""
    options = BudgetSettings(policy=policy)  # type: ignore[arg-type]
    snapshot = copy.deepcopy(messages)
    try:
        fitted = fit(messages, model="gpt-4o", window=window, max_tokens=max_tokens, settings=options)
    except litellm.ContextWindowExceededError as error:
        assert messages == snapshot
        report = error.report
        event(f"{policy}:rejected")
        assert report.tokens_after > report.budget
        if policy == "auto":
            _assert_rejection_was_unavoidable(messages, report.budget)
        return

    out, report = fitted.messages, fitted.report
    event(f"{policy}:{report.action}")
    assert messages == snapshot
    assert report.tokens_after <= report.budget
    assert report.tokens_after == tokens_of(out)
    assert unsupported_reason(out, None, fitted.max_tokens) is None
    assert [m for m in out if m["role"] in SYSTEM_ROLES and m in messages] == [
        m for m in messages if m["role"] in SYSTEM_ROLES
    ]
    final_index = len(messages) - 1
    assert out[-1] is messages[-1] or final_index in parse_ranges(report.cut_at)
    if fitted.max_tokens is not None:
        assert report.tokens_after + fitted.max_tokens + report.margin <= window or fitted.max_tokens == max_tokens

    again = fit(messages, model="gpt-4o", window=window, max_tokens=max_tokens, settings=options)
    assert again.messages == out
    assert again.report.as_dict() | {"duration_ms": 0} == report.as_dict() | {"duration_ms": 0}

    twice = fit(out, model="gpt-4o", window=window, max_tokens=fitted.max_tokens, settings=options)
    assert twice.messages == out
    assert twice.max_tokens == fitted.max_tokens


def _assert_rejection_was_unavoidable(messages: list[dict[str, Any]], budget: int) -> None:
    """auto rejects only when what it may never drop overflows: system messages, the final message,
    and the framing, images and tool calls of the other messages it keeps (task, question, final step)."""
    layout = layout_of(messages)
    kept = {i for i in layout.pinned if messages[i]["role"] not in SYSTEM_ROLES} - {len(messages) - 1}
    first_user = next((i for i, m in enumerate(messages) if m["role"] == "user"), None)
    kept |= {first_user} if first_user is not None else set()
    systems = [m for m in messages if m["role"] in SYSTEM_ROLES]
    floor = tokens_of([*systems, messages[-1]]) if messages[-1] not in systems else tokens_of(systems)
    for index in kept:
        parts = messages[index].get("content")
        images = (
            sum(1 for p in parts if isinstance(p, dict) and p.get("type") == "image_url")
            if isinstance(parts, list)
            else 0
        )
        floor += 80 + COUNTER.image_tokens * images  # type: ignore[attr-defined]
    assert floor > budget
