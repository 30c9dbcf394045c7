"""The research replay (``python -m benchmarks.replay``): every session x window x strategy, totals side by side."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections import Counter
from typing import Any

from litellm_budget.core.budget._settings import BudgetSettings
from litellm_budget.core.formats import MessageFormat, format_named
from litellm_budget.core.policies._registry import POLICIES
from litellm_budget.tools import table
from litellm_budget.tools.progress import Progress
from litellm_budget.tools.replay import format_rows
from litellm_budget.tools.sessions import converted, load_conversations, requests_of
from litellm_budget.tools.settings_args import non_defaults, settings_from

from .cache_model import CacheSetup
from .compress_peer import COMPRESS_PEERS, describe_compress
from .evidence import RETRIEVABLE_NOTE, Evidence, session_evidence
from .peers import describe
from .plot import require_matplotlib
from .pricing import prices_for, unpriced
from .replay import Row, Session, Totals, replay_session, strategy_for
from .replay_summaries import OFFLINE_SUMMARY_NOTE, SummarizingStrategy, format_session_summaries

COLUMNS = [
    "requests",
    "fitted",
    "rejected",
    "overflow",
    "invalid_pairs",
    "newest_dropped",
    "rereads",
    "reuse",
    "reuse_ceiling",
    "prefix_kept",
    "reprefilled_tokens",
    "needless_reprefill",
    "needless_per_new",
    "mean_fill",
    "evidence_recall",
    "old_evidence_recall",
    "line_recall",
    "input_cost",
    "cache_hit_ratio",
    "cache_cost",
    "ms_per_request",
]


@dataclasses.dataclass(frozen=True, slots=True)
class Run:
    """One strategy to replay at every window: a policy (at a watermark), a baseline or a peer."""

    label: str
    name: str
    watermark: float | None = None
    stateless: bool = False
    #: The settings every run starts from: the defaults, ``--config``'s, ``--set``'s.
    base: BudgetSettings = dataclasses.field(default_factory=BudgetSettings)

    def settings(self) -> BudgetSettings:
        watermark = self.base.watermark if self.watermark is None else self.watermark
        stateful = self.base.conversation_state and not self.stateless
        return dataclasses.replace(self.base, watermark=watermark, conversation_state=stateful)


def run_replay(args: argparse.Namespace) -> int:
    """Replay, print the totals (and rows, plots) and return 0."""
    if args.plot or args.plot_cost or args.plot_recall:
        require_matplotlib()  # before minutes of replay, not after
    base = settings_from(getattr(args, "config", None), getattr(args, "assignments", None) or [])
    if args.policy is None:
        args.policy = [base.policy]
    # The provider's cache is modelled with the breakpoints the settings add, whichever way they were set.
    args.cache_breakpoints = bool(getattr(args, "cache_breakpoints", False)) or base.cache_breakpoints
    why = unpriced(args.model) if args.price_per_mtok is None else None
    if why is not None:
        msg = (
            f"--model {args.model!r} {why}, so the replay could not price its tokens: give a model the map "
            "prices (e.g. gpt-4o, claude-sonnet-4-5), or your own price with --price-per-mtok"
        )
        raise ValueError(msg)
    conversations = load_conversations(args.paths)
    fmt = format_named(args.format)
    runs = _runs(args, base)
    for run in runs:
        strategy_for(run.name, args.model, 1000, run.settings(), fmt=fmt)  # unknown names fail before the long run
    prices = prices_for(
        args.model,
        per_mtok=args.price_per_mtok,
        cached_share=args.cached_share,
        write_share=args.cache_write_share,
    )
    requests = {c.name: [converted(r, args.format) for r in requests_of(c.messages)] for c in conversations}
    # Learned on the chat session whatever the format replayed: the same for every window and run.
    evidence = {c.name: session_evidence(c.messages) for c in conversations}
    progress = Progress(
        sum(map(len, requests.values())) * len(runs) * len(args.window),
        enabled=None if not args.no_progress else False,
    )
    replayer = _Replayer(args, requests, evidence, fmt, progress, cache_setup(args))
    results: list[dict[str, Any]] = []
    all_rows: dict[tuple[int, str], list[Row]] = {}
    for window in args.window:
        for run in runs:
            totals, rows = replayer.replay(run, window)
            all_rows[(window, run.label)] = rows
            watermark = run.settings().watermark if run.name in POLICIES else None
            results.append({"window": window, "strategy": run.label, "watermark": watermark, **totals.summary(prices)})
            strategy = replayer.strategies[(window, run.label)]
            if isinstance(strategy, SummarizingStrategy):
                results[-1].update(strategy.totals())
    progress.close()
    described = {name: describe_compress(name, args.window) for name in args.baseline if name in COMPRESS_PEERS}
    peers = {name: described.get(name) or describe(name, args.model, args.window) for name in args.baseline}
    notes = {"prices": prices.source, "cache": replayer.cache.describe(), "settings": non_defaults(runs[0].base)}
    notes.update({"retrievable": RETRIEVABLE_NOTE} if any("retrievable_recall" in r for r in results) else {})
    _print(args, results, all_rows, notes, peers)
    if args.plot:
        _plot(args, all_rows)
    if args.plot_cost:
        _plot_cost(args, results, prices.source, sum(map(len, requests.values())), len(requests))
    if args.plot_recall:
        _plot_recall(args, results, prices.source, sum(map(len, requests.values())), len(requests))
    return 0


def _runs(args: argparse.Namespace, base: BudgetSettings) -> list[Run]:
    """
    The policies and baselines as asked, then each policy again at every other ``--watermarks``
    setting, all from the ``base`` settings.
    """
    stateless = bool(getattr(args, "stateless", False))
    runs = [Run(name, name, stateless=stateless, base=base) for name in [*args.policy, *args.baseline]]
    for watermark in args.watermarks or []:
        if watermark != base.watermark:  # that one is each policy's own run
            runs += [Run(f"{name}@{watermark:g}", name, watermark, stateless, base) for name in args.policy]
    return runs


def cache_setup(args: argparse.Namespace) -> CacheSetup:
    """The provider cache the replay models: ``--cache``, else Anthropic's for its format or a Claude model."""
    kind = getattr(args, "cache", None) or (
        "anthropic" if args.format == "anthropic" or "claude" in args.model.lower() else "openai"
    )
    return CacheSetup(
        kind=kind,
        client=getattr(args, "client_breakpoints", "last"),
        plugin=bool(getattr(args, "cache_breakpoints", False)),
        minimum=getattr(args, "cache_min_tokens", 1024),
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Replayer:
    """The sessions' requests in the replay's format, replayed run by run at one window at a time."""

    args: argparse.Namespace
    requests: dict[str, list[list[Any]]]
    #: What each request's answer learned, by session, in the order of ``requests``.
    evidence: dict[str, list[Evidence]]
    fmt: MessageFormat
    progress: Progress
    cache: CacheSetup
    #: Each run's strategy by (window, label), for what the summarizing ones counted.
    strategies: dict[tuple[int, str], Any] = dataclasses.field(default_factory=dict)

    def replay(self, run: Run, window: int) -> tuple[Totals, list[Row]]:
        totals = Totals()
        rows: list[Row] = []
        model = self.args.model
        strategy = strategy_for(run.name, model, window, run.settings(), fmt=self.fmt)
        self.strategies[(window, run.label)] = strategy
        for session, session_requests in self.requests.items():
            if isinstance(strategy, SummarizingStrategy):
                strategy.start_session(session)
            replayed = Session(session, session_requests, self.evidence[session], self.cache)
            session_rows = replay_session(replayed, strategy, model=model, window=window, fmt=self.fmt)
            totals.add_session(session_rows, window)
            for _ in session_rows:
                self.progress.step(f"{window} {run.label} {session}")
            rows += session_rows
        return totals, rows


def _print(
    args: argparse.Namespace,
    results: list[dict[str, Any]],
    rows: dict[tuple[int, str], list[Row]],
    notes: dict[str, Any],
    peers: dict[str, str],
) -> None:
    """
    The totals table (or JSON) with what each column means; ``notes``: the prices and the cache
    modelled, and the settings that are not the defaults.
    """
    prices = notes["prices"]
    if args.json:
        print(json.dumps({"model": args.model, **notes, "peers": peers, "results": results}, indent=2))
        return
    print(
        table.render(
            ["window", "strategy", *COLUMNS], [[r["window"], r["strategy"], *(r[c] for c in COLUMNS)] for r in results]
        )
    )
    print("\nreuse: share of each prompt that repeats the previous prompt's prefix (cacheable);")
    print("reuse_ceiling: the most any strategy sending these sizes could reuse (new messages are never cached);")
    print("newest_dropped: requests sent without their newest message (the tool result or question to answer);")
    print("rereads: calls the recorded agent made again for an output the last request had hidden (ours only);")
    print("prefix_kept: share of the previous prompt still a prefix of the next (cache entries that stay valid);")
    print("needless_reprefill: re-prefilled tokens that were not new (per request: sent - reused - new, if > 0);")
    print("needless_per_new: needless re-prefill over the new tokens, after each session's first request;")
    print("evidence_recall: share of the paths, identifiers and ids the agent's next answer took from the")
    print("  conversation (not its system prompt or task) that are in what was sent (a rejected request sends none);")
    print("  old_: those held only by messages before the last 8; blank: nothing learned to recall;")
    print("line_recall: of the old ones, those one of whose lines (10 characters longer than the string)")
    print("  was sent verbatim, or the string itself where it stood on no such line: names alone do not count;")
    print(f"cache_hit_ratio: share of the prompts sent that {notes['cache']} would read,")
    print("  as the plugin's cache_observed reports it in production; cache_cost: those prompts at the prices below,")
    print("  reads at the cache-read price, writes at the cache-write price, the rest at the input price;")
    print(f"input_cost: in dollars, at {prices}.")
    changed = ", ".join(f"{key}={value!r}" for key, value in notes["settings"].items())
    settings = f"the defaults, and {changed}" if changed else "the defaults"
    print(f"settings: {settings} (each row's own policy and watermark over them).")
    retrievable = [
        (r["window"], r["strategy"], r["old_retrievable_recall"]) for r in results if "retrievable_recall" in r
    ]
    if retrievable:
        print(f"\nold_retrievable_recall (window, strategy, figure): {retrievable};\n  {RETRIEVABLE_NOTE}")
    if peers:
        print("\nbaselines and peers (thresholds per window):")
        for name, text in peers.items():
            print(f"  {name}: {text}")
    sessions = format_session_summaries(results)
    if sessions:
        print(f"\nsummaries per session (offline summarizer, {OFFLINE_SUMMARY_NOTE}):\n{sessions}")
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


def _plot_cost(
    args: argparse.Namespace, results: list[dict[str, Any]], prices: str, requests: int, sessions: int
) -> None:
    """Cost against fill, one panel per window: a point per strategy, a line per policy's watermarks."""
    from .plot_cost import plot_cost_fill

    title = (
        f"Input cost against context fill, {requests:,} requests of {sessions} recorded agent sessions "
        f"replayed at {args.model}'s prices (lower right is better)"
    )
    plot_cost_fill(results, args.plot_cost, title=title, policies=args.policy, prices=prices)
    print(f"\ncost plot written to {args.plot_cost}: windows {', '.join(map(str, args.window))}")


def _plot_recall(
    args: argparse.Namespace, results: list[dict[str, Any]], prices: str, requests: int, sessions: int
) -> None:
    """Evidence recall against input cost, one panel per window."""
    from .plot_recall import plot_recall_cost

    title = (
        f"Evidence recall against input cost, {requests:,} requests of {sessions} recorded agent sessions "
        f"replayed at {args.model}'s prices (upper left is better)"
    )
    plot_recall_cost(results, args.plot_recall, title=title, policies=args.policy, prices=prices)
    print(f"\nrecall plot written to {args.plot_recall}: windows {', '.join(map(str, args.window))}")
