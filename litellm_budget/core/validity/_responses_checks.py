"""Decide whether a Responses ``input`` list is well-formed enough to trim safely, and say why not."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from litellm_budget.core._checks import is_mapping
from litellm_budget.core.validity._verdicts import START, Resume, Verdict, first_problem
from litellm_budget.typing import Message

SYSTEM_ROLES = frozenset({"system", "developer"})
MESSAGE_ROLES = SYSTEM_ROLES | {"user", "assistant"}
CALL_TYPES = frozenset({"function_call", "custom_tool_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
#: Calls of the client's built-in tools (Codex's shell and patches), paired by ``call_id`` with
#: ``<type>_output`` like the others; their outputs are records (exit status, streams), never elided.
BUILTIN_CALLS = frozenset({"shell_call", "local_shell_call", "apply_patch_call"})
BUILTIN_OUTPUTS = frozenset(f"{kind}_output" for kind in BUILTIN_CALLS)
PAIRED_CALLS = CALL_TYPES | BUILTIN_CALLS
PAIRED_OUTPUTS = OUTPUT_TYPES | BUILTIN_OUTPUTS
COMPACTION = "compaction"
#: Items that are the client's say over the history and the tools, kept where they stand: read as system.
PINNED_TYPES = frozenset({COMPACTION, "compaction_trigger", "additional_tools"})
#: What the model produced besides messages and calls. None of it is ever edited: reasoning and
#: compaction carry encrypted state the provider checks, and a hosted tool's call is its own record.
OPAQUE_TYPES = frozenset(
    {"reasoning", "compaction", "web_search_call", "file_search_call", "image_generation_call", "code_interpreter_call"}
)
#: Item types that belong to the assistant's side of a step.
STEP_TYPES = PAIRED_CALLS | (OPAQUE_TYPES - {COMPACTION})
ITEM_TYPES = STEP_TYPES | PAIRED_OUTPUTS | PINNED_TYPES | {"message", "item_reference"}


def item_type(item: Message) -> str:
    """The item's ``type``; a bare ``{"role", "content"}`` is a message."""
    return str(item.get("type", "message"))


def unsupported_reason(items: object, tools: object, max_tokens: object) -> str | None:
    """Why this ``input`` cannot be trimmed safely, or ``None`` when it can (``check``)."""
    return check(items, tools, max_tokens).reason


def check(items: object, tools: object, max_tokens: object, resume: Resume = START) -> Verdict:
    """
    Why this ``input`` cannot be trimmed safely (``None`` when it can). Trimming relies on the shape the Responses API
    documents: a list of known items, text or part-list content, every output answering an open call made before it, and
    no user message before the open calls are answered (only the last step may leave a call open). Anything else is
    forwarded untouched for the provider to refuse, and the report says why. A string ``input`` is read with
    ``as_items`` first. ``resume`` starts the items' own checks after a prefix that passed before; the pairing reads
    every item (a call id may not repeat anywhere in the list).
    """
    listed = first_problem(items, tools, max_tokens, resume, _item_problem, name="input")
    return listed if isinstance(listed, Verdict) else Verdict(_pairing_problem(listed))


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _is_optional_str(value: object) -> bool:
    return value is None or isinstance(value, str)


def _is_list(value: object) -> bool:
    return isinstance(value, list)


def _is_role(value: object) -> bool:
    return isinstance(value, str) and value in MESSAGE_ROLES


def _is_content(value: object) -> bool:
    """A string, or a list of parts that are objects with a string ``type``."""
    if isinstance(value, str):
        return True
    return isinstance(value, list) and all(is_mapping(part) and isinstance(part.get("type"), str) for part in value)


# The fields each item type must have for trimming to understand it, and how they must look.
_REQUIRED: Mapping[str, tuple[tuple[str, Callable[[object], bool]], ...]] = MappingProxyType(
    {
        "function_call": (("call_id", _is_str), ("name", _is_str), ("arguments", _is_str)),
        "custom_tool_call": (("call_id", _is_str), ("name", _is_str), ("input", _is_str)),
        "function_call_output": (("call_id", _is_str), ("output", _is_content)),
        "custom_tool_call_output": (("call_id", _is_str), ("output", _is_content)),
        "reasoning": (("summary", _is_list), ("encrypted_content", _is_optional_str)),
        "compaction": (("encrypted_content", _is_str),),
        **dict.fromkeys(BUILTIN_CALLS | BUILTIN_OUTPUTS, (("call_id", _is_str),)),
        "additional_tools": (("tools", _is_list),),
        "item_reference": (("id", _is_str),),
        "message": (("role", _is_role), ("content", _is_content)),
    }
)


def _item_problem(item: object) -> str | None:
    if not is_mapping(item):
        return f"is {type(item).__name__}, not an object"
    kind = item.get("type", "message")
    if not isinstance(kind, str):
        return "has a type that is not a string"
    if kind not in ITEM_TYPES:
        return "has an unknown type"
    for field, valid in _REQUIRED.get(kind, ()):
        if not valid(item.get(field)):
            return f"is a {kind} without a valid {field}"
    return None


def _pairing_problem(items: Sequence[Mapping[str, Any]]) -> str | None:
    """Every output answers an open call of its own type; every call is answered before the next user message."""
    open_calls: dict[str, str] = {}
    seen: set[str] = set()
    for index, item in enumerate(items):
        kind = item_type(item)
        if kind in PAIRED_CALLS:
            call_id = item["call_id"]
            if call_id in seen:
                return f"item {index}: duplicated call_id"
            seen.add(call_id)
            open_calls[call_id] = f"{kind}_output"
        elif kind in PAIRED_OUTPUTS:
            if open_calls.pop(item["call_id"], None) != kind:
                return f"item {index}: {kind} answers no open call"
        elif kind == "message" and item["role"] == "user" and open_calls:
            return f"item {index}: a user message follows a call that was not answered"
    return None
