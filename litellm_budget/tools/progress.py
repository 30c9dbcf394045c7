"""A one-line progress bar on stderr for long replays; silent when stderr is not a terminal."""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    """Counts steps and redraws ``[#####.....]  53%  412/785  label`` in place."""

    def __init__(
        self, total: int, *, enabled: bool | None = None, stream: TextIO | None = None, width: int = 30
    ) -> None:
        self.total = max(1, total)
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.width = width

    def step(self, label: str = "") -> None:
        self.done += 1
        if self.enabled:
            filled = self.width * self.done // self.total
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(
                f"\r[{bar}] {100 * self.done // self.total:3d}%  {self.done}/{self.total}  {label[:40]:40s}"
            )
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
