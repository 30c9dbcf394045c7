"""
Loaded by a test proxy beside its config, as a callback: what a plugin can see of the proxy's
config while the proxy creates its callbacks, and of its router at the first request. Each sight
is a JSON line in $PROBE_LOG.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import litellm
from litellm.integrations.custom_logger import CustomLogger


def _record(when: str) -> None:
    server = sys.modules.get("litellm.proxy.proxy_server")
    state = server.proxy_config.get_config_state() if server is not None else {}
    router = getattr(server, "llm_router", None)
    seen = {
        "when": when,
        "server_loaded": server is not None,
        "config_model_info": [entry.get("model_info") for entry in state.get("model_list") or []],
        "callback_settings": getattr(litellm, "callback_settings", None),
        "router_deployments": None if router is None else [d["model_name"] for d in router.model_list],
    }
    with open(os.environ["PROBE_LOG"], "a", encoding="utf-8") as out:
        out.write(json.dumps(seen, default=str) + "\n")


class _Probe(CustomLogger):  # type: ignore[misc]
    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> Any:
        _record("request")
        return data


_record("created")
probe = _Probe()
