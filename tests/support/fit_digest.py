"""
Every fit of a folder of sessions, as digests: what each request sent and reported, replayed with
conversation state in every format, for each policy and window. Run it twice, with
``LITELLM_BUDGET_MEMO=off`` and without, and the outputs must be equal: a memo may make a fit
faster, never different.

    python -m tests.support.fit_digest FOLDER [--windows 8000,32000] [--policies auto,plan,elide]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from litellm_budget.core import MEMO_OFF
from litellm_budget.core.api import FitRequest, fit_request
from litellm_budget.core.budget import BudgetSettings
from litellm_budget.core.formats import format_named
from litellm_budget.tools.replay import Remembered
from litellm_budget.tools.sessions import converted, load_conversation, requests_of, session_files
from litellm_budget.typing import Message

FORMATS = ("chat", "anthropic", "responses")


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=repr).encode()).hexdigest()[:16]


def fits(folder: Path, windows: list[int], policies: list[str]) -> tuple[dict[str, str], int]:
    """
    ``{"session format policy window": digest of every request's sent messages and report}``, and
    how many of the fits trimmed (an equivalence over fits that trimmed nothing proves little).
    """
    out: dict[str, str] = {}
    trimmed = 0
    for path in session_files([folder]):
        messages = load_conversation(path).messages
        for fmt_name in FORMATS:
            requests = [converted(request, fmt_name) for request in requests_of(messages)]
            for policy in policies:
                for window in windows:
                    rows, count = _session(requests, fmt_name, BudgetSettings(policy=policy), window)  # type: ignore[arg-type]
                    out[f"{path.stem} {fmt_name} {policy} {window}"] = _digest(rows)
                    trimmed += count
    return out, trimmed


def _session(
    requests: list[list[Message]], fmt_name: str, settings: BudgetSettings, window: int
) -> tuple[list[str], int]:
    fmt, remembered, rows, trimmed = format_named(fmt_name), Remembered(settings), [], 0
    for request in requests:
        fitted = fit_request(
            FitRequest(request, model="gpt-4o", window=window, settings=settings, fmt=fmt, previous=remembered.previous)
        )
        remembered.sent(request, fitted)
        trimmed += fitted.report.action == "trimmed"
        report = {k: v for k, v in fitted.report.as_dict().items() if k != "duration_ms"}
        rows.append(_digest([fitted.messages, fitted.max_tokens, report]))
    return rows, trimmed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--windows", default="8000,32000")
    parser.add_argument("--policies", default="auto,plan,elide")
    args = parser.parse_args(argv)
    windows = [int(w) for w in args.windows.split(",")]
    result, trimmed = fits(args.folder, windows, args.policies.split(","))
    json.dump({"memo_off": MEMO_OFF, "trimmed": trimmed, "fits": result}, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
