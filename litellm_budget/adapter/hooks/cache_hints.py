"""
Opt-in hints for a provider's prompt cache, put into a request the deployment hook is about to send: Anthropic
``cache_control`` breakpoints where the prompt stays stable, and OpenAI's ``prompt_cache_key`` from the conversation
key, which keeps one conversation's requests on the machines that hold its prefix.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from litellm_budget.adapter.records.calls import CallRecord
from litellm_budget.adapter.records.conversations import conversation_key
from litellm_budget.adapter.request.kwargs import resolved_provider
from litellm_budget.adapter.request.shapes import ANTHROPIC_SHAPE, CHAT_SHAPE, RESPONSES_SHAPE, Shape
from litellm_budget.adapter.request.targets import Target
from litellm_budget.core.api import provider_of, stable_ends, unjoin_for, with_breakpoints
from litellm_budget.logs import get_logger

log = get_logger()

PROMPT_CACHE_KEY = "prompt_cache_key"
#: What the key sent to OpenAI starts with, so a provider-side log tells it from a client's own.
KEY_PREFIX = "litellm_budget-"
OPENAI_PROVIDERS = frozenset({"openai", "azure"})
#: Hints go only into requests sent as the plugin measured them.
HINTED_ACTIONS = frozenset({"passthrough", "trimmed"})


def hint_cache(request: MutableMapping[str, Any], shape: Shape, target: Target, record: CallRecord) -> bool:
    """Put the hints the settings ask for into ``request``; ``True`` when it changed."""
    settings, served = target.settings, record.served
    wanted = settings.cache_breakpoints or settings.prompt_cache_key
    if not wanted or served is None or served.action not in HINTED_ACTIONS:
        return False
    provider = resolved_provider(request) or provider_of(target.model)
    changed = False
    if settings.cache_breakpoints and provider == "anthropic" and shape in (ANTHROPIC_SHAPE, CHAT_SHAPE):
        changed = _add_breakpoints(request, shape, edited=served.action == "trimmed")
    if settings.prompt_cache_key and provider in OPENAI_PROVIDERS and shape in (CHAT_SHAPE, RESPONSES_SHAPE):
        changed = _add_key(request, shape, target, record) or changed
    return changed


def _add_breakpoints(request: MutableMapping[str, Any], shape: Shape, *, edited: bool) -> bool:
    parts = shape.read(request)
    if parts.unsupported is not None:
        return False
    ends = stable_ends(parts.messages, shape.format, edited=edited)
    messages, marked = with_breakpoints(parts.messages, ends, tools=parts.tools, automatic=request.get("cache_control"))
    if not marked:
        return False
    if shape.system_key is not None and request.get(shape.system_key) is not None and 0 in marked:
        request[shape.system_key] = messages[0]["content"]  # the system part, joined first
    request[shape.messages_key] = unjoin_for(shape.format.name)(messages)
    log.debug("cache_breakpoints_added", at=marked, format=shape.format.name)
    return True


def _add_key(request: MutableMapping[str, Any], shape: Shape, target: Target, record: CallRecord) -> bool:
    if request.get(PROMPT_CACHE_KEY) is not None:
        return False  # the client's own (or, bridged from /v1/messages, LiteLLM's from metadata.user_id)
    key = record.conversation or conversation_key(target.model, shape.format, shape.read(request).messages)
    if key is None:
        return False
    request[PROMPT_CACHE_KEY] = KEY_PREFIX + key.rpartition(":")[2]
    return True
