"""Tokens per request along one session, one line per strategy, cache breaks marked (needs matplotlib)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from .replay import Row


def plot_session(rows_by_strategy: Mapping[str, Sequence[Row]], path: Path, *, title: str, window: int) -> None:
    """
    Draw the prompt size each strategy sends, request by request; an x marks each request
    whose prefix broke (under half of the previous prompt was reused).

    Raises:
        RuntimeError: matplotlib is not installed (``pip install litellm-budget[plot]``).
    """
    try:
        import matplotlib as mpl

        mpl.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        msg = "plotting needs matplotlib: pip install 'litellm-budget[plot]'"
        raise RuntimeError(msg) from exc
    figure, axes = plt.subplots(figsize=(11, 5))
    for name, rows in rows_by_strategy.items():
        xs = [row.request for row in rows]
        sizes = [math.nan if row.action == "rejected" else row.tokens_after for row in rows]  # a gap: nothing sent
        (line,) = axes.plot(xs, sizes, label=name, linewidth=1.4)
        breaks = [
            (r.request, r.tokens_after)
            for prev, r in itertools.pairwise(rows)
            if r.action != "rejected" and prev.action != "rejected" and r.shared < prev.tokens_after / 2
        ]
        if breaks:
            axes.scatter(*zip(*breaks, strict=True), marker="x", color=line.get_color(), s=28)
    axes.axhline(window, color="grey", linestyle="--", linewidth=0.8, label=f"window {window}")
    axes.set(xlabel="request", ylabel="prompt tokens sent", title=title)
    axes.legend(loc="upper left", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
