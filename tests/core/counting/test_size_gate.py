"""
The size gate: its bound is above the real tokenizers' counts (o200k and cl100k, any text, every
format, images, tool schemas), and what it passes untouched is exactly what the fit would have.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from litellm_budget.core import BudgetReport
from litellm_budget.core.api import FitRequest, fit_request
from litellm_budget.core.budget import BudgetSettings
from litellm_budget.core.counting import (
    GateRead,
    bound_with,
    counted,
    counter_for,
    forget_counts,
    remembered_counts,
    size_bound,
    utf8_bytes,
)
from litellm_budget.core.formats import CHAT, Reading, format_named, map_texts
from litellm_budget.core.policies import SentEdits
from litellm_budget.core.state import edits_sent, history_digest
from litellm_budget.tools.sessions import converted, requests_of
from tests.conftest import SessionSet
from tests.support.builders import agent_session
from tests.support.strategies import IMAGE, conversations

#: One model per shipped encoding.
MODELS = {"o200k_base": "gpt-4o", "cl100k_base": "gpt-4"}
#: Texts tiktoken knows as special tokens: ordinary text to ``encode_ordinary``, one token each where allowed.
SPECIALS = ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|im_start|>", "<|endofprompt|>"]
#: Any code point, surrogates (what JSON's "\ud800" parses to) included.
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=200)
TEXTS = st.one_of(
    ANY_TEXT,
    st.sampled_from(["日本語のテキストです。", "emoji 😀🎉👩‍👩‍👧", "Ünïcödé ĉàŝé", "\u200b\ufeff", "𝔘𝔫𝔦"]),
    st.lists(st.sampled_from([*SPECIALS, " ", "\n", "x", "€", "😀", "\ud800"]), max_size=40).map("".join),
    ANY_TEXT.map(lambda text: text * 30),  # longer than a chunk (2,048 characters)
)
SCHEMA = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXTS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXTS, inner, max_size=3),
    max_leaves=12,
)
TOOLS = st.none() | st.lists(
    st.builds(
        lambda name, description, parameters: {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters},
        },
        TEXTS,
        TEXTS,
        SCHEMA,
    ),
    min_size=1,
    max_size=3,
)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def odd_chat(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A valid chat conversation whose texts are any text, with names, images, unknown parts, JSON arguments."""
    messages = draw(conversations())
    tail = draw(TEXTS)
    out = []
    for message in messages:
        changed = map_texts(message, lambda text, tail=tail: text + tail)
        if message["role"] == "user" and draw(st.booleans()):
            extra = {"type": "input_audio", "input_audio": {"data": draw(TEXTS), "format": "wav"}}
            content = changed["content"]
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
            changed = {**changed, "content": [*parts, extra, dict(IMAGE)], "name": draw(TEXTS)}
        if message.get("tool_calls") and draw(st.booleans()):
            calls = [{**c, "function": {**c["function"], "arguments": draw(SCHEMA)}} for c in message["tool_calls"]]
            changed = {**changed, "tool_calls": calls}
        out.append(changed)
    return out


@FAST
@given(TEXTS)
@pytest.mark.parametrize("model", MODELS.values())
def test_a_token_covers_at_least_one_byte(model: str, text: str) -> None:
    """Whatever the text (special tokens, surrogates, emoji, long), the count is at most its UTF-8 bytes."""
    assert counter_for(model).count_text(text) <= utf8_bytes(text)


@FAST
@given(odd_chat(), TOOLS, st.sampled_from(["chat", "anthropic", "responses"]), st.integers(0, 2000))
@pytest.mark.parametrize("model", MODELS.values())
def test_the_bound_is_above_the_count(
    model: str, messages: list[dict[str, Any]], tools: Any, fmt_name: str, image_tokens: int
) -> None:
    """In every format, with images at their flat price and the tools schema: bound >= the ledger's total."""
    if fmt_name != "chat":
        try:
            messages = converted(messages, fmt_name)
        except ValueError:  # a part the other API has no block for
            assume(False)
    fmt, counter = format_named(fmt_name), counter_for(model, image_tokens=image_tokens)
    total = counter.count_tools(tools) + sum(fmt.count_message(counter, m) for m in messages)

    assert total <= size_bound(messages, tools, fmt, image_tokens)


@FAST
@given(odd_chat(), TOOLS, st.integers(0, 12), st.booleans(), st.sampled_from(["chat", "anthropic", "responses"]))
def test_the_bound_with_remembered_counts_is_above_the_count(
    messages: list[dict[str, Any]], tools: Any, known: int, edited: bool, fmt_name: str
) -> None:
    """
    A conversation read and counted before (its first ``known`` messages, one of them perhaps
    edited since): the bound that takes the remembered counts is still at least the total, and
    exact when every message and the schema are remembered as they are now.
    """
    if fmt_name != "chat":
        try:
            messages = converted(messages, fmt_name)
        except ValueError:
            assume(False)
    fmt, counter = format_named(fmt_name), counter_for("gpt-4o")
    earlier = json.loads(json.dumps(messages[: max(known, 2)]))
    if edited and len(earlier) > 2:
        earlier[-1] = map_texts(earlier[-1], lambda text: text[: len(text) // 2])  # it grew since
    counter.count_messages(fmt, earlier, Reading(earlier, fmt.name).keys())
    counter.count_tools(tools)
    reading = Reading(messages, fmt.name)
    remembered = remembered_counts(counter, fmt, tools, reading.known_keys())
    total = counter.count_tools(tools) + sum(fmt.count_message(counter, m) for m in messages)
    bound = bound_with(messages, fmt, 765, remembered)

    event(f"remembered: {sum(count is not None for count in remembered.messages)} of {len(messages)}")
    assert total <= bound
    if all(count is not None for count in remembered.messages):
        assert bound == total


def test_a_known_history_is_counted_at_its_remembered_count() -> None:
    """
    A conversation's next request at 128k, its 200,000 characters over the budget in bytes: the
    history read and counted with the last request goes at its count, the new step at its bytes,
    so it passes the gate. Forgotten (another replica, a restart), the same request is counted.
    """
    forget_counts()
    session = agent_session(100, 500)
    assert len(json.dumps(session)) > 128_000
    fit_request(FitRequest(json.loads(json.dumps(session[:-2])), model="gpt-4o", window=128_000))
    wire = json.loads(json.dumps(session))

    gated = fit_request(FitRequest(wire, model="gpt-4o", window=128_000, gate=True)).report
    exact = fit_request(FitRequest(json.loads(json.dumps(session)), model="gpt-4o", window=128_000)).report
    forget_counts()
    cold = fit_request(FitRequest(json.loads(json.dumps(session)), model="gpt-4o", window=128_000, gate=True)).report

    assert (gated.action, gated.size_gate, gated.tokens_exact) == ("passthrough", True, False)
    new_bytes = size_bound(wire[-2:], None, CHAT, 765) - counter_for("gpt-4o").count_tools(None)
    assert exact.tokens_before <= gated.tokens_bound <= exact.tokens_before + new_bytes
    assert gated.tokens_bound < size_bound(wire, None, CHAT, 765)
    assert (cold.size_gate, cold.tokens_exact) == (False, True)


def same_but_timing(report: BudgetReport) -> BudgetReport:
    return dataclasses.replace(report, duration_ms=0.0, size_gate=False, tokens_bound=None)


@FAST
@given(
    odd_chat(),
    TOOLS,
    st.sampled_from(["gpt-4o", "gpt-4", "anthropic/claude-sonnet-4-5", "gemini/gemini-2.5-pro"]),
    st.integers(300, 20_000) | st.integers(20_000, 1_000_000),
    st.none() | st.floats(0.8, 2.0),
    st.none() | st.integers(0, 9000),
)
def test_what_passes_is_what_the_fit_would_send(
    messages: list[dict[str, Any]], tools: Any, model: str, window: int, ratio: float | None, max_tokens: int | None
) -> None:
    """
    Own and foreign tokenizers (the learned ratio, Claude's prior and the wider margin in the
    budget): a request the gate passes is one the fit passes untouched, and once counted its
    report is the fit's; a request it does not pass is fitted as before.
    """
    wire = json.loads(json.dumps(messages))
    kwargs: dict[str, Any] = {
        "model": model,
        "window": window,
        "tools": tools,
        "max_tokens": max_tokens,
        "ratio": ratio,
    }
    gated = fit_request(FitRequest(wire, gate=True, **kwargs))
    fitted = fit_request(FitRequest(wire, **kwargs))

    event(f"gate passed: {gated.report.size_gate}; fit: {fitted.report.action}")
    if not gated.report.size_gate:
        assert same_but_timing(gated.report) == same_but_timing(fitted.report)
        return
    assert fitted.report.action == "passthrough"
    assert gated.messages == fitted.messages == wire
    assert all(a is b for a, b in zip(gated.messages, wire, strict=True))
    assert gated.max_tokens == fitted.max_tokens == max_tokens
    assert fitted.report.tokens_before <= gated.report.tokens_before == gated.report.tokens_bound
    assert not gated.report.tokens_exact
    exact = counted(gated.report, GateRead(wire, tools), CHAT, BudgetSettings().image_tokens)
    assert exact.tokens_exact
    assert same_but_timing(exact) == same_but_timing(fitted.report)


def test_a_request_that_obviously_fits_passes_uncounted() -> None:
    """A history well under its window in bytes, not only in tokens: passed by its size, counted later."""
    session = agent_session(100, 500)
    chars = len(json.dumps(session))
    fitted = fit_request(FitRequest(session, model="gpt-4o", window=2 * chars, gate=True))
    counted_now = fit_request(FitRequest(session, model="gpt-4o", window=2 * chars)).report.tokens_before

    assert (fitted.report.action, fitted.report.size_gate, fitted.report.tokens_exact) == ("passthrough", True, False)
    assert fitted.report.tokens_bound == fitted.report.tokens_before >= counted_now


def test_a_request_over_its_bytes_is_counted_on_its_path() -> None:
    """
    The bound is a byte count: English runs about 4 bytes a token, so a request that fits its window
    in tokens but not in bytes (a 200k-character history at 128k, none of it counted before) is
    counted, as before.
    """
    session = agent_session(100, 500)
    assert len(json.dumps(session)) > 128_000
    fitted = fit_request(FitRequest(session, model="gpt-4o", window=128_000, gate=True))

    assert (fitted.report.action, fitted.report.size_gate) == ("passthrough", False)


def test_an_edited_conversation_keeps_its_edits_uncounted_once_its_history_is_remembered() -> None:
    """
    An edited conversation never passes untouched, even when this request fits: it keeps its edits.
    Those go uncounted (the new messages at their bound) once the last request's messages are
    remembered, and counted on the path before.
    """
    forget_counts()
    session = agent_session(20, 300)
    held = len(session) - 2
    sent = SentEdits(messages=held, digest=history_digest(session, held), dropped=(2, 3), dropped_units=1)
    cold = fit_request(FitRequest(session, model="gpt-4o", window=128_000, gate=True, previous=sent)).report
    forget_counts()
    fit_request(FitRequest(session[:held], model="gpt-4o", window=128_000))  # the last request, counted
    warm = fit_request(FitRequest(session, model="gpt-4o", window=128_000, gate=True, previous=sent)).report

    assert (cold.action, cold.edits_kept, cold.size_gate, cold.tokens_exact) == ("trimmed", True, False, True)
    assert (warm.action, warm.edits_kept, warm.size_gate, warm.tokens_exact) == ("trimmed", True, True, False)
    assert warm.tokens_bound == warm.tokens_after > cold.tokens_after
    assert same_but_timing(counted(warm, GateRead(session), CHAT, 765)) == same_but_timing(cold)
    untouched = fit_request(
        FitRequest(session, model="gpt-4o", window=128_000, gate=True, previous=dataclasses.replace(sent, dropped=()))
    ).report
    assert (untouched.action, untouched.size_gate) == ("passthrough", True)


@pytest.mark.sessions
@pytest.mark.parametrize(
    "case",
    [
        ("chat", 16_000, {}, None, False, 150, 17),
        ("chat", 8000, {}, None, False, 150, 15),
        ("chat", 16_000, {"policy": "plan", "marker_placement": "leading_system"}, None, False, 150, 20),
        ("chat", 16_000, {"policy": "elide"}, None, False, 80, 19),
        ("chat", 16_000, {}, 4000, True, 150, 17),
        ("chat", 16_000, {}, 12_000, False, 0, 0),  # lowered to the room left
        ("anthropic", 16_000, {}, None, True, 150, 18),
        ("responses", 16_000, {}, 4000, False, 150, 20),
        ("chat", 16_000, {"summary_model": "gpt-4o-mini"}, None, False, 0, 0),
    ],
)
def test_kept_edits_go_uncounted_as_the_fit_sends_them(
    session_set: SessionSet, case: tuple[str, int, dict[str, Any], int | None, bool, int, int]
) -> None:
    """
    Every request of every session in order, with conversation state: with the gate (the
    kept edits with the new messages at their bound) the same messages and ``max_tokens`` as the fit
    that counts them, and once counted the same report; also under a ratio that moves on every
    request (``drift``). At least ``least`` requests keep their edits uncounted (``least_made`` of
    this repository's made sessions, 151 requests against the shared 785: they measured 21, 18,
    25, 23, 21, 22 and 24 in the order of the cases); none where the room left lowers
    ``max_tokens`` or summaries are wanted (either reads the counts).
    """
    fmt, window, knobs, max_tokens, drift, least, least_made = case
    settings_, rng = BudgetSettings(**knobs), random.Random(3)
    forget_counts()  # each new message is new to the counter
    ratios = (lambda: rng.uniform(0.95, 1.05)) if drift else (lambda: None)
    fitted = [
        gated_as_counted(requests_of(messages), fmt, window, settings_, max_tokens, ratios)
        for messages in session_set.sessions.values()
    ]
    uncounted = sum(report.size_gate and report.action == "trimmed" for reports in fitted for report in reports)
    least = least if session_set.name == "shared" else least_made
    assert uncounted >= least if least else uncounted == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversations(),
    st.sampled_from(["chat", "anthropic", "responses"]),
    st.sampled_from([4000, 8000, 16_000]),
    st.sampled_from([{}, {"policy": "plan"}, {"policy": "elide"}, {"marker_placement": "leading_system"}]),
    st.none() | st.sampled_from([300, 3000]),
    st.none() | st.floats(0.9, 1.2),
)
def test_any_conversation_keeps_its_edits_uncounted_as_the_fit_sends_them(
    messages: list[dict[str, Any]],
    fmt: str,
    window: int,
    knobs: dict[str, Any],
    max_tokens: int | None,
    ratio: float | None,
) -> None:
    """Generated conversations (system messages anywhere, images, a stray assistant): the same as counted."""
    forget_counts()
    requests = [*requests_of(messages), messages]
    for report in gated_as_counted(requests, fmt, window, BudgetSettings(**knobs), max_tokens, lambda: ratio):
        event(f"gate: {report.size_gate}, {report.action}")


def gated_as_counted(
    requests: Iterable[list[dict[str, Any]]],
    fmt: str,
    window: int,
    settings_: BudgetSettings,
    max_tokens: int | None,
    ratio: Callable[[], float | None],
) -> list[BudgetReport]:
    """
    A conversation's requests in order, with its state, each fitted with the gate and without: the
    same messages and ``max_tokens``, and the gate's report once counted the same as the other's.
    The gate's reports, as made.
    """
    previous, reports = None, []
    for request in requests:
        wire = json.dumps(converted(request, fmt))
        fit = functools.partial(
            FitRequest,
            model="gpt-4o",
            window=window,
            settings=settings_,
            fmt=format_named(fmt),
            previous=previous,
            max_tokens=max_tokens,
            ratio=ratio(),
        )
        gated, fitted = fit_request(fit(json.loads(wire), gate=True)), fit_request(fit(json.loads(wire)))
        assert (gated.messages, gated.max_tokens) == (fitted.messages, fitted.max_tokens)
        report = gated.report
        if report.size_gate:
            assert (report.tokens_exact, report.tokens_bound) == (False, report.tokens_after)
            assert report.tokens_after >= fitted.report.tokens_after
            report = counted(report, GateRead(json.loads(wire)), format_named(fmt), settings_.image_tokens)
        assert same_but_timing(report) == same_but_timing(fitted.report)
        reports.append(gated.report)
        previous = edits_sent(json.loads(wire), fitted.report)
    return reports


def test_no_tokenizer_no_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The estimate is not bounded by bytes: it is counted, as before."""
    from litellm_budget.core.counting import _tokens as tokens  # private: load_offline is patched where it is read

    monkeypatch.setattr(tokens, "load_offline", lambda _name: None)
    tokens.reset_counters()
    try:
        fitted = fit_request(FitRequest(agent_session(4, 100), model="gpt-4o", window=128_000, gate=True))
    finally:
        monkeypatch.undo()
        tokens.reset_counters()

    assert (fitted.report.counter, fitted.report.size_gate) == ("estimate", False)


def test_a_lowered_max_tokens_is_not_passed() -> None:
    """A max_tokens that would not fit beside the bound: the fit decides (it may lower it)."""
    session = agent_session(30, 500)
    total = fit_request(FitRequest(session, model="gpt-4o", window=128_000)).report.tokens_before
    window = total + 2000

    fitted = fit_request(FitRequest(session, model="gpt-4o", window=window, max_tokens=window // 2 - 1, gate=True))

    assert not fitted.report.size_gate
