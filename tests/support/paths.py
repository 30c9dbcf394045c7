"""Where things are, for a test wherever its file sits: the repository, these helpers, the real sessions."""

from __future__ import annotations

import os
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
"""This folder: the callbacks a proxy config names (``proxy_spy.py``, ``proxy_structlog.py``) are copied from here."""
REPO_ROOT = SUPPORT.parents[1]
"""Put on the proxy's PYTHONPATH so ``litellm_budget.*`` callbacks import without installing."""
EXAMPLES = REPO_ROOT / "examples"
README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
"""The pages the README links to; ``tests/support/docs.py`` reads them with the README."""
#: The sessions made for this repository (``made_sessions.py`` writes them): in every clone, beside the
#: other examples, so the docs' commands replay them from the clone's root (``examples/sessions``).
MADE_DIR = EXAMPLES / "sessions"
#: One request body the docs' ``litellm-budget inspect`` commands read (``made_sessions.py`` writes it too).
MADE_REQUEST = EXAMPLES / "request.json"
SESSIONS_DIR = Path(os.environ.get("LITELLM_BUDGET_SESSIONS", REPO_ROOT.parent / "shared" / "sessions"))
"""The real agent sessions (``../shared/sessions``); where it is absent, the tests replay the made ones."""


def session_file(shared: str, made: str) -> Path:
    """The shared session ``shared`` where ../shared/sessions has it, else the made one ``made`` in its part."""
    path = SESSIONS_DIR / f"{shared}.json"
    return path if path.is_file() else MADE_DIR / f"{made}.json"
