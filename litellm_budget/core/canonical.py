"""One canonical JSON text for structured values: what is counted as JSON, and what a digest names."""

from __future__ import annotations

import hashlib
import json


def as_json(value: object) -> str:
    """Keys sorted, no spaces, anything unknown as its ``str``: the same value always reads the same."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)


def digest(value: object, chars: int) -> str:
    """The first ``chars`` hex digits of the sha256 of ``value``'s canonical JSON (safe to log)."""
    return hashlib.sha256(as_json(value).encode()).hexdigest()[:chars]
