"""Evidence recall against input cost: what a strategy keeps of what the agent used next, for what it costs."""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .plot import require_matplotlib
from .plot_cost import HOLLOW_LABEL, invalid_reason
from .plot_labels import Label, place_labels

Result = Mapping[str, Any]

_PEER_MARKERS = ("s", "^", "v", "D", "P", "X", "*", "<", ">")
#: What a cross means, in the legend's words (each point is labelled with its strategy: no other legend).
OLD_LABEL = (
    "×: recall of the old evidence\n(held only before the last 8 messages)\n"
    "+: line recall of it (a line it stood on was sent)"
)


def plot_recall_cost(
    results: Sequence[Result], path: Path, *, title: str, policies: Sequence[str], prices: str
) -> None:
    """Write :func:`draw_recall_cost`'s figure to ``path`` as a PNG."""
    import matplotlib.pyplot as plt

    figure = draw_recall_cost(results, title=title, policies=policies, prices=prices)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def draw_recall_cost(results: Sequence[Result], *, title: str, policies: Sequence[str], prices: str) -> Any:
    """
    A figure with one panel per window of ``results`` (the replay's summaries): each strategy is
    a point at (input cost, evidence recall) with a cross below it at its old evidence recall;
    each policy's ``--watermarks`` runs are joined by a thin line. A point is hollow when the
    strategy is not a valid choice (as in the cost plot). Runs without evidence are left out.

    Raises:
        RuntimeError: matplotlib is not installed.
    """
    require_matplotlib()
    import matplotlib as mpl

    mpl.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    measured = [r for r in results if r.get("evidence_recall") is not None]
    windows = list(dict.fromkeys(r["window"] for r in results))
    names = list(dict.fromkeys(r["strategy"] for r in results if "@" not in r["strategy"]))
    colors = dict(zip(names, itertools.cycle(plt.get_cmap("tab10").colors), strict=False))
    peers = itertools.cycle(_PEER_MARKERS)
    markers = {name: "o" if name in policies else next(peers) for name in names}
    width = max(8.0, 1 + 4.6 * len(windows))
    figure, axes = plt.subplots(1, len(windows), figsize=(width, 5.6), squeeze=False, layout="constrained")
    placed: list[tuple[Any, list[Label], list[tuple[float, float]]]] = []
    for ax, window in zip(axes[0], windows, strict=True):
        rows = [r for r in measured if r["window"] == window]
        labels = _panel(ax, rows, window, colors, markers)
        ax.set_title(f"{window:,}-token window", fontsize=10, loc="left")
        ax.set_xlabel("input cost of all requests, US dollars")
        ax.set_ylabel("evidence recall (share of what the next answer used)")
        ax.set_ylim(-0.03, 1.05)
        ax.grid(alpha=0.3)
        placed.append((ax, labels, [(float(r["input_cost"]), float(r["evidence_recall"])) for r in rows]))
    handles = [
        Line2D([], [], color="grey", marker="x", linestyle="", markersize=7, label=OLD_LABEL),
        Line2D(
            [], [], color="grey", marker="o", markerfacecolor="none", linestyle="", markersize=8, label=HOLLOW_LABEL
        ),
    ]
    if any("@" in r["strategy"] for r in measured):
        handles.append(Line2D([], [], color="grey", marker=".", label="line: a policy at its other --watermarks"))
    figure.legend(handles=handles, loc="outside lower center", ncol=2 if len(windows) > 1 else 1, fontsize=9)
    wrapped = [textwrap.fill(text, int(width * 13)) for text in (title, f"prices: {prices}")]
    figure.suptitle("\n".join(wrapped), fontsize=10)
    figure.draw_without_rendering()  # the layout is final: labels can be placed where they fit
    for ax, labels, points in placed:
        place_labels(ax, labels, points)
    return figure


def _panel(
    ax: Any, rows: Sequence[Result], window: int, colors: Mapping[str, Any], markers: Mapping[str, str]
) -> list[Label]:
    """One window's points, old-recall crosses and watermark lines; the labels to place once laid out."""
    labels: list[Label] = []
    for name in colors:
        sweep = sorted(
            (r for r in rows if r["strategy"].split("@", 1)[0] == name and r.get("watermark") is not None),
            key=lambda r: float(r["watermark"]),
        )
        if len(sweep) > 1:
            xs, ys = [r["input_cost"] for r in sweep], [r["evidence_recall"] for r in sweep]
            ax.plot(xs, ys, color=colors[name], lw=1.0, marker=".", markersize=5, zorder=2)
    for r in (r for r in rows if "@" not in r["strategy"]):
        name, valid = r["strategy"], not invalid_reason(r)
        x, y, old = r["input_cost"], r["evidence_recall"], r.get("old_evidence_recall")
        ax.scatter(
            [x],
            [y],
            marker=markers[name],
            s=80,
            facecolors=colors[name] if valid else "none",
            edgecolors=colors[name],
            linewidths=1.0 if valid else 1.8,
            zorder=4,
        )
        if old is not None:
            ax.plot([x, x], [y, old], color=colors[name], lw=0.8, linestyle=":", zorder=3)
            ax.scatter([x], [old], marker="x", s=36, color=colors[name], zorder=4)
        line = r.get("line_recall")
        if line is not None:
            ax.scatter([x], [line], marker="+", s=44, color=colors[name], zorder=4)
        labels.append(Label(at=(float(x), float(y)), text=name, color=colors[name]))
    if not rows:
        ax.text(0.5, 0.5, f"no evidence measured at {window:,}", ha="center", transform=ax.transAxes)
    return labels
