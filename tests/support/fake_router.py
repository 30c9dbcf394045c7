"""A stand-in for the summary model's router: an ``acompletion`` with a fixed reply, a delay or an error."""

from __future__ import annotations

import asyncio
from typing import Any

import litellm

#: What every summary call of a ``FakeRouter`` answers by default.
REPLY = "Task: fix the failing test. Decisions made: patch parse(). Files: app/parse.py."


class FakeRouter:
    """An ``acompletion`` that answers after ``delay`` seconds, or raises ``error``."""

    def __init__(self, reply: str = REPLY, *, delay: float = 0.0, error: Exception | None = None) -> None:
        self.reply, self.delay, self.error = reply, delay, error
        self.calls: list[dict[str, Any]] = []
        #: How many calls came back (answered or raised): a test waits for this, not for ``delay``.
        self.returned = 0

    async def acompletion(self, **kwargs: Any) -> litellm.ModelResponse:
        self.calls.append(kwargs)
        await asyncio.sleep(self.delay)  # the summary model's own latency
        self.returned += 1
        if self.error is not None:
            raise self.error
        response = litellm.ModelResponse(
            choices=[litellm.Choices(message=litellm.Message(content=self.reply, role="assistant"))],
            usage=litellm.Usage(prompt_tokens=900, completion_tokens=40, total_tokens=940),
        )
        response._hidden_params["response_cost"] = 0.0021
        return response
