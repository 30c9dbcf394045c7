"""
Each message's ``content_key``, with a conversation's history hashed once rather than on every turn.

A client resends its whole history with every request, and hashing it again was the largest step
of a request that keeps its edits (about a fifth of the hook on the longest shared session). So
the messages of the last request read for a conversation are kept beside their keys, and a message
equal (``==``) to the one at its place there takes that key: ``==`` runs in C and compares the
texts byte by byte, several times faster than hashing them, and it still reads every message, so a
client that edits its history gets that message's new key, never a stale one.

Two guards keep a reused key exact:

- Only a *plain* message is compared: dicts with text keys, lists, texts and nulls. ``==`` holds
  1 equal to 1.0 and to True, which hash and count differently, so a message holding a number or
  a boolean (or any other object) is hashed every time.
- What is kept is a copy of each message's containers (the texts are shared: they cannot change),
  made once, when the message is new: LiteLLM and SDK callers may change a request's dicts after
  the fit, and a kept original would then no longer say what was hashed.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import NamedTuple

from litellm_budget.core._canonical import content_key
from litellm_budget.core._memo import MEMOS
from litellm_budget.typing import Message


class _Read(NamedTuple):
    """One request's messages as read: a plain copy of each (``None``: not plain), its key and its characters."""

    copies: tuple[object, ...]
    keys: tuple[int, ...]
    chars: tuple[int, ...]
    #: Where ``copies`` holds ``None`` past the anchor: a message that was not plain.
    not_plain: tuple[int, ...] = ()


class _NotPlain(Exception):
    """A message holds something ``==`` cannot compare exactly: a number, a boolean, another object."""


_NOTHING_READ = _Read((), (), (), ())


#: The lane of lists that are not a format's requests (what was sent, read after the response); a
#: lane named by a format (``chat``, ...) holds that format's requests.
UNCHECKED = "unchecked"


def message_keys(messages: Sequence[Message], lane: str = UNCHECKED) -> list[int]:
    """
    ``content_key`` of each message: taken from the conversation's last read where the message
    equals the one at its place there, computed otherwise; this read becomes the conversation's.
    ``lane`` keeps lists of another kind apart (what was sent, read after the response), so
    reading one never displaces the other's read.
    """
    return Reading(messages, lane).keys()


class Reading:
    """
    One request's messages against the last read of its conversation in ``lane``: which of them
    are ``known`` (equal to the message at their place there), then every key (``keys``), after
    which this read is the conversation's. Keys only: the format checks read every message.
    """

    __slots__ = ("_anchor", "_keys", "_last", "_messages", "known")

    def __init__(self, messages: Sequence[Message], lane: str) -> None:
        self._messages = messages
        self._keys: list[int] | None = None
        self._anchor: tuple[str, int, int] | None = None
        self._last = _NOTHING_READ
        self.known = [False] * len(messages)
        if len(messages) < 2:
            return
        try:
            anchor = (lane, content_key(messages[0]), content_key(messages[1]))
            last: _Read = MEMOS.conversation_reads.get(*anchor) or _NOTHING_READ
            # The anchor's own two are hashed anyway: they are neither compared nor kept. The rest
            # are compared in C, a whole history at once; a message kept as not plain is never known.
            stop = min(len(messages), len(last.copies))
            if stop > 2:
                self.known[2:stop] = map(bool, map(operator.eq, messages[2:stop], last.copies[2:stop]))
                for index in last.not_plain:
                    if index < stop:
                        self.known[index] = False
        # This runs before the checks, on whatever a client sent: what cannot be hashed or compared
        # is simply not known (the checks refuse it, or ``keys`` hashes it as before).
        except Exception:  # noqa: BLE001
            self.known = [False] * len(messages)
            return
        self._anchor, self._last = anchor, last

    def known_keys(self) -> list[int | None]:
        """
        Each message's key where it is had without hashing a text: the anchor's two, and every
        message equal to the one at its place in the last read; ``None`` for the rest.
        """
        if self._anchor is None:
            return [None] * len(self._messages)
        last = self._last
        keys: list[int | None] = [self._anchor[1], self._anchor[2]]
        keys.extend(last.keys[index] if known else None for index, known in enumerate(self.known[2:], start=2))
        return keys

    @property
    def new(self) -> bool:
        """Whether a message past the anchor is not known: what ``keys`` must hash, and a read would keep."""
        return not all(self.known[2:])

    def keys(self, *, keep: bool = True) -> list[int]:
        """
        Every message's key, the unknown ones hashed (and their containers copied) now; with
        ``keep``, this read becomes its conversation's in its lane.
        """
        if self._keys is not None:
            return self._keys
        messages, anchor, last = self._messages, self._anchor, self._last
        if anchor is None:
            self._keys = [content_key(message) for message in messages]
            return self._keys
        count = len(messages)
        if not self.new:
            # A retry, or an earlier request of the conversation: the longer read it is part of stays.
            self._keys = [anchor[1], anchor[2], *last.keys[2:count]]
            return self._keys
        # The history a client resends is known up to its first new message: taken whole from the last read.
        known = self.known
        first_new = known.index(False, 2)
        copies: list[object] = [None, None, *last.copies[2:first_new], *([None] * (count - first_new))]
        keys: list[int] = [anchor[1], anchor[2], *last.keys[2:first_new], *([0] * (count - first_new))]
        chars: list[int] = [0, 0, *last.chars[2:first_new], *([0] * (count - first_new))]
        not_plain = [index for index in last.not_plain if index < first_new]
        for index in range(first_new, count):
            if known[index]:
                copies[index], keys[index], chars[index] = last.copies[index], last.keys[index], last.chars[index]
            else:
                keys[index] = content_key(messages[index])
                copies[index], chars[index] = _plain_copy(messages[index])
            if copies[index] is None:
                not_plain.append(index)
        if keep:
            MEMOS.conversation_reads.put(_Read(tuple(copies), tuple(keys), tuple(chars), tuple(not_plain)), *anchor)
        self._keys = keys
        return keys


def _plain_copy(message: object) -> tuple[object, int]:
    """A copy of ``message``'s containers and its characters; ``(None, 0)`` when it is not plain."""
    held = [0]
    try:
        copy = _copied(message, held)
    except _NotPlain:
        return None, 0
    return copy, held[0]


def _copied(value: object, held: list[int]) -> object:
    kind = type(value)
    if kind is str:
        held[0] += len(value)  # type: ignore[arg-type]
        return value
    if value is None:
        return None
    if kind is dict:
        copy = {}
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                raise _NotPlain
            copy[key] = _copied(item, held)
        return copy
    if kind is list:
        return [_copied(item, held) for item in value]  # type: ignore[attr-defined]
    raise _NotPlain
