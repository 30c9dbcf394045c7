"""
A request LiteLLM's pre-call checks (``enable_pre_call_checks``) refused before the plugin fitted it: its failure
event gets, under ``litellm_budget_unfitted``, what the plugin would have sent. It happens on ``/v1/messages`` with
the client's own ``context_management``: the pre-call hook leaves that to the deployment hook (who applies the edits
depends on the provider), and the Router's window check runs in between. The estimate is made from the body the
proxy received, against the group's largest window (no deployment was chosen), with the client's edits applied as
for a non-Anthropic group and no compaction asked of the summary model; ``litellm_budget`` itself stays absent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from litellm_budget.adapter.report.publish import REPORT_KEY, report_in
from litellm_budget.adapter.request.shapes import ANTHROPIC_SHAPE, shape_for
from litellm_budget.adapter.request.targets import Target, pre_call_target
from litellm_budget.adapter.served_edits.context_management import apply_client_edits
from litellm_budget.core.api import BudgetReport, fit_request, is_mapping
from litellm_budget.logs import get_logger

log = get_logger()

UNFITTED_KEY = f"{REPORT_KEY}_unfitted"
#: How LiteLLM 1.108.5 words the error of its Router's window check (pinned in tests/e2e).
PRE_CALL_CHECKS = "litellm._pre_call_checks"
REASON = "not sent: LiteLLM's pre-call checks refused the request before the plugin fitted it"


def report_unfitted(
    kwargs: Mapping[str, Any], settings: Any, router: Any, ratio_of: Callable[[Target], float | None]
) -> BudgetReport | None:
    """What the plugin would have sent, at ``ratio_of``'s learned ratio, for a request the pre-call checks refused."""
    payload = kwargs.get("standard_logging_object")
    if not is_mapping(payload):
        return None
    metadata = payload.get("metadata")
    if not isinstance(metadata, MutableMapping) or report_in(metadata) is not None:
        return None  # no payload to tell, or the plugin's own report stands
    if PRE_CALL_CHECKS not in str(kwargs.get("exception")):
        return None
    params = kwargs.get("litellm_params")
    received = params.get("proxy_server_request") if is_mapping(params) else None
    body = received.get("body") if is_mapping(received) else None
    request: dict[str, Any] = (
        {**body, "model": payload.get("model_group") or body.get("model")} if is_mapping(body) else {}
    )
    shape = shape_for(payload.get("call_type"), request)
    target = pre_call_target(request, settings, router) if shape is not None else None
    if shape is None or target is None:
        return None
    if shape is ANTHROPIC_SHAPE:
        apply_client_edits(request, target.model)  # into the copy; for an Anthropic group its own to apply
    parts = shape.read(request)
    if parts.unsupported is not None:
        return None
    fitted = fit_request(target.fit_request(parts, shape.format, ratio_of(target)))
    report = dataclasses.replace(fitted.report, reason=REASON)
    fields = report.as_dict()
    log.warning("request_refused_before_fit", model_group=target.group, hook="async_log_failure_event", **fields)
    spend = metadata.get("spend_logs_metadata")
    metadata["spend_logs_metadata"] = {**(spend if is_mapping(spend) else {}), UNFITTED_KEY: fields}
    return report
