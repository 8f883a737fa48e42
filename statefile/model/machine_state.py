"""The ⚙️ Machine State table: read it the way the upstream scheduler does, edit one row without touching others.

Pure functions over the section's lines.  Reading follows the upstream scheduler (``autoloop_scheduler.py``): it
finds the section by the exact heading ``## ⚙️ Machine State`` and reads every ``| key | value |`` row up to the
next ``## ``; keys are lower-cased with spaces as underscores; ``—``, ``-`` or an empty cell is ``None``;
``iteration_count`` and ``consecutive_errors`` are integers (0 when unreadable); ``paused`` and ``completed`` are
true only for ``true``; ``recent_statuses`` is split on commas; a later duplicate row wins.  Two deliberate
differences, both where the upstream regex misreads a table: separator rows of any length (``|-------|-------|``)
are skipped rather than read as a key ``-------``, and an empty cell reads as ``None`` instead of swallowing the
next row.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from statefile.model.blocks import content_end
from statefile.model.text import line_body, line_ending

# Rows of a fresh file, in the upstream template's order.  New rows are inserted in this order.
CANONICAL_ROWS: tuple[str, ...] = (
    "Last Run",
    "Iteration Count",
    "Best Metric",
    "Target Metric",
    "Metric Direction",
    "Branch",
    "PR",
    "Issue",
    "Paused",
    "Pause Reason",
    "Completed",
    "Completed Reason",
    "Consecutive Errors",
    "Recent Statuses",
)
NONE_VALUE = "—"

if TYPE_CHECKING:  # types only: the scheduler's fast read path does not load decimal
    from decimal import Decimal

    CellValue: TypeAlias = "str | int | float | Decimal | bool | Sequence[object] | None"
    """What a Machine State row may be set to (see :func:`cell_text` for how each is written)."""

_NULLS = ("—", "-", "")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_ROW = re.compile(r"^(\s*\|\s*)(.*?)(\s*\|\s*)(.*?)(\s*\|.*)$")


def field_key(label: str) -> str:
    """The scheduler's key for a row label: lower-cased, spaces to underscores (``Last Run`` → ``last_run``)."""
    return label.strip().lower().replace(" ", "_")


@dataclass(frozen=True)
class Row:
    """One table row: its index in the section's lines, the label cell and the raw value cell."""

    index: int
    label: str
    value: str

    @property
    def key(self) -> str:
        """The scheduler's key for this row."""
        return field_key(self.label)


def count_field(state: Mapping[str, Any], key: str) -> int:
    """A counting row (``iteration_count``, ``consecutive_errors``) as a number: the scheduler reads a missing or
    garbled count as 0, and so does every rule here."""
    value = state.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def unreadable_count(cell: str | None) -> bool:
    """Whether a counting row's cell holds text the scheduler reads as 0 though it says no "none" (``abc``, ``1.5``):
    the count it stood for is lost, so ``check`` fails on it and ``edit`` refuses it."""
    if cell is None or cell.strip() in _NULLS:
        return False
    try:
        int(cell)
    except ValueError:
        return True
    return False


def table_rows(lines: list[str]) -> list[Row]:
    """Every ``| key | value |`` row in the section, header and separator rows excluded."""
    rows: list[Row] = []
    for index, line in enumerate(lines):
        cells = _cells(line)
        if cells is not None:
            rows.append(Row(index, *cells))
    return rows


def _cells(line: str) -> tuple[str, str] | None:
    """The (label, value) of a table row line, or ``None`` for any other line (header and separator included)."""
    body = line_body(line)
    if not body.lstrip().startswith("|") or _SEPARATOR.match(body):
        return None
    match = _ROW.match(body)
    if not match:
        return None
    label, value = match.group(2).strip(), match.group(4).strip()
    if label.lower() == "field" or not label:
        return None
    return label, value


def coerce(raw: dict[str, str]) -> dict[str, Any]:
    """Apply the scheduler's conversions to raw cell text keyed by scheduler key."""
    state: dict[str, Any] = {key: (None if value in _NULLS else value) for key, value in raw.items()}
    for key in ("iteration_count", "consecutive_errors"):
        if key in state:
            try:
                state[key] = int(state[key])
            except (TypeError, ValueError):
                state[key] = 0
    for key in ("paused", "completed"):
        if key in state:
            state[key] = str(state[key]).lower() == "true"
    statuses = state.get("recent_statuses") or ""
    state["recent_statuses"] = [s.strip().lower() for s in str(statuses).split(",") if s.strip()]
    return state


def read_state(lines: list[str]) -> dict[str, Any]:
    """The scheduler's view of the table: later duplicate rows win."""
    # No Row objects on this path: a scheduler reads a thousand tables per run.
    raw: dict[str, str] = {}
    for line in lines:
        cells = _cells(line)
        if cells is not None:
            raw[field_key(cells[0])] = cells[1]
    return coerce(raw)


def set_row(lines: list[str], label: str, value: str, newline: str) -> list[str]:
    """Return new section lines with row ``label`` set to ``value``; only that row's line changes.

    The last row with that key is the one the scheduler reads, so that is the one edited; a missing row is
    inserted in canonical order, copying the spacing of an existing row.
    """
    value = value.replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    key = field_key(label)
    rows = table_rows(lines)
    out = list(lines)
    for row in reversed(rows):
        if row.key == key:
            line = lines[row.index]
            match = _ROW.match(line_body(line))
            assert match is not None  # table_rows only returns rows that match
            cell_pad = _value_padding(match.group(5))
            new_body = match.group(1) + match.group(2) + match.group(3) + value + cell_pad
            out[row.index] = new_body + line_ending(line)
            return out
    template = rows[-1] if rows else None
    new_line = _new_row(lines, template, label, value, newline)
    position = _insert_position(lines, rows, key)
    if position > 0 and not line_ending(out[position - 1]):
        # Inserting after a last line without a line ending: that line gets one, the new last line goes without,
        # so a file that had no final newline still has none.
        out[position - 1] += newline
        new_line = line_body(new_line)
    out.insert(position, new_line)
    return out


def _value_padding(tail: str) -> str:
    # Keep the row's style (a space before the closing pipe or none) but not column padding that no longer aligns.
    stripped = tail.lstrip(" \t")
    return (" " if stripped != tail else "") + stripped


def _new_row(lines: list[str], template: Row | None, label: str, value: str, newline: str) -> str:
    if template is not None:
        match = _ROW.match(line_body(lines[template.index]))
        if match:
            tail = _value_padding(match.group(5))
            # The template may be the file's last line, without a line ending: the new row still needs one (set_row
            # drops it again when the row itself becomes the last line), or it would be glued to the next row.
            ending = line_ending(lines[template.index]) or newline
            return f"{match.group(1)}{label}{match.group(3)}{value}{tail}{ending}"
    return f"| {label} | {value} |{newline}"


def _insert_position(lines: list[str], rows: list[Row], key: str) -> int:
    order = [field_key(name) for name in CANONICAL_ROWS]
    rank = order.index(key) if key in order else len(order)
    after: Row | None = None
    for row in rows:
        row_rank = order.index(row.key) if row.key in order else None
        if row_rank is not None and row_rank < rank:
            after = row
    if after is not None:
        return after.index + 1
    if rows:
        # Nothing canonical comes before it: goes first, right after the header and separator.
        return rows[0].index
    # No rows at all: after a separator line if there is one, else after a header line, else at the end.
    for index, line in enumerate(lines):
        if _SEPARATOR.match(line_body(line)) and "-" in line:
            return index + 1
    return content_end(lines)


def new_table(fields: dict[str, str], newline: str) -> list[str]:
    """A fresh two-column table (header, separator, one row per field in the given order)."""
    rows = ["| Field | Value |", "|-------|-------|"] + [f"| {k} | {v} |" for k, v in fields.items()]
    return [row + newline for row in rows]


def label_for(name: str) -> str:
    """The row label for ``name``: a label as given (``"Best Metric"``), or a key mapped to its canonical label
    (``"best_metric"`` → ``"Best Metric"``; unknown keys are title-cased)."""
    if " " in name or name[:1].isupper():
        return name
    key = name.lower()
    for label in CANONICAL_ROWS:
        if field_key(label) == key:
            return label
    return " ".join(part.capitalize() for part in key.split("_"))


def cell_text(value: CellValue) -> str:
    """How a value is written in a table cell: ``None`` or blank → ``—``, booleans lower-case, lists comma-joined.

    Never an empty cell: the upstream scheduler's row regex lets an empty cell swallow the rows after it.
    """
    if value is None:
        return NONE_VALUE
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    text = str(value)
    return text if text.strip() else NONE_VALUE


def state_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What one record changed in the Machine State that matters to people, from the scheduler's view of the
    table before and after (:attr:`StateDocument.machine_state`).

    ``best_metric``: ``{"before", "after", "new_best"}``; ``paused`` / ``completed``: the state afterwards;
    ``paused_now`` with ``pause_reason`` when this record paused the program; ``unpaused`` with
    ``previous_pause_reason`` when it un-paused it (the upstream rule on accepted); ``completed_now`` with
    ``completed_reason``; ``was_paused`` / ``was_completed``: the program was paused or completed before — the
    scheduler skips such a program, so recording on it is worth a word.
    """
    was_paused, now_paused = bool(before.get("paused")), bool(after.get("paused"))
    was_completed, now_completed = bool(before.get("completed")), bool(after.get("completed"))
    best_before, best_after = before.get("best_metric"), after.get("best_metric")
    return {
        "best_metric": {"before": best_before, "after": best_after, "new_best": best_after != best_before},
        "paused": now_paused,
        "paused_now": now_paused and not was_paused,
        "pause_reason": after.get("pause_reason"),
        "unpaused": was_paused and not now_paused,
        "previous_pause_reason": before.get("pause_reason") if was_paused else None,
        "completed": now_completed,
        "completed_now": now_completed and not was_completed,
        "completed_reason": after.get("completed_reason"),
        "was_paused": was_paused,
        "was_completed": was_completed,
        "consecutive_errors": after.get("consecutive_errors"),
    }
