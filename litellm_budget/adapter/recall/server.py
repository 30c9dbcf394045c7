"""Serves ``litellm_budget_recall`` inside LiteLLM's agentic loop, so the client sees only the final answer."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from litellm.integrations.custom_logger import CustomLogger
from litellm.litellm_core_utils.prompt_templates.factory import get_tool_calls_from_response
from litellm.types.integrations.custom_logger import AgenticLoopPlan, AgenticLoopRequestPatch

from litellm_budget.adapter.records.calls import loop_call_id
from litellm_budget.core.api import HANDLE, TOOL_NAME, BudgetSettings, positive_int
from litellm_budget.logs import get_logger

from .answer import GONE, LAST, LIMIT, Asked, answer, cap_for
from .followup import closing_patch, followup_messages
from .offer import has_tool, loop_depth
from .outcomes import record_recalls, report_answer
from .scope import Answered, CallRecall, RecallState

log = get_logger()

#: LiteLLM's own bound of follow-ups per request, where the deployment sets none.
DEFAULT_MAX_LOOPS = 3


class RecallServer(CustomLogger):  # type: ignore[misc]  # litellm is untyped to mypy here
    """
    A logger of its own, registered the first time a request is offered the tool: a callback defining LiteLLM's loop
    gate makes LiteLLM buffer every streamed Anthropic answer, and with recall off nothing may change. Its gate and
    plan are the Anthropic-named ones, which LiteLLM runs for all three APIs; the chat-named ones have no loop bound.
    """

    #: LiteLLM holds a streamed Anthropic answer back while it calls a tool named here: the client never sees the call.
    server_fulfilled_tool_names: ClassVar[frozenset[str]] = frozenset({TOOL_NAME})

    def __init__(self, state: RecallState, settings: Callable[[], BudgetSettings], cache: Callable[[], Any]) -> None:
        super().__init__()
        self._state, self._settings, self._cache = state, settings, cache

    def register(self) -> None:
        """Join LiteLLM's callbacks, once (again after a test or an operator reset them)."""
        import litellm

        if not any(callback is self for callback in litellm.callbacks):
            litellm.callbacks.append(self)
            log.info("recall_tool_serving", tool=TOOL_NAME, limit=self._settings().recall_limit)

    # LiteLLM calls both hooks by keyword (1.108.5: ``chat_completion_agentic_loop.py`` and
    # ``llm_http_handler.py``), with seven and nine of them: read here by name, as a mapping.
    async def async_should_run_agentic_loop(self, **hook: Any) -> tuple[bool, dict[str, Any]]:
        """Run the loop when the model called the recall tool of a request that offered it."""
        if not has_tool(hook.get("tools")):
            return False, {}
        found = get_tool_calls_from_response(hook.get("response"))
        calls = [dict(call) for call in found if call.get("name") == TOOL_NAME]
        return (True, {"tool_calls": calls}) if calls else (False, {})

    async def async_build_agentic_loop_plan(self, **hook: Any) -> AgenticLoopPlan:
        """Answer each recall call; LiteLLM makes the follow-up with the call's own id, credentials and loop bound."""
        kwargs: dict[str, Any] = hook.get("kwargs") or {}
        logging_obj, messages = hook.get("logging_obj"), hook.get("messages") or []
        call_id = loop_call_id(logging_obj, kwargs)
        calls: list[Mapping[str, Any]] = list((hook.get("tools") or {}).get("tool_calls") or ())
        limit = self._settings().recall_limit
        answers = [await self._answer(call_id, call, messages, limit) for call in calls]
        record = self._state.call(call_id)
        if record is not None:
            record_recalls(logging_obj, kwargs, record.answered)
        closing = record is None or record.used >= limit or any(one.outcome == "limit" for one in record.answered)
        max_loops = positive_int(kwargs.get("max_agentic_loops")) or DEFAULT_MAX_LOOPS
        closing = closing or loop_depth(kwargs) + 1 >= max_loops
        if closing and answers:
            answers[-1] = f"{answers[-1]}\n{LAST}"
        surface = str(kwargs.get("_agentic_loop_api_surface") or "chat_completions")
        followup = followup_messages(surface, messages, hook.get("response"), calls, answers)
        params = hook.get("anthropic_messages_optional_request_params") or {}
        patched_tools, patched = closing_patch(surface, params.get("tools")) if closing else (None, {})
        patch = AgenticLoopRequestPatch(messages=followup, tools=patched_tools, optional_params=patched)
        return AgenticLoopPlan(run_agentic_loop=True, request_patch=patch)

    async def _answer(self, call_id: str, call: Mapping[str, Any], messages: object, limit: int) -> str:
        asked = Asked.of(call.get("arguments"))
        record = self._state.call(call_id)
        text, outcome = await self._looked_up(record, asked, messages, limit)
        answered = Answered(asked.handle[:16], outcome, len(text.encode("utf-8", "surrogatepass")))
        if record is not None:
            self._state.update(call_id, lambda r: dataclasses.replace(r, answered=(*r.answered, answered)))
        report_answer(answered, call_id, record.model_group if record is not None else "", asked)
        return text

    async def _looked_up(
        self, record: CallRecall | None, asked: Asked, messages: object, limit: int
    ) -> tuple[str, str]:
        handle = asked.handle
        if record is not None and record.used >= limit:
            return LIMIT.format(limit=limit), "limit"
        found = None
        if record is not None and HANDLE.fullmatch(f"recall {handle}"):
            found = await self._state.store.get(self._cache(), record.scope.scope_id, handle)
        if found is None or record is None:
            gone = GONE.format(handle=handle[:16] or "that handle")
            return gone, "expired" if _named_in(messages, handle) else "unknown"
        text, chars = found
        return answer(asked, text, chars, cap_for(record.room)), "served"


def _named_in(messages: object, handle: str) -> bool:
    """Whether the request the model read names ``handle`` (then it was stored once, and is gone now)."""
    return bool(handle) and f"recall {handle}" in json.dumps(messages, default=str, ensure_ascii=False)


def recalls_of(state: RecallState, call_id: str) -> Sequence[Answered]:
    """The recalls answered for ``call_id``, for its response headers."""
    record = state.call(call_id)
    return record.answered if record is not None else ()
