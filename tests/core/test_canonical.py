"""Content keys: what the memos know a message by, so a growing history costs only its new messages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from litellm_budget.core import (
    EXACT_KEY_CHARS,
    _canonical,  # private: a test patches the digest it remembers
    content_key,
    digest,
    digest_known,
    memo_is_off,
    text_key,
)
from tests.support.strategies import conversations

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@given(conversations())
def test_a_copy_from_the_wire_has_the_same_key(messages: list[dict[str, Any]]) -> None:
    """The proxy parses every request anew: equal content, equal key, however many copies."""
    copies = json.loads(json.dumps(messages))

    assert [content_key(m) for m in copies] == [content_key(m) for m in messages]


@given(JSON, JSON)
def test_different_values_have_different_keys(one: object, other: object) -> None:
    """Keys differ where the JSON differs (types told apart: ``1``, ``1.0``, ``true`` and ``"1"``)."""
    if json.dumps(one, sort_keys=False) != json.dumps(other, sort_keys=False):
        assert content_key(one) != content_key(other)


def test_the_types_a_hash_would_confuse_are_told_apart() -> None:
    """``hash(1) == hash(1.0) == hash(True)``, and a dict's items could read like a list's: not here."""
    values: list[object] = [1, 1.0, True, "1", [1], {"1": 1}, ["1", 1], {"a": "b"}, ["a", "b"], [["a", "b"]], None]

    assert len({content_key(value) for value in values}) == len(values)


def test_an_edit_anywhere_changes_the_key() -> None:
    """A changed text, a changed call, a key added: another message."""
    message = {
        "role": "assistant",
        "content": "look",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}],
    }
    edited = json.loads(json.dumps(message))
    edited["tool_calls"][0]["function"]["arguments"] = '{"cmd": "ls -l"}'

    assert content_key(message) != content_key(edited)
    assert content_key(message) != content_key({**message, "name": "agent"})


def test_long_texts_are_known_by_length_and_hash() -> None:
    """A memo never holds a long text alive."""
    long_text = "x" * (EXACT_KEY_CHARS + 1)

    assert text_key("short") == "short"
    assert text_key(long_text) == (len(long_text), hash(long_text))


def test_a_digest_known_by_its_key_is_hashed_once_per_length(monkeypatch: pytest.MonkeyPatch) -> None:
    """What names shared state is the digest itself, remembered by the content's key (and its length)."""
    hashed: list[object] = []
    monkeypatch.setattr(_canonical, "digest", lambda value, chars: hashed.append(value) or digest(value, chars))
    value = {"role": "tool", "content": "x" * 5000}
    key = ("test", content_key(value))

    first = digest_known(value, 24, key)
    again = digest_known(json.loads(json.dumps(value)), 24, key)
    longer = digest_known(value, 32, key)

    assert first == again == digest(value, 24)
    assert longer == digest(value, 32)
    assert len(hashed) == (3 if memo_is_off("digests") else 2)
