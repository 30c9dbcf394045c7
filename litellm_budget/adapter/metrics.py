"""Prometheus counters on the default registry, when prometheus_client is installed."""

from __future__ import annotations

import functools
from typing import Any

from litellm_budget.core.report import BudgetReport

_SPECS = {
    "requests": ("litellm_budget_requests_total", "Chat requests measured, by outcome.", ["model_group", "action"]),
    "trims": ("litellm_budget_trims_total", "Requests trimmed to fit.", ["model_group", "policy"]),
    "rejections": ("litellm_budget_rejections_total", "Requests that could not fit.", ["model_group", "policy"]),
    "saved": ("litellm_budget_tokens_saved_total", "Prompt tokens taken out.", ["model_group"]),
}


def record_metrics(report: BudgetReport, model_group: str) -> None:
    """Count one measured request; a no-op without prometheus_client."""
    counters = _counters()
    if not counters:
        return
    counters["requests"].labels(model_group, report.action).inc()
    if report.action == "trimmed":
        counters["trims"].labels(model_group, report.policy).inc()
        counters["saved"].labels(model_group).inc(report.tokens_saved)
    elif report.action == "rejected":
        counters["rejections"].labels(model_group, report.policy).inc()


@functools.cache
def _counters() -> dict[str, Any]:
    """One set of counters per process, made on first use; empty without prometheus_client."""
    try:
        from prometheus_client import REGISTRY, Counter
    except ImportError:
        return {}
    counters = {}
    for key, (name, doc, labels) in _SPECS.items():
        try:
            counters[key] = Counter(name, doc, labels)
        except ValueError:
            # Already registered (the module was imported twice): reuse the live collector.
            counters[key] = REGISTRY._names_to_collectors[name]
    return counters
