"""What each memo saves: the hook over growing sessions with that one memo off, against all on.

Run: .venv/bin/python benchmarks/memo_gain.py [--rounds 2] [--sessions DIR]   (numbers go to BENCHMARKS.md §2)

Each variant runs in a fresh interpreter (``LITELLM_BUDGET_MEMO`` is read at import):
``LITELLM_BUDGET_MEMO=off:NAME`` turns one memo off, ``off`` every one. The workload is
``bench_fit.growing``: every request of a session in order through one plugin, as a proxy holds
it; the longest session of ``--sessions`` (the shared sessions, else the ones made for the
repository) at 16k (trims) and 128k (most pass). What is measured is the process's CPU time over
the whole session (``time.process_time``), which another busy process moves less than wall time.
Variants alternate within each round, so a busy machine slows them alike; the table gives each
variant's CPU over all-on's, per round.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "sessions"
MADE = HERE.parent / "tests" / "data" / "sessions"


def child(folder: Path) -> None:
    """One variant: the summed hook ms of the longest session's last requests at 16k and at 128k."""
    sys.path.insert(0, str(HERE))
    import bench_fit

    from litellm_budget.core import memos
    from litellm_budget.tools.sessions import load_conversation, requests_of, session_files

    conversations = [load_conversation(path) for path in session_files([folder])]
    longest = max(conversations, key=lambda c: len(json.dumps(c.messages)))
    requests = list(requests_of(longest.messages))
    sums = {}
    for window in (bench_fit.SMALL, bench_fit.LARGE):
        started = time.process_time()
        bench_fit.growing(requests, window, reps=1)
        sums[window] = time.process_time() - started
    names = sorted({memo.name for memo in memos()})
    print(json.dumps({"sums": sums, "memos": names, "session": longest.name}))


def run(variant: str, folder: Path) -> dict[str, object]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_BUDGET_MEMO": variant}
    done = subprocess.run(  # noqa: S603 - this interpreter, this script
        [sys.executable, __file__, "--child", str(folder)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sessions", type=Path, default=SHARED if SHARED.is_dir() else MADE)
    parser.add_argument("--only", default="", help="memo names, comma-separated (default: every memo)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    first = run("on", args.sessions)
    names = [name for name in args.only.split(",") if name] or list(first["memos"])  # type: ignore[arg-type]
    print(f"longest session of {args.sessions}: {first['session']}; {args.rounds} rounds")
    variants = ["on", *(f"off:{name}" for name in names)]
    rows: dict[str, list[dict[str, float]]] = {variant: [] for variant in variants}
    for _ in range(args.rounds):
        for variant in variants:
            rows[variant].append(run(variant, args.sessions)["sums"])  # type: ignore[arg-type]
    print(f"{'variant':32} {'16k: x all-on':>24} {'128k: x all-on':>24}")
    for variant in variants:
        cells = []
        for window in ("16000", "128000"):
            ratios = [row[window] / on[window] for row, on in zip(rows[variant], rows["on"], strict=True)]
            cells.append(" / ".join(f"{ratio:.2f}" for ratio in ratios))
        print(f"{variant:32} {cells[0]:>24} {cells[1]:>24}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
