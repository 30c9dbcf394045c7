"""
The format seam: everything the policies read from or write into a message goes through a
``MessageFormat``. Chat completions is the one implementation today; each further API
(Anthropic Messages, OpenAI Responses) adds a module here and no change to the policies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from litellm_budget.typing import Message

if TYPE_CHECKING:
    from litellm_budget.core.tokens import TokenCounter

#: The kinds of message the policies tell apart, whatever a format calls them.
SYSTEM, USER, ASSISTANT, TOOL = "system", "user", "assistant", "tool"

#: Takes the system part back out of a fitted list (see ``joined``).
Unjoin = Callable[[list[Message]], list[Message]]


def joined(name: str, system: object, messages: Sequence[Message] | str) -> tuple[list[Message], Unjoin]:
    """
    The list the core fits in format ``name``, with the request's system part (Anthropic's
    ``system``, Responses' ``instructions``) as its first entry, and the function that takes
    it out of a fitted list again (``unjoin_for``). Chat takes its system prompt as messages.
    """
    from . import anthropic, responses

    if name == "anthropic" and not isinstance(messages, str):
        return anthropic.join_system(system, messages), unjoin_for(name)
    if name == "responses":
        items = responses.as_items(messages) if isinstance(messages, str) else messages
        return responses.join_instructions(system, items), unjoin_for(name)
    if name == "chat" and system is None and not isinstance(messages, str):
        # Not a list at all: handed on as it is, for the checks to name what it is.
        return (list(messages) if isinstance(messages, list) else messages), _same  # type: ignore[return-value]
    msg = f"format {name!r} takes {'no system= (put it in messages)' if name == 'chat' else 'a list of messages'}"
    raise ValueError(msg)


def unjoin_for(name: str) -> Unjoin:
    """What takes format ``name``'s system part back out of a list ``joined`` made."""
    from . import anthropic, responses

    if name == "anthropic":
        return lambda fitted: anthropic.split_system(fitted)[1]
    return responses.split_instructions if name == "responses" else _same


def _same(messages: list[Message]) -> list[Message]:
    return messages


def format_named(name: str) -> MessageFormat:
    """The format called ``name``: ``chat``, ``anthropic`` or ``responses``."""
    from .anthropic import ANTHROPIC
    from .chat import CHAT
    from .responses import RESPONSES

    formats: dict[str, MessageFormat] = {"chat": CHAT, "anthropic": ANTHROPIC, "responses": RESPONSES}
    if name not in formats:
        msg = f"unknown message format {name!r}; known: {sorted(formats)}"
        raise ValueError(msg)
    return formats[name]


class MessageFormat(Protocol):
    """How one API shapes messages: the only format-specific code the core has."""

    @property
    def name(self) -> str:
        """The format's name in reports, e.g. ``chat``."""

    def kinds(self, messages: Sequence[Message]) -> list[str]:
        """
        Each message's kind: ``SYSTEM``, ``USER``, ``ASSISTANT`` (opens an assistant step) or
        ``TOOL`` (belongs to the step before it: a result answering a call, or a further item
        of the same step). Units are cut only before ``USER`` and ``ASSISTANT``.
        """

    def texts(self, message: Message) -> Iterator[str]:
        """Every text of the message's content, in order."""

    def map_texts(self, message: Message, rewrite: Callable[[str], str]) -> Message:
        """A copy whose texts went through ``rewrite``; calls, ids and images are kept as they are."""

    def call_ids(self, message: Message) -> Sequence[str]:
        """The ids of the tool calls this message makes."""

    def answered_ids(self, message: Message) -> Sequence[str]:
        """The ids of the tool calls this message answers (one in chat, several in Anthropic's)."""

    def notice(self, text: str) -> Message:
        """A message that tells the model ``text``, in a place this format allows."""

    def finish(self, messages: list[Message]) -> list[Message]:
        """
        The edited messages as the API takes them (e.g. merge neighbours of one role where the
        API wants alternation); may only shorten the request. Unchanged messages stay the same objects.
        """

    def count_message(self, counter: TokenCounter, message: Message) -> int:
        """Tokens of one message, its framing included."""

    def unsupported_reason(self, messages: object, tools: object, max_tokens: object) -> str | None:
        """Why this request cannot be trimmed safely, or ``None`` when it can."""
