"""
A clock a test moves, shared by the fake providers (in the test's process) and the plugin in a
proxy subprocess, so a conversation goes idle past a cache's lifetime without anyone waiting.

The offset lives in a file (``$SHIFTED_CLOCK_FILE``): :class:`ShiftedClock` writes it and reads
it, and a proxy that names ``shifted_clock.shifter`` in its ``callbacks`` (this file copied beside
its config, as ``proxy_structlog.py`` is) runs the plugin's cache clock
(``litellm_budget.adapter.report.cache_observed.now``) by it.

In the test's own process, :func:`shift_module_clock` moves the ``time.monotonic()`` one plugin
module reads (a learned window's life, a conversation's lifetime, a shared cache's rest).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

ENV_VAR = "SHIFTED_CLOCK_FILE"


class ShiftedClock:
    """``time.monotonic()`` plus the seconds written to ``path``; ``advance`` writes more."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            self.path.write_text("0", encoding="utf-8")

    def offset(self) -> float:
        try:
            return float(self.path.read_text(encoding="utf-8") or 0)
        except (OSError, ValueError):
            return 0.0

    def advance(self, seconds: float) -> None:
        self.path.write_text(str(self.offset() + seconds), encoding="utf-8")

    def __call__(self) -> float:
        return time.monotonic() + self.offset()


class _LaterTime:
    """The ``time`` module, but ``monotonic()`` reads ``seconds`` later."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def monotonic(self) -> float:
        return time.monotonic() + self.seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def shift_module_clock(monkeypatch: pytest.MonkeyPatch, module: ModuleType, seconds: float) -> None:
    """
    From now on (until the test ends) ``module``'s ``time.monotonic()`` reads ``seconds`` later, as
    if that long went by: for a module that does ``import time``. Shifting again adds up.
    """
    current = getattr(module, "time", time)
    already = current.seconds if isinstance(current, _LaterTime) else 0.0
    monkeypatch.setattr(module, "time", _LaterTime(already + seconds))


def _install() -> object:
    """In a proxy: the plugin's cache clock becomes the shifted one; the callback itself does nothing."""
    from litellm.integrations.custom_logger import CustomLogger

    from litellm_budget.adapter.report import cache_observed

    cache_observed.now = ShiftedClock(os.environ[ENV_VAR])  # type: ignore[assignment]
    return CustomLogger()


shifter = _install() if os.environ.get(ENV_VAR) else None
