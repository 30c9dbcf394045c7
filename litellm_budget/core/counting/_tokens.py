"""Count requests in the model's own tokens, memoized per text so a growing history costs only its news."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Hashable, Iterable, Sequence
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

# OpenAI's accounting, as LiteLLM's token_counter applies it: the tokens a message, a ``name``, a reply and tools add.
MESSAGE_OVERHEAD = 3
NAME_OVERHEAD = 1
REPLY_PRIMING = 3
TOOLS_OVERHEAD = 9

# tiktoken's BPE is quadratic in the length of one regex piece (a megabyte of "=" takes minutes),
# so long texts are counted in chunks cut at whitespace: linear, and exact to a token per chunk.
CHUNK_CHARS = 2048
# Without a tokenizer, tokens are estimated from character classes, weighted to stay above both encodings' counts
# on code, logs, prose, CJK, emoji and random text: each weight, and what is not in its class (other ASCII weighs 1).
_ESTIMATE_CLASSES = (
    (0.35, re.compile(r"[^a-z]+")),
    (0.65, re.compile(r"[^A-Z]+")),
    (0.6, re.compile(r"[^0-9]+")),
    (0.25, re.compile(r"[^ ]+")),
    (0.75, re.compile(r"[^\t\n\r\f\v]+")),
)
_ESTIMATE_SAFETY = 1.1
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


def preload_counters(image_tokens: int = 765) -> None:
    """Build the counters of every encoding litellm ships (all a request may need) at registration: no request waits."""
    for name in ("o200k_base", "cl100k_base"):
        _counter_of(name, image_tokens).count_text("warm up")


def reset_counters() -> None:
    """Forget loaded counters and everything remembered by content (tests, benchmarks, a fixed install)."""
    _counter_of.cache_clear()
    forget_all()


def forget_counts() -> None:
    """Forget what is remembered by content but keep the loaded counters (benchmarks: a proxy's cold request)."""
    forget_all()


@functools.cache
def _counter_of(encoding_name: str, image_tokens: int) -> TokenCounter:
    """One counter, and so one memo, per encoding: every model that shares it shares its counts."""
    encoding = load_offline(encoding_name)
    if encoding is None:
        log.warning("tokenizer_unavailable", encoding=encoding_name, fallback="estimate", safety=_ESTIMATE_SAFETY)
        return MemoCounter("estimate", estimate_tokens, image_tokens, chunked=False)
    encode = encoding.encode_ordinary
    return MemoCounter(f"tiktoken:{encoding_name}", lambda text: len(encode(text)), image_tokens, chunked=True)


def estimate_tokens(text: str) -> int:
    """
    A deliberately high guess for when no tokenizer can be loaded, linear in the text. Byte-level BPE makes at most a
    token per UTF-8 byte, so each byte outside ASCII counts as one; ASCII is weighted by class, plus one per
    letter/digit/case change, where random identifiers and base64 break into many short tokens.
    """
    non_ascii = _ASCII.sub("", text)
    weighted, other = 0.0, len(text) - len(non_ascii)
    for weight, not_in_class in _ESTIMATE_CLASSES:
        in_class = len(not_in_class.sub("", text))
        weighted += weight * in_class
        other -= in_class
    changes = _CLASS_CHANGE.subn("", text)[1]
    weighted = weighted + other + changes + len(non_ascii.encode("utf-8", "surrogatepass"))
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
        """
        Tokens of ``text``, remembered. A long text's are its chunks', each remembered: cut from the start, so a text
        extending one counted before (a marker's note joined to a user message) is tokenized only from where it differs.
        """
        key = text_key(text)
        count = self.memo.get(key)
        if count is None:
            chunked = self._chunked and len(text) > CHUNK_CHARS
            count = sum(map(self.count_text, split_chunks(text))) if chunked else self._measure(text)
            self.memo.put(count, key)
        return count

    def count_messages(self, fmt: MessageFormat, messages: Sequence[Message], keys: Sequence[Hashable]) -> list[int]:
        """Each message's tokens in ``fmt``, remembered by content key: a known message costs one lookup."""
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
