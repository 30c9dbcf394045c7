"""
The research replay, from a clone's root: ``python -m benchmarks.replay PATHS --model M --window W``.

It takes ``litellm-budget replay``'s arguments, and the lab's: baselines and peers, prices, the
provider's prompt cache, watermark sweeps and plots (``benchmarks/lab/replay_cli.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.lab.cache_model import CACHE_KINDS, CLIENT_BREAKPOINTS
from benchmarks.lab.replay_summaries import SUMMARIZING
from litellm_budget.core.policies._registry import POLICIES
from litellm_budget.tools.cli import name_list, positive, replay_arguments, run_command

PROG = "python -m benchmarks.replay"


def main(argv: Sequence[str] | None = None) -> int:
    """Replay as ``argv`` says; returns the exit status."""
    return run_command(parser(), argv)


def parser() -> argparse.ArgumentParser:
    """``litellm-budget replay``'s arguments, then the lab's."""
    replay = argparse.ArgumentParser(
        prog=PROG, description="Replay recorded sessions: our policies, baselines and peers, measured side by side."
    )
    replay_arguments(replay, policies=",".join([*POLICIES, *(s for s in SUMMARIZING if s not in POLICIES)]))
    replay.add_argument(
        "--baseline",
        type=name_list,
        default=[],
        help="baselines and peers: trim_messages,sliding,masking,clear_tool_uses,litellm_polyfill,langchain_trim,"
        "litellm_compress,litellm_compress_budget",
    )
    replay.add_argument(
        "--price-per-mtok", type=float, help="fresh input price per million tokens (default: the model map's)"
    )
    replay.add_argument(
        "--cached-share",
        type=float,
        help="price of a reused (cached) token as a share of fresh (default: the model map's cache-read price)",
    )
    replay.add_argument(
        "--cache-write-share",
        type=float,
        help="price of a re-prefilled token as a share of fresh (default: the map's cache-write price, else 1)",
    )
    replay.add_argument(
        "--watermarks",
        type=_share_list,
        default=[],
        help="also replay each policy at these watermarks, comma-separated: 0.5,0.6,0.75,0.85",
    )
    replay.add_argument(
        "--cache",
        choices=CACHE_KINDS,
        help="the provider's prompt cache to model (default: anthropic for --format anthropic or a Claude model)",
    )
    replay.add_argument(
        "--client-breakpoints",
        choices=CLIENT_BREAKPOINTS,
        default="last",
        help="Anthropic: the client's own breakpoints, on the system prompt and the last message, or none",
    )
    replay.add_argument(
        "--cache-breakpoints", action="store_true", help="Anthropic: add the plugin's (as cache_breakpoints: true)"
    )
    replay.add_argument("--cache-min-tokens", type=positive, default=1024, help="the fewest tokens cached")
    replay.add_argument("--plot", type=Path, help="write a PNG of tokens per request (needs matplotlib)")
    replay.add_argument(
        "--plot-cost", type=Path, help="write a PNG of input cost against fill, per window (needs matplotlib)"
    )
    replay.add_argument(
        "--plot-recall",
        type=Path,
        help="write a PNG of evidence recall against input cost, per window (needs matplotlib)",
    )
    replay.set_defaults(run=_run)
    return replay


def _run(args: argparse.Namespace) -> int:
    from benchmarks.lab.replay_cli import run_replay

    return run_replay(args)


def _share_list(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        msg = f"{text!r} is not a comma-separated list of numbers"
        raise argparse.ArgumentTypeError(msg) from exc
    if not all(0 < value < 1 for value in values):
        msg = f"{text!r}: every watermark is between 0 and 1 (exclusive)"
        raise argparse.ArgumentTypeError(msg)
    return values


if __name__ == "__main__":
    sys.exit(main())
