"""Where a report goes besides the log: LiteLLM's metadata, and the savings its Usage views read."""

from __future__ import annotations

import dataclasses
from typing import Any

from litellm.proxy.spend_tracking.compression_savings import extract_compression_saved_tokens

from litellm_budget.adapter.report.publish import SAVINGS_KEY, headers_for, record_in_metadata
from litellm_budget.core import BudgetReport

TRIMMED = BudgetReport(model="m", policy="auto", action="trimmed", tokens_before=9000, tokens_after=5000, cut=1)


def test_a_trimmed_request_writes_its_savings_where_litellm_reads_them() -> None:
    metadata: dict[str, Any] = {}
    record_in_metadata(metadata, TRIMMED)

    assert metadata[SAVINGS_KEY] == {
        "tokens_before": 9000,
        "tokens_after": 5000,
        "tokens_saved": 4000,
        "source": "litellm_budget",
    }
    assert extract_compression_saved_tokens(metadata) == 4000


def test_a_later_attempt_replaces_ours_and_a_passed_one_takes_it_out() -> None:
    """A retry or the count that replaced a bound: the served attempt's savings, or none."""
    metadata: dict[str, Any] = {}
    record_in_metadata(metadata, TRIMMED)
    record_in_metadata(metadata, dataclasses.replace(TRIMMED, tokens_after=6000))
    assert metadata[SAVINGS_KEY]["tokens_saved"] == 3000

    record_in_metadata(metadata, dataclasses.replace(TRIMMED, action="passthrough", tokens_after=9000))
    assert SAVINGS_KEY not in metadata


def test_another_writers_savings_stay() -> None:
    """LiteLLM's own compression wrote them: never overwritten, never taken out."""
    theirs = {"tokens_before": 10, "tokens_after": 5, "tokens_saved": 5, "source": "compression_interception"}
    metadata: dict[str, Any] = {SAVINGS_KEY: dict(theirs)}
    record_in_metadata(metadata, TRIMMED)
    record_in_metadata(metadata, dataclasses.replace(TRIMMED, action="passthrough"))

    assert metadata[SAVINGS_KEY] == theirs


def test_a_cut_is_in_the_headers() -> None:
    """The last resort's cut, which neither elided nor dropped shows."""
    assert headers_for(TRIMMED.as_dict())["x-litellm-budget-cut"] == "1"
