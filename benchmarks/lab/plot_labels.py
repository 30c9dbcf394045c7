"""Labels beside scatter points that do not print over each other or over the points (matplotlib)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

#: Where a label may go, in points from its point: right, then left, then above and below, then further out.
_OFFSETS = (
    (7, 3, "left"),
    (7, -11, "left"),
    (-7, 3, "right"),
    (-7, -11, "right"),
    (0, 9, "center"),
    (0, -18, "center"),
    (7, 15, "left"),
    (7, -23, "left"),
    (-7, 15, "right"),
    (-7, -23, "right"),
)
#: An average character of DejaVu Sans is about this share of the font size wide.
_CHAR_WIDTH = 0.6
#: Half the side of the square each point keeps free around itself, in points.
_POINT_RADIUS = 5.0

Box = tuple[float, float, float, float]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Label:
    """A text to write beside the data point ``at`` of an axes."""

    at: tuple[float, float]
    text: str
    color: Any
    size: float = 8


def place_labels(ax: Any, labels: Sequence[Label], points: Sequence[tuple[float, float]]) -> None:
    """
    Write ``labels`` on ``ax``, each at the first offset whose box stays inside the axes and
    overlaps no label already written and none of ``points`` (data coordinates); the first
    offset when every one does.
    Call it after the figure's layout is final (``figure.draw_without_rendering()``).
    """
    scale = 72 / ax.figure.dpi  # display pixels to points
    frame = ax.get_window_extent()
    inside: Box = (frame.x0 * scale, frame.y0 * scale, frame.x1 * scale, frame.y1 * scale)
    taken: list[Box] = []
    for x, y in points:
        px, py = (value * scale for value in ax.transData.transform((x, y)))
        taken.append((px - _POINT_RADIUS, py - _POINT_RADIUS, px + _POINT_RADIUS, py + _POINT_RADIUS))
    for label in labels:
        px, py = (value * scale for value in ax.transData.transform(label.at))
        width, height = _CHAR_WIDTH * label.size * len(label.text), 1.2 * label.size
        boxes = [(dx, dy, align, _box(px + dx, py + dy, width, height, align)) for dx, dy, align in _OFFSETS]
        free = (b for b in boxes if _within(b[3], inside) and not any(_overlap(b[3], t) for t in taken))
        dx, dy, align, box = next(free, boxes[0])
        taken.append(box)
        ax.annotate(
            label.text,
            label.at,
            xytext=(dx, dy),
            textcoords="offset points",
            ha=align,
            va="bottom",
            fontsize=label.size,
            color=label.color,
            annotation_clip=False,
        )


def _box(x: float, y: float, width: float, height: float, align: str) -> Box:
    left = {"left": x, "right": x - width, "center": x - width / 2}[align]
    return (left, y, left + width, y + height)


def _within(box: Box, frame: Box) -> bool:
    return frame[0] <= box[0] and box[2] <= frame[2] and frame[1] <= box[1] and box[3] <= frame[3]


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
