"""
Loaded by a test proxy beside its config, as a callback: for each success, the spend-log row
LiteLLM would write, built by LiteLLM's own ``get_logging_payload`` from the success event's
``kwargs`` (what the proxy's database writer receives), and what LiteLLM's Usage views read from
it with their own ``extract_compression_saved_tokens``. One JSON line per success in $SPEND_ROWS.
"""

from __future__ import annotations

import json
import os
from typing import Any

from litellm.integrations.custom_logger import CustomLogger
from litellm.proxy.spend_tracking.compression_savings import extract_compression_saved_tokens
from litellm.proxy.spend_tracking.spend_tracking_utils import get_logging_payload


class SpendRows(CustomLogger):  # type: ignore[misc]
    """Writes the row's metadata column and its compression savings, by call id."""

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        row = get_logging_payload(kwargs=kwargs, response_obj=response_obj, start_time=start_time, end_time=end_time)
        metadata = json.loads(row["metadata"])
        record = {
            "call_id": kwargs.get("litellm_call_id"),
            "call_type": row.get("call_type"),
            "saved": extract_compression_saved_tokens(metadata),
            "compression_savings": metadata.get("compression_savings"),
            "spend_logs_metadata": metadata.get("spend_logs_metadata"),
            "guardrail_information": metadata.get("guardrail_information"),
            "requester_ip_address": metadata.get("requester_ip_address"),
        }
        with open(os.environ["SPEND_ROWS"], "a", encoding="utf-8") as out:
            out.write(json.dumps(record, default=str) + "\n")


rows = SpendRows()
