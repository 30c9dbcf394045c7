"""Each recall, reported: a structlog event (never the text), the call's ``spend_logs_metadata``, and a metric."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from litellm_budget.adapter.report.metrics import record_recall
from litellm_budget.adapter.request.kwargs import metadata_of
from litellm_budget.logs import get_logger

if TYPE_CHECKING:
    from .answer import Asked
    from .scope import Answered

log = get_logger()

#: Where the call's recalls go in ``spend_logs_metadata``, beside its report.
RECALLS_KEY = "litellm_budget_recalls"


def report_answer(answered: Answered, call_id: str, model_group: str, asked: Asked) -> None:
    log.info(
        "recall_answered",
        litellm_call_id=call_id,
        model_group=model_group,
        handle=answered.handle,
        outcome=answered.outcome,
        answer_bytes=answered.answer_bytes,
        lines=asked.lines is not None,
        pattern=asked.pattern is not None,
    )
    record_recall(model_group or "unknown", answered.outcome)


def record_recalls(logging_obj: Any, kwargs: MutableMapping[str, Any], answered: Sequence[Answered]) -> None:
    """The call's recalls, in the ``spend_logs_metadata`` its spend log reads and the one its follow-up carries."""
    listed = [one.as_dict() for one in answered]
    details = getattr(logging_obj, "model_call_details", None)
    params = details.get("litellm_params") if isinstance(details, MutableMapping) else None
    logged = params.get("metadata") if isinstance(params, MutableMapping) else None
    for metadata in (logged, metadata_of(kwargs)):
        if isinstance(metadata, MutableMapping):
            spend = metadata.get("spend_logs_metadata")
            merged = dict(spend) if isinstance(spend, MutableMapping) else {}
            merged[RECALLS_KEY] = listed
            metadata["spend_logs_metadata"] = merged
