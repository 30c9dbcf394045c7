"""Read JSON-lines files another process is still writing: complete lines only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def complete_records(path: Path) -> list[dict[str, Any]]:
    """The records of every complete line (ending in a newline) of ``path``; none when it is absent."""
    if not path.exists():
        return []
    complete = path.read_text(encoding="utf-8").rpartition("\n")[0]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]
