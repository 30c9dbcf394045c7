"""The sessions and the request made for this repository are what their generator writes, and valid requests."""

from __future__ import annotations

import json

import pytest

from litellm_budget.core.validity import chat_unsupported as unsupported_reason
from litellm_budget.tools.sessions import requests_of
from tests.support.builders import tokens_of
from tests.support.made_sessions import SESSIONS, request
from tests.support.paths import MADE_DIR, MADE_REQUEST


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_the_file_is_what_the_generator_writes(name: str) -> None:
    """``python -m tests.support.made_sessions`` rewrites them; a change to it must be written too."""
    written = json.loads((MADE_DIR / f"{name}.json").read_text(encoding="utf-8"))

    assert written["messages"] == SESSIONS[name]()


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_every_request_of_it_is_a_valid_chat_request(name: str) -> None:
    requests = list(requests_of(SESSIONS[name]()))

    assert len(requests) >= 18
    assert all(unsupported_reason(request, None, None) is None for request in requests)


def test_the_example_request_is_what_the_generator_writes() -> None:
    """``examples/request.json``, which docs/cli.md inspects, is written by the same generator."""
    assert json.loads(MADE_REQUEST.read_text(encoding="utf-8")) == request()


def test_the_example_request_is_a_chat_request_a_16k_window_trims() -> None:
    """A request body in OpenAI's chat format, with its tool, bigger than the 16,000-token window the docs give."""
    body = request()

    assert set(body) == {"model", "messages", "tools", "max_tokens"}
    assert unsupported_reason(body["messages"], body["tools"], body["max_tokens"]) is None
    assert body["messages"][-1]["role"] == "tool"
    assert 16_000 < tokens_of(body["messages"]) < 32_000


def test_they_stay_small() -> None:
    """A few hundred kilobytes in all: a clone carries them."""
    assert sum(path.stat().st_size for path in MADE_DIR.glob("*.json")) < 400_000
    assert MADE_REQUEST.stat().st_size < 150_000
