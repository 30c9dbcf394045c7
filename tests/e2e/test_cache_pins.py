"""
Pins of what LiteLLM 1.108.5 hands a success callback about the provider's prompt cache, on every
route the plugin fits, through the real proxy and the official SDKs (``adapter/report/cache_observed.py``
reads exactly this).

Each route sends one prompt twice to a fake provider that caches prefixes as its API does (OpenAI
automatically, Anthropic at ``cache_control`` breakpoints), so the second reads the first. The
recorder (``tests/support/hook_recorder.py``) writes the usage counts of the standard logging
payload's ``metadata.usage_object`` and of the response object, and where the sent prompt is.
A failing test here means LiteLLM changed under us: re-verify before upgrading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.support.builders import text
from tests.support.fake_cache import CacheUse, PrefixCache
from tests.support.fake_upstream import FakeUpstream
from tests.support.hook_recorder import ENV_VAR, read_records
from tests.support.jsonl import wait_for_records
from tests.support.proxy_process import REPO_ROOT, anthropic_client, openai_client, start_proxy

pytestmark = pytest.mark.proxy

SUCCESS = "async_log_success_event"
SYSTEM = "You are a careful agent. " + text(300)
QUESTION = "Tell me about the weather. " + text(300)
BREAKPOINT = {"type": "ephemeral"}


@dataclass
class Rig:
    log: Path
    gpt_cache: PrefixCache
    claude_cache: PrefixCache
    claude: anthropic.Anthropic
    gpt: openai.OpenAI

    def twice(self, request: Callable[[], Any], cache: PrefixCache) -> tuple[dict[str, Any], CacheUse]:
        """Send ``request`` twice; the second success's record and what the cache did with it."""
        self.once(request)
        return self.once(request), cache.uses[-1]

    def once(self, request: Callable[[], Any]) -> dict[str, Any]:
        """Send ``request`` (a stream is read to its end); the record of its success."""
        start = len(read_records(self.log))
        result = request()
        if isinstance(result, openai.Stream | anthropic.Stream):
            for _event in result:
                pass
        records = wait_for_records(
            self.log, lambda records: any(r["hook"] == SUCCESS for r in records[start:]), what="a success event"
        )
        return next(r for r in records[start:] if r["hook"] == SUCCESS)


@pytest.fixture(name="rig", scope="module")
def fixture_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    folder = tmp_path_factory.mktemp("cache-pins")
    log = folder / "hooks.jsonl"
    gpt_cache, claude_cache = PrefixCache(minimum=100), PrefixCache(minimum=100, breakpoints=True)
    with FakeUpstream(cache=gpt_cache) as gpt_up, FakeUpstream(cache=claude_cache) as claude_up:
        config = {
            "model_list": [
                {
                    "model_name": "gpt",
                    "litellm_params": {"model": "openai/gpt-4o", "api_base": gpt_up.base_url, "api_key": "k"},
                },
                {
                    "model_name": "claude",
                    "litellm_params": {
                        "model": "anthropic/claude-sonnet-4-5",
                        "api_base": claude_up.root_url,
                        "api_key": "k",
                    },
                },
            ],
            "litellm_settings": {"callbacks": ["tests.support.hook_recorder.recorder"]},
        }
        env = {"PYTHONPATH": str(REPO_ROOT), ENV_VAR: str(log)}
        with (
            start_proxy(config, tmp_path=folder, env=env) as proxy,
            anthropic_client(proxy) as claude,
            openai_client(proxy) as gpt,
        ):
            yield Rig(log, gpt_cache, claude_cache, claude, gpt)


def _marked_chat() -> list[dict[str, Any]]:
    """A chat request with Anthropic breakpoints in its content parts (LiteLLM forwards them)."""
    parts = [{"type": "text", "text": QUESTION, "cache_control": dict(BREAKPOINT)}]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": parts}]


def _marked_messages() -> dict[str, Any]:
    return {
        "system": [{"type": "text", "text": SYSTEM, "cache_control": dict(BREAKPOINT)}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": QUESTION, "cache_control": dict(BREAKPOINT)}]}
        ],
    }


def _expected(use: CacheUse, *, anthropic: bool) -> dict[str, Any]:
    """The usage counts LiteLLM passes on: the whole prompt, the read, Anthropic's write (its own names too)."""
    return {
        "prompt_tokens": use.prompt,
        "cached_tokens": use.read,
        "cache_read_input_tokens": use.read if anthropic else None,
        "cache_creation_input_tokens": use.written if anthropic else None,
    }


ROUTES: dict[str, tuple[Callable[[Rig], Any], str, dict[str, str]]] = {
    "chat to openai": (
        lambda rig: rig.gpt.chat.completions.create(
            model="gpt", messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
        ),
        "gpt",
        {"messages": "list", "system": "NoneType", "input": "list", "instructions": "NoneType"},
    ),
    "chat to openai, streamed": (
        lambda rig: rig.gpt.chat.completions.create(
            model="gpt",
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
            stream=True,
            stream_options={"include_usage": True},
        ),
        "gpt",
        {"messages": "list", "system": "NoneType", "input": "list", "instructions": "NoneType"},
    ),
    "chat to anthropic": (
        lambda rig: rig.gpt.chat.completions.create(model="claude", messages=_marked_chat()),
        "claude",
        {"messages": "list", "system": "NoneType", "input": "list", "instructions": "NoneType"},
    ),
    "messages to anthropic": (
        lambda rig: rig.claude.messages.create(model="claude", max_tokens=50, **_marked_messages()),
        "claude",
        {"messages": "list", "system": "list", "instructions": "NoneType"},
    ),
    "messages to anthropic, streamed": (
        lambda rig: rig.claude.messages.create(model="claude", max_tokens=50, stream=True, **_marked_messages()),
        "claude",
        {"messages": "list", "system": "list", "instructions": "NoneType"},
    ),
    "messages to openai (bridged to responses)": (
        lambda rig: rig.claude.messages.create(model="gpt", max_tokens=50, **_marked_messages()),
        "gpt",
        {"messages": "list", "system": "NoneType", "instructions": "str"},
    ),
    "responses to openai": (
        lambda rig: rig.gpt.responses.create(
            model="gpt", instructions=SYSTEM, input=[{"role": "user", "content": QUESTION}]
        ),
        "gpt",
        {"messages": "list", "system": "NoneType", "instructions": "str"},
    ),
    "responses to openai, streamed": (
        lambda rig: rig.gpt.responses.create(model="gpt", input=SYSTEM + QUESTION, stream=True),
        "gpt",
        {"messages": "list", "system": "NoneType", "input": "str"},
    ),
}


@pytest.mark.parametrize("route", list(ROUTES))
def test_the_success_callback_gets_the_providers_cache_counts(rig: Rig, route: str) -> None:
    """
    ``metadata.usage_object`` of the logging payload, on every route: ``prompt_tokens`` is the whole
    prompt (Anthropic's read and written tokens included), ``prompt_tokens_details.cached_tokens``
    the read; Anthropic routes also carry ``cache_read_input_tokens`` and ``cache_creation_input_tokens``.
    The sent prompt is in the kwargs: ``messages`` (and ``system``; a bridged ``/v1/messages`` has
    its system prompt as ``instructions``; Responses has its items as ``messages``).
    """
    request, group, sent = ROUTES[route]
    cache = rig.claude_cache if group == "claude" else rig.gpt_cache

    record, use = rig.twice(lambda: request(rig), cache)

    assert use.read > 0
    assert record["slo_usage"] == _expected(use, anthropic=group == "claude")
    assert {key: record["sent"].get(key) for key in sent} == sent
    if "streamed" not in route:
        assert record["response_usage"] == record["slo_usage"]


def test_anthropic_writes_are_counted_in_the_prompt(rig: Rig) -> None:
    """A first Anthropic request writes its prefix: cache_creation_input_tokens, and prompt_tokens counts them."""
    messages = _marked_messages()
    messages["messages"][0]["content"][0]["text"] += " A new question."
    record = rig.once(lambda: rig.claude.messages.create(model="claude", max_tokens=50, **messages))
    use = rig.claude_cache.uses[-1]

    assert use.written > 0
    assert record["slo_usage"] == _expected(use, anthropic=True)
