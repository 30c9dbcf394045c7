"""
Cache truth: after each success, what the provider's prompt cache read against what the plugin expected, and why it read
less. The request's report left before the response, so this is a second record of the call, read off its path from the
success callback's kwargs and response (and the conversation key the hooks had read anyway).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from litellm_budget.adapter.records.calls import Calls, call_id_of
from litellm_budget.adapter.records.conversations import conversation_key
from litellm_budget.adapter.request.kwargs import chat_messages
from litellm_budget.adapter.request.shapes import format_of_call
from litellm_budget.bounded import BoundedLRU
from litellm_budget.core.api import (
    BudgetSettings,
    CacheReport,
    CacheRules,
    CacheUsage,
    SentPrompt,
    cache_report,
    format_named,
    is_int,
    is_mapping,
    joined,
    sent_prompt,
)
from litellm_budget.logs import get_logger

from .metrics import record_cache
from .publish import REPORT_KEY, report_in

log = get_logger()

CACHE_KEY = f"{REPORT_KEY}_cache"
#: The actions whose request went to the provider (a rejected or deferred one never did).
SENT_ACTIONS = frozenset({"passthrough", "trimmed", "unknown_window", "unsupported"})


def now() -> float:
    """The adapter's clock for cache lifetimes (tests of a proxy shift it, ``tests/support/shifted_clock.py``)."""
    return time.monotonic()


class PromptHistory:
    """The last prompt sent per conversation, hashes and sizes only, in a bounded store."""

    def __init__(self, max_conversations: int = 4096) -> None:
        self._sent: BoundedLRU[SentPrompt] = BoundedLRU(max_conversations)

    def observe(self, key: str, current: SentPrompt, usage: CacheUsage, rules: CacheRules) -> CacheReport:
        """Compare ``current`` with the conversation's previous prompt, then keep it as the last one."""
        previous = self._sent.get(key)
        self._sent.put(key, current)
        return cache_report(previous, current, usage, rules)


def observe_success(
    history: PromptHistory, calls: Calls, kwargs: Mapping[str, Any], response: Any, settings: BudgetSettings
) -> CacheReport | None:
    """Report what the cache did with a success this plugin fitted; ``None`` when there is nothing to say."""
    payload = kwargs.get("standard_logging_object")
    payload = payload if is_mapping(payload) else {}
    fmt = format_of_call(payload.get("call_type") or kwargs.get("call_type"))
    usage = usage_of(payload, response)
    call_id = call_id_of(kwargs)  # type: ignore[arg-type]  # read only
    record = calls.get(call_id)
    served = record.served.as_dict() if record.served is not None else report_in(payload.get("metadata"))
    if fmt is None or usage is None or served is None or served.get("action") not in SENT_ACTIONS:
        return None
    messages, tools = sent_of(kwargs, fmt)
    if messages is None:
        return None
    model = str(payload.get("model") or kwargs.get("model") or served.get("model"))
    group = str(payload.get("model_group") or model)
    key = record.conversation or conversation_key(model, format_named(fmt), messages)
    if key is None:
        return None
    deployment = str(payload.get("model_id") or payload.get("api_base") or model)
    current = sent_prompt(messages, tools=tools, report=served, deployment=deployment, at=now())
    rules = CacheRules(
        lifetime=settings.lifetime_for(model),
        minimum=settings.min_tokens_for(model),
        # Anthropic's models cache only at breakpoints, wherever they are served.
        breakpoints=kwargs.get("custom_llm_provider") == "anthropic" or "claude" in model.lower(),
    )
    report = history.observe(key, current, usage, rules)
    fields = report.as_dict()
    log.info("cache_observed", model_group=group, model=model, format=fmt, litellm_call_id=call_id or None, **fields)
    params = kwargs.get("litellm_params")
    params = params if is_mapping(params) else {}
    for metadata in (payload.get("metadata"), params.get("metadata"), params.get("litellm_metadata")):
        _record_in(metadata, fields)
    record_cache(report, group)
    return report


def usage_of(payload: Mapping[str, Any], response: Any) -> CacheUsage | None:
    """
    The provider's cache use, from the usage LiteLLM 1.108.5 hands the success callback on every route
    (``tests/e2e/test_cache_pins.py``): ``prompt_tokens`` is the whole prompt, ``prompt_tokens_details.cached_tokens``
    (or Anthropic's ``cache_read_input_tokens``) what was read, ``cache_creation_input_tokens`` what Anthropic wrote.
    """
    metadata = payload.get("metadata")
    usage = metadata.get("usage_object") if is_mapping(metadata) else None
    if not is_mapping(usage):
        found = getattr(response, "usage", None)
        dump = getattr(found, "model_dump", None)
        usage = dump() if callable(dump) else found
    if not is_mapping(usage) or not is_int(usage.get("prompt_tokens")) or usage["prompt_tokens"] <= 0:
        return None
    details = usage.get("prompt_tokens_details")
    read = details.get("cached_tokens") if is_mapping(details) else None
    read = read if is_int(read) else usage.get("cache_read_input_tokens")
    written = usage.get("cache_creation_input_tokens")
    return CacheUsage(
        input=usage["prompt_tokens"],
        read=read if is_int(read) else None,
        written=written if is_int(written) else 0,
    )


def sent_of(kwargs: Mapping[str, Any], fmt: str) -> tuple[list[Any] | None, object]:
    """
    What was sent (the core's list of ``fmt``, the tools schema) from the success callback's kwargs: ``/v1/messages``
    bridged to Responses keeps its messages, its system prompt as ``instructions``; Responses has items as ``messages``.
    """
    params = kwargs.get("optional_params")
    tools = kwargs.get("tools") or (params.get("tools") if is_mapping(params) else None)
    if fmt == "chat":
        messages = kwargs.get("messages")
        return (chat_messages(messages) if isinstance(messages, list) else None), tools
    if fmt == "anthropic":
        system = kwargs["system"] if kwargs.get("system") is not None else kwargs.get("instructions")
        messages = kwargs.get("messages")
        return (joined(fmt, system, messages)[0] if isinstance(messages, list) else None), tools
    items = kwargs.get("input")
    items = items if isinstance(items, list | str) else kwargs.get("messages")
    return (joined(fmt, kwargs.get("instructions"), items)[0] if isinstance(items, list | str) else None), tools


def _record_in(metadata: object, fields: dict[str, Any]) -> None:
    """
    Merge the cache report into a ``spend_logs_metadata``: the logging payload's, for the loggers
    LiteLLM calls after this one, and the request's, for a spend-log row built after this callback.
    """
    if not isinstance(metadata, MutableMapping):
        return
    spend = metadata.get("spend_logs_metadata")
    merged = dict(spend) if is_mapping(spend) else {}
    merged[CACHE_KEY] = fields
    merged[f"{CACHE_KEY}_miss"] = str(fields.get("cache_miss") or "none")
    metadata["spend_logs_metadata"] = merged
