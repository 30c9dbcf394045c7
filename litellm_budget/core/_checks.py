"""Small checks every layer needs, spelled once: ints that are not bools, objects, model names."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeGuard


def is_int(value: object) -> TypeGuard[int]:
    """An ``int`` that is not a ``bool`` (JSON and YAML hand over both)."""
    return isinstance(value, int) and not isinstance(value, bool)


def positive_int(value: object) -> int | None:
    """``value`` if it is a positive int (bools and floats are not), else ``None``."""
    return value if is_int(value) and value > 0 else None


def non_negative_int(value: object) -> bool:
    """An int >= 0 that is not a bool."""
    return is_int(value) and value >= 0


def is_number(value: object) -> TypeGuard[int | float]:
    """An int or float that is not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, quick for parsed JSON's plain dicts: the ABC check is slow."""
    return type(value) is dict or isinstance(value, Mapping)


def candidate_names(model: str) -> Iterator[str]:
    """The names a model may be known by: ``a/b/c``, ``b/c``, ``c``, each also lower-cased; no repeats."""
    seen: set[str] = set()
    parts = model.split("/")
    for start in range(len(parts)):
        name = "/".join(parts[start:])
        for variant in (name, name.lower()):
            if variant and variant not in seen:
                seen.add(variant)
                yield variant


def bare_model(model: str) -> str:
    """``model`` without any provider prefix, lower-cased: ``openai/GPT-4o`` is ``gpt-4o``."""
    return model.rsplit("/", 1)[-1].lower()


def request_problem(entries: object, tools: object, max_tokens: object, *, name: str = "messages") -> str | None:
    """What is wrong with a request's frame, whatever its format; ``None``: nothing."""
    if not isinstance(entries, list):
        return f"{name} is {type(entries).__name__}, not a list"
    if tools is not None and not (isinstance(tools, list) and all(map(is_mapping, tools))):
        return "tools is not a list of objects"
    if max_tokens is not None and not is_int(max_tokens):
        return f"max_tokens is {type(max_tokens).__name__}, not an int"
    if is_int(max_tokens) and max_tokens < 0:
        return "max_tokens is negative"
    return None
