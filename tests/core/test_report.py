"""The report's compact index ranges."""

from __future__ import annotations

import pytest

from litellm_budget.core.report import format_ranges, parse_ranges


@pytest.mark.parametrize(
    ("indices", "text"),
    [([], ""), ([3], "3"), ([1, 2, 3, 7], "1-3,7"), ([9, 2, 3, 2], "2-3,9")],
)
def test_ranges_round_trip(indices: list[int], text: str) -> None:
    """Indices render compactly and parse back, sorted and unique."""
    assert format_ranges(indices) == text
    assert parse_ranges(text) == sorted(set(indices))
