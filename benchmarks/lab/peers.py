"""
The strongest context managers in use today, as replay peers, each from its documented
semantics on OpenAI chat messages. Fair parameters: every peer with a token threshold gets
``auto``'s prompt budget (the window less auto's default answer reserve and safety margin),
counted as the replay counts a prompt (our tiktoken count of every message plus the reply
priming). None of them guarantees a fit: what each sends is measured, overflow included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable
from typing import Any

from litellm_budget.core._fit_input import DEFAULT_SETTINGS
from litellm_budget.core.budget._limits import limits_for
from litellm_budget.core.client_edits._context_edits import CLEARED_RESULT, DEFAULT_KEEP_TOOL_USES, uses_cleared
from litellm_budget.core.counting._tokens import counter_for
from litellm_budget.core.formats._parts import texts_of
from litellm_budget.core.validity._chat_checks import ANSWER_ROLES
from litellm_budget.typing import Message

Peer = Callable[[list[Message]], list[Message]]
Count = Callable[[Iterable[Message]], int]

#: "The Complexity Trap" (JetBrains, 2025) masks every observation but the last 10.
MASK_KEEP = 10
#: SWE-agent's ``LastNObservations`` placeholder, which the paper's masking uses.
MASK_TEMPLATE = "Old environment output: ({lines} lines omitted)"
#: LiteLLM's ``/v1/messages`` polyfill writes this in place of a cleared tool result.
POLYFILL_PLACEHOLDER = "[Cleared by context management]"


def prompt_budget(window: int) -> int:
    """``auto``'s prompt budget at ``window`` with the default settings: every peer's threshold."""
    return limits_for(window, None, DEFAULT_SETTINGS).budget


def auto_quantum(window: int) -> int:
    """``auto``'s quantum (budget less watermark): ``clear_tool_uses``'s ``clear_at_least``."""
    return limits_for(window, None, DEFAULT_SETTINGS).quantum


def prompt_counter(model: str) -> Count:
    """Tokens of a prompt as the replay counts it: every message, plus the reply priming."""
    counter = counter_for(model)
    priming = counter.count_tools(None)
    return lambda messages: priming + sum(map(counter.count_message, messages))


def mask_observations(messages: list[Message], *, keep: int = MASK_KEEP) -> list[Message]:
    """Every tool result but the last ``keep`` replaced by a placeholder saying how many lines it had."""
    observations = [i for i, m in enumerate(messages) if m.get("role") in ANSWER_ROLES]
    older = set(observations[: max(0, len(observations) - keep)])
    return [_with_text(m, MASK_TEMPLATE.format(lines=_lines(m))) if i in older else m for i, m in enumerate(messages)]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ClearToolUses:
    """The knobs of Anthropic's ``clear_tool_uses_20250919``, as the API names them."""

    trigger: int
    keep: int = DEFAULT_KEEP_TOOL_USES
    clear_at_least: int = 0
    clear_tool_inputs: bool = False
    exclude_tools: Collection[str] = ()
    placeholder: str = CLEARED_RESULT


def clear_tool_uses(messages: list[Message], edit: ClearToolUses, count: Count) -> list[Message]:
    """
    Anthropic's ``clear_tool_uses_20250919`` on chat messages, by the rule the plugin applies to
    a client's edit (``context_edits.uses_cleared``): past ``trigger`` input tokens, the results of
    every tool use but the last ``keep`` (none of ``exclude_tools``) become ``placeholder``, and their
    arguments too with ``clear_tool_inputs``; nothing at all when that frees fewer than
    ``clear_at_least`` tokens.
    """
    before = count(messages)
    if before <= edit.trigger:
        return messages
    uses = _tool_uses(messages)
    cleared = {uses[at][0] for at in uses_cleared([name for _, name in uses], edit.keep, edit.exclude_tools)}
    if not cleared:
        return messages
    edited = _cleared(messages, cleared, edit.placeholder, inputs=cleared if edit.clear_tool_inputs else set())
    return edited if before - count(edited) >= edit.clear_at_least else messages


def litellm_polyfill(
    messages: list[Message], *, count: Count, trigger: int, keep: int = DEFAULT_KEEP_TOOL_USES
) -> list[Message]:
    """
    LiteLLM's ``/v1/messages`` polyfill of ``clear_tool_uses_20250919`` (``trigger`` and ``keep``
    only): every request past ``trigger`` clears the results of all tool uses but the last
    ``keep``, never the latest tool result; no ``clear_at_least``.
    """
    if count(messages) <= trigger:
        return messages
    ids = [call_id for call_id, _ in _tool_uses(messages)]
    if len(ids) <= keep:
        return messages
    cleared = set(ids[: len(ids) - keep])
    answered = [m.get("tool_call_id") for m in messages if m.get("role") in ANSWER_ROLES]
    if answered:
        cleared.discard(answered[-1])
    return _cleared(messages, cleared, POLYFILL_PLACEHOLDER, inputs=set()) if cleared else messages


def masking_peer(model: str, window: int) -> Peer:  # noqa: ARG001 - masking knows no window
    """Observation masking keep-last-10, unconditional: it neither knows nor enforces a budget."""
    return mask_observations


def clear_tool_uses_peer(model: str, window: int) -> Peer:
    """``clear_tool_uses``: trigger = auto's budget, keep 3, clear_at_least = auto's quantum, inputs kept."""
    count, trigger, least = prompt_counter(model), prompt_budget(window), auto_quantum(window)
    edit = ClearToolUses(trigger=trigger, clear_at_least=least)
    return lambda messages: clear_tool_uses(messages, edit, count)


def litellm_polyfill_peer(model: str, window: int) -> Peer:
    """LiteLLM's polyfill: trigger = auto's budget, keep 3."""
    count, trigger = prompt_counter(model), prompt_budget(window)
    return lambda messages: litellm_polyfill(messages, count=count, trigger=trigger)


def describe(name: str, model: str, windows: Iterable[int]) -> str:
    """The parameters a baseline or peer runs with, in words, its thresholds per window."""
    sizes = list(windows)
    budgets = ", ".join(f"{w:,}: {prompt_budget(w):,}" for w in sizes)
    quanta = ", ".join(f"{w:,}: {auto_quantum(w):,}" for w in sizes)
    priming = counter_for(model).count_tools(None)
    texts = {
        "trim_messages": "litellm.utils.trim_messages(messages, model=..., max_tokens=window)",
        "sliding": f"system messages + the newest messages within auto's budget ({budgets})",
        "masking": f"tool results older than the last {MASK_KEEP} replaced by {MASK_TEMPLATE!r}; no budget",
        "clear_tool_uses": (
            f"Anthropic clear_tool_uses_20250919 on chat: trigger = auto's budget ({budgets}) input tokens, "
            f"keep {DEFAULT_KEEP_TOOL_USES} tool uses, clear_at_least = auto's quantum ({quanta}), "
            "clear_tool_inputs false"
        ),
        "litellm_polyfill": (
            f"LiteLLM 1.110 /v1/messages polyfill: trigger = auto's budget ({budgets}), keep "
            f"{DEFAULT_KEEP_TOOL_USES}, never the latest tool result, no clear_at_least"
        ),
        "langchain_trim": (
            'langchain_core trim_messages(strategy="last", include_system=True, start_on="human", '
            f"allow_partial=False, max_tokens = auto's budget less {priming} priming tokens), tiktoken counter"
        ),
    }
    return texts.get(name, "")


def _tool_uses(messages: Iterable[Message]) -> list[tuple[Any, Any]]:
    """(call id, tool name) of every tool call, oldest first."""
    uses = []
    for message in messages:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            uses.append((call.get("id") if isinstance(call, dict) else None, name))
    return uses


def _cleared(messages: list[Message], ids: set[Any], placeholder: str, *, inputs: set[Any]) -> list[Message]:
    """Copies of the tool results answering ``ids`` (and of the calls in ``inputs``) with their text replaced."""
    edited = []
    for message in messages:
        if message.get("role") in ANSWER_ROLES and message.get("tool_call_id") in ids:
            message = _with_text(message, placeholder)  # noqa: PLW2901 - the copy replaces it
        elif inputs and message.get("tool_calls"):
            message = _without_inputs(message, inputs)  # noqa: PLW2901
        edited.append(message)
    return edited


def _without_inputs(message: Message, ids: set[Any]) -> Message:
    calls = [
        {**call, "function": {**call["function"], "arguments": "{}"}} if call.get("id") in ids else call
        for call in message["tool_calls"]
    ]
    return {**message, "tool_calls": calls}


def _with_text(message: Message, text: str) -> Message:
    """``message`` with ``text`` as its whole content, in the shape it had (a string, or one text part)."""
    content: Any = [{"type": "text", "text": text}] if isinstance(message.get("content"), list) else text
    return message if message.get("content") == content else {**message, "content": content}


def _lines(message: Message) -> int:
    return len("".join(texts_of(message.get("content"))).splitlines())
