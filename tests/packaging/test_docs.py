"""The README documents exactly the settings and report fields the code has."""

from __future__ import annotations

import dataclasses
import re

from litellm_budget import BudgetReport, BudgetSettings
from tests.support.paths import README, REPO_ROOT


def table_after(heading: str) -> list[str]:
    """The rows of the first Markdown table under ``heading``."""
    lines = README.read_text(encoding="utf-8").split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows[2:]  # header and separator


def names_in_first_column(rows: list[str]) -> set[str]:
    return {name for row in rows for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])}


def test_settings_table_lists_exactly_the_fields() -> None:
    """Every BudgetSettings field has a row in the README's Configuration table, and no other name does."""
    fields = {field.name for field in dataclasses.fields(BudgetSettings)}

    assert names_in_first_column(table_after("## Configuration")) == fields


def test_every_field_is_documented_where_it_is_defined() -> None:
    """Each field of the settings and the report has a #: comment right above it in its module."""
    for cls, module in ((BudgetSettings, "settings.py"), (BudgetReport, "report.py")):
        source = (REPO_ROOT / "litellm_budget" / "core" / module).read_text(encoding="utf-8").splitlines()
        for field in dataclasses.fields(cls):
            at = next(i for i, line in enumerate(source) if re.match(rf"    {field.name}: ", line))
            assert source[at - 1].strip().startswith("#:"), f"{cls.__name__}.{field.name} has no #: comment"
