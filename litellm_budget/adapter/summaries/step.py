"""The summary step of a hook: get the summary a fit wants, before the fit that is sent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from litellm_budget.core.api import Fitted, MessageFormat, block_digest, parse_ranges, summary_job
from litellm_budget.logs import get_logger
from litellm_budget.typing import Message

from .summarizer import Summarizer, SummaryOutcome, SummarySource

log = get_logger()


async def summary_ahead(
    summarizer: Summarizer, source: SummarySource, trial: Fitted | None, messages: Sequence[Message], fmt: MessageFormat
) -> tuple[Mapping[str, str] | None, SummaryOutcome | None]:
    """
    ``trial`` is a silent fit of the request: when it dropped a block with no known summary, get one. Returns the
    summaries the fit that is sent should know, and the outcome for its report; ``(None, None)``: none wanted.
    """
    if trial is None or source.settings.summary_model is None:
        return None, None
    needed = trial.report.summary_needed
    if needed is None:
        return await _known_only(summarizer, source, trial, messages), None
    job = summary_job(messages, fmt, parse_ranges(trial.report.dropped_at))
    if job.digest != needed:
        log.warning("summary_block_mismatch", needed=needed, digest=job.digest)
        return None, None
    outcome = await summarizer.summary_for(source, job, fmt.name)
    return ({job.digest: outcome.text} if outcome.text else None), outcome


async def _known_only(
    summarizer: Summarizer, source: SummarySource, trial: Fitted, messages: Sequence[Message]
) -> Mapping[str, str] | None:
    """
    A block dropped where a new summary of the most allowed size has no room (a heavy last step) may have a smaller
    known summary: offer it, with no call. The fit sends it if it fits (else the marker), as the neighbours send it.
    """
    if not trial.report.dropped_at:
        return None
    digest = block_digest(messages[index] for index in sorted(parse_ranges(trial.report.dropped_at)))
    text = await summarizer.cached(source.cache, digest)
    return {digest: text} if text else None
