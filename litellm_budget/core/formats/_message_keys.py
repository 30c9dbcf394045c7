"""
Each message's ``content_key``, the history a client resends hashed once: a message equal (``==``, in C, several times
faster than hashing) to the one at its place in the conversation's last read takes its key; an edited one never does.
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
    """A message holding more than str-keyed dicts, lists, texts and nulls: ``==`` cannot tell 1 from 1.0 or True."""


_NOTHING_READ = _Read((), (), (), ())

#: The lane of lists that are not a format's requests (what was sent, read after the response).
UNCHECKED = "unchecked"


def message_keys(messages: Sequence[Message], lane: str = UNCHECKED) -> list[int]:
    """Each message's ``content_key`` (see ``Reading``); ``lane`` keeps reads of other kinds of list apart."""
    return Reading(messages, lane).keys()


class Reading:
    """
    One request's messages against the last read of its conversation in ``lane``: which are ``known`` (equal to
    the message at their place there), then every key (``keys``). Keys only: the format checks read every message.
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
        """Each key had without hashing: the anchor's two and every ``known`` message's; ``None`` for the rest."""
        if self._anchor is None:
            return [None] * len(self._messages)
        keys: list[int | None] = [self._anchor[1], self._anchor[2]]
        keys.extend(self._last.keys[index] if known else None for index, known in enumerate(self.known[2:], start=2))
        return keys

    def keys(self, *, keep: bool = True) -> list[int]:
        """Every key, the unknown ones hashed (and copied) now; with ``keep``, this read becomes the conversation's."""
        if self._keys is not None:
            return self._keys
        messages, anchor, last = self._messages, self._anchor, self._last
        if anchor is None:
            self._keys = [content_key(message) for message in messages]
            return self._keys
        count = len(messages)
        if all(self.known[2:]):
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
    """
    A copy of ``message``'s containers (its texts shared: they cannot change) and its characters; ``(None, 0)``
    when not plain. A copy, as LiteLLM and SDK callers may change a request's dicts after the fit.
    """
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
