"""A rejection's message is true of its request: no "after trimming" bigger than before without why, no absent tools."""

from __future__ import annotations

import re
from typing import Any

import pytest

from litellm_budget import fit
from litellm_budget.exceptions import BudgetExceededError
from tests.support.builders import agent_session, system, text, user

WINDOW = 8000


def _rejection(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
    with pytest.raises(BudgetExceededError) as rejected:
        fit(messages, model="gpt-4o", window=WINDOW, tools=tools)
    return str(rejected.value)


def _tool(description_tokens: int) -> dict[str, Any]:
    schema = {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": "bash", "description": text(description_tokens), "parameters": schema},
    }


def test_a_request_trimming_cannot_shrink_says_so_and_names_no_tools_schema() -> None:
    """A system prompt over the budget: the size as it came, why trimming's best is bigger, the priming as such."""
    message = _rejection([system(text(15_000)), user("hi")])

    found = re.search(
        r"it has (\d+) prompt tokens, and trimming cannot make it smaller \(the markers and notes "
        r"trimming adds would make it (\d+)\), but the budget is",
        message,
    )
    assert found is not None, message
    assert int(found.group(2)) > int(found.group(1))
    assert "after trimming" not in message
    assert "tools" not in message
    assert "auto: the system messages alone need 15007 tokens (3 of reply priming included)" in message


def test_a_request_with_tools_names_its_schema() -> None:
    """With tools, the schema's share is named apart from the reply priming."""
    message = _rejection([system(text(5000)), user("hi")], tools=[_tool(2000)])

    assert re.search(
        r"the system messages and the tools schema alone need \d+ tokens \(\d+ for the tools schema, "
        r"3 of reply priming\)",
        message,
    ), message


def test_a_request_trimming_shrinks_but_not_enough_says_before_and_after() -> None:
    """Trimming helped, not enough: after is smaller than before, and both are said."""
    message = _rejection([system(text(6000)), *agent_session(10, 800)[1:]])

    found = re.search(r"it needs (\d+) prompt tokens after trimming \((\d+) before\)", message)
    assert found is not None, message
    assert int(found.group(1)) < int(found.group(2))
