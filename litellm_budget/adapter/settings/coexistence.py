"""
LiteLLM's own ``CompressionInterceptionLogger`` (callback ``compression_interception``) and this
plugin never edit the same request: where it is registered, it owns what it compresses, Anthropic
Messages requests, and this plugin forwards them untouched, reported ``unsupported`` with the reason;
chat and Responses requests, which it never touches, are fitted here as always. Two editors of one
request would each read the other's placeholders as content, and offer two retrieval tools.
"""

from __future__ import annotations

from litellm_budget.logs import get_logger
from litellm_budget.process import PROCESS

log = get_logger()

COMPRESSION_CALLBACK = "compression_interception"
COMPRESSION_CLASS = "CompressionInterceptionLogger"
REASON = f"{COMPRESSION_CALLBACK} is registered: LiteLLM's own compression owns Anthropic Messages requests"


def compression_registered() -> bool:
    """Whether LiteLLM's compression interception is among its callbacks (logged the first time it is seen)."""
    import litellm

    found = any(
        callback == COMPRESSION_CALLBACK or type(callback).__name__ == COMPRESSION_CLASS
        for callback in (*litellm.callbacks, *litellm.success_callback)
    )
    if found and not PROCESS.compression_said:
        PROCESS.compression_said = True
        log.warning(
            "compression_interception_registered",
            effect="Anthropic Messages requests are left to it and forwarded untouched here; chat and "
            "Responses requests are fitted here",
        )
    return found
