"""What a replayed strategy sends for one request: the one type the replay and its strategies share."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from litellm_budget.typing import Message


@dataclasses.dataclass(frozen=True, slots=True)
class Outcome:
    """What a strategy would send for one request (``None``: it refused), and how it called it."""

    messages: list[Message] | None
    action: str
    elided: int = 0
    dropped: int = 0
    #: Calls of this request repeating one whose output the last request hid (ours only: the report's).
    rereads: int = 0


#: A policy of ours, a baseline or a peer, as the replay runs it: a request in, its outcome out.
Strategy = Callable[[list[Message]], Outcome]
