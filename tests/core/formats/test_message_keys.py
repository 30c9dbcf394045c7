"""Message keys: a conversation's history hashed once, each key still the message's own content key."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litellm_budget.core import DECLARED, MEMOS, Memo, content_key, forget_all
from litellm_budget.core.api import FitRequest, fit_request
from litellm_budget.core.counting import GateRead, counted
from litellm_budget.core.formats import CHAT, format_named, message_keys
from litellm_budget.core.formats import _message_keys as module  # private: tests patch and read its memo
from litellm_budget.tools.sessions import converted
from tests.support.builders import agent_session
from tests.support.strategies import conversations

#: Values ``==`` holds equal although they hash and count differently.
LOOK_ALIKES: list[object] = [1, 1.0, True]


@pytest.fixture(autouse=True)
def _nothing_read() -> None:
    forget_all()


def wire(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request as the proxy parses it: new objects, equal content."""
    result: list[dict[str, Any]] = json.loads(json.dumps(messages))
    return result


def fresh(messages: list[Any]) -> list[int]:
    return [content_key(message) for message in messages]


def _spy_on_hashing(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every value ``message_keys`` hashes from now on."""
    hashed: list[object] = []

    def spied(value: object) -> int:
        hashed.append(value)
        return content_key(value)

    monkeypatch.setattr(module, "content_key", spied)
    return hashed


@settings(max_examples=25)
@given(conversations(), st.data())
def test_every_key_is_the_content_key_however_the_history_changed(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    """A growing, edited and shortened history: each request's keys are those of its messages, as if hashed afresh."""
    forget_all()
    growing = [wire(messages[:end]) for end in range(1, len(messages) + 1)]
    for request in growing:
        assert message_keys(request) == fresh(request)
    edited = wire(messages)
    if len(edited) > 2:
        index = data.draw(st.integers(2, len(edited) - 1))
        edited[index] = {**edited[index], "content": "edited by the client"}
        del edited[data.draw(st.integers(2, len(edited) - 1))]
    assert message_keys(edited) == fresh(edited)


def test_a_known_history_is_compared_not_hashed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of it: the second request hashes its anchor and its new message, not the 20 it shares."""
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    history += [{"role": "assistant" if i % 2 else "user", "content": f"m{i}" * 50} for i in range(20)]
    message_keys(wire(history))
    hashed = _spy_on_hashing(monkeypatch)

    keys = message_keys(wire([*history, {"role": "user", "content": "new"}]))

    assert len(hashed) == 3
    assert keys == fresh([*history, {"role": "user", "content": "new"}])


def test_an_earlier_request_does_not_displace_the_longer_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A retry or an out-of-order request that is part of the read keeps it: the next longer one is still known."""
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    history += [{"role": "assistant" if i % 2 else "user", "content": f"m{i}" * 50} for i in range(20)]
    message_keys(wire(history))
    hashed = _spy_on_hashing(monkeypatch)

    assert message_keys(wire(history[:10])) == fresh(history[:10])
    assert message_keys(wire(history)) == fresh(history)
    assert len(hashed) == 4  # the anchor of each


@pytest.mark.parametrize("before", LOOK_ALIKES)
@pytest.mark.parametrize("after", LOOK_ALIKES)
def test_numbers_and_booleans_are_never_taken_for_each_other(before: object, after: object) -> None:
    """``1 == 1.0 == True`` in Python; their keys differ, so a message holding one is always hashed."""
    head: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    first: list[dict[str, Any]] = [*head, {"role": "assistant", "content": "a", "tool_calls": [{"index": before}]}]
    second: list[dict[str, Any]] = [*head, {"role": "assistant", "content": "a", "tool_calls": [{"index": after}]}]

    message_keys(first)

    assert message_keys(second) == fresh(second)


def test_a_message_changed_in_place_after_its_read_gets_its_new_key() -> None:
    """LiteLLM or an SDK caller may change a request's dicts after the fit: the read kept its own copy."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": "task"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "answer"}]},
    ]
    message_keys(messages)
    messages[2]["content"][0]["cache_control"] = {"type": "ephemeral"}
    messages.append({"role": "user", "content": "next"})

    assert message_keys(messages) == fresh(messages)


def test_the_same_list_object_resent_with_a_message_appended() -> None:
    """The SDK caller's habit (``messages.append``; call again): the kept copies are not the caller's objects."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for turn in range(5):
        messages.append({"role": "assistant", "content": f"step {turn}"})
        assert message_keys(messages) == fresh(messages)
        messages[-1]["content"] += " (edited)"
        assert message_keys(messages) == fresh(messages)


def test_objects_that_are_not_json_are_hashed_every_time() -> None:
    """A message holding another object (an SDK's own type) is not compared: its key is always computed."""

    class Part(dict):  # type: ignore[type-arg]
        """A dict subclass: ``==`` with a dict could hold where the content keys differ."""

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "t"},
        {"role": "tool", "content": [Part(type="text", text="x")]},
    ]
    message_keys(messages)
    again = copy.deepcopy(messages)

    assert message_keys(again) == fresh(again)
    assert MEMOS.conversation_reads.get(module.UNCHECKED, *fresh(messages)[:2]).copies[2] is None  # type: ignore[union-attr]


def test_lanes_keep_their_own_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """What was sent is read after the response: reading it never displaces the request's own read."""
    received: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    received += [{"role": "tool", "content": f"output {i}" * 40, "tool_call_id": str(i)} for i in range(10)]
    sent = [*received[:2], {"role": "user", "content": "[marker]"}, *received[8:]]
    message_keys(wire(received))
    message_keys(wire(sent), lane="sent")
    hashed = _spy_on_hashing(monkeypatch)

    message_keys(wire(received))

    assert len(hashed) == 2  # the anchor only


def test_the_reads_are_bounded_in_characters_and_entries() -> None:
    """Histories are held by their texts: the memo forgets the least recent conversations past its bounds."""
    declared = DECLARED["conversation_reads"]
    assert MEMOS.conversation_reads.max_weight == declared.max_weight > 0
    assert MEMOS.conversation_reads.max_entries == declared.entries
    reads = Memo("reads", ("lane", "anchor"), 4, weigh=lambda read: sum(read.chars), max_weight=1_000)
    one = module._Read(copies=(None,), keys=(1,), chars=(400,))
    for anchor in range(4):
        reads.put(one, "lane", anchor)
        assert reads.held_weight() <= 1_000
        assert len(reads) <= 4
    assert reads.get("lane", 3) is one
    assert reads.get("lane", 0) is None
    reads.put(module._Read(copies=(None,), keys=(1,), chars=(5_000,)), "lane", "huge")
    assert reads.get("lane", "huge") is None
    assert reads.held_weight() <= 1_000


def test_forget_all_forgets_the_reads() -> None:
    message_keys(
        [{"role": "system", "content": "s"}, {"role": "user", "content": "t"}, {"role": "user", "content": "u"}]
    )
    assert len(MEMOS.conversation_reads) == 1

    forget_all()

    assert len(MEMOS.conversation_reads) == 0


class TestChecksOfResentHistories:
    """A resent history is checked: a bad message is refused wherever it stands, on every request."""

    @staticmethod
    def history() -> list[dict[str, Any]]:
        return agent_session(6, 50)

    @pytest.mark.parametrize("fmt", ["chat", "anthropic", "responses"])
    def test_a_bad_message_after_a_known_history_is_still_refused(self, fmt: str) -> None:
        history = converted(self.history(), fmt)
        assert (
            fit_request(FitRequest(history, model="gpt-4o", window=128_000, fmt=format_named(fmt))).report.action
            != "unsupported"
        )
        bad = [*history, {"role": "nobody", "content": "x"}]

        report = fit_request(FitRequest(bad, model="gpt-4o", window=128_000, fmt=format_named(fmt))).report

        assert report.action == "unsupported"
        assert report.reason is not None
        assert str(len(history)) in report.reason

    def test_a_refused_request_is_not_kept_so_its_bad_message_is_never_known(self) -> None:
        history = wire(self.history())
        history[4] = {**history[4], "role": "nobody"}
        for _ in range(2):
            report = fit_request(FitRequest(history, model="gpt-4o", window=128_000)).report
            assert report.action == "unsupported"
            assert report.reason is not None
            assert report.reason.startswith("message 4")

    def test_messages_changed_after_the_gate_read_them_are_not_kept_as_checked(self) -> None:
        """A message changed in place after the gate read it is refused on the next request."""
        history = wire(self.history())
        passed = fit_request(FitRequest(history, model="gpt-4o", window=128_000, gate=True))
        assert passed.report.size_gate
        history[3]["content"] = {"not": "a list of parts"}  # changed in place after the request left
        counted(passed.report, GateRead(history), CHAT, 0)

        report = fit_request(FitRequest(wire(history), model="gpt-4o", window=128_000)).report

        assert report.action == "unsupported"


def test_known_keys_are_the_keys_of_the_unchanged_messages_only() -> None:
    """What the size gate reads counts by: the anchor's two and the messages the last read holds as they are."""
    session = agent_session(6, 50)
    message_keys(wire(session[:-2]))
    request = wire(session)
    request[5] = {**request[5], "content": request[5]["content"] + " (edited)"}

    known = module.Reading(request, module.UNCHECKED).known_keys()

    expected = [content_key(m) if i < len(session) - 2 and i != 5 else None for i, m in enumerate(request)]
    assert known == expected
    assert module.Reading(wire(session), "chat").known_keys() == [*fresh(session[:2]), *[None] * (len(session) - 2)]
