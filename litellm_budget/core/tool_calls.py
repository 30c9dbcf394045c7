"""Tool calls as the core compares and records them: by tool name and decoded arguments."""

from __future__ import annotations

import json

from .canonical import as_json

#: What makes two calls the same call.
CallKey = tuple[str, str]


def decoded_arguments(arguments: object) -> object:
    """A call's arguments as a value: a JSON string decoded, anything else as it is (``""`` for none)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments if arguments is not None else ""


def call_key(name: object, arguments: object) -> CallKey:
    """The tool's name and its arguments' canonical JSON: the same call made twice has one key."""
    return str(name), as_json(decoded_arguments(arguments))
