"""
Where LiteLLM's own ``compression_interception`` is registered, it owns the Anthropic Messages requests, and this
plugin forwards them untouched (``unsupported``): two editors of one request would each read the other's
placeholders as content, and offer two retrieval tools. Chat and Responses requests are fitted here as always.
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
