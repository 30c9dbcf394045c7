"""Prompt tokens per request along one session: one panel per window, one line per strategy (matplotlib)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .replay import Row

#: One line, so it reads as one error wherever the user is.
MISSING = (
    "--plot needs matplotlib, which is not installed: pip install matplotlib "
    "(or the clone's dev extra: pip install -e '.[dev]')"
)
#: What each mark means, in the legend's words.
BREAK_LABEL = "x: the cached prefix broke (under half of the previous prompt reused)"
WINDOW_LABEL = "context window"
REJECTED_LABEL = "tick under the axis: a request the strategy rejected (nothing sent)"
LONE_LABEL = "dot: a request sent between two rejections (too short for a line)"
HISTORY_LABEL = "the whole history, sent untrimmed (lines on it coincide)"
_HISTORY = "#dddddd"

Panels = Mapping[int, Mapping[str, Sequence[Row]]]


def require_matplotlib() -> None:
    """
    Fail at once when matplotlib is missing.

    Raises:
        RuntimeError: with :data:`MISSING`, which says how to install it.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise RuntimeError(MISSING) from exc


def plot_sessions(panels: Panels, path: Path, *, title: str) -> None:
    """Write :func:`draw`'s figure to ``path`` as a PNG."""
    import matplotlib.pyplot as plt

    figure = draw(panels, title=title)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def draw(panels: Panels, *, title: str) -> Any:
    """
    A figure with one panel per window (``panels``: window -> strategy -> the session's rows).

    Each strategy is a line of the prompt tokens it sent, request by request; an x marks a
    request whose cached prefix broke; a rejected request leaves a gap in the line and a tick
    under the axis, one row of ticks per strategy; the dashed line is the window.

    Raises:
        RuntimeError: matplotlib is not installed.
    """
    require_matplotlib()
    import matplotlib as mpl

    mpl.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    names = list(dict.fromkeys(name for strategies in panels.values() for name in strategies))
    colors = dict(zip(names, itertools.cycle(plt.get_cmap("tab10").colors), strict=False))
    figure, axes = plt.subplots(
        len(panels), 1, figsize=(11, 1.9 + 3.1 * len(panels)), sharex=True, squeeze=False, layout="constrained"
    )
    for ax, (window, strategies) in zip(axes[:, 0], panels.items(), strict=True):
        _panel(ax, window, strategies, colors)
    axes[-1, 0].set_xlabel("request of the session (each sends the whole history before one assistant reply)")
    lines = [
        *(Line2D([], [], color=colors[name], linewidth=2, label=name) for name in names),
        Line2D([], [], color=_HISTORY, linewidth=7, label=HISTORY_LABEL),
    ]
    blank = Line2D([], [], linestyle="", label=" ")
    marks = [
        Line2D([], [], color="black", marker="x", linestyle="", label=BREAK_LABEL),
        Line2D([], [], color="grey", linestyle="--", label=WINDOW_LABEL),
        Line2D([], [], color="black", marker="|", linestyle="", markersize=10, label=REJECTED_LABEL),
        Line2D([], [], color="black", marker="o", linestyle="", markersize=4, label=LONE_LABEL),
    ]
    # Entries fill the legend column by column, as many a column as there are marks: the marks get their own.
    handles = [*lines, *[blank] * (-len(lines) % len(marks)), *marks]
    figure.legend(
        handles=handles, loc="outside lower center", ncol=len(handles) // len(marks), fontsize=9, frameon=False
    )
    figure.suptitle(title, fontsize=11)
    return figure


def _panel(ax: Any, window: int, strategies: Mapping[str, Sequence[Row]], colors: Mapping[str, Any]) -> None:
    """One window: the history, a line per strategy, x at cache breaks, ticks under the axis at rejections."""
    first = next(iter(strategies.values()), [])
    ax.plot([r.request for r in first], [r.tokens_before for r in first], color=_HISTORY, linewidth=7, zorder=1)
    tick_row = window * 0.05
    lowest = 0.0
    for order, (name, rows) in enumerate(strategies.items()):
        color = colors[name]
        sizes = [math.nan if row.action == "rejected" else row.tokens_after for row in rows]
        # Each line is thinner than the one under it, so lines that coincide still show their colours.
        ax.plot([r.request for r in rows], sizes, color=color, linewidth=max(0.8, 3.2 - 0.5 * order), zorder=2 + order)
        alone = [(r.request, sizes[i]) for i, r in enumerate(rows) if _alone(rows, i)]
        if alone:  # a line needs two points: one sent between rejections is a dot
            ax.scatter(*zip(*alone, strict=True), marker="o", color=color, s=12, zorder=2 + order)
        breaks = [(r.request, r.tokens_after) for prev, r in _sent_pairs(rows) if r.shared < prev.tokens_after / 2]
        if breaks:
            ax.scatter(*zip(*breaks, strict=True), marker="x", color=color, s=26, linewidths=1.2, zorder=10)
        rejected = [row.request for row in rows if row.action == "rejected"]
        if rejected:
            lowest -= tick_row
            ax.scatter(rejected, [lowest] * len(rejected), marker="|", color=color, s=40, zorder=10)
            ax.annotate(
                _rejections(name, rejected),
                (rejected[0], lowest),
                xytext=(-5, 0),
                textcoords="offset points",
                ha="right",
                va="center",
                fontsize=8,
                color=color,
            )
    ax.axhline(window, color="grey", linestyle="--", linewidth=1)
    ax.axhline(0, color="black", linewidth=0.6)
    top = max([window, *(r.tokens_after for rows in strategies.values() for r in rows)])
    ax.set_ylim(lowest - tick_row, top * 1.08)
    whole = max((r.tokens_before for r in first), default=0)
    ax.set_title(f"{window:,}-token window (the whole history grows to {whole:,} tokens)", fontsize=10, loc="left")
    ax.set_ylabel("prompt tokens sent")
    ax.grid(axis="y", alpha=0.3)


def _alone(rows: Sequence[Row], at: int) -> bool:
    """Sent, with no sent request right before or after it."""
    sent = [0 <= i < len(rows) and rows[i].action != "rejected" for i in (at - 1, at, at + 1)]
    return sent == [False, True, False]


def _rejections(name: str, requests: Sequence[int]) -> str:
    if list(requests) == list(range(requests[0], requests[-1] + 1)):
        return f"{name} rejects requests {requests[0]}-{requests[-1]}"
    return f"{name}: {len(requests)} rejected, the first at {requests[0]}"


def _sent_pairs(rows: Sequence[Row]) -> list[tuple[Row, Row]]:
    """Consecutive requests that both sent a prompt: the pairs a cache could carry over."""
    return [(prev, row) for prev, row in itertools.pairwise(rows) if "rejected" not in (prev.action, row.action)]
