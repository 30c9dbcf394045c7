"""The ``replay`` command: every session x window x strategy, totals side by side."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

from litellm_budget.core.checks import is_number
from litellm_budget.core.formats import format_named
from litellm_budget.core.window import model_map_value

from . import table
from .convert import converted
from .plot import require_matplotlib
from .progress import Progress
from .replay import Row, Totals, format_rows, replay_session, strategy_for
from .sessions import load_conversation, requests_of, session_files

COLUMNS = [
    "requests",
    "fitted",
    "rejected",
    "overflow",
    "invalid_pairs",
    "reuse",
    "reuse_ceiling",
    "prefix_kept",
    "reprefilled_tokens",
    "mean_fill",
    "input_cost",
    "ms_per_request",
]


def run_replay(args: argparse.Namespace) -> int:
    """Replay, print the totals (and rows, a plot) and return 0."""
    if args.plot:
        require_matplotlib()  # before minutes of replay, not after
    conversations = [load_conversation(path) for path in session_files(args.paths)]
    if not conversations:
        msg = "no session files found"
        raise ValueError(msg)
    names = [*args.policy, *args.baseline]
    fmt = format_named(args.format)
    for name in names:
        strategy_for(name, args.model, 1000, fmt=fmt)  # unknown names fail before the long run
    price = _price(args.model, args.price_per_mtok)
    requests = {c.name: [converted(r, args.format) for r in requests_of(c.messages)] for c in conversations}
    progress = Progress(
        sum(map(len, requests.values())) * len(names) * len(args.window),
        enabled=None if not args.no_progress else False,
    )
    results: list[dict[str, Any]] = []
    all_rows: dict[tuple[int, str], list[Row]] = {}
    for window in args.window:
        for name in names:
            totals = Totals()
            rows: list[Row] = []
            strategy = strategy_for(name, args.model, window, fmt=fmt)
            for session, session_requests in requests.items():
                session_rows = replay_session(
                    session, session_requests, strategy, model=args.model, window=window, fmt=fmt
                )
                totals.add_session(session_rows, window)
                for _ in session_rows:
                    progress.step(f"{window} {name} {session}")
                rows += session_rows
            all_rows[(window, name)] = rows
            results.append(
                {"window": window, "strategy": name, **totals.summary(price=price, cached_share=args.cached_share)}
            )
    progress.close()
    _print(args, results, all_rows)
    if args.plot:
        _plot(args, all_rows)
    return 0


def _print(args: argparse.Namespace, results: list[dict[str, Any]], rows: dict[tuple[int, str], list[Row]]) -> None:
    if args.json:
        print(json.dumps({"model": args.model, "results": results}, indent=2))
        return
    print(
        table.render(
            ["window", "strategy", *COLUMNS], [[r["window"], r["strategy"], *(r[c] for c in COLUMNS)] for r in results]
        )
    )
    print("\nreuse: share of each prompt that repeats the previous prompt's prefix (cacheable);")
    print("reuse_ceiling: the most any strategy sending these sizes could reuse (new messages are never cached);")
    print("prefix_kept: share of the previous prompt still a prefix of the next (cache entries that stay valid).")
    if args.rows:
        for (window, name), session_rows in rows.items():
            print(f"\n== {name} at {window}")
            print(format_rows(session_rows, reused=True))


def _plot(args: argparse.Namespace, rows: dict[tuple[int, str], list[Row]]) -> None:
    """One panel per window, one line per strategy, all on the session with the most requests."""
    from .plot import plot_sessions

    first = rows[(args.window[0], (args.policy or args.baseline)[0])]
    counts = Counter(r.session for r in first)
    longest, requests = counts.most_common(1)[0]
    panels = {
        window: {
            name: [r for r in rows[(window, name)] if r.session == longest] for name in (*args.policy, *args.baseline)
        }
        for window in args.window
    }
    longest_of = f", the longest of {len(counts)} sessions" if len(counts) > 1 else ""
    title = (
        f"Prompt tokens sent per request, by strategy: {longest} ({requests} requests{longest_of}), {args.model} tokens"
    )
    plot_sessions(panels, args.plot, title=title)
    print(f"\nplot written to {args.plot}: {longest}, windows {', '.join(map(str, args.window))}")


def _price(model: str, per_mtok: float | None) -> float:
    """Fresh input price per token: the flag, else LiteLLM's model map, else $1 per million."""
    if per_mtok is not None:
        return per_mtok / 1_000_000
    found = model_map_value(model, "input_cost_per_token", lambda value: float(value) if is_number(value) else None)
    return 1 / 1_000_000 if found is None else found
