"""
Read what operators have on disk (a list of messages, a request body, or a recorded session), and a recorded chat
session in another API's shape, for replays.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from litellm_budget.core.api import anthropic_from_chat, is_int, join_system, responses_from_chat
from litellm_budget.typing import Message


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    """Messages read from a file, with the request's other fields when the file had them."""

    name: str
    messages: list[dict[str, Any]]
    model: str | None = None
    tools: list[dict[str, Any]] | None = None
    max_tokens: int | None = None


class SessionFileError(ValueError):
    """A file that holds no conversation this tool can read; the message says what was expected."""


def load_conversation(path: Path) -> Conversation:
    """Read a JSON list of messages, or an object with a ``messages`` list (a request body, a session file)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SessionFileError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SessionFileError(f"{path}: not a readable JSON file ({exc.__class__.__name__})") from exc
    body = {"messages": data} if isinstance(data, list) else data
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        msg = f"{path}: expected a JSON list of messages, or an object with a 'messages' list"
        raise SessionFileError(msg)
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    model = body.get("model")
    return Conversation(
        name=path.stem,
        messages=messages,
        model=model if isinstance(model, str) else None,
        tools=body.get("tools") if isinstance(body.get("tools"), list) else None,
        max_tokens=max_tokens if is_int(max_tokens) else None,
    )


def session_files(paths: Sequence[Path]) -> list[Path]:
    """The JSON files named, with folders expanded to the JSON files inside them, sorted."""
    return [file for path in paths for file in (sorted(path.glob("*.json")) if path.is_dir() else [path])]


def load_conversations(paths: Sequence[Path]) -> list[Conversation]:
    """The sessions of ``paths`` (``session_files``), each read; none found is a ``ValueError``."""
    conversations = [load_conversation(path) for path in session_files(paths)]
    if not conversations:
        msg = "no session files found"
        raise ValueError(msg)
    return conversations


def requests_of(messages: Sequence[Message]) -> Iterator[list[Message]]:
    """Every request an agent sent during a session: the history before each assistant message."""
    for index, message in enumerate(messages):
        if message.get("role") == "assistant" and index > 0:
            yield list(messages[:index])


#: The formats a session can be replayed in.
FORMATS = ("chat", "anthropic", "responses")


def converted(messages: Sequence[Message], format_name: str) -> list[Message]:
    """``messages`` (OpenAI chat) as the list the core fits in ``format_name``: Anthropic's with its system first."""
    if format_name == "anthropic":
        return join_system(*anthropic_from_chat(messages))
    if format_name == "responses":
        return list(responses_from_chat(messages))
    if format_name == "chat":
        return list(messages)
    msg = f"unknown format {format_name!r}; choose from {list(FORMATS)}"
    raise ValueError(msg)
