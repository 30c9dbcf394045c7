"""The protocols every format implements; format modules import only this and their checks, so there is no cycle."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Protocol

from litellm_budget.core.validity._verdicts import START, Resume, Verdict
from litellm_budget.typing import Message, Tools

#: The kinds of message the policies tell apart, whatever a format calls them.
SYSTEM, USER, ASSISTANT, TOOL = "system", "user", "assistant", "tool"

#: Takes the system part back out of a fitted list (see ``formats.joined``).
Unjoin = Callable[[list[Message]], list[Message]]


class MessageFormat(Protocol):
    """How one API shapes messages: the only format-specific code the core has."""

    @property
    def name(self) -> str:
        """The format's name in reports, e.g. ``chat``."""

    def kinds(self, messages: Sequence[Message]) -> list[str]:
        """
        Each message's kind: ``SYSTEM``, ``USER``, ``ASSISTANT`` (opens a step) or ``TOOL`` (belongs to the
        step before it: a result answering a call, or a further item); units are cut only before the middle two.
        """

    def history_start(self, messages: Sequence[Message]) -> int | None:
        """Where the provider starts reading: the newest compaction (or ``None``); before it, sent as is, uncounted."""

    def texts(self, message: Message) -> Iterator[str]:
        """Every text of the message's content, in order."""

    def map_texts(self, message: Message, rewrite: Callable[[str], str]) -> Message:
        """A copy whose texts went through ``rewrite``; calls, ids and images are kept as they are."""

    def answered_ids(self, message: Message) -> Sequence[str]:
        """The ids of the tool calls this message answers (one in chat, several in Anthropic's)."""

    def calls(self, message: Message) -> Sequence[tuple[str, object, object]]:
        """Each tool call the message makes, as ``(id, tool name, arguments)``: what a digest records."""

    def notice(self, text: str, placement: str = "user_note") -> Message:
        """A message telling the model ``text``, marked for ``finish`` to place as ``placement`` says."""

    def finish(self, messages: list[Message]) -> list[Message]:
        """
        The edited messages as the API takes them: each notice placed, neighbours of one role merged where the
        API wants alternation; may only shorten the request. Unchanged messages stay the same objects.
        """

    def count_message(self, counter: TokenCounter, message: Message) -> int:
        """Tokens of one message, its framing included."""

    def unsupported_reason(self, messages: object, tools: object, max_tokens: object) -> str | None:
        """Why this request cannot be trimmed safely, or ``None`` when it can."""

    def check(self, messages: object, tools: object, max_tokens: object, resume: Resume = START) -> Verdict:
        """``unsupported_reason`` plus the end's pairing state, resumed after a prefix that passed (``verdicts``)."""


class TokenCounter(Protocol):
    """Counts tokens the way the model will; the default wraps tiktoken."""

    @property
    def name(self) -> str:
        """What counted, e.g. ``tiktoken:o200k_base`` or ``estimate``."""

    def count_text(self, text: str) -> int:
        """Tokens of a bare string."""

    def count_message(self, message: Message) -> int:
        """Tokens of one chat message, its per-message overhead included."""

    def count_tools(self, tools: Tools | None) -> int:
        """Tokens of the ``tools`` schema, plus the reply priming every request pays."""

    def count_messages(self, fmt: MessageFormat, messages: Sequence[Message], keys: Sequence[Hashable]) -> list[int]:
        """Each message's tokens in ``fmt``, remembered by its content key (``keys``, one per message)."""
