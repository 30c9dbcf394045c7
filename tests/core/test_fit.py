"""The public fit(): windows, errors, reports, and what it does with malformed input."""

from __future__ import annotations

import copy
import json
from typing import Any

import litellm
import pytest

from litellm_budget import BudgetReport, BudgetSettings, fit
from tests.support.builders import agent_session, system, text, tool_step, user


class TestWindow:
    def test_model_map_window_with_provider_prefix(self) -> None:
        """Without an explicit window, gpt-4o's max_input_tokens comes from the model map, prefix or not."""
        plain = fit([user("hi")], model="gpt-4o")
        prefixed = fit([user("hi")], model="openai/gpt-4o")

        assert plain.report.window == litellm.model_cost["gpt-4o"]["max_input_tokens"]
        assert prefixed.report.window == plain.report.window

    def test_unknown_model_passes_through(self) -> None:
        """An unknown model without a default window is forwarded untouched, and the report says why."""
        messages = agent_session(3)

        fitted = fit(messages, model="acme/unknown-model-xyz")

        assert fitted.messages == messages
        assert fitted.report.action == "unknown_window"
        assert "model map" in (fitted.report.reason or "")

    def test_default_window_for_unknown_models(self) -> None:
        """settings.default_window is used when the model map does not know the model."""
        messages = agent_session(20, 800)

        fitted = fit(messages, model="acme/unknown-model-xyz", settings=BudgetSettings(default_window=8000))

        assert fitted.report.window == 8000
        assert fitted.report.action == "trimmed"

    @pytest.mark.parametrize("window", [0, -5, 1.5, True])
    def test_bad_explicit_window_is_a_value_error(self, window: Any) -> None:
        """An explicit window must be a positive int: anything else is the caller's mistake."""
        with pytest.raises(ValueError, match="window"):
            fit([user("hi")], model="gpt-4o", window=window)


class TestRejection:
    def test_litellm_error_with_report(self) -> None:
        """What cannot fit raises LiteLLM's ContextWindowExceededError carrying the report."""
        messages = [system(text(5000)), user(text(3000))]

        with pytest.raises(litellm.ContextWindowExceededError) as caught:
            fit(messages, model="openai/gpt-4o", window=4000)

        error = caught.value
        assert error.status_code == 400
        assert error.model == "openai/gpt-4o"
        assert error.llm_provider == "openai"
        assert error.param == "messages"
        report = error.provider_specific_fields["litellm_budget"]
        assert report["action"] == "rejected"
        assert report["window"] == 4000
        assert error.report.tokens_before == report["tokens_before"]
        json.dumps(error.provider_specific_fields)

    def test_is_caught_as_bad_request(self) -> None:
        """Callers that catch BadRequestError (as LiteLLM's retries do) see it as one."""
        with pytest.raises(litellm.BadRequestError):
            fit([system(text(5000)), user("x")], model="gpt-4o", window=1000)


class TestReport:
    def test_fields_and_plain_types(self) -> None:
        """The report has every field the plugin logs, as JSON-safe plain types."""
        messages = agent_session(30, 900)

        fitted = fit(messages, model="gpt-4o", window=16_000, max_tokens=500)

        report = fitted.report.as_dict()
        for key in (
            "model",
            "window",
            "budget",
            "tokens_before",
            "tokens_after",
            "policy",
            "action",
            "elided",
            "dropped_units",
            "cut",
            "first_changed_index",
            "reserve",
            "max_tokens_sent",
            "duration_ms",
        ):
            assert key in report
        assert json.loads(json.dumps(report)) == report
        assert report["reserve"] == 500
        assert report["first_changed_index"] is not None
        assert fitted.messages[: report["first_changed_index"]] == messages[: report["first_changed_index"]]

    def test_report_is_frozen(self) -> None:
        """Reports are values."""
        report = BudgetReport(model="m", policy="auto", action="passthrough")

        with pytest.raises(AttributeError):
            report.action = "trimmed"  # type: ignore[misc]

    def test_report_never_holds_message_text(self) -> None:
        """Nothing a message says ends up in the report."""
        canary = "CANARY-7f3a9"
        messages = agent_session(20, 900)
        messages[3]["content"] = f"{canary} " + messages[3]["content"]

        fitted = fit(messages, model="gpt-4o", window=8000)

        assert canary not in json.dumps(fitted.report.as_dict())


def _orphan() -> list[dict[str, Any]]:
    return [user("x"), {"role": "tool", "tool_call_id": "nope", "content": "r"}]


def _duplicated_ids() -> list[dict[str, Any]]:
    step = tool_step(5)
    call = step[0]["tool_calls"][0]
    step[0]["tool_calls"] = [call, call]
    return [user("x"), *step, {**step[1]}]


UNSUPPORTED = [
    ("not-a-list", {"role": "user", "content": "x"}, "not a list"),
    ("entry-not-dict", [user("x"), "hello"], "not an object"),
    ("no-role", [{"content": "x"}], "no role"),
    ("unknown-role", [{"role": "robot", "content": "x"}], "unknown role"),
    ("number-content", [{"role": "user", "content": 42}], "content is int"),
    ("nested-lists", [{"role": "user", "content": [["a"]]}], "content is list"),
    ("tool-without-id", [user("x"), {"role": "tool", "content": "r"}], "without a tool_call_id"),
    ("orphan-tool", _orphan(), "answers no open tool call"),
    ("unanswered-call", [user("x"), tool_step(5)[0], user("y")], "not answered"),
    ("duplicated-ids", _duplicated_ids(), "duplicated tool_call ids"),
]


class TestMalformed:
    @pytest.mark.parametrize(
        ("messages", "reason"), [(m, r) for _, m, r in UNSUPPORTED], ids=[i for i, _, _ in UNSUPPORTED]
    )
    def test_passes_through_with_a_reason(self, messages: Any, reason: str) -> None:
        """Malformed requests are forwarded untouched with action unsupported and the reason."""
        snapshot = copy.deepcopy(messages)

        fitted = fit(messages, model="gpt-4o", window=1000)

        assert fitted.report.action == "unsupported"
        assert reason in (fitted.report.reason or "")
        assert fitted.messages == snapshot
        assert messages == snapshot

    @pytest.mark.parametrize(
        ("messages", "reason"), [(m, r) for _, m, r in UNSUPPORTED], ids=[i for i, _, _ in UNSUPPORTED]
    )
    def test_over_its_window_is_refused_never_sent_over(self, messages: Any, reason: str) -> None:
        """What cannot be trimmed safely and is over its window is refused: forwarding it would send it over."""
        with pytest.raises(litellm.ContextWindowExceededError) as refused:
            fit(messages, model="gpt-4o", window=5)

        assert refused.value.report.action == "rejected"  # type: ignore[attr-defined]
        assert reason in str(refused.value)
        assert "cannot be trimmed safely" in str(refused.value)

    @pytest.mark.parametrize("max_tokens", [-1, "100", 2.5])
    def test_bad_max_tokens_passes_through(self, max_tokens: Any) -> None:
        """A max_tokens that is not an int >= 0 is the provider's to reject; we forward it."""
        fitted = fit([user("x")], model="gpt-4o", window=1000, max_tokens=max_tokens)

        assert fitted.report.action == "unsupported"
        assert fitted.max_tokens == max_tokens

    def test_content_shapes_that_are_fine(self) -> None:
        """None content, unknown part types and odd unicode are counted, not refused."""
        messages = [
            system(),
            {"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAAA"}}, "plain"]},
            {"role": "assistant", "content": None, "tool_calls": []},
            user("emoji 😀, zero\u200bwidth, lone \ud800 surrogate"),
        ]

        fitted = fit(messages, model="gpt-4o", window=1000)

        assert fitted.report.action == "passthrough"
        assert fitted.report.tokens_before > 0


class TestFormats:
    def test_anthropic_messages_fit_with_their_system_apart(self) -> None:
        """fit(format="anthropic") counts the system, never returns it, and the messages stay valid."""
        from litellm_budget.core.formats import anthropic_from_chat as from_chat
        from litellm_budget.core.formats import join_system
        from litellm_budget.core.validity import anthropic_unsupported as anthropic_reason

        system, messages = from_chat(agent_session(30, 700))

        fitted = fit(messages, model="claude-sonnet-4-5", window=8000, format="anthropic", system=system)

        assert fitted.report.format == "anthropic"
        assert fitted.report.action == "trimmed"
        assert all(message["role"] in {"user", "assistant"} for message in fitted.messages)
        assert anthropic_reason(join_system(system, fitted.messages), None, None) is None

    def test_responses_input_fits_with_its_instructions_apart(self) -> None:
        """fit(format="responses") takes input items or a string, and instructions as system."""
        from litellm_budget.core.formats import responses_from_chat as from_chat
        from litellm_budget.core.validity import responses_unsupported as responses_reason

        items = from_chat(agent_session(30, 700)[1:])

        fitted = fit(items, model="gpt-4o", window=8000, format="responses", system="Be brief.")
        short = fit("Hello?", model="gpt-4o", window=8000, format="responses", system="Be brief.")

        assert (fitted.report.format, fitted.report.action) == ("responses", "trimmed")
        assert responses_reason(fitted.messages, None, None) is None
        assert "Be brief." not in [item.get("content") for item in fitted.messages]
        assert short.messages == [{"type": "message", "role": "user", "content": "Hello?"}]

    def test_chat_takes_its_system_prompt_in_messages(self) -> None:
        """A system= for chat is a mistake named at once."""
        with pytest.raises(ValueError, match="chat"):
            fit([user("hi")], model="gpt-4o", system="Be brief.")
