"""
The plugin's logger: structlog's ``litellm_budget`` logger where the application configured structlog (the library
never does), else one following LiteLLM's level and format, chosen per event so that a later ``structlog.configure``
wins. In the proxy nobody configures structlog (LiteLLM logs through the standard library), and its defaults would
print a debug line per response, in ``key=value`` lines that break a pipeline's JSON where LiteLLM logs JSON.
"""

from __future__ import annotations

import datetime
import logging
import os
import sys
import time
from collections.abc import MutableMapping
from typing import Any, NamedTuple

import structlog

from litellm_budget.process import PROCESS

NAME = "litellm_budget"
#: The application's logger: structlog's lazy proxy reads the configuration when an event is logged.
_CONFIGURED = structlog.get_logger(NAME)
#: Where nothing configured structlog and ``LITELLM_LOG`` names no level: ``info`` and above.
DEFAULT_LEVEL = logging.INFO
#: LiteLLM's variable for its log level (``DEBUG``, ``INFO``, ``WARNING``, ``ERROR``, ``CRITICAL``).
LEVEL_VARIABLE = "LITELLM_LOG"


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
    """The application's structlog logger; without one, a logger of LiteLLM's level and format."""
    if structlog.is_configured():
        return _CONFIGURED
    chosen = _Choice(sys.stdout, litellm_level(), litellm_writes_json())
    last = PROCESS.logger
    # Read per event (stdout, the level and the format as they are now), built once per choice.
    if last is not None and last[0].stream is chosen.stream and last[0][1:] == chosen[1:]:
        return last[1]
    logger = _built(chosen)
    PROCESS.logger = (chosen, logger)
    return logger


class _Choice(NamedTuple):
    """What decides the unconfigured logger: where stdout is now, ``LITELLM_LOG``'s level, JSON or not."""

    stream: Any
    level: int
    json: bool


def _built(chosen: _Choice) -> Any:
    """
    JSON lines; in a terminal, structlog's defaults (read when an event is logged); else the plain
    line. A bound logger, not a lazy proxy: nothing to bind per event.
    """
    bound: Any = structlog.make_filtering_bound_logger(chosen.level)
    if chosen.json:
        return bound(structlog.PrintLogger(chosen.stream), processors=_JSON_PROCESSORS, context={"component": NAME})
    if _in_terminal(chosen.stream):
        return structlog.wrap_logger(None, wrapper_class=bound, logger_factory_args=(NAME,))
    return bound(structlog.PrintLogger(chosen.stream), processors=_PLAIN_PROCESSORS, context={})


def _in_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except ValueError:  # closed
        return False


def litellm_level() -> int:
    """The level ``LITELLM_LOG`` names (any case), else ``DEFAULT_LEVEL``."""
    named = logging.getLevelName(os.environ.get(LEVEL_VARIABLE, "").strip().upper())
    return named if isinstance(named, int) else DEFAULT_LEVEL


def litellm_writes_json() -> bool:
    """Whether LiteLLM, where imported, logs JSON: ``litellm.json_logs``, set by ``JSON_LOGS=True`` or its config."""
    return getattr(sys.modules.get("litellm"), "json_logs", False) is True


def _message(_logger: object, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """``message``: the event's name again, under the key LiteLLM's JSON lines (and pipelines read for them) use."""
    event.setdefault("message", event.get("event"))
    return event


_JSON_PROCESSORS: tuple[structlog.typing.Processor, ...] = (
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    _message,
    structlog.processors.JSONRenderer(),
)


def _plain_line(_logger: object, _name: str, event: MutableMapping[str, Any]) -> str:
    """
    The line structlog's console renderer writes without colours (timestamp, padded level and event, then
    ``key=value`` sorted, strings bare unless they hold a space, ``=`` or a quote) for a fraction of its cost, paid a
    few times a request outside a terminal; the stack and the traceback, where an event has them, on the lines after.
    """
    head = f"{event.pop('timestamp', '')} [{event.pop('level', ''):<9}] {event.pop('event', '')!s:<30}"
    after = [str(event.pop(key)) for key in ("stack", "exception") if key in event]
    # One comprehension, no call per field: a report event has about forty.
    fields = " ".join(
        [
            f"{key}={value}" if isinstance(value, str) and _QUOTED.isdisjoint(value) else f"{key}={value!r}"
            for key, value in sorted(event.items())
        ]
    )
    return "\n".join([f"{head} {fields}".rstrip(" "), *after])


def _local_time(_logger: object, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """``timestamp``: local time, as structlog's defaults write it; formatted once a second (time zone lookups cost)."""
    second = int(time.time())
    stamp = PROCESS.stamp
    if stamp[0] != second:
        text = datetime.datetime.fromtimestamp(second, tz=datetime.timezone.utc).astimezone().strftime(_TIME_FORMAT)
        PROCESS.stamp = stamp = (second, text)
    event["timestamp"] = stamp[1]
    return event


_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
#: What makes the console renderer quote a string value (it would not read as one ``key=value``).
_QUOTED = frozenset(" \t=\r\n\"'")
_PLAIN_PROCESSORS: tuple[structlog.typing.Processor, ...] = (
    structlog.contextvars.merge_contextvars,
    structlog.processors.add_log_level,
    structlog.processors.StackInfoRenderer(),
    structlog.dev.set_exc_info,
    structlog.processors.format_exc_info,
    _local_time,
    _plain_line,
)
