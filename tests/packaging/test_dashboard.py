"""The Grafana dashboard in examples/ queries only metrics and labels the plugin exports."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from litellm_budget.adapter.report.metrics import (
    METRICS,
    record_cache,
    record_deferred,
    record_metrics,
    record_recall,
    record_resent,
    record_window_learned,
)
from litellm_budget.core import BudgetReport
from litellm_budget.core.cache import CacheReport
from tests.support.paths import EXAMPLES

DASHBOARD = EXAMPLES / "grafana-dashboard.json"
DATASOURCE = "${DS_PROMETHEUS}"
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")

# --- A small PromQL reader: which metric names and label names an expression uses. ---

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_RANGE = re.compile(r"\[[^\]]*\]")
_VARIABLE = re.compile(r"\$(?:\{[^}]*\}|\w+)")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_SELECTOR = re.compile(r"([A-Za-z_:][\w:]*)?\s*\{([^}]*)\}")
_MATCHER = re.compile(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)")
_IDENTIFIER = re.compile(r"(?<![\w:.])([A-Za-z_:][\w:]*)(?![\w:])(\s*\()?")
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*([A-Za-z_]\w*)\s*\)\s*$")
# Words that are PromQL syntax, not series: operators, modifiers, literals.
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring"})
_KEYWORDS |= {"group_left", "group_right", "inf", "nan", "Inf", "NaN"}


@dataclasses.dataclass(frozen=True)
class Names:
    """Each metric an expression selects, with the labels its matchers name; labels of its groupings."""

    metrics: dict[str, set[str]]
    grouping: set[str]


def promql_names(expr: str) -> Names:
    """The metric and label names one PromQL expression uses (strings, ranges and variables aside)."""
    text = _STRING.sub('""', expr)
    text = _VARIABLE.sub("", _RANGE.sub("[]", text))
    grouping: set[str] = set()
    for match in _GROUPING.finditer(text):
        grouping |= {label.strip() for label in match.group(1).split(",") if label.strip()}
    text = _GROUPING.sub(" ", text)
    metrics: dict[str, set[str]] = {}
    for match in _SELECTOR.finditer(text):
        if match.group(1) is None:
            raise ValueError(f"a selector without a metric name in {expr!r}")
        metrics.setdefault(match.group(1), set()).update(_MATCHER.findall(match.group(2)))
    text = _SELECTOR.sub(lambda match: match.group(1) or "", text)
    for match in _IDENTIFIER.finditer(text):
        name, is_call = match.groups()
        if not is_call and name not in _KEYWORDS:
            metrics.setdefault(name, set())
    return Names(metrics=metrics, grouping=grouping)


def variable_query_names(query: str) -> Names:
    """The names a ``label_values(<selector>, <label>)`` template query uses: the label is the metric's."""
    match = _LABEL_VALUES.match(query)
    if match is None:
        raise ValueError(f"not a label_values(metric, label) query: {query!r}")
    names = promql_names(match.group(1))
    for labels in names.metrics.values():
        labels.add(match.group(2))
    return names


# --- What the plugin exports, and what the dashboard holds. ---


def exported_series() -> dict[str, set[str]]:
    """Every series name the plugin exports, with its labels (a histogram's buckets add ``le``)."""
    series: dict[str, set[str]] = {}
    for name, _, labels, kind in METRICS.values():
        if kind == "histogram":
            series.update({name + suffix: set(labels) for suffix in HISTOGRAM_SERIES})
            series[f"{name}_bucket"].add("le")
        else:
            series[name] = set(labels)
    return series


@pytest.fixture(name="dashboard", scope="module")
def fixture_dashboard() -> dict[str, Any]:
    dashboard = json.loads(DASHBOARD.read_text())
    assert isinstance(dashboard, dict)
    return dashboard


def panels_of(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside collapsed rows included."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def queries_of(dashboard: dict[str, Any]) -> list[tuple[str, Names]]:
    """Every PromQL query of the dashboard: panel targets, then template variable queries."""
    queries = [
        (f"panel {panel['title']!r} {target['refId']}", promql_names(target["expr"]))
        for panel in panels_of(dashboard)
        for target in panel.get("targets", [])
    ]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            for text in {variable["definition"], query["query"] if isinstance(query, dict) else query}:
                queries.append((f"variable {variable['name']!r}", variable_query_names(text)))
    return queries


def used_metrics(dashboard: dict[str, Any]) -> dict[str, set[str]]:
    """Every series the dashboard queries, with every label any query uses on it."""
    used: dict[str, set[str]] = {}
    for _, names in queries_of(dashboard):
        for metric, labels in names.metrics.items():
            used.setdefault(metric, set()).update(labels | names.grouping)
    return used


class TestPromqlNames:
    def test_finds_metrics_and_labels_of_a_rate_by_label(self) -> None:
        """Metric, matcher labels and grouping labels are found; functions, strings and ranges are not."""
        names = promql_names(
            'sum by (model_group, action) (rate(litellm_budget_requests_total{model_group=~"$model_group",'
            ' action!="a{b}=c"}[$__rate_interval]))'
        )

        assert names.metrics == {"litellm_budget_requests_total": {"model_group", "action"}}
        assert names.grouping == {"model_group", "action"}

    def test_finds_every_metric_of_a_binary_expression(self) -> None:
        """Both sides of an operator are read, with or without a selector, and modifiers are not metrics."""
        names = promql_names(
            "histogram_quantile(0.95, sum by (le) (rate(fit_seconds_bucket{job='x'}[5m])))"
            " / ignoring(instance) sum(other_total) offset 5m > bool 1e3"
        )

        assert names.metrics == {"fit_seconds_bucket": {"job"}, "other_total": set()}
        assert names.grouping == {"le", "instance"}

    def test_reads_a_label_values_variable_query(self) -> None:
        """label_values(metric, label) names the metric and attributes the label to it."""
        names = variable_query_names("label_values(litellm_budget_requests_total, model_group)")

        assert names.metrics == {"litellm_budget_requests_total": {"model_group"}}


class TestDashboard:
    def test_every_query_uses_only_exported_metrics_and_their_labels(self, dashboard: dict[str, Any]) -> None:
        """Each metric a query selects is exported by the plugin, and each label it uses is that metric's."""
        exported = exported_series()
        queries = queries_of(dashboard)

        assert len(queries) >= 10
        for where, names in queries:
            assert names.metrics, f"{where}: no metric found"
            for metric, labels in names.metrics.items():
                assert metric in exported, f"{where}: {metric} is not exported"
                assert labels <= exported[metric], f"{where}: {labels - exported[metric]} not labels of {metric}"
                missing = names.grouping - exported[metric]
                assert not missing, f"{where}: groups by {missing}, not labels of {metric}"

    def test_every_exported_metric_has_a_panel(self, dashboard: dict[str, Any]) -> None:
        """Nothing the plugin counts is missing from the dashboard (a histogram through its buckets)."""
        used = used_metrics(dashboard)

        for name, _, _, kind in METRICS.values():
            assert (f"{name}_bucket" if kind == "histogram" else name) in used, name

    def test_datasource_is_an_import_input_and_a_variable(self, dashboard: dict[str, Any]) -> None:
        """Import asks for the Prometheus data source; every panel and query uses it through ${DS_PROMETHEUS}."""
        assert {(i["name"], i["type"], i["pluginId"]) for i in dashboard["__inputs"]} == {
            ("DS_PROMETHEUS", "datasource", "prometheus")
        }
        variables = {variable["name"]: variable for variable in dashboard["templating"]["list"]}
        assert variables["DS_PROMETHEUS"]["type"] == "datasource"
        assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
        assert variables["model_group"]["datasource"]["uid"] == DATASOURCE
        for panel in panels_of(dashboard):
            assert panel["datasource"] == {"type": "prometheus", "uid": DATASOURCE}, panel["title"]
            assert all(target["datasource"]["uid"] == DATASOURCE for target in panel["targets"]), panel["title"]

    def test_model_group_variable_filters_every_query(self, dashboard: dict[str, Any]) -> None:
        """The model_group variable lists the groups the plugin saw, and every panel query honours it."""
        variables = {variable["name"]: variable for variable in dashboard["templating"]["list"]}
        group = variables["model_group"]

        assert group["definition"] == "label_values(litellm_budget_requests_total, model_group)"
        assert group["includeAll"] is True
        assert group["multi"] is True
        for panel in panels_of(dashboard):
            for target in panel["targets"]:
                selectors = re.findall(r"\{[^}]*\}", target["expr"])
                assert selectors, panel["title"]
                assert all('model_group=~"$model_group"' in selector for selector in selectors), panel["title"]

    def test_every_panel_has_a_title_and_a_description(self, dashboard: dict[str, Any]) -> None:
        """Each panel says what it shows, and panels have distinct ids."""
        panels = list(panels_of(dashboard))

        assert len(panels) >= 6
        assert len({panel["id"] for panel in panels}) == len(panels)
        for panel in panels:
            assert panel.get("title", "").strip(), panel
            assert len(panel.get("description", "").strip()) > 20, panel["title"]

    def test_the_asked_panels_are_there(self, dashboard: dict[str, Any]) -> None:
        """Actions per group, tokens saved, rejections, fallbacks, fit latency p50/p95 and trims by policy."""
        exprs = {panel["title"]: [t["expr"] for t in panel["targets"]] for panel in panels_of(dashboard)}

        assert "by (model_group, action)" in exprs["Actions per model group"][0]
        assert "litellm_budget_tokens_saved_total" in exprs["Tokens saved"][0]
        assert "litellm_budget_rejections_total" in exprs["Rejections"][0]
        assert "litellm_budget_deferred_total" in exprs["Requests left to fallbacks"][0]
        latency = exprs["Fit latency p50 / p95"]
        assert any(e.startswith("histogram_quantile(0.5,") for e in latency)
        assert any(e.startswith("histogram_quantile(0.95,") for e in latency)
        assert "by (model_group, policy)" in exprs["Trims by policy"][0]

    def test_the_cache_panels_are_there(self, dashboard: dict[str, Any]) -> None:
        """Hit ratio over time (observed and expected), misses by reason, prompt tokens by cache use."""
        exprs = {panel["title"]: [t["expr"] for t in panel["targets"]] for panel in panels_of(dashboard)}

        observed, expected = exprs["Prompt cache hit ratio"]
        assert 'cache="read"' in observed
        assert "litellm_budget_cache_predicted_tokens_total" in expected
        assert "by (model_group, reason)" in exprs["Cache misses by reason"][0]
        assert "by (model_group, cache)" in exprs["Prompt tokens by cache use"][0]


def samples_for(group: str) -> dict[str, tuple[float, set[str]]]:
    """The default registry's series of one model group: total value and label names, by sample name."""
    found: dict[str, tuple[float, set[str]]] = {}
    for family in REGISTRY.collect():
        for sample in family.samples:
            if sample.labels.get("model_group") == group:
                value, labels = found.get(sample.name, (0.0, set()))
                found[sample.name] = (value + sample.value, labels | set(sample.labels))
    return found


def test_recording_creates_every_series_the_dashboard_queries(dashboard: dict[str, Any]) -> None:
    """After a trim with a re-read, a rejection, a deferral, a re-sent rejection, a cache miss, a recall: all grew."""
    before = samples_for("g")
    trimmed = BudgetReport(
        model="openai/gpt-4o",
        policy="auto",
        action="trimmed",
        tokens_before=9000,
        tokens_after=3000,
        duration_ms=2.5,
        rereads=1,
    )
    rejected = BudgetReport(
        model="openai/gpt-4o", policy="auto", action="rejected", tokens_before=30_000, duration_ms=1.5
    )

    record_metrics(trimmed, "g")
    record_metrics(rejected, "g")
    record_deferred("g")
    record_resent("g")
    miss = CacheReport(input_tokens=4000, cache_read_tokens=1000, cache_write_tokens=500, predicted_tokens=3000)
    record_cache(dataclasses.replace(miss, cache_miss="plugin_drop"), "g")
    record_recall("g", "served")
    record_window_learned("g", "context_error")

    after = samples_for("g")
    for metric, labels in used_metrics(dashboard).items():
        assert metric in after, f"the dashboard queries {metric}, which recording did not create"
        assert after[metric][0] > before.get(metric, (0.0, set()))[0], f"{metric} did not grow"
        assert labels <= after[metric][1], f"{metric} samples lack labels {labels - after[metric][1]}"
