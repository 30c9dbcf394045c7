"""Plain-text tables for the terminal: aligned columns, numbers to the right."""

from __future__ import annotations

from collections.abc import Sequence

from litellm_budget.core.api import is_int, is_number


def render(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Align ``rows`` under ``headers``; numbers right-aligned, floats with 3 decimals."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    numeric = [all(is_number(row[i]) for row in rows) if rows else False for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric, strict=True)
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if is_int(value):
        return f"{value:,}"
    return "" if value is None else str(value)
