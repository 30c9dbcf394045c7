"""Where each call type keeps its messages, and which requests are not the plugin's to fit."""

from __future__ import annotations

from typing import Any

import pytest

from litellm_budget.adapter.request.shapes import ANTHROPIC_SHAPE, RESPONSES_SHAPE, Shape


class TestHistoryOnTheServer:
    @pytest.mark.parametrize(
        ("shape", "request_", "named"),
        [
            (ANTHROPIC_SHAPE, {"messages": [{"role": "user", "content": "hi"}], "thread": {"id": "thr_1"}}, "thread"),
            (RESPONSES_SHAPE, {"input": "hi", "conversation": "conv_1"}, "conversation"),
            (RESPONSES_SHAPE, {"input": "hi", "conversation": {"id": "conv_1"}}, "conversation"),
            (RESPONSES_SHAPE, {"input": "hi", "previous_response_id": "resp_1"}, "previous_response_id"),
        ],
    )
    def test_a_history_held_by_the_provider_is_passed_with_its_reason(
        self, shape: Shape, request_: dict[str, Any], named: str
    ) -> None:
        """Anthropic's ``thread`` and Responses' ``conversation`` hold the history on the server, out of reach."""
        reason = shape.read(request_).unsupported

        assert reason is not None
        assert reason.startswith(f"{named}:")

    def test_without_them_both_are_fitted(self) -> None:
        assert ANTHROPIC_SHAPE.read({"messages": [{"role": "user", "content": "hi"}]}).unsupported is None
        assert RESPONSES_SHAPE.read({"input": "hi"}).unsupported is None
