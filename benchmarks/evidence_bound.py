"""What a fit that keeps whole messages could recall: with the next answer known, and with simple guesses.

Issue 20 asks ``auto`` to keep 0.70 of the old evidence at 8k (``benchmarks/lab/evidence.py``
defines it). This asks whether room or choice stands in the way. For every request of the shared
sessions, ``auto`` is fitted as the replay fits it (conversation state on), then whole messages are
picked for the same request, every pick keeping the newest message, the system messages and the
task (``--keep`` newest: the newest only), within a room of tokens (``--room``): ``auto``'s prompt
budget, or as many tokens as ``auto`` sent (the same fill). The picks:

- **oracle**: knows which learned strings the recorded answer uses; greedy, most strings not yet
  kept per token first, whole messages that fit. It may part a tool call from its output, which a
  fit may not, so it reads what knowing the answer is worth rather than what a fit could send.
- **bound**: the fractional knapsack over the same messages, every message worth all the strings
  it holds (one held twice counted twice): no choice of whole messages keeps more, tool pairs or
  not.

What it bounds, exactly: fits that send a subset of the request's original messages, each whole and
unchanged, with nothing else taking room. ``auto`` is outside that class (it writes markers,
digests and placeholders), and so is every policy that keeps a part of a message (a digest line,
some lines of an output, an outline): the marker's line of names takes ``auto`` past this script's
``newest``/``smallest``/``densest`` orders at 8k (BENCHMARKS §1). The four guesses are fixed
orders, not bounds of anything.
- **newest**, **smallest**, **densest** (salient strings per token), **related** (salient strings
  shared with the request's newest ``--focus`` messages, per token: what the agent works on now):
  guesses without the answer, whole messages in that order while they fit.

``auto`` is the replay's own measure, in the same run. Counts only; no contents are printed.

Run: .venv/bin/python benchmarks/evidence_bound.py [--window 8000,16000,32000] [--room budget|sent] [--keep task|newest]
     [--focus 4]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the clone's root, for benchmarks.lab

from benchmarks.lab.evidence import SEPARATOR, message_text, recall_of, salient_strings, session_evidence
from litellm_budget import BudgetSettings
from litellm_budget.core._fit import fit_request
from litellm_budget.core._fit_input import FitRequest
from litellm_budget.core.counting._tokens import counter_for
from litellm_budget.tools.replay import Remembered
from litellm_budget.tools.sessions import requests_of

SESSIONS = Path(__file__).resolve().parents[2] / "shared" / "sessions"
PICKS = ("auto", "oracle", "bound", "newest", "smallest", "densest", "related")
Message = dict[str, Any]


class Session:
    """One recorded session: its messages' texts, token sizes and salient strings, read once."""

    def __init__(self, messages: list[Message], counter: Any) -> None:
        self.messages = messages
        self.texts = [message_text(m) for m in messages]
        self.sizes = [counter.count_message(m) for m in messages]
        self.salient = [frozenset(salient_strings(t)) for t in self.texts]
        self.density = [len(held) / max(s, 1) for held, s in zip(self.salient, self.sizes, strict=True)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--window", default="8000,16000,32000")
    parser.add_argument("--room", choices=["budget", "sent"], default="sent")
    parser.add_argument("--keep", choices=["task", "newest"], default="task")
    parser.add_argument("--focus", type=int, default=4, help="newest messages that say what `related` relates to")
    parser.add_argument("--sessions", type=Path, default=SESSIONS)
    args = parser.parse_args()
    counter = counter_for("gpt-4o")
    sessions = [Session(json.loads(p.read_text())["messages"], counter) for p in sorted(args.sessions.glob("*.json"))]
    room = "auto's prompt budget" if args.room == "budget" else "as many tokens as auto sent"
    kept = "the newest message" if args.keep == "newest" else "the newest message, the system messages and the task"
    print(f"whole messages picked in {room}, every pick keeping {kept}; {len(sessions)} sessions")
    print(f"{'window':>7} {'kind':>4} {'strings':>8}" + "".join(f"{p:>9}" for p in PICKS))
    for window in (int(w) for w in args.window.split(",")):
        kept_counts = {(kind, pick): 0.0 for kind in ("all", "old") for pick in ("strings", *PICKS)}
        for session in sessions:
            _replay(session, window, args, kept_counts)
        for kind in ("all", "old"):
            whole = kept_counts[(kind, "strings")]
            cells = "".join(f"{kept_counts[(kind, pick)] / whole:>9.3f}" for pick in PICKS)
            print(f"{window:>7} {kind:>4} {int(whole):>8}{cells}")
    return 0


def _replay(session: Session, window: int, args: argparse.Namespace, kept: dict[tuple[str, str], float]) -> None:
    settings = BudgetSettings()
    remembered = Remembered(settings)
    for request, evidence in zip(requests_of(session.messages), session_evidence(session.messages), strict=True):
        fitted = fit_request(
            FitRequest(request, model="gpt-4o", window=window, settings=settings, previous=remembered.previous)
        )
        remembered.sent(request, fitted)
        if not evidence.learned:
            continue
        recall = recall_of(evidence, None if fitted.report.action == "rejected" else fitted.messages)
        required = _required(request, args.keep == "task")
        filled = fitted.report.budget if args.room == "budget" else fitted.report.tokens_after
        room = filled - sum(session.sizes[i] for i in required)
        others = [i for i in range(len(request)) if i not in required]
        picks = {
            "newest": _guess(session, required, sorted(others, reverse=True), room),
            "smallest": _guess(session, required, sorted(others, key=session.sizes.__getitem__), room),
            "densest": _guess(session, required, sorted(others, key=lambda i: -session.density[i]), room),
            "related": _guess(session, required, _related(session, len(request), others, args.focus), room),
        }
        for kind, strings, auto in (("all", evidence.learned, recall.kept), ("old", evidence.old, recall.old_kept)):
            oracle, bound = _oracle(session, required, others, strings, room)
            kept[(kind, "strings")] += len(strings)
            kept[(kind, "auto")] += auto
            kept[(kind, "oracle")] += oracle
            kept[(kind, "bound")] += bound
            for name, haystack in picks.items():
                kept[(kind, name)] += sum(s in haystack for s in strings)


def _required(request: Sequence[Message], keep_task: bool) -> set[int]:
    required = {len(request) - 1}
    if keep_task:
        required |= {i for i, m in enumerate(request) if m.get("role") in ("system", "developer")}
        first_user = next((i for i, m in enumerate(request) if m.get("role") == "user"), None)
        required |= set() if first_user is None else {first_user}
    return required


def _related(session: Session, length: int, others: list[int], focus: int) -> list[int]:
    """``others``, most salient strings shared with the newest ``focus`` messages per token first, newer first."""
    now = frozenset().union(*session.salient[max(0, length - focus) : length])
    return sorted(others, key=lambda i: (-len(session.salient[i] & now) / max(session.sizes[i], 1), -i))


def _guess(session: Session, required: set[int], order: list[int], room: int) -> str:
    """The text of the required messages and of ``order``'s messages taken while they fit ``room``."""
    kept = sorted(required)
    for index in order:
        if session.sizes[index] <= room:
            kept.append(index)
            room -= session.sizes[index]
    return SEPARATOR.join(session.texts[i] for i in kept)


def _oracle(
    session: Session, required: set[int], others: list[int], strings: frozenset[str], room: int
) -> tuple[int, float]:
    """(strings the greedy pick that knows them keeps, the fractional knapsack's upper bound)."""
    texts, sizes = session.texts, session.sizes
    covered = frozenset(s for s in strings if any(s in texts[i] for i in required))
    holds = {i: {s for s in strings if s in texts[i]} - covered for i in others}
    holds = {i: held for i, held in holds.items() if held}
    return _greedy(holds, sizes, set(covered), room), min(_fractional(holds, sizes, room) + len(covered), len(strings))


def _greedy(holds: dict[int, set[str]], sizes: Sequence[int], kept: set[str], left: int) -> int:
    holds = dict(holds)
    while True:
        fitting = [i for i in holds if sizes[i] <= left and holds[i] - kept]
        if not fitting:
            return len(kept)
        best = max(fitting, key=lambda i: len(holds[i] - kept) / max(sizes[i], 1))
        kept |= holds.pop(best)
        left -= sizes[best]


def _fractional(holds: dict[int, set[str]], sizes: Sequence[int], left: int) -> float:
    value = 0.0
    for index in sorted(holds, key=lambda i: len(holds[i]) / max(sizes[i], 1), reverse=True):
        if left <= 0:
            break
        value += len(holds[index]) * min(1.0, left / max(sizes[index], 1))
        left -= sizes[index]
    return value


if __name__ == "__main__":
    raise SystemExit(main())
