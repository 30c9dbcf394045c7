"""Every request of the agent sessions (the shared ones, else the made), at 8k, 16k and 32k, under every policy."""

from __future__ import annotations

from typing import Any

import litellm
import pytest

from benchmarks.lab.baselines import BASELINES
from litellm_budget import BudgetSettings
from litellm_budget.core.api import FitRequest, fit_request
from litellm_budget.core.counting import counter_for
from litellm_budget.core.validity import SYSTEM_ROLES
from litellm_budget.core.validity import chat_unsupported as unsupported_reason
from litellm_budget.core.wording import NOTICE_PREFIX
from litellm_budget.tools.sessions import requests_of
from tests.conftest import SessionSet

pytestmark = pytest.mark.sessions
COUNTER = counter_for("gpt-4o")


def _silent_changes(before: list[dict[str, Any]], after: list[dict[str, Any]], dropped: int) -> int:
    """Messages changed or dropped without a notice the model can read."""
    originals = {id(m) for m in before}
    changed = [m for m in after if id(m) not in originals]
    silent = sum(1 for m in changed if NOTICE_PREFIX not in str(m.get("content")))
    has_marker = any(f"{NOTICE_PREFIX} " in str(m.get("content")) and " omitted " in str(m) for m in changed)
    return silent + (1 if dropped and not has_marker else 0)


@pytest.mark.parametrize("window", [8000, 16_000, 32_000])
@pytest.mark.parametrize("policy", ["auto", "plan", "elide"])
def test_replay(replay_set: SessionSet, policy: str, window: int) -> None:
    """0 overflow by litellm.token_counter, 0 invalid pairs, 0 silent changes; auto rejects only the unfittable."""
    options = BudgetSettings(policy=policy)  # type: ignore[arg-type]
    overflow = invalid = silent = rejected = fitted = 0
    for messages in replay_set.sessions.values():
        for request in requests_of(messages):
            result = fit_request(FitRequest(request, model="gpt-4o", window=window, settings=options))
            report = result.report
            if report.action == "rejected":
                rejected += 1
                if policy == "auto":
                    systems = [m for m in request if m["role"] in SYSTEM_ROLES]
                    assert (
                        COUNTER.count_tools(None) + sum(map(COUNTER.count_message, [*systems, request[-1]]))
                        > report.budget
                    )
                continue
            fitted += 1
            prompt = litellm.token_counter(model="gpt-4o", messages=result.messages)
            overflow += prompt + (result.max_tokens or 0) > window or prompt > window - report.reserve
            invalid += unsupported_reason(result.messages, None, None) is not None
            silent += _silent_changes(request, result.messages, report.dropped_messages)

    assert fitted > 0
    assert (overflow, invalid, silent) == (0, 0, 0)
    if policy != "elide":
        assert rejected == 0


@pytest.mark.parametrize("peer", ["masking", "clear_tool_uses", "litellm_polyfill", "langchain_trim"])
def test_peers_on_the_sessions(replay_set: SessionSet, peer: str) -> None:
    """
    Each peer does only what its semantics allow on every request at 16k: the clearing peers
    and masking change tool results' text and nothing else; LangChain keeps the system prompt
    and a suffix that starts on a user turn.
    """
    if peer == "langchain_trim":
        pytest.importorskip("langchain_core")
    strategy = BASELINES[peer]("gpt-4o", 16_000)
    changed = 0
    for messages in replay_set.sessions.values():
        for request in requests_of(messages):
            sent = strategy(request)
            if peer == "langchain_trim":
                rest = sent[1:] if sent and sent[0]["role"] == "system" else sent
                if rest:
                    assert rest == request[len(request) - len(rest) :]
                    assert rest[0]["role"] == "user"
                changed += len(sent) < len(request)
                continue
            assert len(sent) == len(request)
            edits = [(a, b) for a, b in zip(request, sent, strict=True) if a is not b]
            assert all(a["role"] == "tool" and {**a, "content": b["content"]} == b for a, b in edits)
            assert unsupported_reason(sent, None, None) is None
            changed += bool(edits)
    assert changed > 0
