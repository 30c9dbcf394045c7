"""Read a chat request out of LiteLLM's kwargs and write the fitted one back; nothing else."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from ._content import is_mapping, texts_of
from ._fit import Fitted

CHAT_CALL_TYPES = frozenset({"completion", "acompletion"})
MAX_TOKENS_KEYS = ("max_completion_tokens", "max_tokens")


def is_chat(call_type: object) -> bool:
    """Whether the hook sees a chat completion (an enum member or its string value)."""
    return getattr(call_type, "value", call_type) in CHAT_CALL_TYPES


def max_tokens_of(request: Mapping[str, Any]) -> tuple[str, Any]:
    """The key the client used for the answer's length, and its value (``max_tokens`` if neither)."""
    for key in MAX_TOKENS_KEYS:
        if request.get(key) is not None:
            return key, request[key]
    return "max_tokens", None


def metadata_of(request: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """The request's LiteLLM metadata dict, created when missing so the report has a home."""
    metadata = request.get("metadata")
    if not isinstance(metadata, MutableMapping):
        metadata = {} if metadata is None else dict(metadata) if isinstance(metadata, Mapping) else {}
        request["metadata"] = metadata
    return metadata


def apply(request: MutableMapping[str, Any], fitted: Fitted) -> None:
    """Put the fitted messages and ``max_tokens`` into the request, under the key the client used."""
    if fitted.report.action != "trimmed" and fitted.max_tokens == max_tokens_of(request)[1]:
        return
    request["messages"] = fitted.messages
    key, _ = max_tokens_of(request)
    if fitted.max_tokens is not None:
        request[key] = fitted.max_tokens


def fingerprint(messages: list[Any]) -> int:
    """A cheap identity of a message list (roles and text sizes), to recognise it again after copies."""
    return hash(tuple(map(_shape, messages)))


def _shape(message: Any) -> tuple[Any, int]:
    if not is_mapping(message):
        return (type(message).__name__, 0)
    content = message.get("content")
    size = len(content) if isinstance(content, str) else sum(map(len, texts_of(content)))
    return (message.get("role"), size)
