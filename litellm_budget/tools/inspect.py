"""The ledger of one request and what fit() would do to it, for people and for machines."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from litellm_budget.core.api import SYSTEM_ROLES, BudgetSettings, FitRequest, counter_for, fit_request, parse_ranges

from . import table
from .sessions import Conversation


def inspect_conversation(
    conversation: Conversation, *, model: str, window: int | None = None, settings: BudgetSettings | None = None
) -> dict[str, Any]:
    """Measure every part of the request and explain the fit: plain data, ready for JSON."""
    messages = conversation.messages
    fitted = fit_request(
        FitRequest(
            messages,
            model=model,
            window=window,
            tools=conversation.tools,
            max_tokens=conversation.max_tokens,
            settings=settings or BudgetSettings(),
        )
    )
    report = fitted.report.as_dict()
    counter = counter_for(model)
    sizes = [counter.count_message(m) if isinstance(m, dict) else 0 for m in messages]
    parts: list[tuple[str, list[int]]] = [
        ("system", [i for i, m in enumerate(messages[:-1]) if m.get("role") in SYSTEM_ROLES]),
        *((f"history: {role}", _history(messages, role)) for role in ("user", "assistant", "tool")),
        (
            f"final message ({messages[-1].get('role')})" if messages else "final message",
            [len(messages) - 1] if messages else [],
        ),
    ]
    fit_window = report["window"]
    ledger = [_entry(name, len(ix), sum(sizes[i] for i in ix), fit_window) for name, ix in parts]
    ledger.insert(1, _entry("tools schema + reply priming", 0, counter.count_tools(conversation.tools), fit_window))
    changes: list[dict[str, Any]] = [
        {"index": i, "role": messages[i].get("role"), "tokens": sizes[i], "change": change}
        for change, key in (("elided", "elided_at"), ("dropped", "dropped_at"), ("cut", "cut_at"))
        for i in parse_ranges(report[key])
    ]
    changes.sort(key=lambda c: c["index"])
    tokens = sum(entry["tokens"] for entry in ledger)
    return {"ledger": ledger, "tokens": tokens, "report": report, "changes": changes, "groups": group_changes(changes)}


def group_changes(changes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """
    One row per role in each run of consecutive changes of one kind, ordered by first index. Messages
    left unchanged in between do not end a run (an elided tool output every other message is one run).
    """
    groups: list[dict[str, Any]] = []
    for _, run in itertools.groupby(changes, key=lambda c: c["change"]):
        by_role: dict[object, list[Mapping[str, Any]]] = {}
        for change in run:
            by_role.setdefault(change["role"], []).append(change)
        for role, members in by_role.items():
            first, last = members[0]["index"], members[-1]["index"]
            groups.append(
                {
                    "indices": str(first) if first == last else f"{first}-{last}",
                    "first": first,
                    "last": last,
                    "role": role,
                    "messages": len(members),
                    "tokens": sum(m["tokens"] for m in members),
                    "change": members[0]["change"],
                }
            )
    return sorted(groups, key=lambda g: g["first"])


def render_inspection(data: dict[str, Any]) -> str:
    report = data["report"]
    ledger = table.render(
        ["part", "messages", "tokens", "share of window"],
        [[e["part"], e["messages"], e["tokens"], e["share"]] for e in data["ledger"]],
    )
    if report["window"] is None:
        return "\n".join([ledger, "", *_unknown_window(report, data["tokens"])])
    limits = (
        f"window {report['window']}  reserve {report['reserve']}  margin {report['margin']}  "
        f"budget {report['budget']}  watermark {report['watermark']}  quantum {report['quantum']}"
    )
    verdict = (
        f"{report['policy']}: {report['action']}  {report['tokens_before']} -> {report['tokens_after']} tokens  "
        f"elided {report['elided']}  dropped {report['dropped_messages']} messages "
        f"({report['dropped_units']} units)  cut {report['cut']}"
    )
    lines = [ledger, "", limits, verdict]
    if report.get("reason"):
        lines.append(f"why: {report['reason']}")
    if data["groups"]:
        rows = [[g["indices"], g["role"], g["messages"], g["tokens"], g["change"]] for g in data["groups"]]
        lines += ["", table.render(["indices", "role", "messages", "tokens", "change"], rows)]
    return "\n".join(lines)


def _unknown_window(report: dict[str, Any], tokens: int) -> list[str]:
    """No window, so no fit to show: say so, how big the request is, and how to give one."""
    return [
        f"window unknown for {report['model']}: {report.get('reason') or 'no window'}",
        f"{report['policy']}: {report['action']}  the request has {tokens:,} tokens and would be sent untouched",
        "give a window: --window 16000 (or 16k) here; in the proxy, the deployment's model_info.max_input_tokens "
        "or the default_window setting",
    ]


def _history(messages: list[dict[str, Any]], role: str) -> list[int]:
    return [i for i, m in enumerate(messages[:-1]) if m.get("role") == role]


def _entry(part: str, count: int, tokens: int, window: int | None) -> dict[str, Any]:
    share = round(tokens / window, 4) if window else None
    return {"part": part, "messages": count, "tokens": tokens, "share": share}
