"""Tool calls as the core compares and records them: by tool name and decoded arguments."""

from __future__ import annotations

import json
import re
from collections.abc import Hashable
from typing import TYPE_CHECKING

from litellm_budget.core._canonical import as_json, text_key
from litellm_budget.core._memo import MEMOS
from litellm_budget.typing import Message

if TYPE_CHECKING:
    from litellm_budget.core.formats._protocol import MessageFormat

#: What makes two calls the same call: the tool's name and what its arguments' canonical JSON is known by.
CallKey = tuple[str, Hashable]
#: Shell commands that show a file (or a range of it) without changing anything.
_READERS = frozenset({"cat", "nl", "head", "tail", "sed", "less", "more", "bat"})
#: What makes a shell command more than a read: a redirection, a heredoc, a second command.
_NOT_A_READ = re.compile(r"[<>;&`]|\$\(")
#: An editor tool's view of a file: ``{"command": "view", "path": ...}``, or Claude Code's ``Read``.
_VIEW_PATH_KEYS = ("path", "file_path")


def decoded_arguments(arguments: object) -> object:
    """A call's arguments as a value: a JSON string decoded, anything else as it is (``""`` for none)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments if arguments is not None else ""


def call_key(name: object, arguments: object) -> CallKey:
    """The tool's name and its arguments' canonical JSON (by ``text_key``): the same call made twice has one key."""
    return str(name), text_key(as_json(decoded_arguments(arguments)))


def calls_made(fmt: MessageFormat, message: Message, key: int) -> tuple[tuple[str, CallKey], ...]:
    """Each call of ``message`` as ``(id, call_key)``, kept by its ``key``: re-reads and stale outputs scan them all."""
    made: tuple[tuple[str, CallKey], ...] = MEMOS.calls_made.recall(
        lambda: tuple((call_id, call_key(name, arguments)) for call_id, name, arguments in fmt.calls(message)),
        fmt.name,
        key,
    )
    return made


def read_path(name: object, arguments: object) -> str | None:
    """
    The file a call only shows: ``cat``, ``nl``, ``head``, ``tail``, ``sed -n`` (any range, the first command of a
    pipe), an editor's ``view``, Claude Code's ``Read``. A later read of it makes an earlier one's output stale.
    """
    decoded = decoded_arguments(arguments)
    if not isinstance(decoded, dict):
        return None
    command = decoded.get("command")
    if name == "Read" or command == "view":
        path = next((decoded[key] for key in _VIEW_PATH_KEYS if isinstance(decoded.get(key), str)), None)
        return path or None
    return _shell_read(command) if isinstance(command, str) else None


def _shell_read(command: str) -> str | None:
    if _NOT_A_READ.search(command):
        return None
    words = command.split("|", 1)[0].split()
    if not words or words[0] not in _READERS:
        return None
    flags = [word for word in words[1:] if word.startswith("-")]
    operands = [word.strip("'\"") for word in words[1:] if not word.startswith("-")]
    if words[0] == "sed":
        if "-n" not in flags or any(flag.startswith("-i") for flag in flags):
            return None
        operands = operands[1:]  # the script comes first
    return operands[-1] if len(operands) == 1 else None
