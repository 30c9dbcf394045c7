"""Where a policy's prompt-prefix reuse goes, per session family: new messages, drops, other changes.

Run: .venv/bin/python benchmarks/reuse_losses.py [--policy auto] [--window 16000]
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from litellm_budget import BudgetSettings
from litellm_budget.core._fit import fit_request
from litellm_budget.core._fit_input import FitRequest
from litellm_budget.core.counting._tokens import counter_for
from litellm_budget.tools.prefix import shared_prefix
from litellm_budget.tools.sessions import requests_of

SESSIONS = Path(__file__).resolve().parents[2] / "shared" / "sessions"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy", default="auto")
    parser.add_argument("--window", type=int, default=16_000)
    args = parser.parse_args()
    counter = counter_for("gpt-4o")
    settings = BudgetSettings(policy=args.policy)
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for path in sorted(SESSIONS.glob("*.json")):
        family = totals[path.stem.split("__")[0]]
        previous: list[dict[str, object]] | None = None
        previous_report = None
        seen = 0
        for request in requests_of(json.loads(path.read_text())["messages"]):
            fitted = fit_request(FitRequest(request, model="gpt-4o", window=args.window, settings=settings))
            before = sum(map(counter.count_message, request))
            sent = fitted.messages
            sizes = [counter.count_message(m) for m in sent]
            if previous is not None and previous_report is not None:
                shared = shared_prefix(previous, sent, sizes)
                lost = sum(sizes) - shared
                new_tokens = min(before - seen, lost)
                family["sent"] += sum(sizes)
                family["shared"] += shared
                family["new"] += new_tokens
                changed = fitted.report.dropped_at != previous_report.dropped_at
                family["drops" if changed else "other"] += lost - new_tokens
            previous, previous_report, seen = sent, fitted.report, before
    print(f"{args.policy} at {args.window}: shares of all tokens sent (requests after each session's first)")
    print(f"{'family':10} {'reused':>7} {'new':>6} {'drops':>6} {'other':>6}")
    for name, family in totals.items():
        sent = family["sent"] or 1
        shares = [family[key] / sent for key in ("shared", "new", "drops", "other")]
        print(f"{name:10} " + " ".join(f"{share:>6.3f}" for share in shares))
    every = {key: sum(f[key] for f in totals.values()) for key in ("sent", "shared", "new", "drops", "other")}
    print(f"{'all':10} " + " ".join(f"{every[k] / every['sent']:>6.3f}" for k in ("shared", "new", "drops", "other")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
