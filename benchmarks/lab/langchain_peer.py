"""LangChain's own ``trim_messages``, run from ``langchain-core`` on the replayed chat messages."""

from __future__ import annotations

from typing import Any, cast

from litellm_budget.core.counting._tokens import counter_for
from litellm_budget.typing import Message

from .peers import Peer, prompt_budget

#: One line, so it reads as one error wherever the user is.
MISSING = (
    "the langchain_trim peer needs langchain-core, which is not installed: pip install langchain-core "
    "(or this package's dev extra: pip install -e '.[dev]')"
)


def langchain_trim_peer(model: str, window: int) -> Peer:
    """
    ``langchain_core.messages.trim_messages(strategy="last", include_system=True,
    start_on="human", allow_partial=False)`` with a tiktoken counter (ours, the model's
    encoding) and ``max_tokens`` = ``auto``'s budget less the reply priming every prompt pays,
    so the prompt it keeps is at most ``auto``'s budget as the replay counts it.

    Raises:
        RuntimeError: langchain-core is not installed (:data:`MISSING`).
    """
    try:
        from langchain_core.messages import convert_to_messages, convert_to_openai_messages, trim_messages
    except ImportError as exc:
        raise RuntimeError(MISSING) from exc
    counter = counter_for(model)
    max_tokens = prompt_budget(window) - counter.count_tools(None)

    def trim(messages: list[Message]) -> list[Message]:
        converted = convert_to_messages(cast("list[dict[str, Any]]", messages))
        # LangChain keeps the very objects it was given: each maps back to the dict it came from,
        # counted and sent as the client wrote it.
        originals = {id(lc): message for lc, message in zip(converted, messages, strict=True)}

        def original(lc: Any) -> Message:
            found = originals.get(id(lc))
            return found if found is not None else dict(convert_to_openai_messages(lc))

        def count(batch: list[Any]) -> int:
            return sum(counter.count_message(original(lc)) for lc in batch)

        kept = trim_messages(
            converted,
            strategy="last",
            token_counter=count,
            max_tokens=max_tokens,
            include_system=True,
            start_on="human",
            allow_partial=False,
        )
        return [original(lc) for lc in kept]

    return trim
