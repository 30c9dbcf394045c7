"""How the watermark trades window fill for prompt-cache reuse, on the real sessions.

Run: .venv/bin/python benchmarks/watermark_sweep.py [--policy auto] [--window 16000] [--watermark 0.75,0.6,0.5]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the clone's root, for benchmarks.lab

from benchmarks.lab.replay import Session, Totals, replay_session, strategy_for
from litellm_budget import BudgetSettings
from litellm_budget.tools.sessions import load_conversation, requests_of, session_files

SESSIONS = Path(__file__).resolve().parents[2] / "shared" / "sessions"
MEASURES = ("rejected", "reuse", "reuse_ceiling", "prefix_kept", "reprefilled_tokens", "mean_fill")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy", default="auto")
    parser.add_argument("--window", type=int, default=16_000)
    parser.add_argument("--watermark", default="0.75,0.6,0.5")
    args = parser.parse_args()
    conversations = [load_conversation(path) for path in session_files([SESSIONS])]
    requests = {c.name: list(requests_of(c.messages)) for c in conversations}
    print(f"{args.policy} at {args.window:,} tokens, {sum(map(len, requests.values()))} requests")
    print(f"{'watermark':>9} " + " ".join(f"{name:>18}" for name in MEASURES))
    for watermark in (float(value) for value in args.watermark.split(",")):
        strategy = strategy_for(args.policy, "gpt-4o", args.window, BudgetSettings(watermark=watermark))
        totals = Totals()
        for session, session_requests in requests.items():
            totals.add_session(
                replay_session(Session(session, session_requests), strategy, model="gpt-4o", window=args.window),
                args.window,
            )
        summary = totals.summary(price=0.0, cached_share=0.1)
        print(f"{watermark:>9} " + " ".join(f"{summary[name]:>18,}" for name in MEASURES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
