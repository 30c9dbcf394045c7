"""
The plugin's logger: structlog's ``litellm_budget`` logger, as the application configured it.

The library never configures structlog. But in the proxy nobody does (LiteLLM logs through the
standard library), and structlog's default renders ``key=value`` console lines: an operator who
turned on LiteLLM's JSON logs (``JSON_LOGS=True``, or ``litellm_settings.json_logs: true``) would
find every report event breaking the JSON lines a log pipeline reads. So, only while structlog
is unconfigured and LiteLLM writes JSON, an event is rendered as one JSON line to stdout (with
``message`` beside ``event``, the key LiteLLM's own lines carry); otherwise it is the application's
structlog, exactly as ``structlog.get_logger("litellm_budget")`` would give. Decided per event,
as structlog's own lazy logger reads its configuration, so a later ``structlog.configure`` wins.
"""

from __future__ import annotations

import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

NAME = "litellm_budget"
#: The application's logger: structlog's lazy proxy reads the configuration when an event is logged.
_CONFIGURED = structlog.get_logger(NAME)


def get_logger() -> Any:
    """The logger every module of the plugin logs to."""
    return _PLUGIN_LOGGER


class _PluginLogger:
    """Forwards each call (``info``, ``warning``, ...) to the logger in force for it (``in_force``)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        return getattr(in_force(), name)


_PLUGIN_LOGGER = _PluginLogger()


def in_force() -> Any:
    """The application's structlog logger, or JSON lines where structlog is unconfigured and LiteLLM writes JSON."""
    if structlog.is_configured() or not litellm_writes_json():
        return _CONFIGURED
    # Built per event (microseconds, and JSON mode is the rare one): stdout is read as it is now.
    return structlog.wrap_logger(structlog.PrintLogger(sys.stdout), processors=_JSON_PROCESSORS, component=NAME)


def litellm_writes_json() -> bool:
    """Whether LiteLLM, where it is imported, logs JSON lines: ``litellm.json_logs``, from its env or config."""
    litellm = sys.modules.get("litellm")
    return getattr(litellm, "json_logs", False) is True


def _message(_logger: object, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """``message``: the event's name again, under the key LiteLLM's JSON lines (and pipelines read for them) use."""
    event.setdefault("message", event.get("event"))
    return event


_JSON_PROCESSORS: list[structlog.typing.Processor] = [
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    _message,
    structlog.processors.JSONRenderer(),
]
