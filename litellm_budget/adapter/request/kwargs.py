"""What LiteLLM's kwargs hold for every call type: the call type, messages as dicts, answer length, metadata."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from litellm_budget.core.api import is_mapping

CHAT_CALL_TYPES = frozenset({"completion", "acompletion"})
MAX_TOKENS_KEYS = ("max_completion_tokens", "max_tokens")


def is_chat(call_type: object) -> bool:
    """Whether the hook sees a chat completion (an enum member or its string value)."""
    return getattr(call_type, "value", call_type) in CHAT_CALL_TYPES


def chat_messages(messages: list[Any]) -> list[Any]:
    """
    The messages as plain dicts (the same list where all are): ``litellm.Message`` and other pydantic messages (a
    Router history often holds the previous response's message) as the dicts they dump to.
    """
    if all(is_mapping(message) for message in messages):
        return messages
    return [_as_dict(message) for message in messages]


def _as_dict(message: Any) -> Any:
    dump = getattr(message, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) and not is_mapping(message) else message


def metadata_key(request: Mapping[str, Any]) -> str:
    """
    Where LiteLLM keeps its own metadata: ``litellm_metadata`` on the Anthropic Messages and Responses routes (there
    ``metadata`` is the client's, and goes to the provider), ``metadata`` for chat completions.
    """
    return "litellm_metadata" if is_mapping(request.get("litellm_metadata")) else "metadata"


def metadata_of(request: MutableMapping[str, Any], key: str | None = None) -> MutableMapping[str, Any]:
    """The request's LiteLLM metadata dict (under ``key`` where the API fixes it), created so the report has a home."""
    key = key or metadata_key(request)
    metadata = request.get(key)
    if not isinstance(metadata, MutableMapping):
        metadata = dict(metadata) if is_mapping(metadata) else {}
        request[key] = metadata
    return metadata


def read_metadata(request: Mapping[str, Any]) -> Mapping[str, Any]:
    """The request's LiteLLM metadata, read only (empty when missing)."""
    metadata = request.get(metadata_key(request))
    return metadata if is_mapping(metadata) else {}


def resolved_provider(request: Mapping[str, Any]) -> str | None:
    """The provider LiteLLM already resolved for this call (``custom_llm_provider``), when the kwargs say."""
    provider = request.get("custom_llm_provider")
    return provider if isinstance(provider, str) and provider else None
