"""
The size gate: a request whose size bound is under its budget passes untouched, nothing tokenized on its path;
its exact count comes after. Why the bound holds, for a tiktoken counter:

1. ``count_text`` is the tokens ``encode_ordinary`` makes of the text's chunks (``split_chunks``). o200k and
   cl100k are byte-level BPEs: a token is a non-empty run of its chunk's UTF-8 bytes, so a text has at most
   ``utf8_bytes(text)`` tokens. No special token is made (``<|endoftext|>`` is 13 bytes of ordinary ones;
   allowed, it would be one). A lone surrogate (JSON's ``"\\ud800"``) becomes U+FFFD, 3 bytes, as
   ``surrogatepass`` counts it (a pair becomes one 4-byte character, where 6 are counted).
2. Each format's ``count_message`` and ``count_tools`` sums constants (framing, ``name``, reply priming, tools overhead,
   an image part's flat price, a quarter of a ciphertext's length) and ``count_text`` of strings that do not depend on
   the counter (the texts, the canonical JSON of the rest); ``SizeBound`` counts these in ``utf8_bytes``.
3. The budget (the fit's ``limits_for``) is in counted tokens with the provider's ratio (learned, configured, or a
   family's prior such as Claude's 1.1) and the margin (the wider ``approximate_margin`` for a model counted with
   another family's tokenizer) in it: a bound under it means a total under it, forwarded untouched.
4. ``max_tokens`` is lowered only when prompt and answer overflow the window, and the room left shrinks as the
   prompt grows: one that fits beside the bound fits beside the total.
5. A message whose key is had without hashing (``Reading.known_keys``: the last read holds it unchanged) and
   whose count is remembered under it, and a tools schema whose JSON's count is, go in at that count: the very
   number the fit adds, from the same memo (``count_messages``, ``count_tools``), so the sum stays at least the
   total, and a growing conversation's bound is its history's exact count plus its new bytes.

A conversation that keeps its last request's edits never passes untouched (``bounded_counts``). The estimate
(no tokenizer) counts case changes: bytes do not bound it, and it never passes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from litellm_budget.core._canonical import as_json
from litellm_budget.core._checks import is_mapping
from litellm_budget.core._report import BudgetReport, elapsed_ms
from litellm_budget.core.budget._limits import Limits, max_tokens_to_send
from litellm_budget.core.counting._tokens import MESSAGE_OVERHEAD, NAME_OVERHEAD, MemoCounter, counter_for
from litellm_budget.core.formats import MessageFormat
from litellm_budget.core.formats._message_keys import Reading
from litellm_budget.core.formats._protocol import TokenCounter
from litellm_budget.core.policies._ledger import SentEdits
from litellm_budget.core.state._conversation import continues_from
from litellm_budget.core.validity._verdicts import remember_passed, resume_from
from litellm_budget.typing import Message, Tools


def utf8_bytes(text: str) -> int:
    """Bytes of ``text`` in UTF-8, a lone surrogate as 3 (``len`` alone for ASCII, which Python knows in O(1))."""
    return _bound_of(0).count_text(text)


class SizeBound(MemoCounter):
    """The counter's accounting with every text counted as its UTF-8 bytes: at least any tiktoken count of it."""

    __slots__ = ()

    def count_text(self, text: str) -> int:
        """At least the tokens of ``text`` (a token covers at least one byte), never tokenized."""
        return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))

    def count_message(self, message: Message) -> int:
        """``MemoCounter.count_message`` with ``count_text`` inlined: a call per string costs as much as the bound."""
        total = MESSAGE_OVERHEAD
        for key, value in message.items():
            if value is None:
                continue
            if isinstance(value, str):
                total += len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
                total += NAME_OVERHEAD if key == "name" else 0
            elif key == "content":
                total += self.count_content(value)
            elif key in {"tool_calls", "function_call"}:
                total += self._count_calls(value)
        return total


@functools.cache
def _bound_of(image_tokens: int) -> SizeBound:
    return SizeBound("size_bound", utf8_bytes, image_tokens, chunked=False)


def size_bound(
    messages: Sequence[Message], tools: Tools | None, fmt: MessageFormat, image_tokens: int, *, above: float = math.inf
) -> int:
    """An upper bound of the tokens ``fmt`` counts for the request (the module says why), read until over ``above``."""
    nothing = RememberedCounts(messages=(), tools=_bound_of(image_tokens).count_tools(tools))
    return bound_with(messages, fmt, image_tokens, nothing, above=above)


def bound_with(
    messages: Sequence[Message],
    fmt: MessageFormat,
    image_tokens: int,
    remembered: RememberedCounts,
    *,
    above: float = math.inf,
) -> int:
    """``size_bound`` with the counts the counter remembers (``remembered_counts``) taken as they are."""
    bound = _bound_of(image_tokens)
    total, known = remembered.tools, remembered.messages
    count_message = fmt.count_message
    for index, message in enumerate(messages):
        exact = known[index] if index < len(known) else None
        total += count_message(bound, message) if exact is None else exact
        if total > above:
            break
    return total


def new_bytes(messages: Sequence[Message], fmt: MessageFormat, *, above: float) -> int:
    """The size bound of what the last read did not hold (``Reading.known``): a fit's fresh work, up to ``above``."""
    known, bound, total = Reading(messages, fmt.name).known, _bound_of(0), 0
    for index, message in enumerate(messages):
        if not known[index]:
            # A malformed entry is the fit's to report (``unsupported``): here it only has a size.
            total += fmt.count_message(bound, message) if is_mapping(message) else len(str(message))
            if total > above:
                break
    return total


class RememberedCounts(NamedTuple):
    """What a counter remembers of a request, by content: nothing is tokenized to know it."""

    #: Each message's exact count (``None``: not remembered).
    messages: Sequence[int | None]
    #: The reply priming and the tools schema's tokens: remembered, else bounded by its bytes.
    tools: int


def remembered_counts(
    counter: MemoCounter, fmt: MessageFormat, tools: Tools | None, keys: Sequence[int | None]
) -> RememberedCounts:
    """The counts ``counter`` remembers for the messages under ``keys`` (``None``: no key) and for ``tools``."""
    known = _remembered(counter, fmt, keys)
    if not tools:
        return RememberedCounts(messages=known, tools=counter.count_tools(tools))
    schema = as_json(tools)
    # Exact where remembered, else its bytes (a schema holds no image: any bound's image price will do).
    schema_counter = counter if counter.remembers(schema) else _bound_of(0)
    return RememberedCounts(messages=known, tools=schema_counter.count_schema(schema))


def _remembered(counter: MemoCounter, fmt: MessageFormat, keys: Sequence[int | None]) -> list[int | None]:
    """Each count ``counter`` remembers under ``keys``, as ``count_messages`` keeps it (``None``: not, or no key)."""
    memo, name = counter.message_memo, fmt.name
    return [None if key is None else memo.get(name, key) for key in keys]


def passed_untouched(
    messages: Sequence[Message],
    tools: Tools | None,
    max_tokens: int | None,
    context: GateContext,
    started: float,
    **base: Any,
) -> BudgetReport | None:
    """
    The fit's report of the request passed untouched, its bound where its counts will be, when the bound is under the
    budget; ``None``: fit it. ``base``: the fit's own report fields; ``started``: its ``time.perf_counter``.
    """
    counter, limits = context.counter, context.limits
    if not counter.name.startswith("tiktoken:") or continues_from(context.previous, messages):
        return None
    if isinstance(counter, MemoCounter) and context.reading is not None:
        remembered = remembered_counts(counter, context.format, tools, context.reading.known_keys())
        bound = bound_with(messages, context.format, context.image_tokens, remembered, above=limits.budget)
    else:
        bound = size_bound(messages, tools, context.format, context.image_tokens, above=limits.budget)
    if bound > limits.budget or max_tokens_to_send(limits, max_tokens, bound) != max_tokens:
        return None
    return BudgetReport(
        **base,
        action="passthrough",
        **limits.report_fields(),
        tokens_before=bound,
        tokens_after=bound,
        messages_before=len(messages),
        messages_after=len(messages),
        max_tokens_sent=max_tokens,
        counter=counter.name,
        size_gate=True,
        tokens_exact=False,
        tokens_bound=bound,
        duration_ms=elapsed_ms(started),
    )


class Bounded(NamedTuple):
    """A request's counts, its new messages' (from ``since`` on) at their bound where not remembered."""

    counts: list[int]
    since: int


def bounded_counts(messages: Sequence[Message], keys: Sequence[int], context: GateContext) -> Bounded | None:
    """
    Each message's remembered count, each new one's bound, for a request continuing its edited last one
    (``conversation.continues``), whose kept edits then go uncounted; ``None``: count it (an old message not remembered,
    or none new). That total is at least the fit's, so under the budget the fit would keep the same edits (they read the
    old messages, the settings and the limits, never a new message's count: ``conversation._KeptDraft``); the new
    messages go after them as they came, so their exact counts later move both totals alike (``counted``).
    """
    sent, counter, fmt = context.previous, context.counter, context.format
    if sent is None or not isinstance(counter, MemoCounter) or not counter.name.startswith("tiktoken:"):
        return None
    if not continues_from(sent, messages):
        return None
    counts = _remembered(counter, fmt, keys)
    if None in counts[: sent.messages] or None not in counts[sent.messages :]:
        return None
    bound = _bound_of(context.image_tokens)
    bounded = [fmt.count_message(bound, messages[i]) if count is None else count for i, count in enumerate(counts)]
    return Bounded(bounded, sent.messages)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GateContext:
    """What the gate compares a request with: the fit's own counter, format, limits and conversation state."""

    counter: TokenCounter
    format: MessageFormat
    limits: Limits
    image_tokens: int
    previous: SentEdits | None
    #: The request read against its conversation's last read: the messages whose counts are remembered.
    reading: Reading | None = None


class GateRead(NamedTuple):
    """A request as the gate read it: its messages and tools, and the messages' keys where the fit read them."""

    messages: Sequence[Message]
    tools: Tools | None = None
    #: Each message's content key (the kept edits read them); ``None``: read when counted.
    keys: Sequence[int] | None = None


def counted(report: BudgetReport, read: GateRead, fmt: MessageFormat, image_tokens: int) -> BudgetReport:
    """A request the gate passed (untouched or with kept edits), counted now: the fit's own report, exact."""
    messages, tools, keys = read
    counter = counter_for(report.model, image_tokens=image_tokens)
    if keys is None:
        # Read now, after the response: the verdict is remembered for what the messages hold now.
        reading = Reading(messages, fmt.name)
        resume = resume_from(fmt.name, reading.known_keys())
        verdict = fmt.check(list(messages), tools, None, resume)
        keys = reading.keys()
        remember_passed(fmt.name, keys, verdict)
    total = counter.count_tools(tools) + sum(counter.count_messages(fmt, messages, keys))
    # Only messages sent as they came were bounded: the sent prompt moves as much as the request.
    after = report.tokens_after + total - report.tokens_before
    return dataclasses.replace(report, tokens_before=total, tokens_after=after, tokens_exact=True)
