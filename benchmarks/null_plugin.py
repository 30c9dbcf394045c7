"""A callback with the plugin's hooks that does nothing in them: what LiteLLM itself spends on a callback.

``load_proxy.py --handler null_plugin.handler`` runs the plugin-on proxy with this in place of
``litellm_budget.handler``. Each hook the proxy calls for ``ContextBudget`` is defined here with the
same signature and returns what leaves a request as it came, so the proxy takes every path it takes
for the plugin (the hooks that only run where a callback defines them included) and the ratio on /
off reads what having such a callback costs before the plugin does any work: the floor under
issue 22's targets.
"""

# ruff: noqa: ARG002 - LiteLLM's signatures, every argument left unread on purpose

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, final

from litellm.integrations.custom_logger import CustomLogger


@final
class NullPlugin(CustomLogger):  # type: ignore[misc]  # litellm is untyped to mypy here
    """Every hook of ``ContextBudget``, each returning at once."""

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        return data

    async def async_filter_deployments(
        self,
        model: str,
        healthy_deployments: list[Any],
        messages: list[Any] | None,
        request_kwargs: dict[str, Any] | None = None,
        parent_otel_span: Any = None,
    ) -> list[Any]:
        return healthy_deployments

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> dict[str, Any] | None:
        return None

    async def async_post_call_response_headers_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: Any,
        response: Any,
        request_headers: dict[str, str] | None = None,
        litellm_call_info: dict[str, Any] | None = None,
    ) -> dict[str, str] | None:
        return None

    async def async_post_call_success_hook(self, data: dict[str, Any], user_api_key_dict: Any, response: Any) -> Any:
        return response

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> AsyncIterator[Any]:
        async for chunk in response:
            yield chunk

    async def async_post_call_success_deployment_hook(self, request_data: Any, response: Any, call_type: Any) -> Any:
        return response

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        return None

    async def async_post_call_failure_deployment_hook(
        self, request_data: Any, exception: Exception, call_type: Any, fallback_depth: int | None = None
    ) -> None:
        return None

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        return None

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: dict[str, Any]) -> None:
        return None


handler = NullPlugin()
