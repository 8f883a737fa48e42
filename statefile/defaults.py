"""Defaults every layer agrees on (the base layer: no imports from the package).

They live here, not in :mod:`statefile.app.config`, so the store and the integrations can use them without
importing the layer above them.
"""

from __future__ import annotations

DEFAULT_MAX_BYTES = 30720
"""The upstream Autoloop workflow's ``max-file-size`` for one state file."""

DEFAULT_BRANCH = "memory/autoloop"
"""The branch repo-memory and the upstream scheduler keep the state files on."""

BOT_NAME = "statefile"
BOT_EMAIL = "statefile@users.noreply.github.com"
"""The commit identity used when neither statefile's settings nor git's own identity name one."""

SHARED_PROGRAM = "_shared"
"""The program name of ``_shared.md``: lessons promoted for every program, not a program of its own."""
