"""
Recall handles: a fit's notices name what it elided or dropped by a handle, which the adapter's recall tool serves back:
a keyed hash under its scope's salt (a secret, the conversation, the API key), the same in every request, so the cached
prefix stays put, and naming nothing outside its scope. Without a scope nothing is named, and a fit is unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

#: The tool's name, in every format.
TOOL_NAME = "litellm_budget_recall"
#: A handle: ``r-`` and this many hex digits (32 bits: a conversation's handles do not collide).
HANDLE_HEX = 8
HANDLE = re.compile(r"\brecall (r-[0-9a-f]{%d})\b" % HANDLE_HEX)  # noqa: UP031 - a regex's braces
NOTHING_STORED: Mapping[str, str] = MappingProxyType({})


@dataclasses.dataclass(frozen=True, slots=True)
class RecallScope:
    """The scope handles are made in: one conversation of one API key (``salt``: at most 64 bytes)."""

    salt: bytes

    def handle(self, content: str) -> str:
        """The handle of ``content`` in this scope, made afresh: what names it is remembered whole."""
        data = content.encode("utf-8", "surrogatepass")
        return "r-" + hashlib.blake2b(data, key=self.salt, digest_size=HANDLE_HEX // 2).hexdigest()

    def named_placeholder(self, placeholder: str, content: str) -> str:
        """An elided text's placeholder, saying under which handle its text is stored."""
        return f"{placeholder[:-1]} Stored as recall {self.handle(content)}.]"

    def named_line(self, line: str, texts: Sequence[str], shown: int) -> str:
        """A dropped step's digest line, with the handle of its ``texts`` where it quotes less than them."""
        content = joined_texts(texts)
        return line if len(content) <= shown else f"{line} [recall {self.handle(content)}]"


def joined_texts(texts: Sequence[str]) -> str:
    """What one digest line stands for, as it is stored: a call's outputs, or a step's texts, one per line."""
    return "\n".join(texts).strip()
