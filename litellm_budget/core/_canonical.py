"""One canonical JSON text per value (what is counted, what a digest names), and the memo keys of texts and messages."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable
from typing import Any

from litellm_budget.core._memo import MEMOS

#: Texts up to this length are memo keys themselves; longer ones are keyed by length and hash,
#: so a memo never holds a long text alive: its memory is bounded by its entries times this.
EXACT_KEY_CHARS = 256
_SCALARS = frozenset({int, bool, type(None)})


def as_json(value: object) -> str:
    """Keys sorted, no spaces, anything unknown as its ``str``: the same value always reads the same."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)


def digest(value: object, chars: int) -> str:
    """The first ``chars`` hex digits of the sha256 of ``value``'s canonical JSON (safe to log)."""
    return hashlib.sha256(as_json(value).encode()).hexdigest()[:chars]


def digest_known(value: object, chars: int, key: Hashable) -> str:
    """``digest(value, chars)``, remembered by ``key``: ``value``'s ``content_key``, or a hash of what names it."""
    return MEMOS.digests.recall(lambda: digest(value, chars), key, chars)


def text_key(text: str) -> Hashable:
    """What a memo knows ``text`` by: itself when short, else its length and ``hash()``."""
    return text if len(text) <= EXACT_KEY_CHARS else (len(text), hash(text))


def content_key(value: object) -> int:
    """
    What a memo knows a message (any JSON value) by in this process: the ``hash()`` of its structure,
    types tagged, so equal content has one key however many copies the wire made. Cheap on purpose
    (no JSON text; Python caches a string's hash), and 64 bits like the counter's keys of long texts.
    """
    return hash(_frozen(value))


def _frozen(value: Any) -> Hashable:
    # Flat tuples, tag first (a dict's keys and values in turn, a list's items): few calls, as every message runs this.
    kind = type(value)
    if kind is dict:
        flat: list[Hashable] = [dict]
        for key, item in value.items():
            flat.append(key if type(key) is str else (type(key), key))
            flat.append(item if type(item) is str else _frozen(item))
        return tuple(flat)
    if kind is str:
        return str(value)  # the very object: it is a str
    if kind is list:
        return (list, *[item if type(item) is str else _frozen(item) for item in value])
    if kind in _SCALARS:
        return (kind, value)
    if kind is float:
        return (float, repr(value))  # as JSON writes it: 0.0 and -0.0 are equal, and hash alike
    return (object, as_json(value))
