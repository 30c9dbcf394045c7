"""
Summaries in a replay: a deterministic offline summarizer, and the strategy that uses it the
way the plugin does (fit; when a dropped block needs a summary, make it once, keep it for the
session, fit again), so the numbers of ``replay --policy summarize`` are reproducible.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any

from litellm_budget.core._fit import fit_request
from litellm_budget.core._fit_input import FitRequest, Fitted
from litellm_budget.core.budget._settings import BudgetSettings
from litellm_budget.core.formats import MessageFormat
from litellm_budget.tools import table
from litellm_budget.tools.replay import Outcome, Remembered
from litellm_budget.typing import Message, PolicyName

#: The ``summary_model`` a replay names; nothing is ever called.
OFFLINE_MODEL = "offline-summarizer"
#: Strategy names that replay with summaries: the ``summarize`` policy, and ``auto`` or ``plan``
#: as they run with a ``summary_model`` configured.
SUMMARIZING: dict[str, PolicyName] = {"summarize": "summarize", "auto+summaries": "auto", "plan+summaries": "plan"}
#: Words of an offline summary (each one token in cl100k and o200k after a space).
SUMMARY_WORDS = 150
_WORDS = ["the", "and", "of", "to", "in", "is", "it", "that", "for", "on", "with", "as"]
#: What the per-session table of a replay says about its summaries.
OFFLINE_SUMMARY_NOTE = f"{SUMMARY_WORDS} words from each block's digest, made once per block and session"
SESSION_HEADERS = ["strategy", "window", "session", "requests", "summary calls", "summarized", "summary tokens"]


def offline_summary(digest: str) -> str:
    """A summary of fixed size derived from the block's digest alone: no model, same text every run."""
    seed = hashlib.sha256(digest.encode()).digest()
    words = [_WORDS[byte % len(_WORDS)] for byte in (seed * (SUMMARY_WORDS // len(seed) + 1))[:SUMMARY_WORDS]]
    return f"Summary of block {digest[:12]}: {' '.join(words)}"


@dataclasses.dataclass(slots=True)
class SessionSummaries:
    """One session's summaries: calls made, requests sent with one, and the tokens those took in the window."""

    session: str
    requests: int = 0
    calls: int = 0
    summarized: int = 0
    summary_tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return dataclasses.asdict(self)


class SummarizingStrategy:
    """
    A policy replayed with the offline summarizer. One summary per block, kept per session:
    a request whose fit asks for one gets it and is fitted again, as the plugin waits for a
    new summary; a block still unsummarized after that (the refit dropped more) gets its summary
    for the next request, as the plugin finishes it in the background.
    """

    def __init__(self, name: str, model: str, window: int, settings: BudgetSettings | None, fmt: MessageFormat) -> None:
        changes = {"policy": SUMMARIZING[name], "summary_model": OFFLINE_MODEL}
        self.settings = (settings or BudgetSettings()).updated(changes)
        self.model, self.window, self.fmt = model, window, fmt
        self.sessions: list[SessionSummaries] = []
        self._summaries: dict[str, str] = {}
        self._remembered = Remembered(self.settings)

    def start_session(self, session: str) -> None:
        """Forget the summaries made so far: each session starts with none, like a new conversation."""
        self.sessions.append(SessionSummaries(session))
        self._summaries = {}

    def __call__(self, messages: list[Message]) -> Outcome:
        if not self.sessions:
            self.start_session("")
        stats = self.sessions[-1]
        fitted = self._fit(messages)
        if fitted.report.summary_needed is not None:
            self._make(fitted.report.summary_needed, stats)
            fitted = self._fit(messages)
            if fitted.report.summary_needed is not None:
                self._make(fitted.report.summary_needed, stats)
        self._remembered.sent(messages, fitted)
        report = fitted.report
        stats.requests += 1
        stats.summarized += report.summarized
        stats.summary_tokens += report.summary_tokens
        sent = None if report.action == "rejected" else fitted.messages
        return Outcome(sent, report.action, report.elided, report.dropped_messages, report.rereads)

    def totals(self) -> dict[str, Any]:
        """Summary calls and tokens over every session, and per session."""
        return {
            "summary_calls": sum(s.calls for s in self.sessions),
            "summary_tokens": sum(s.summary_tokens for s in self.sessions),
            "summary_sessions": [s.as_dict() for s in self.sessions],
        }

    def _fit(self, messages: list[Message]) -> Fitted:
        return fit_request(
            FitRequest(
                messages,
                model=self.model,
                window=self.window,
                settings=self.settings,
                fmt=self.fmt,
                summaries=self._summaries,
                previous=self._remembered.previous,
            )
        )

    def _make(self, digest: str, stats: SessionSummaries) -> None:
        if digest not in self._summaries:
            self._summaries[digest] = offline_summary(digest)
            stats.calls += 1


def summarizing_strategy(
    name: str, model: str, window: int, settings: BudgetSettings | None, fmt: MessageFormat
) -> SummarizingStrategy | None:
    """The strategy for a name of ``SUMMARIZING``; ``None`` for any other name."""
    return SummarizingStrategy(name, model, window, settings, fmt) if name in SUMMARIZING else None


def format_session_summaries(results: Sequence[dict[str, Any]]) -> str:
    """One row per session of every summarizing result (those with ``summary_sessions``)."""
    cells = [
        [r["strategy"], r["window"], s["session"], s["requests"], s["calls"], s["summarized"], s["summary_tokens"]]
        for r in results
        for s in r.get("summary_sessions", ())
    ]
    return table.render(SESSION_HEADERS, cells) if cells else ""
