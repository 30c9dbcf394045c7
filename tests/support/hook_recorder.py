"""A CustomLogger that writes one JSON line per LiteLLM hook call, for pinning LiteLLM's behaviour.

Registered in a proxy config as ``tests.support.hook_recorder.recorder`` (with the repo root on
the proxy's PYTHONPATH) or put into ``litellm.callbacks`` in-process. Each line says which hook
ran, its ``call_type`` and the *names* of the keys it was given -- never message contents.

Every hook is defined on :class:`HookRecorder` itself: the proxy calls ``async_pre_call_hook``
(and the headers hook) only on classes that define it themselves, not through inheritance.

Markers, matched against the whole text of one message / input item (``drop-<hook>`` etc.),
let a test ask a hook to edit the request, so the fake upstream's recorded body shows whose
edits reach the provider:

* ``drop-<hook>``: the hook deletes that item, in place, from ``messages`` (or a list ``input``).
* ``return-<hook>``: the hook returns a shallow copy of its dict with a new list lacking the item
  (only for hooks whose return value replaces the request).
* ``input`` equal to ``assign-<hook>``: the hook sets ``data["input"] = "assigned-by-<hook>"``.
* ``input`` equal to ``replace-<hook>``: the hook returns a copy with ``input="replaced-by-<hook>"``.
* ``system`` equal to ``system-<hook>``: the hook sets ``data["system"] = "system-edited-by-<hook>"``.
* a message ``set-system-<hook>``: the hook sets ``system = "system-set-by-<hook>"`` in its dict
  (``async_pre_request_hook`` gets no ``system`` key, but one it adds is used).

``async_pre_call_hook`` and ``async_pre_call_deployment_hook`` also add
``{"set_by_<hook>": True}`` to ``spend_logs_metadata`` in LiteLLM's metadata dict
(``litellm_metadata`` where the request has one, else ``metadata``), so a test can see whether
the standard logging payload carries it.

The output file is ``$HOOK_RECORDER_LOG`` unless a path is given to the constructor.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from tests.support.jsonl import complete_records

__all__ = ["ENV_VAR", "HookRecorder", "read_records", "recorder"]

ENV_VAR = "HOOK_RECORDER_LOG"
_LIST_KEYS = ("messages", "input")


def _call_type(value: Any) -> str | None:
    """The string value of a CallTypes enum member or literal."""
    if value is None:
        return None
    return str(getattr(value, "value", value))


def _item_text(item: Any) -> str | None:
    """The whole text of a chat/Anthropic message or a Responses input item (None when it has none)."""
    if isinstance(item, str):
        return item
    if not isinstance(item, Mapping):
        return None
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return None


def _type_name(value: Any) -> str:
    return type(value).__name__


def _sorted_keys(value: Any) -> list[str] | None:
    return sorted(str(k) for k in value) if isinstance(value, Mapping) else None


def _shape(data: Mapping[str, Any]) -> dict[str, Any]:
    """Types and lengths of the request parts a context-window plugin edits, without contents."""
    shape: dict[str, Any] = {}
    for key in ("messages", "input", "system", "prompt"):
        if key in data:
            value = data[key]
            shape[f"{key}_type"] = _type_name(value)
            if isinstance(value, list):
                shape[f"{key}_len"] = len(value)
    return shape


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


def _usage_counts(usage: Any) -> dict[str, Any] | None:
    """The prompt-cache counts of a usage object (LiteLLM's normalized one): numbers only."""
    if not isinstance(usage, Mapping):
        return None
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    return {
        "prompt_tokens": usage.get("prompt_tokens"),
        "cached_tokens": details.get("cached_tokens"),
        "cache_read_input_tokens": usage.get("cache_read_input_tokens"),
        "cache_creation_input_tokens": usage.get("cache_creation_input_tokens"),
    }


def _metadata_target(data: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """LiteLLM's own metadata dict in ``data``: ``litellm_metadata`` if present, else ``metadata``."""
    for key in ("litellm_metadata", "metadata"):
        value = data.get(key)
        if isinstance(value, dict):
            return key, value
    return None


class HookRecorder(CustomLogger):  # type: ignore[misc]
    """Records every hook call as a JSON line and applies the marker edits described above."""

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__()
        self._path = Path(path) if path is not None else None
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        """Where the records go."""
        return self._path or Path(os.environ[ENV_VAR])

    # -- output -------------------------------------------------------------------------

    def _write(self, hook: str, call_type: Any = None, **fields: Any) -> None:
        path = self.path
        line = json.dumps({"hook": hook, "call_type": _call_type(call_type), **fields}, default=str)
        with self._lock, path.open("a", encoding="utf-8") as out:
            out.write(line + "\n")

    # -- edits --------------------------------------------------------------------------

    @staticmethod
    def _edit(hook: str, data: dict[str, Any], *, may_return: bool) -> dict[str, Any] | None:
        """Apply the marker edits for ``hook``; returns the replacement dict, if the markers ask for one."""
        replaced: dict[str, Any] = {}
        for key in _LIST_KEYS:
            items = data.get(key)
            if isinstance(items, list):
                items[:] = [item for item in items if _item_text(item) != f"drop-{hook}"]
                kept = [item for item in items if _item_text(item) != f"return-{hook}"]
                if may_return and len(kept) != len(items):
                    replaced[key] = kept
        text_input = data.get("input")
        if text_input == f"assign-{hook}":
            data["input"] = f"assigned-by-{hook}"
        elif may_return and text_input == f"replace-{hook}":
            replaced["input"] = f"replaced-by-{hook}"
        if data.get("system") == f"system-{hook}":
            data["system"] = f"system-edited-by-{hook}"
        messages = data.get("messages")
        if isinstance(messages, list) and any(_item_text(m) == f"set-system-{hook}" for m in messages):
            data["system"] = f"system-set-by-{hook}"
        return {**data, **replaced} if replaced else None

    @staticmethod
    def _mark_spend(hook: str, data: dict[str, Any]) -> str | None:
        target = _metadata_target(data)
        if target is None:
            return None
        name, metadata = target
        spend = metadata.get("spend_logs_metadata")
        metadata["spend_logs_metadata"] = {**(spend if isinstance(spend, Mapping) else {}), f"set_by_{hook}": True}
        return name

    # -- proxy call hooks ---------------------------------------------------------------

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> Any:
        hook = "async_pre_call_hook"
        fields = {
            "keys": _sorted_keys(data),
            "model": data.get("model"),
            "metadata_keys": _sorted_keys(data.get("metadata")),
            "litellm_metadata_keys": _sorted_keys(data.get("litellm_metadata")),
            **_shape(data),
        }
        self._write(hook, call_type, spend_target=self._mark_spend(hook, data), **fields)
        return self._edit(hook, data, may_return=True)

    async def async_moderation_hook(self, data: dict[str, Any], user_api_key_dict: Any, call_type: Any) -> Any:
        self._write("async_moderation_hook", call_type, keys=_sorted_keys(data))

    async def async_post_call_success_hook(self, data: dict[str, Any], user_api_key_dict: Any, response: Any) -> Any:
        self._write(
            "async_post_call_success_hook",
            data.get("call_type"),
            keys=_sorted_keys(data),
            response_type=_type_name(response),
        )

    async def async_post_call_failure_hook(
        self,
        request_data: dict[str, Any],
        original_exception: Exception,
        user_api_key_dict: Any,
        traceback_str: str | None = None,
    ) -> Any:
        self._write(
            "async_post_call_failure_hook",
            request_data.get("call_type"),
            keys=_sorted_keys(request_data),
            exception_type=_type_name(original_exception),
        )

    async def async_post_call_response_headers_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: Any,
        response: Any,
        request_headers: dict[str, str] | None = None,
        litellm_call_info: dict[str, object] | None = None,
    ) -> dict[str, str] | None:
        self._write(
            "async_post_call_response_headers_hook",
            data.get("call_type"),
            keys=_sorted_keys(data),
            response_type=_type_name(response),
        )
        return None

    async def async_post_call_streaming_hook(self, user_api_key_dict: Any, response: str) -> Any:
        self._write("async_post_call_streaming_hook")

    # -- router / request hooks ---------------------------------------------------------

    async def async_pre_routing_hook(
        self,
        model: str,
        request_kwargs: dict[str, Any],
        messages: list[dict[str, object]] | None = None,
        input: str | list[Any] | None = None,
        specific_deployment: bool | None = False,
    ) -> Any:
        self._write("async_pre_routing_hook", model=model, keys=_sorted_keys(request_kwargs))
        return None

    async def async_filter_deployments(
        self,
        model: str,
        healthy_deployments: list[Any],
        messages: list[Any] | None,
        request_kwargs: dict[str, Any] | None = None,
        parent_otel_span: Any = None,
    ) -> list[dict[str, Any]]:
        hook = "async_filter_deployments"
        self._write(
            hook,
            model=model,
            deployments=len(healthy_deployments),
            messages_type=_type_name(messages),
            keys=_sorted_keys(request_kwargs),
        )
        if isinstance(messages, list):
            messages[:] = [m for m in messages if _item_text(m) != f"drop-{hook}"]
        return healthy_deployments

    async def async_pre_call_check(self, deployment: dict[str, Any], parent_otel_span: Any) -> dict[str, Any] | None:
        self._write("async_pre_call_check", keys=_sorted_keys(deployment))
        return None

    def pre_call_check(self, deployment: dict[str, Any]) -> dict[str, Any] | None:
        self._write("pre_call_check", keys=_sorted_keys(deployment))
        return None

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> dict[str, Any] | None:
        hook = "async_pre_call_deployment_hook"
        fields = {
            "keys": _sorted_keys(kwargs),
            "model": kwargs.get("model"),
            "metadata_keys": _sorted_keys(kwargs.get("metadata")),
            "litellm_metadata_keys": _sorted_keys(kwargs.get("litellm_metadata")),
            **_shape(kwargs),
        }
        self._write(hook, call_type, spend_target=self._mark_spend(hook, kwargs), **fields)
        return self._edit(hook, kwargs, may_return=True)

    async def async_pre_request_hook(
        self, model: str, messages: list[Any], kwargs: dict[str, Any]
    ) -> dict[str, Any] | None:
        hook = "async_pre_request_hook"
        self._write(
            hook,
            model=model,
            keys=_sorted_keys(kwargs),
            messages_type=_type_name(messages),
            messages_len=len(messages) if isinstance(messages, list) else None,
            messages_is_kwargs_messages=messages is kwargs.get("messages"),
        )
        if isinstance(messages, list):
            if any(_item_text(m) == f"set-system-{hook}" for m in messages):
                kwargs["system"] = f"system-set-by-{hook}"
            messages[:] = [m for m in messages if _item_text(m) != f"drop-{hook}"]
        return self._edit(hook, kwargs, may_return=True)

    # -- logging hooks ------------------------------------------------------------------

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: dict[str, Any]) -> None:
        self._write(
            "log_pre_api_call",
            kwargs.get("call_type"),
            model=model,
            keys=_sorted_keys(kwargs),
            messages_type=_type_name(messages),
        )

    async def async_log_pre_api_call(self, model: Any, messages: Any, kwargs: dict[str, Any]) -> None:
        self._write("async_log_pre_api_call", kwargs.get("call_type"), model=model)

    def _log_event(self, hook: str, kwargs: dict[str, Any], response_obj: Any) -> None:
        payload = kwargs.get("standard_logging_object")
        payload = payload if isinstance(payload, Mapping) else {}
        metadata = payload.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        self._write(
            hook,
            kwargs.get("call_type"),
            keys=_sorted_keys(kwargs),
            response_type=_type_name(response_obj),
            has_standard_logging_object=bool(payload),
            slo_call_type=payload.get("call_type"),
            slo_status=payload.get("status"),
            slo_model_group=payload.get("model_group"),
            slo_spend_logs_metadata=metadata.get("spend_logs_metadata"),
            slo_model_id=payload.get("model_id"),
            slo_usage=_usage_counts(metadata.get("usage_object")),
            response_usage=_usage_counts(_plain(getattr(response_obj, "usage", None))),
            sent={key: _type_name(kwargs.get(key)) for key in ("messages", "system", "input", "instructions")},
        )

    def log_success_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._log_event("log_success_event", kwargs, response_obj)

    def log_failure_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._log_event("log_failure_event", kwargs, response_obj)

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._log_event("async_log_success_event", kwargs, response_obj)

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._log_event("async_log_failure_event", kwargs, response_obj)


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """All complete records written to ``path`` so far (the proxy may be writing one right now)."""
    return complete_records(Path(path))


recorder = HookRecorder()
"""The instance a proxy config names: ``tests.support.hook_recorder.recorder``."""
