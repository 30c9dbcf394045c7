"""A logger the test proxy loads from beside its config: it writes what LiteLLM's loggers receive."""

from __future__ import annotations

import json
import os
from typing import Any

from litellm.integrations.custom_logger import CustomLogger


class PayloadFileSpy(CustomLogger):  # type: ignore[misc]
    """Appends the spend_logs_metadata of each StandardLoggingPayload to $SPY_LOG."""

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._write("success", kwargs)

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._write("failure", kwargs)

    def _write(self, outcome: str, kwargs: dict[str, Any]) -> None:
        payload = kwargs.get("standard_logging_object") or {}
        record = {
            "outcome": outcome,
            "call_id": kwargs.get("litellm_call_id"),
            "model_group": payload.get("model_group"),
            "metadata": payload.get("metadata") or {},
        }
        with open(os.environ["SPY_LOG"], "a", encoding="utf-8") as out:
            out.write(json.dumps(record, default=str) + "\n")


spy = PayloadFileSpy()
