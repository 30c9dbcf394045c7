"""Chat (and Responses message) content: a string or a list of parts; text parts are read and rewritten, others kept."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from litellm_budget.core._checks import is_mapping

TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
IMAGE_PART_TYPES = frozenset({"image_url", "image", "input_image"})


def part_text(part: object) -> str | None:
    """The text of a content part (a bare string or a text part); ``None`` for images and others."""
    if isinstance(part, str):
        return part
    if is_mapping(part) and part.get("type") in TEXT_PART_TYPES and isinstance(part.get("text"), str):
        return str(part["text"])
    return None


def texts_of(content: object) -> Iterator[str]:
    """Every text in ``content``: the string itself, or each text part of a list."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        yield from (text for text in map(part_text, content) if text is not None)


def map_texts(message: Mapping[str, Any], rewrite: Callable[[str], str]) -> dict[str, Any]:
    """A copy whose texts went through ``rewrite``; a text part it empties goes, as some providers refuse empty text."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": rewrite(content)}
    parts = []
    for part in content or ():
        text = part_text(part)
        new_text = text if text is None else rewrite(text)
        if text is None or new_text is text:
            parts.append(part)
        elif new_text or not text:
            parts.append(new_text if isinstance(part, str) else {**part, "text": new_text})
    return {**message, "content": parts}
