"""Prometheus metrics on the default registry, when prometheus_client is installed."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from litellm_budget.core.api import BudgetReport, CacheReport
from litellm_budget.process import PROCESS

#: Seconds buckets of the fit's duration: a warm fit takes about a millisecond, a cold 10 MB one 0.4 s.
FIT_SECONDS_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metric(NamedTuple):
    """One metric the plugin exports (the dashboard in examples/ uses them)."""

    name: str
    help: str
    labels: tuple[str, ...]
    kind: str = "counter"


METRICS: Mapping[str, Metric] = MappingProxyType(
    {
        "requests": Metric(
            "litellm_budget_requests_total", "Chat requests measured, by outcome.", ("model_group", "action")
        ),
        "trims": Metric("litellm_budget_trims_total", "Requests trimmed to fit.", ("model_group", "policy")),
        "rejections": Metric(
            "litellm_budget_rejections_total", "Requests that could not fit.", ("model_group", "policy")
        ),
        "saved": Metric("litellm_budget_tokens_saved_total", "Prompt tokens taken out.", ("model_group",)),
        "deferred": Metric(
            "litellm_budget_deferred_total",
            "Requests handed to a router fallback with a bigger window instead of being trimmed.",
            ("model_group",),
        ),
        "resent": Metric(
            "litellm_budget_resent_after_rejection_total",
            "Requests the plugin rejected that were re-sent untouched anyway (LiteLLM SDK num_retries).",
            ("model_group",),
        ),
        "rereads": Metric(
            "litellm_budget_rereads_total",
            "Calls a model made again, with the same arguments, for an output the plugin had elided or dropped.",
            ("model_group",),
        ),
        "input_tokens": Metric(
            "litellm_budget_input_tokens_total",
            "Prompt tokens providers reported, by what their cache did with them: read, written or fresh (neither).",
            ("model_group", "cache"),
        ),
        "cache_predicted": Metric(
            "litellm_budget_cache_predicted_tokens_total",
            "Prompt tokens the plugin expected providers' caches to read "
            "(the prefix shared with the previous request).",
            ("model_group",),
        ),
        "cache_misses": Metric(
            "litellm_budget_cache_misses_total",
            "Requests whose cache read less than the shared prefix allowed, or whose prefix moved, by reason.",
            ("model_group", "reason"),
        ),
        "windows_learned": Metric(
            "litellm_budget_windows_learned_total",
            "Windows learned from a deployment's backend, by source: context_error or truncation (a silent cut).",
            ("model_group", "source"),
        ),
        "recalls": Metric(
            "litellm_budget_recalls_total",
            "Calls of the recall tool answered inside LiteLLM, by outcome: served, expired, unknown or limit.",
            ("model_group", "outcome"),
        ),
        "fit_seconds": Metric(
            "litellm_budget_fit_seconds",
            "Time the plugin took to measure and fit a request.",
            ("model_group",),
            "histogram",
        ),
    }
)


def prepare_metrics() -> None:
    """Import prometheus_client and register the metrics now (at registration), not on the first request."""
    _metrics()


def record_metrics(report: BudgetReport, model_group: str) -> None:
    """Count one measured request; a no-op without prometheus_client."""
    metrics = _metrics()
    if not metrics:
        return
    metrics["requests"].labels(model_group, report.action).inc()
    if report.rereads:
        metrics["rereads"].labels(model_group).inc(report.rereads)
    metrics["fit_seconds"].labels(model_group).observe(report.duration_ms / 1000)
    if report.action == "trimmed":
        metrics["trims"].labels(model_group, report.policy).inc()
        metrics["saved"].labels(model_group).inc(report.tokens_saved)
    elif report.action == "rejected":
        metrics["rejections"].labels(model_group, report.policy).inc()
    elif report.action == "deferred":
        record_deferred(model_group)


def record_cache(report: CacheReport, model_group: str) -> None:
    """Count what a provider's cache did with one request; a no-op without prometheus_client."""
    metrics = _metrics()
    if not metrics or report.cache_read_tokens is None:
        return
    read, written = report.cache_read_tokens, report.cache_write_tokens
    tokens = metrics["input_tokens"]
    tokens.labels(model_group, "read").inc(read)
    tokens.labels(model_group, "written").inc(written)
    tokens.labels(model_group, "fresh").inc(max(0, report.input_tokens - read - written))
    metrics["cache_predicted"].labels(model_group).inc(report.predicted_tokens)
    if report.cache_miss is not None:
        metrics["cache_misses"].labels(model_group, report.cache_miss).inc()


def record_recall(model_group: str, outcome: str) -> None:
    """Count one answered recall; a no-op without prometheus_client."""
    _count("recalls", model_group, outcome)


def record_window_learned(model_group: str, source: str) -> None:
    """Count a window learned from a backend (``served_windows.py``); a no-op without prometheus_client."""
    _count("windows_learned", model_group, source)


def record_deferred(model_group: str) -> None:
    """Count a request left to the router's fallbacks; a no-op without prometheus_client."""
    _count("deferred", model_group)


def record_resent(model_group: str) -> None:
    """Count a rejected request that was re-sent past the plugin; a no-op without prometheus_client."""
    _count("resent", model_group)


def _count(key: str, *labels: str) -> None:
    metrics = _metrics()
    if metrics:
        metrics[key].labels(*labels).inc()


def _metrics() -> dict[str, Any]:
    """One set of metrics per process (``PROCESS.metrics``), made on first use; empty without prometheus_client."""
    if PROCESS.metrics is None:
        PROCESS.metrics = _made()
    return PROCESS.metrics


def _made() -> dict[str, Any]:
    try:
        from prometheus_client import REGISTRY, Counter, Histogram
    except ImportError:
        return {}
    made = {}
    for key, (name, doc, labels, kind) in METRICS.items():
        try:
            if kind == "histogram":
                made[key] = Histogram(name, doc, labels, buckets=FIT_SECONDS_BUCKETS)
            else:
                made[key] = Counter(name, doc, labels)
        except ValueError:
            # Already registered (the module was imported twice): reuse the live collector.
            made[key] = REGISTRY._names_to_collectors[name]
    return made
