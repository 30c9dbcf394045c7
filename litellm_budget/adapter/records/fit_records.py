"""What identifies a fit's input or output, so a later hook, retry or fallback of a call knows those messages again."""

from __future__ import annotations

from typing import Any, NamedTuple

from litellm_budget.core.api import Fitted, is_mapping, texts_of


class FitRecord(NamedTuple):
    """One side of a fit of a request: the window it was for, and what identifies the messages."""

    window: int
    policy: str
    #: ``fingerprint`` of the messages.
    fingerprint: int
    #: ``hash()`` of the ``max_tokens`` value, whatever its type.
    max_tokens_hash: int

    def fits_in(self, wanted: FitRecord) -> bool:
        """These are ``wanted``'s messages, policy and ``max_tokens``, fitted for a window no larger than it wants."""
        same = self._replace(window=0) == wanted._replace(window=0)
        return same and 0 < self.window <= (wanted.window or self.window)


def record_of(window: int | None, policy: str, messages: list[Any], max_tokens: object) -> FitRecord:
    return FitRecord(window or 0, policy, fingerprint(messages), hash(max_tokens))


def sent_record(fitted_input: FitRecord, fitted: Fitted, asked_max_tokens: object) -> FitRecord:
    """What a fit sent: its input's record when passed through with the ``max_tokens`` asked (one fingerprint)."""
    report = fitted.report
    if report.action == "passthrough" and fitted.max_tokens == asked_max_tokens:
        return fitted_input
    return record_of(report.window, report.policy, fitted.messages, fitted.max_tokens)


def fingerprint(messages: list[Any]) -> int:
    """A cheap identity of a message list (roles and text sizes), to recognise it again after copies."""
    return hash(tuple(map(_role_and_size, messages)))


def _role_and_size(message: Any) -> tuple[Any, int]:
    if not is_mapping(message):
        return (type(message).__name__, 0)
    content = message.get("content")
    size = len(content) if isinstance(content, str) else sum(map(len, texts_of(content)))
    return (message.get("role"), size)
