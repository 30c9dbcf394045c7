"""Count requests in the model's own tokens, memoized per text so a growing history costs only its news."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

from litellm_budget.core._canonical import as_json, text_key
from litellm_budget.core._checks import bare_model, is_mapping
from litellm_budget.core._memo import Memo, forget_all
from litellm_budget.core.counting._encodings import load_offline
from litellm_budget.core.formats._parts import IMAGE_PART_TYPES, part_text
from litellm_budget.core.formats._protocol import TokenCounter
from litellm_budget.logs import get_logger
from litellm_budget.typing import Message, Tools

if TYPE_CHECKING:
    from litellm_budget.core.formats._protocol import MessageFormat

log = get_logger()


# OpenAI's accounting, as LiteLLM's token_counter applies it: every message pays 3 tokens of
# framing, a ``name`` one more, every reply is primed with 3, and a tools schema costs 9 extra.
MESSAGE_OVERHEAD = 3
NAME_OVERHEAD = 1
REPLY_PRIMING = 3
TOOLS_OVERHEAD = 9

# tiktoken's BPE is quadratic in the length of one regex piece (a megabyte of "=" takes
# minutes), so long texts are counted in chunks cut at whitespace: linear, and exact to within
# a token per chunk.
CHUNK_CHARS = 2048
# Without a tokenizer, tokens are estimated from character classes, weighted so the estimate
# stays above both encodings' real counts on code, logs, prose, CJK, emoji and random text
# (tests/core/counting/test_tokens.py checks every message of the real sessions); about 1.7x on English.
_ESTIMATE_WEIGHTS = MappingProxyType(
    {"lower": 0.35, "upper": 0.65, "digit": 0.6, "space": 0.25, "break": 0.75, "other": 1.0}
)
_ESTIMATE_SAFETY = 1.1
_NOT_LOWER = re.compile(r"[^a-z]+")
_NOT_UPPER = re.compile(r"[^A-Z]+")
_NOT_DIGIT = re.compile(r"[^0-9]+")
_NOT_SPACE = re.compile(r"[^ ]+")
_NOT_BREAK = re.compile(r"[^\t\n\r\f\v]+")
_ASCII = re.compile(r"[\x00-\x7f]+")
_CLASS_CHANGE = re.compile(r"[a-z](?=[A-Z])|[A-Za-z](?=[0-9])|[0-9](?=[A-Za-z])")

_O200K_MODELS = re.compile(r"^(chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o1|o3|o4)(?![0-9])")

#: Models counted with their own family's tokenizer (OpenAI's); every other is approximated.
_OWN_TOKENIZER = re.compile(r"^(chatgpt|gpt-|o1|o3|o4|text-embedding|davinci|babbage)")


def encoding_name_for(model: str) -> str:
    """The tiktoken encoding of ``model``; the provider prefix does not matter."""
    return "o200k_base" if _O200K_MODELS.match(bare_model(model)) else "cl100k_base"


def counts_exactly(model: str) -> bool:
    """Whether ``model`` is counted with its own tokenizer (not another family's as an estimate)."""
    return _OWN_TOKENIZER.match(bare_model(model).lower()) is not None


def counter_for(model: str, *, image_tokens: int = 765) -> TokenCounter:
    """A shared counter for ``model``; falls back to an estimate when the encoding is missing."""
    return _counter_of(encoding_name_for(model), image_tokens)


#: The encodings a request may need, all shipped inside litellm.
SHIPPED_ENCODINGS = ("o200k_base", "cl100k_base")


def preload_counters(image_tokens: int = 765) -> None:
    """
    Build the shipped encodings' counters now (a fifth of a second each), so the first request
    that needs one does not wait for it: the plugin calls this when it is registered.
    """
    for name in SHIPPED_ENCODINGS:
        _counter_of(name, image_tokens).count_text("warm up")


def reset_counters() -> None:
    """Forget loaded counters, memoized counts and every other fact remembered by content (tests,
    benchmarks, and after fixing a broken install)."""
    _counter_of.cache_clear()
    forget_all()


def forget_counts() -> None:
    """Forget memoized counts and every other fact remembered by content, keeping the loaded counters
    (benchmarks: a cold request, as a long-running proxy meets one)."""
    forget_all()


@functools.cache
def _counter_of(encoding_name: str, image_tokens: int) -> TokenCounter:
    """One counter, and so one memo, per encoding: every model that shares it shares its counts."""
    encoding = load_offline(encoding_name)
    if encoding is not None:
        encode = encoding.encode_ordinary
        counter = MemoCounter(f"tiktoken:{encoding_name}", lambda text: len(encode(text)), image_tokens, chunked=True)
    else:
        log.warning("tokenizer_unavailable", encoding=encoding_name, fallback="estimate", safety=_ESTIMATE_SAFETY)
        counter = MemoCounter("estimate", estimate_tokens, image_tokens, chunked=False)
    return counter


def estimate_tokens(text: str) -> int:
    """
    A deliberately high guess for when no tokenizer can be loaded; linear in the text.

    Byte-level BPE never makes more tokens than UTF-8 bytes, so each byte outside ASCII
    counts as a token; ASCII is weighted by class, plus one per letter/digit/case change,
    which is where random identifiers and base64 break into many short tokens.
    """
    w = _ESTIMATE_WEIGHTS
    lower = len(_NOT_LOWER.sub("", text))
    upper = len(_NOT_UPPER.sub("", text))
    digit = len(_NOT_DIGIT.sub("", text))
    space = len(_NOT_SPACE.sub("", text))
    breaks = len(_NOT_BREAK.sub("", text))
    non_ascii = _ASCII.sub("", text)
    other = len(text) - lower - upper - digit - space - breaks - len(non_ascii)
    changes = _CLASS_CHANGE.subn("", text)[1]
    weighted = (
        w["lower"] * lower
        + w["upper"] * upper
        + w["digit"] * digit
        + w["space"] * space
        + w["break"] * breaks
        + w["other"] * other
        + changes
        + len(non_ascii.encode("utf-8", "surrogatepass"))
    )
    return math.ceil(weighted * _ESTIMATE_SAFETY)


def split_chunks(text: str, size: int = CHUNK_CHARS) -> Iterable[str]:
    """Cut ``text`` into pieces of at most ``size`` characters, preferably at whitespace."""
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            space = max(text.rfind(" ", start + size // 2, end), text.rfind("\n", start + size // 2, end))
            end = space if space > start else end
        yield text[start:end]
        start = end


class MemoCounter:
    """Counts messages the way LiteLLM's ``token_counter`` does, remembering every text it saw."""

    __slots__ = ("_chunked", "_measure", "image_tokens", "memo", "message_memo", "name")

    def __init__(self, name: str, measure: Callable[[str], int], image_tokens: int, *, chunked: bool) -> None:
        self.name = name
        self._measure = measure
        #: Whether a long text is measured in ``split_chunks`` pieces (the tokenizer: ``CHUNK_CHARS``).
        self._chunked = chunked
        self.image_tokens = image_tokens
        #: Counts of texts, and of a long text's chunks (texts of their own: ``split_chunks``).
        self.memo: Memo[int] = Memo.declared("text_counts")
        self.message_memo: Memo[int] = Memo.declared("message_counts")

    def count_text(self, text: str) -> int:
        """Tokens of ``text``, from the memo when it was seen before."""
        key = text_key(text)
        count = self.memo.get(key)
        if count is None:
            count = self._count_chunks(text) if self._chunked and len(text) > CHUNK_CHARS else self._measure(text)
            self.memo.put(count, key)
        return count

    def _count_chunks(self, text: str) -> int:
        """
        A long text's tokens, the sum of its chunks', each remembered: a text that extends one
        counted before (a user message with the marker's note joined to its end) is tokenized
        only from the chunk where it differs, since chunks are cut from the start.
        """
        memo, measure, total = self.memo, self._measure, 0
        for chunk in split_chunks(text):
            key = text_key(chunk)
            count = memo.get(key)
            if count is None:
                count = measure(chunk)
                memo.put(count, key)
            total += count
        return total

    def count_messages(self, fmt: MessageFormat, messages: Sequence[Message], keys: Sequence[Hashable]) -> list[int]:
        """
        Each message's tokens in ``fmt``, remembered by its content key: a known message costs
        one lookup, not one per text it holds.
        """
        memo, name, counts = self.message_memo, fmt.name, []
        for message, key in zip(messages, keys, strict=True):
            count = memo.get(name, key)
            if count is None:
                count = fmt.count_message(self, message)
                memo.put(count, name, key)
            counts.append(count)
        return counts

    def count_message(self, message: Message) -> int:
        """Tokens of one message: framing, every string field, content parts and tool calls."""
        total = MESSAGE_OVERHEAD
        count_text = self.count_text
        for key, value in message.items():
            if value is None:
                continue
            if isinstance(value, str):
                total += count_text(value) + (NAME_OVERHEAD if key == "name" else 0)
            elif key == "content":
                total += self.count_content(value)
            elif key in {"tool_calls", "function_call"}:
                total += self._count_calls(value)
        return total

    def count_content(self, content: object) -> int:
        """Tokens of a message's content in any shape; unknown parts count as their JSON."""
        if isinstance(content, str):
            return self.count_text(content)
        if isinstance(content, list):
            return sum(self._count_part(part) for part in content)
        return self.count_text(as_json(content))

    def count_tools(self, tools: Tools | None) -> int:
        """The reply priming every request pays, plus the ``tools`` schema when there is one."""
        if not tools:
            return REPLY_PRIMING
        return self.count_schema(as_json(tools))

    def count_schema(self, schema: str) -> int:
        """``count_tools`` of a schema already written as its canonical JSON (``as_json``)."""
        return REPLY_PRIMING + TOOLS_OVERHEAD + self.count_text(schema)

    def remembers(self, text: str) -> bool:
        """Whether ``text``'s count is in the memo: ``count_text`` of it tokenizes nothing."""
        return self.memo.get(text_key(text)) is not None

    def _count_part(self, part: object) -> int:
        text = part_text(part)
        if text is not None:
            return self.count_text(text)
        if is_mapping(part) and part.get("type") in IMAGE_PART_TYPES:
            return self.image_tokens
        return self.count_text(as_json(part))

    def _count_calls(self, calls: object) -> int:
        if is_mapping(calls):
            calls = [{"function": calls}]
        if not isinstance(calls, list):
            return self.count_text(as_json(calls))
        total = 0
        for call in calls:
            function = call.get("function") if is_mapping(call) else None
            if not is_mapping(function):
                total += self.count_text(as_json(call))
                continue
            for field in ("name", "arguments"):
                value = function.get(field)
                total += self.count_text(value if isinstance(value, str) else as_json(value))
        return total
