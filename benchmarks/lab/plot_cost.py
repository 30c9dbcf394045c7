"""Input cost against context fill: one panel per window, a point per strategy, a line per policy's watermarks."""

from __future__ import annotations

import dataclasses
import itertools
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .plot import require_matplotlib
from .plot_labels import Label, place_labels

Result = Mapping[str, Any]

#: What a hollow mark means, in the legend's words.
HOLLOW_LABEL = "\n".join(
    [
        "hollow: not a valid choice (overflows the window, orphans tool calls,",
        "rejects requests, or sends requests without their newest message)",
    ]
)
_PEER_MARKERS = ("s", "^", "v", "D", "P", "X", "*", "<", ">")
#: Each marker as a hollow text glyph, for the strategies listed under a panel.
_GLYPHS = {"o": "○", "s": "□", "^": "△", "v": "▽", "D": "◇", "P": "✚", "X": "✖", "*": "☆", "<": "◁", ">": "▷"}


def plot_cost_fill(results: Sequence[Result], path: Path, *, title: str, policies: Sequence[str], prices: str) -> None:
    """Write :func:`draw_cost_fill`'s figure to ``path`` as a PNG."""
    import matplotlib.pyplot as plt

    figure = draw_cost_fill(results, title=title, policies=policies, prices=prices)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def draw_cost_fill(results: Sequence[Result], *, title: str, policies: Sequence[str], prices: str) -> Any:
    """
    A figure with one panel per window of ``results`` (the replay's summaries): each strategy
    is a point at (mean fill, input cost); each policy's ``--watermarks`` runs are joined by a
    line through its default, labelled with the watermark, so its frontier shows. A point is
    hollow, with the reason beside it, when the strategy overflowed, broke tool pairs,
    rejected requests or sent requests without their newest message.

    Raises:
        RuntimeError: matplotlib is not installed.
    """
    require_matplotlib()
    import matplotlib as mpl

    mpl.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    windows = list(dict.fromkeys(r["window"] for r in results))
    names = list(dict.fromkeys(r["strategy"] for r in results if "@" not in r["strategy"]))
    colors = dict(zip(names, itertools.cycle(plt.get_cmap("tab10").colors), strict=False))
    peer_markers = iter(itertools.cycle(_PEER_MARKERS))
    markers = {name: "o" if name in policies else next(peer_markers) for name in names}
    style = _Style(colors=colors, markers=markers, policies=tuple(policies))
    width = max(9.0, 1 + 5.4 * len(windows))
    figure, axes = plt.subplots(1, len(windows), figsize=(width, 6.8), squeeze=False, layout="constrained")
    labels = [
        _panel(ax, [r for r in results if r["window"] == window], window, style)
        for ax, window in zip(axes[0], windows, strict=True)
    ]
    swept = any("@" in r["strategy"] for r in results)
    handles = [
        Line2D(
            [],
            [],
            color=colors[name],
            marker=markers[name],
            linestyle="-" if name in policies and swept else "",
            markersize=8,
            label=_legend_name(name, policies, swept=swept),
        )
        for name in names
    ]
    handles.append(
        Line2D([], [], color="grey", marker="o", markerfacecolor="none", linestyle="", markersize=8, label=HOLLOW_LABEL)
    )
    columns = 3 if len(windows) > 1 else 2
    figure.legend(handles=handles, loc="outside lower center", ncol=columns, fontsize=9, frameon=False)
    # About 13 characters of 10-point text to the inch: wrap so nothing runs off the figure.
    wrapped = [textwrap.fill(text, int(width * 13)) for text in (title, f"prices: {prices}")]
    figure.suptitle("\n".join(wrapped), fontsize=10)
    figure.draw_without_rendering()  # the layout is final: labels can be placed where they fit
    for ax, window, panel_labels in zip(axes[0], windows, labels, strict=True):
        place_labels(ax, panel_labels, [_at(r) for r in results if r["window"] == window])
    return figure


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Style:
    """Each strategy's colour and marker, the same in every panel; which strategies are ours."""

    colors: Mapping[str, Any]
    markers: Mapping[str, str]
    policies: tuple[str, ...]

    def point(self, ax: Any, row: Result, *, swept: bool = False) -> None:
        """A filled mark for a valid strategy (ours edged in black), a hollow one in its colour for an invalid one."""
        name = _base(row["strategy"])
        color, valid = self.colors[name], not invalid_reason(row)
        edge = "black" if name in self.policies and not swept else color
        ax.scatter(
            [row["mean_fill"]],
            [row["input_cost"]],
            marker="o" if swept else self.markers[name],
            s=28 if swept else 90,
            facecolors=color if valid else "none",
            edgecolors=edge if valid else color,
            linewidths=1.0 if valid else 1.8,
            zorder=4 if valid else 3,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class _Frame:
    """
    The axes' limits: room around every valid strategy and the labels to their right; an invalid
    strategy far outside (a peer that overflows sends more than the window) is listed under the
    panel with its numbers instead of squeezing the valid ones into a corner.
    """

    left: float
    right: float
    bottom: float
    top: float

    @classmethod
    def around(cls, rows: Sequence[Result]) -> _Frame:
        valid = [r for r in rows if not invalid_reason(r)] or list(rows)
        xs, ys = [float(r["mean_fill"]) for r in valid], [float(r["input_cost"]) for r in valid]
        width = max(max(xs) - min(xs), 0.1 * max(xs), 1e-3)
        height = max(max(ys) - min(ys), 0.1 * max(ys), 1e-9)
        return cls(
            max(0.0, min(xs) - 0.2 * width),
            max(xs) + 0.35 * width,
            max(0.0, min(ys) - 0.15 * height),
            max(ys) + 0.2 * height,
        )

    def holds(self, row: Result) -> bool:
        x, y = float(row["mean_fill"]), float(row["input_cost"])
        return self.left <= x <= self.right and self.bottom <= y <= self.top


def _panel(ax: Any, rows: Sequence[Result], window: int, style: _Style) -> list[Label]:
    """One window: the watermark lines of the policies under the points of every strategy; their labels."""
    frame, labels = _Frame.around(rows), []
    for name in style.policies:
        sweep = sorted(
            (r for r in rows if _base(r["strategy"]) == name and r.get("watermark") is not None),
            key=lambda r: float(r["watermark"]),
        )
        if len(sweep) < 2 or name not in style.colors:
            continue
        color = style.colors[name]
        ax.plot([r["mean_fill"] for r in sweep], [r["input_cost"] for r in sweep], color=color, lw=1.4, zorder=2)
        for r in sweep:
            if "@" in r["strategy"]:  # the default has its own, bigger mark
                style.point(ax, r, swept=True)
        for group in _near(sweep, frame):
            # The default alone has its name label; a point off the chart, no label.
            if any("@" in r["strategy"] for r in group) and frame.holds(group[0]):
                text = "/".join(f"{float(r['watermark']):g}" for r in group)
                labels.append(Label(at=_at(group[0]), text=text, color=color, size=7))
    shown = [r for r in rows if "@" not in r["strategy"] and r["strategy"] in style.colors]
    for r in shown:
        if frame.holds(r):
            style.point(ax, r)
            labels.insert(0, Label(at=_at(r), text=_label(r, style), color=style.colors[r["strategy"]]))
    _off_chart(ax, [r for r in shown if not frame.holds(r)], style)
    ax.set_xlim(frame.left, frame.right)
    ax.set_ylim(frame.bottom, frame.top)
    ax.set_title(f"{window:,}-token window", fontsize=10, loc="left")
    ax.set_xlabel("mean fill: prompt tokens sent / window (more context kept →)")
    ax.set_ylabel("input cost of all requests, US dollars")
    ax.grid(alpha=0.3)
    return labels


def _at(row: Result) -> tuple[float, float]:
    return float(row["mean_fill"]), float(row["input_cost"])


def _near(sweep: Sequence[Result], frame: _Frame) -> list[list[Result]]:
    """Consecutive watermarks whose points nearly coincide (nothing more to trim), grouped under one label."""
    groups: list[list[Result]] = []
    close_x, close_y = (frame.right - frame.left) / 40, (frame.top - frame.bottom) / 40
    for row in sweep:
        last = _at(groups[-1][-1]) if groups else None
        x, y = _at(row)
        if last is not None and abs(x - last[0]) < close_x and abs(y - last[1]) < close_y:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def _off_chart(ax: Any, rows: Sequence[Result], style: _Style) -> None:
    """Strategies far outside the valid ones, listed with their numbers under the panel."""
    for line, r in enumerate(rows):
        name = r["strategy"]
        glyph = _GLYPHS.get(style.markers[name], "○")
        ax.annotate(
            f"{glyph} {_label(r, style)}: off the chart at fill {r['mean_fill']:.2f}, ${r['input_cost']:.2f}",
            (0, 0),
            xycoords="axes fraction",
            xytext=(0, -38 - 12 * line),
            textcoords="offset points",
            va="top",
            fontsize=8,
            color=style.colors[name],
        )


def _label(row: Result, style: _Style) -> str:
    """The strategy's name, its watermark if it is ours, and why it is not a valid choice if it is not."""
    name, reason = row["strategy"], invalid_reason(row)
    default = f" ({float(row['watermark']):g})" if name in style.policies and row.get("watermark") else ""
    return f"{name}{default}{' ' + reason if reason else ''}"


def invalid_reason(row: Result) -> str:
    """Why a strategy is not a valid choice (it overflows, orphans pairs, rejects...); empty when it is."""
    reasons = [
        f"{what} {int(row[key]):,}"
        for key, what in (
            ("overflow", "overflows"),
            ("invalid_pairs", "orphan pairs"),
            ("rejected", "rejects"),
            ("newest_dropped", "drops the newest message"),
        )
        if row.get(key)
    ]
    return ", ".join(reasons)


def _legend_name(name: str, policies: Sequence[str], *, swept: bool) -> str:
    if name not in policies:
        return name
    return f"{name} (ours, default watermark; line: other watermarks)" if swept else f"{name} (ours)"


def _base(label: str) -> str:
    return label.split("@", 1)[0]
