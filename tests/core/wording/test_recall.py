"""Recall handles in the core: named only with a scope, stable, scoped, and the content behind each is the original."""

from __future__ import annotations

import json

import pytest

from litellm_budget.core import parse_ranges
from litellm_budget.core.api import HANDLE, BudgetSettings, FitRequest, RecallScope, fit_request
from litellm_budget.core.formats import ANTHROPIC
from litellm_budget.core.wording import TOOL_NAME
from litellm_budget.typing import Message

pytestmark = pytest.mark.core

SCOPE = RecallScope(b"s" * 32)


def agent_session(steps: int = 30, lines: int = 120) -> list[Message]:
    """A chat agent's session: each step reads a file of ``lines`` lines."""
    messages: list[Message] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "the task"}]
    for step in range(steps):
        call = {
            "id": f"c{step}",
            "type": "function",
            "function": {"name": "read", "arguments": json.dumps({"p": step})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        body = "\n".join(f"file {step} line {line}: def f{line}(): pass" for line in range(lines))
        messages.append({"role": "tool", "tool_call_id": f"c{step}", "content": body})
    messages.append({"role": "user", "content": "go on"})
    return messages


def fitted(
    messages: list[Message],
    policy: str = "auto",
    scope: RecallScope | None = SCOPE,
    digest_share: float | None = None,
    **kw: object,
) -> object:
    settings = BudgetSettings(policy=policy, digest_share=digest_share)  # type: ignore[arg-type]
    return fit_request(FitRequest(messages, model="gpt-4o", window=16000, settings=settings, recall=scope, **kw))


def sent_text(result: object) -> str:
    return "\n".join(m["content"] for m in result.messages if isinstance(m.get("content"), str))  # type: ignore[attr-defined]


@pytest.mark.parametrize("policy", ["auto", "elide", "plan"])
def test_without_a_scope_nothing_is_named_or_stored(policy: str) -> None:
    result = fitted(agent_session(), policy, scope=None)

    assert result.report.action == "trimmed"  # type: ignore[attr-defined]
    assert not HANDLE.search(sent_text(result))
    assert result.stored == {}  # type: ignore[attr-defined]


@pytest.mark.parametrize("policy", ["auto", "elide", "plan"])
def test_every_named_handle_is_stored_with_its_original_text(policy: str) -> None:
    messages = agent_session()
    result = fitted(messages, policy)
    named = set(HANDLE.findall(sent_text(result)))
    originals = {m["content"] for m in messages if m["role"] == "tool"}

    dropped = parse_ranges(result.report.dropped_at)  # type: ignore[attr-defined]
    block = "\n".join(m["content"] for i, m in enumerate(messages) if i in dropped and m["content"]).strip()

    assert named
    assert set(result.stored) == named  # type: ignore[attr-defined]
    assert set(result.stored.values()) <= originals | {block}  # type: ignore[attr-defined]
    assert result.report.tokens_after <= result.report.budget  # type: ignore[attr-defined]


def test_an_elided_output_and_its_dropped_line_name_one_handle() -> None:
    messages = agent_session()
    elided = fitted(messages, "elide")
    dropped = fitted(messages, "plan")
    first = messages[3]["content"]

    assert SCOPE.handle(first) in elided.stored  # type: ignore[attr-defined]
    assert SCOPE.handle(first) in dropped.stored  # type: ignore[attr-defined]
    assert f"[recall {SCOPE.handle(first)}]" in sent_text(dropped)


def test_handles_are_stable_across_requests_and_scoped() -> None:
    messages = agent_session()
    grown = [*messages[:-1], {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    first, second = fitted(messages), fitted(grown)
    other = fitted(messages, scope=RecallScope(b"t" * 32))

    common = set(first.stored) & set(second.stored)  # type: ignore[attr-defined]
    assert common
    assert not set(first.stored) & set(other.stored)  # type: ignore[attr-defined]
    assert sent_text(fitted(messages)) == sent_text(first)


def test_the_placeholders_names_are_counted() -> None:
    """The handle's words are part of what the fit counted: what is sent stays within the budget."""
    messages = agent_session(steps=40)
    plain, named = fitted(messages, "elide", scope=None), fitted(messages, "elide")

    assert named.report.tokens_after > plain.report.tokens_after  # type: ignore[attr-defined]
    assert named.report.tokens_after <= named.report.budget  # type: ignore[attr-defined]


def test_anthropic_blocks_are_named_too() -> None:
    messages: list[Message] = [{"role": "user", "content": "the task"}]
    for step in range(30):
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{step}", "name": "read", "input": {}}]}
        )
        body = "\n".join(f"file {step} line {n}" for n in range(150))
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{step}", "content": body}]}
        )
    messages.append({"role": "user", "content": "go on"})
    result = fit_request(
        FitRequest(messages, model="claude-3-5-sonnet-20241022", window=16000, fmt=ANTHROPIC, recall=SCOPE)
    )

    assert result.stored
    assert all(text.startswith("file ") for text in result.stored.values())


def test_a_marker_names_its_whole_block_older_steps_its_digest_leaves_out_included() -> None:
    """Nothing dropped is lost for good: the marker names one handle for every message it stands for."""
    messages, policy = agent_session(steps=60), "plan"
    result = fitted(messages, policy, digest_share=0.01)
    text = sent_text(result)
    marker = text[text.rindex("[litellm_budget:", 0, text.index("omitted from this conversation")) :]
    dropped = parse_ranges(result.report.dropped_at)  # type: ignore[attr-defined]
    handle = HANDLE.search(marker.split("What was done")[0])

    assert "older not listed" in marker
    assert handle is not None
    stored = result.stored[handle.group(1)]  # type: ignore[attr-defined]
    assert stored == "\n".join(m["content"] for i, m in enumerate(messages) if i in dropped and m["content"]).strip()
    assert fitted(messages, policy, scope=None, digest_share=0.01).messages != result.messages  # type: ignore[attr-defined]
    assert "stored as recall" not in sent_text(fitted(messages, policy, scope=None, digest_share=0.01))


def test_a_kept_draft_never_carries_another_scopes_handles() -> None:
    """Two API keys in one conversation: each request names only its own scope's handles."""
    from litellm_budget.core.api import edits_sent

    messages = agent_session()
    first = fitted(messages)
    previous = edits_sent(messages, first.report)  # type: ignore[attr-defined]
    grown = [*messages, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    other = RecallScope(b"t" * 32)
    mine, theirs = fitted(grown, previous=previous), fitted(grown, scope=other, previous=previous)

    assert mine.report.edits_kept  # type: ignore[attr-defined]
    assert theirs.report.edits_kept  # type: ignore[attr-defined]

    assert set(HANDLE.findall(sent_text(theirs))) == set(theirs.stored)  # type: ignore[attr-defined]
    assert not set(theirs.stored) & set(mine.stored)  # type: ignore[attr-defined]


def test_the_tool_name_is_the_one_the_adapter_serves() -> None:
    assert TOOL_NAME == "litellm_budget_recall"
