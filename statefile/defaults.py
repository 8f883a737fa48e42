"""Defaults every layer agrees on, here (not in :mod:`statefile.app.config`) so lower layers can use them."""

from __future__ import annotations

import re

from statefile.numbers import number_text

DEFAULT_MAX_BYTES = 30720
"""The upstream Autoloop workflow's ``max-file-size`` for one state file."""

DEFAULT_BRANCH = "memory/autoloop"
"""The branch repo-memory and the upstream scheduler keep the state files on."""

BOT_NAME = "statefile"
BOT_EMAIL = "statefile@users.noreply.github.com"
"""The commit identity used when neither statefile's settings nor git's own identity name one."""

KEEP_RECENT = 10
"""Newest detailed entries compaction keeps in full (the upstream prompt: "fold entries beyond the newest 10")."""

AGGRESSIVE_AT = 0.8
"""Share of the budget above which compaction turns aggressive (upstream: "above 80% of the budget keep only 5")."""

AGGRESSIVE_KEEP = 5
"""Newest detailed entries kept in full once compaction is aggressive."""

SUMMARIZER_TIMEOUT = 30.0
"""Seconds an outside summarizer command may run before the built-in summary is used instead."""

SUMMARY_CAP = 160
"""Characters a range line's summary may take; a summarizer's line must be shorter."""

RANGE_TEXT_CAP = 320
"""Characters of summary text a merged range line keeps (compaction's default; repair merges with it too)."""

SHARED_PROGRAM = "_shared"
"""The program name of ``_shared.md``: lessons promoted for every program, not a program of its own."""


_SIZE = re.compile(r"^\s*(\d+)(?:\.(\d+))?\s*([kmg]?i?b?)\s*$", re.I)
_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2}
_SIZE_UNITS.update({"g": 1024**3, "gb": 1024**3, "gib": 1024**3})

MAX_SIZE = 1024**3
"""The largest byte size statefile accepts (1 GiB): a state file is an agent's context, kilobytes; a budget a
thousand times the largest import (128 MiB) is a typo, not a setting."""

# Digits a size may have after the point: enough for any real fraction of a unit ("1.5MiB", "0.25G"), and few enough
# that the exact arithmetic below never meets Python's limit on converting long digit strings.
_SIZE_DECIMALS = 12


def parse_size(raw: object) -> int:
    """A byte count from an int or text like ``30720``, ``30KB``, ``1.5 MiB`` (1024-based, as gh-aw's): the one size
    parser, exact (never a float), rounded down, 1 byte to :data:`MAX_SIZE`; ValueError says what is wrong."""
    if isinstance(raw, bool):
        raise ValueError("must be a number of bytes such as 30720 or '30KB'")
    if isinstance(raw, int):
        value = raw
    elif isinstance(raw, str) and (match := _SIZE.match(raw)) and match.group(3).lower() in _SIZE_UNITS:
        whole, decimals, unit = match.group(1).lstrip("0"), (match.group(2) or "").rstrip("0"), match.group(3)
        if len(whole) > len(str(MAX_SIZE)):
            raise ValueError(f"must be at most {MAX_SIZE:,} bytes (1 GiB), got a number of {len(whole):,} digits")
        if len(decimals) > _SIZE_DECIMALS:
            raise ValueError(f"must have at most {_SIZE_DECIMALS} digits after the point, got {raw.strip()!r}")
        scale = _SIZE_UNITS[unit.lower()]
        value = int(whole or "0") * scale + int(decimals or "0") * scale // 10 ** len(decimals)
    else:
        raise ValueError(f"must be a number of bytes such as 30720 or '30KB', got {raw!r}")
    if value < 1:
        raise ValueError(f"must be at least 1 byte, got {value}")
    if value > MAX_SIZE:
        raise ValueError(f"must be at most {MAX_SIZE:,} bytes (1 GiB), got {number_text(value)} bytes")
    return value


MAX_ITERATION = 10_000_000
"""The largest iteration number statefile accepts: a program run every minute for 19 years stays below it.

Numbers beyond it, in a heading or a flag, are typos or dates typed as ranges; they are errors, never a hang."""

MAX_EXPONENT = 308
"""A metric's magnitude stays within 1e±308 (what a double holds): anything beyond is a typo, not a measurement."""

MAX_GITHUB_NUMBER = 2**31 - 1
"""The largest issue or pull request number: GitHub's GraphQL API types them as ``Int``, a signed 32-bit integer, so
no repository can reach 2,147,483,648.  A longer number is a typo or an id of something else, never a reference."""
