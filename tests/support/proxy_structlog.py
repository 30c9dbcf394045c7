"""Loaded by test proxies beside their config: the application side configures structlog (JSON lines
to $STRUCTLOG_FILE), as operators do; the library never does. Exposes a no-op logger for `callbacks`."""

from __future__ import annotations

import os

import structlog
from litellm.integrations.custom_logger import CustomLogger

structlog.configure(
    processors=[structlog.processors.add_log_level, structlog.processors.JSONRenderer()],
    logger_factory=structlog.WriteLoggerFactory(file=open(os.environ["STRUCTLOG_FILE"], "a", encoding="utf-8")),  # noqa: SIM115
)


class _Nothing(CustomLogger):  # type: ignore[misc]
    """Only here so the module can be named in `callbacks` and get imported."""


configured = _Nothing()
