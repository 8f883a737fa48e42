"""Defaults every layer agrees on, here (not in :mod:`statefile.app.context`) so lower layers can use them."""

from __future__ import annotations

import re

from statefile.numbers import number_text

#: The upstream Autoloop workflow's ``max-file-size`` for one state file.
DEFAULT_MAX_BYTES = 30720
#: The branch repo-memory and the upstream scheduler keep the state files on.
DEFAULT_BRANCH = "memory/autoloop"
#: The commit identity used when neither statefile's settings nor git's own identity name one.
BOT_NAME = "statefile"
BOT_EMAIL = "statefile@users.noreply.github.com"
#: Newest detailed entries compaction keeps in full (the upstream prompt: "fold entries beyond the newest 10").
KEEP_RECENT = 10
#: Share of the budget above which compaction turns aggressive (upstream: "above 80% of the budget keep only 5").
AGGRESSIVE_AT = 0.8
#: Newest detailed entries kept in full once compaction is aggressive.
AGGRESSIVE_KEEP = 5
#: Seconds an outside summarizer command may run before the built-in summary is used instead.
SUMMARIZER_TIMEOUT = 30.0
#: Characters a range line's summary may take; a summarizer's line must be shorter.
SUMMARY_CAP = 160
#: Characters of summary text a merged range line keeps (compaction's default; repair merges with it too).
RANGE_TEXT_CAP = 320
#: The program name of ``_shared.md``: lessons promoted for every program, not a program of its own.
SHARED_PROGRAM = "_shared"
#: The largest iteration number: a program run every minute for 19 years stays below it; beyond, in a heading or a
#: flag, is a typo or a date typed as a range, an error, never a hang.
MAX_ITERATION = 10_000_000
#: A metric's magnitude stays within 1e±308 (what a double holds): anything beyond is a typo, not a measurement.
MAX_EXPONENT = 308
#: The largest issue or pull request number: GitHub's GraphQL API types them as a signed 32-bit ``Int``.
MAX_GITHUB_NUMBER = 2**31 - 1
#: The largest byte size statefile accepts (1 GiB): a state file is an agent's context, kilobytes; a budget a
#: thousand times the largest import (128 MiB) is a typo, not a setting.
MAX_SIZE = 1024**3

_SIZE = re.compile(r"^\s*(\d+)(?:\.(\d+))?\s*([kmg]?i?b?)\s*$", re.I)
_SIZE_UNITS = {"": 1, "b": 1} | {u + s: 1024**p for p, u in ((1, "k"), (2, "m"), (3, "g")) for s in ("", "b", "ib")}
# Digits a size may have after the point: enough for any real fraction of a unit ("1.5MiB", "0.25G"), and few enough
# that the exact arithmetic below never meets Python's limit on converting long digit strings.
_SIZE_DECIMALS = 12


def parse_size(raw: object) -> int:
    """A byte count from ``30720``, ``30KB``, ``1.5 MiB`` (1024-based, as gh-aw's), exact, 1 to :data:`MAX_SIZE`."""
    if isinstance(raw, int) and not isinstance(raw, bool):
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
