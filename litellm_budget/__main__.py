"""``python -m litellm_budget`` runs the CLI."""

from __future__ import annotations

import sys

from .tools.cli import main

sys.exit(main())
