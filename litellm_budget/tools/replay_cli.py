"""The ``replay`` command: what each policy of the plugin sent, per session and window, side by side."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from litellm_budget.core.api import format_named

from . import table
from .progress import Progress
from .replay import Row, Totals, format_rows, policy_strategy, replayed
from .sessions import converted, load_conversations, requests_of
from .settings_args import non_defaults, settings_from

#: The policies this replay runs; ``summarize`` needs a summary model, which only the research replay stands in for.
POLICIES = ("auto", "plan", "elide")
COLUMNS = tuple(
    "requests fitted rejected sent_tokens mean_fill reuse reuse_ceiling prefix_kept reprefilled_tokens "
    "needless_reprefill needless_per_new ms_per_request".split()
)
LEGEND = """
sent_tokens: the prompts sent, in tokens; mean_fill: each sent prompt's share of the window, averaged;
reuse: share of each prompt that repeats the previous prompt's prefix (cacheable);
reuse_ceiling: the most any policy sending these sizes could reuse (new messages are never cached);
prefix_kept: share of the previous prompt still a prefix of the next (cache entries that stay valid);
needless_reprefill: re-prefilled tokens that were not new (per request: sent - reused - new, if > 0);
needless_per_new: needless re-prefill over the new tokens, after each session's first request.
Peers, evidence recall, prices and the provider's cache: python -m benchmarks.replay, from a clone."""


def run_replay(args: argparse.Namespace) -> int:
    base = settings_from(args.config, args.assignments)
    policies = args.policy or [base.policy]
    for name in policies:
        if name not in POLICIES:
            msg = (
                f"replay runs the policies {', '.join(POLICIES)}, not {name!r}; the summarizing policies, "
                "baselines and peers run in the research replay: python -m benchmarks.replay, from a clone"
            )
            raise ValueError(msg)
    conversations = load_conversations(args.paths)
    fmt = format_named(args.format)
    settings = dataclasses.replace(base, conversation_state=base.conversation_state and not args.stateless)
    requests = {c.name: [converted(r, args.format) for r in requests_of(c.messages)] for c in conversations}
    steps = sum(map(len, requests.values())) * len(policies) * len(args.window)
    progress = Progress(steps, enabled=False if args.no_progress else None)
    results: list[dict[str, Any]] = []
    rows: dict[tuple[int, str], list[Row]] = {}
    for window in args.window:
        for name in policies:
            totals, replayed_rows = Totals(), []
            strategy = policy_strategy(name, args.model, window, settings, fmt)
            for session, session_requests in requests.items():
                session_rows = [
                    Row.of(session, step) for step in replayed(session_requests, strategy, model=args.model, fmt=fmt)
                ]
                totals.add_session(session_rows, window)
                for _ in session_rows:
                    progress.step(f"{window} {name} {session}")
                replayed_rows += session_rows
            rows[(window, name)] = replayed_rows
            results.append({"window": window, "policy": name, "watermark": settings.watermark, **totals.summary()})
    progress.close()
    _print(args, results, rows, non_defaults(base))
    return 0


def _print(
    args: argparse.Namespace,
    results: list[dict[str, Any]],
    rows: dict[tuple[int, str], list[Row]],
    settings: dict[str, Any],
) -> None:
    """The totals table (or JSON) with what each column means and the settings that are not the defaults."""
    if args.json:
        print(json.dumps({"model": args.model, "settings": settings, "results": results}, indent=2))
        return
    cells = [[r["window"], r["policy"], *(r[c] for c in COLUMNS)] for r in results]
    print(table.render(["window", "policy", *COLUMNS], cells))
    print(LEGEND)
    changed = ", ".join(f"{key}={value!r}" for key, value in settings.items())
    described = f"the defaults, and {changed}" if changed else "the defaults"
    print(f"settings: {described} (each row's own policy over them).")
    if args.rows:
        for (window, name), session_rows in rows.items():
            print(f"\n== {name} at {window}")
            print(format_rows(session_rows, reused=True))
