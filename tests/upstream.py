"""An independent re-statement of how the upstream Autoloop scheduler reads the Machine State table.

Written from the scheduler's documented behaviour (find the exact ``## ⚙️ Machine State`` heading, read every
``| key | value |`` row up to the next ``## ``, lower-case keys with underscores, ``—``/``-``/empty as null, the
integer and boolean rows, comma-split Recent Statuses, a later duplicate row winning) so tests can check that what
statefile writes reads back through the scheduler's logic with the intended values.  It mimics the regex approach
on purpose, quirks included (a ``|---|`` separator row of other than three dashes is read as a key).
"""

from __future__ import annotations

import re
from typing import Any

_SECTION = re.compile(r"## ⚙️ Machine State.*?\n(.*?)(?=\n## |\Z)", re.DOTALL)
_ROW = re.compile(r"\|\s*(.+?)\s*\|\s*(.+?)\s*\|", re.DOTALL)


def upstream_machine_state(content: str) -> dict[str, Any]:
    """The scheduler's dict for ``content`` ({} when the exact heading is missing)."""
    match = _SECTION.search(content)
    if not match:
        return {}
    state: dict[str, Any] = {}
    for row in _ROW.finditer(match.group(0)):
        key, value = row.group(1).strip(), row.group(2).strip()
        if key.lower() in ("field", "---", ":---", ":---:", "---:"):
            continue
        state[key.lower().replace(" ", "_")] = None if value in ("—", "-", "") else value
    for key in ("iteration_count", "consecutive_errors"):
        if key in state:
            try:
                state[key] = int(state[key])
            except (TypeError, ValueError):
                state[key] = 0
    for key in ("paused", "completed"):
        if key in state:
            state[key] = str(state[key]).lower() == "true"
    raw = state.get("recent_statuses") or ""
    state["recent_statuses"] = [s.strip().lower() for s in raw.split(",") if s.strip()] if raw else []
    return state


def meaningful(state: dict[str, Any]) -> dict[str, Any]:
    """Drop keys made of dashes/colons: the upstream regex's misreading of separator rows."""
    return {k: v for k, v in state.items() if k.strip("-:") != ""}
