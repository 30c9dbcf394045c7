"""Where a report goes: one structlog event, LiteLLM's metadata, response headers and metrics."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from types import MappingProxyType
from typing import Any

from litellm_budget.core.api import BudgetReport
from litellm_budget.logs import get_logger

from .metrics import record_metrics, record_resent

log = get_logger()

#: One stable event name per action, so dashboards can count them.
EVENTS = MappingProxyType(
    {
        "passthrough": "request_passed_through",
        "trimmed": "request_trimmed",
        "rejected": "request_rejected",
        "deferred": "request_deferred",
        "unsupported": "request_unsupported",
        "unknown_window": "window_unknown",
    }
)
#: The actions logged as warnings; the others are info.
_WARNINGS = frozenset({"rejected", "unsupported", "unknown_window"})
REPORT_KEY = "litellm_budget"
#: Beside the served report: the report of an earlier attempt handed to a bigger fallback.
DEFERRED_KEY = "litellm_budget_deferred"
HEADER_PREFIX = "x-litellm-budget-"


def publish(report: BudgetReport, metadata: MutableMapping[str, Any] | None, **context: Any) -> None:
    """Log the report once, put it where LiteLLM's loggers and headers can see it, count it."""
    fields = report.as_dict()
    getattr(log, "warning" if report.action in _WARNINGS else "info")(EVENTS[report.action], **context, **fields)
    if metadata is not None:
        record_in_metadata(metadata, report, fields)
    record_metrics(report, str(context.get("model_group") or report.model))


def warn_resent(report: BudgetReport, model_group: str, call_id: str) -> None:
    """
    A request refused here succeeded anyway: something re-sent it untouched past every pre-call hook
    (LiteLLM's SDK ``num_retries`` does, with tenacity installed), so the rejection logged is wrong.
    """
    log.warning(
        "rejected_request_resent",
        litellm_call_id=call_id,
        model=report.model,
        model_group=model_group,
        window=report.window,
        tokens_before=report.tokens_before,
        reason="re-sent untouched after the plugin rejected it (LiteLLM SDK num_retries?)",
    )
    record_resent(model_group)


def record_in_metadata(
    metadata: MutableMapping[str, Any],
    report: BudgetReport,
    fields: dict[str, Any] | None = None,
    *,
    key: str = REPORT_KEY,
) -> None:
    """
    Merge the report into ``spend_logs_metadata``, the one metadata key LiteLLM keeps in the StandardLoggingPayload,
    spend logs and Admin UI; the served one's action and policy also flat, for ``custom_prometheus_metadata_labels``.
    """
    existing = metadata.get("spend_logs_metadata")
    merged = dict(existing) if isinstance(existing, Mapping) else {}
    merged[key] = fields if fields is not None else report.as_dict()
    if key == REPORT_KEY:
        merged[f"{REPORT_KEY}_action"] = report.action
        merged[f"{REPORT_KEY}_policy"] = report.policy
        record_savings(metadata, report)
    metadata["spend_logs_metadata"] = merged


#: Where LiteLLM's spend tracking reads a request's prompt-compression savings into its Usage views
#: (``compression_saved_tokens``, by ``spend_tracking/compression_savings.py``, 1.108.5).
SAVINGS_KEY = "compression_savings"
SAVINGS_SOURCE = "litellm_budget"


def record_savings(metadata: MutableMapping[str, Any], report: BudgetReport) -> None:
    """
    A trimmed request's savings where LiteLLM's Usage views read its own compression's; this plugin's earlier ones for
    the call (a retry, an exact count) are replaced, or dropped if the served attempt saved none. Another writer's stay.
    """
    saved = report.tokens_saved if report.action == "trimmed" else 0
    current = metadata.get(SAVINGS_KEY)
    ours = isinstance(current, Mapping) and current.get("source") == SAVINGS_SOURCE
    if saved and (current is None or ours):
        metadata[SAVINGS_KEY] = {
            "tokens_before": report.tokens_before,
            "tokens_after": report.tokens_after,
            "tokens_saved": saved,
            "source": SAVINGS_SOURCE,
        }
    elif not saved and ours:
        del metadata[SAVINGS_KEY]


def saved_by(report: Mapping[str, Any]) -> int:
    """``record_savings``'s count, of a report as a dict: only a trimmed request saved any."""
    if report.get("action") != "trimmed":
        return 0
    return max(0, int(report.get("tokens_before") or 0) - int(report.get("tokens_after") or 0))


def report_in(metadata: object) -> Mapping[str, Any] | None:
    """The report a hook left in a request's metadata, if any."""
    if not isinstance(metadata, Mapping):
        return None
    spend = metadata.get("spend_logs_metadata")
    report = spend.get(REPORT_KEY) if isinstance(spend, Mapping) else None
    return report if isinstance(report, Mapping) else None


def headers_for(report: Mapping[str, Any], recalls: Sequence[Any] = ()) -> dict[str, str]:
    """The ``x-litellm-budget-*`` response headers: counts only, never contents (``recalls``: ``Answered``)."""
    served = sum(1 for one in recalls if one.outcome == "served")
    return {
        **({f"{HEADER_PREFIX}recalls": f"{served}/{len(recalls)}"} if recalls else {}),
        f"{HEADER_PREFIX}action": str(report.get("action")),
        f"{HEADER_PREFIX}policy": str(report.get("policy")),
        f"{HEADER_PREFIX}tokens-before": str(report.get("tokens_before")),
        f"{HEADER_PREFIX}tokens-after": str(report.get("tokens_after")),
        f"{HEADER_PREFIX}elided": str(report.get("elided")),
        f"{HEADER_PREFIX}dropped": str(report.get("dropped_messages")),
        # The last resort's messages cut (middles left out, a note in their place): elided and dropped miss them.
        f"{HEADER_PREFIX}cut": str(report.get("cut", 0)),
        f"{HEADER_PREFIX}window": str(report.get("window")),
        f"{HEADER_PREFIX}window-source": str(report.get("window_source")),
        # ``false``: the size gate passed the request and its count was not made yet; the tokens are its bound.
        f"{HEADER_PREFIX}tokens-exact": "true" if report.get("tokens_exact", True) else "false",
    }


def record_for_failure(request: Mapping[str, Any], report: BudgetReport) -> None:
    """
    Put the report where LiteLLM's failure event reads metadata: a rejection is raised before LiteLLM copies the
    request's metadata into its logging object, so its failure event, spend logs and Admin UI would miss it.
    """
    details = getattr(request.get("litellm_logging_obj"), "model_call_details", None)
    params = details.get("litellm_params") if isinstance(details, MutableMapping) else None
    if not isinstance(params, MutableMapping):
        return
    metadata = params.get("metadata")
    if not isinstance(metadata, MutableMapping):
        metadata = params["metadata"] = {}
    record_in_metadata(metadata, report)


async def log_failure_event(request: Mapping[str, Any], error: Exception) -> None:
    """Send LiteLLM's failure event for a pre-call hook's rejection: the proxy does so only for auth and rate limits."""
    handler = getattr(request.get("litellm_logging_obj"), "async_failure_handler", None)
    if callable(handler):
        await handler(exception=error, traceback_exception="")
