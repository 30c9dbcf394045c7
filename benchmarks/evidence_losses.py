"""Where the evidence a policy loses lived, per session family: in dropped calls, dropped or elided outputs, ...

Each learned string of an answer (``benchmarks/lab/evidence.py``) that is not in what the
policy sent is counted once, at the first of these places that held it in the request (indices
from the report's ``dropped_at``, ``elided_at``, ``cut_at``): the arguments of a dropped step's
tool calls (``call_args``: a digest of the dropped calls would have kept it), a dropped tool
output, an elided tool output, a dropped or elided assistant text, a dropped user message, a cut
message, anywhere else. A rejected request keeps none of its evidence, as in the replay. Also: how many
tokens the dropped steps' tool-call arguments take, to size a digest of them. Counts only.

Run: .venv/bin/python benchmarks/evidence_losses.py [--policy auto] [--window 8000] [--stateless]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the clone's root, for benchmarks.lab

from benchmarks.lab.evidence import (
    SEPARATOR,
    Evidence,
    argument_strings,
    message_text,
    recall_of,
    session_evidence,
    strings_in,
)
from litellm_budget import BudgetSettings
from litellm_budget.core._fit import fit_request
from litellm_budget.core._fit_input import FitRequest
from litellm_budget.core._report import BudgetReport, parse_ranges
from litellm_budget.core.counting._tokens import counter_for
from litellm_budget.tools.replay import Remembered
from litellm_budget.tools.sessions import requests_of

SESSIONS = Path(__file__).resolve().parents[2] / "shared" / "sessions"
PLACES = (
    "call_args",
    "tool_output",
    "elided_output",
    "assistant_text",
    "user",
    "cut",
    "other",
)
#: A digest would cap each call's arguments; this is what a cap of this many tokens would leave.
CAP = 50
Message = dict[str, Any]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy", default="auto")
    parser.add_argument("--window", type=int, default=8000)
    parser.add_argument("--stateless", action="store_true", help="fit every request afresh (no conversation state)")
    parser.add_argument("--sessions", type=Path, default=SESSIONS)
    args = parser.parse_args()
    counter = counter_for("gpt-4o")
    settings = BudgetSettings(policy=args.policy, conversation_state=not args.stateless)
    lost: dict[str, dict[str, Counter[str]]] = {"all": defaultdict(Counter), "old": defaultdict(Counter)}
    argument_tokens: list[tuple[int, int]] = []
    for path in sorted(args.sessions.glob("*.json")):
        family = path.stem.split("__")[0]
        messages = json.loads(path.read_text())["messages"]
        remembered = Remembered(settings)
        for request, evidence in zip(requests_of(messages), session_evidence(messages), strict=True):
            previous = remembered.previous
            fitted = fit_request(
                FitRequest(request, model="gpt-4o", window=args.window, settings=settings, previous=previous)
            )
            remembered.sent(request, fitted)
            report = fitted.report
            sent = None if report.action == "rejected" else fitted.messages
            _count({kind: lost[kind][family] for kind in lost}, request, evidence, sent, report)
            dropped = [request[i] for i in parse_ranges(report.dropped_at) if request[i].get("role") == "assistant"]
            if dropped:
                argument_tokens.append(_argument_tokens(dropped, counter))
    mode = "stateless" if args.stateless else "with conversation state"
    print(f"{args.policy} at {args.window} ({mode}): learned strings, kept, and where each lost one lived")
    for kind in ("all", "old"):
        print(f"\n{kind} evidence")
        _table(lost[kind])
    _print_tokens(argument_tokens)
    return 0


def _count(
    counters: dict[str, Counter[str]],
    request: list[Message],
    evidence: Evidence,
    sent: list[Message] | None,
    report: BudgetReport,
) -> None:
    recall = recall_of(evidence, sent)
    haystack = SEPARATOR.join(map(message_text, sent or []))
    for kind, learned, kept in (
        ("all", evidence.learned, recall.kept),
        ("old", evidence.old, recall.old_kept),
    ):
        counts = counters[kind]
        counts["requests"] += 1
        counts["learned"] += len(learned)
        counts["kept"] += kept
        if sent is None:  # as in the replay's totals: a rejected request sends none of its evidence
            counts["rejected"] += 1
            counts["rejected_evidence"] += len(learned)
            continue
        for string in learned:
            if string not in haystack:
                counts[_place(string, request, report)] += 1


def _place(string: str, request: list[Message], report: BudgetReport) -> str:
    """The first of ``PLACES`` that held ``string`` in the request."""
    dropped, elided, cut = (set(parse_ranges(r)) for r in (report.dropped_at, report.elided_at, report.cut_at))
    found: set[str] = set()
    for index, message in enumerate(request):
        role = message.get("role")
        if string not in message_text(message):
            continue
        if index in cut:
            found.add("cut")
        elif index in dropped and role == "assistant":
            found.add("call_args" if string in _call_text(message) else "assistant_text")
        elif index in dropped:
            found.add({"tool": "tool_output", "user": "user"}.get(str(role), "other"))
        elif index in elided:
            found.add({"tool": "elided_output", "assistant": "assistant_text"}.get(str(role), "other"))
        else:
            found.add("other")
    return next((place for place in PLACES if place in found), "other")


def _call_text(message: Message) -> str:
    calls = message.get("tool_calls") or []
    return SEPARATOR.join(s for call in calls for s in strings_in(call.get("function", {}).get("arguments")))


def _argument_tokens(dropped: list[Message], counter: Any) -> tuple[int, int]:
    """Tokens of the dropped steps' call arguments (decoded strings), whole and capped at :data:`CAP` per call."""
    whole = capped = 0
    for message in dropped:
        for call in message.get("tool_calls") or []:
            tokens = counter.count_text(" ".join(argument_strings(call.get("function", {}).get("arguments"))))
            whole += tokens
            capped += min(tokens, CAP)
    return whole, capped


def _table(families: dict[str, Counter[str]]) -> None:
    columns = ["requests", "rejected", "learned", "kept", "recall", *PLACES, "rejected_evidence"]
    widths = [max(len(c), 6) + 2 for c in columns]
    print(f"{'family':9}" + "".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    every: Counter[str] = Counter()
    for name, counts in [*families.items(), ("total", every)]:
        if name != "total":
            every.update(counts)
        recall = f"{counts['kept'] / counts['learned']:.4f}" if counts["learned"] else "-"
        cells = [str(counts[c]) if c != "recall" else recall for c in columns]
        print(f"{name:9}" + "".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))


def _print_tokens(argument_tokens: list[tuple[int, int]]) -> None:
    if not argument_tokens:
        print("\nno request dropped a step")
        return
    whole = [w for w, _ in argument_tokens]
    capped = [c for _, c in argument_tokens]
    print(f"\ntool-call arguments of the dropped steps, per request that dropped any ({len(whole)} requests):")
    for name, values in (("whole", whole), (f"capped at {CAP} tokens a call", capped)):
        deciles = statistics.quantiles(values, n=10) if len(values) > 1 else values * 9
        print(
            f"  {name}: mean {statistics.mean(values):.0f}, median {statistics.median(values):.0f}, "
            f"p90 {deciles[-1]:.0f}, max {max(values)} tokens"
        )


if __name__ == "__main__":
    raise SystemExit(main())
