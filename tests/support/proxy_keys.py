"""
Loaded by a test proxy beside its config as ``general_settings.custom_auth``: virtual keys with
fixed key and team metadata, no database. Each bearer token in ``KEYS`` (and in the JSON of
$PROXY_KEYS_MORE) is one key; any other is refused. What the metadata holds is what an operator
would set with ``/key/generate`` and ``/team/new``: the plugin's settings (``litellm_budget``) and
LiteLLM's guardrail opt-outs (of the guardrail named ``litellm-budget``).
"""

from __future__ import annotations

import json
import os
from typing import Any

from fastapi import Request
from litellm.proxy._types import UserAPIKeyAuth

KEYS: dict[str, dict[str, Any]] = {
    "sk-plain": {},
    # The team's policy and the key's smaller window: both apply.
    "sk-small": {
        "metadata": {"litellm_budget": {"window": 3000}},
        "team_id": "team-plan",
        "team_metadata": {"litellm_budget": {"policy": "plan"}},
    },
    # The key's policy over its team's.
    "sk-elide": {
        "metadata": {"litellm_budget": {"policy": "elide"}},
        "team_id": "team-plan",
        "team_metadata": {"litellm_budget": {"policy": "plan"}},
    },
    "sk-key-out": {"metadata": {"disable_global_guardrails": True}},
    "sk-opted-out": {"metadata": {"opted_out_global_guardrails": ["litellm-budget"]}},
    "sk-team-out": {"team_id": "team-out", "team_metadata": {"disable_global_guardrails": True}},
    # A typo and a bad window beside a valid setting: the valid one applies, the others are named.
    "sk-typo": {"metadata": {"litellm_budget": {"polcy": "plan", "window": -5, "protected_tail": 4}}},
    "sk-not-a-mapping": {"metadata": {"litellm_budget": "plan"}},
    # More keys, as a test writes them (a page's example): a JSON object of token to key.
    **json.loads(os.environ.get("PROXY_KEYS_MORE") or "{}"),
}


async def user_api_key_auth(request: Request, api_key: str) -> UserAPIKeyAuth:
    """The key's fixed metadata; its alias is the token without ``sk-``, so logs can name it."""
    spec = KEYS.get(api_key)
    if spec is None:
        msg = "unknown key"
        raise ValueError(msg)
    return UserAPIKeyAuth(api_key=api_key, key_alias=api_key.removeprefix("sk-"), **spec)
