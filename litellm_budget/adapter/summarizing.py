"""The summary step of a hook: ask for the summary a fit wants, before the fit that is sent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from litellm_budget.core.fit import Fitted
from litellm_budget.core.formats import MessageFormat
from litellm_budget.core.report import parse_ranges
from litellm_budget.core.settings import BudgetSettings
from litellm_budget.core.summary import block_digest, summary_job
from litellm_budget.typing import Message

from .summarizer import Summarizer, SummaryOutcome

log = structlog.get_logger("litellm_budget")


async def summary_ahead(  # noqa: PLR0913 - what a summary of one request is made of
    summarizer: Summarizer,
    trial: Fitted | None,
    messages: Sequence[Message],
    fmt: MessageFormat,
    settings: BudgetSettings,
    *,
    router: Any,
    cache: Any,
) -> tuple[Mapping[str, str] | None, SummaryOutcome | None]:
    """
    ``trial`` is a silent fit of the request: when it dropped a block whose summary is not
    known, get it (from memory, the shared cache, or the summary model, waiting at most
    ``summary_timeout``). Returns the summaries the fit that is sent should know, and the
    outcome for its report; ``(None, None)`` when no summary is wanted.
    """
    if trial is None or settings.summary_model is None:
        return None, None
    needed = trial.report.summary_needed
    if needed is None:
        return await _known_only(summarizer, trial, messages, cache), None
    job = summary_job(messages, fmt, parse_ranges(trial.report.dropped_at))
    if job.digest != needed:
        log.warning("summary_block_mismatch", needed=needed, digest=job.digest)
        return None, None
    outcome = await summarizer.summary_for(caller_of(router), cache, settings, job, fmt.name)
    return ({job.digest: outcome.text} if outcome.text else None), outcome


async def _known_only(
    summarizer: Summarizer, trial: Fitted, messages: Sequence[Message], cache: Any
) -> Mapping[str, str] | None:
    """
    A block dropped where a new summary of the most allowed size has no room (a heavy last
    step) may have a known summary, smaller than that: offer it, and no call is made. The fit
    sends it if it fits (else the marker), so such a request keeps the prefix its neighbours send.
    """
    if not trial.report.dropped_at:
        return None
    digest = block_digest(messages[index] for index in sorted(parse_ranges(trial.report.dropped_at)))
    text = await summarizer.cached(cache, digest)
    return {digest: text} if text else None


def caller_of(router: Any) -> Any:
    """The proxy's or the caller's Router; without one, LiteLLM itself (``summary_model`` is a model name)."""
    if router is not None:
        return router
    import litellm

    return litellm
