"""The report's compact index ranges, and its flat dict."""

from __future__ import annotations

import dataclasses

import pytest

from litellm_budget.core import BudgetReport, format_ranges, parse_ranges


@pytest.mark.parametrize(
    ("indices", "text"),
    [([], ""), ([3], "3"), ([1, 2, 3, 7], "1-3,7"), ([9, 2, 3, 2], "2-3,9")],
)
def test_ranges_round_trip(indices: list[int], text: str) -> None:
    """Indices render compactly and parse back, sorted and unique."""
    assert format_ranges(indices) == text
    assert parse_ranges(text) == sorted(set(indices))


def test_the_dict_holds_every_field_in_order_with_its_value() -> None:
    """What the log event, LiteLLM's metadata and the headers read: each field once, as the report holds it."""
    fields = [field for field in dataclasses.fields(BudgetReport) if field.name != "lead"]  # never published
    # A distinct value per field, so a value under another field's name would show.
    values = {field.name: f"value {number}" for number, field in enumerate(fields)}
    report = BudgetReport(**values)  # type: ignore[arg-type]  # any value goes through a frozen dataclass

    assert list(report.as_dict().items()) == [(field.name, values[field.name]) for field in fields]
