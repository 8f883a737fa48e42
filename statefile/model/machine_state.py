"""The ⚙️ Machine State table: read it as the upstream scheduler does, edit one row without touching others.
Reading follows ``autoloop_scheduler.py`` (keys lower-cased with underscores, ``—``/``-``/empty is ``None``, counts
are integers or 0, ``paused``/``completed`` true only for ``true``, statuses split on commas, a later duplicate row
wins), except where its regex misreads a table: separator rows are skipped and an empty cell swallows no row."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeAlias

from statefile.defaults import MAX_EXPONENT, MAX_ITERATION
from statefile.model.blocks import content_end
from statefile.model.patterns import leading_number, plausible, says_no_number
from statefile.model.text import clip, line_body, line_ending
from statefile.numbers import number_text

# Rows of a fresh file, in the upstream template's order (new rows are inserted in it).
CANONICAL_ROWS: tuple[str, ...] = (
    "Last Run", "Iteration Count", "Best Metric", "Target Metric", "Metric Direction", "Branch", "PR", "Issue",
    "Paused", "Pause Reason", "Completed", "Completed Reason", "Consecutive Errors", "Recent Statuses",
)  # fmt: skip
NONE_VALUE = "—"

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
    """A counting row (``iteration_count``, ``consecutive_errors``) as a number, 0 when missing or garbled."""
    value = state.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _int(cell: str | None) -> int | None:
    try:
        return int(cell or "")
    except ValueError:
        return None


def unreadable_count(cell: str | None) -> bool:
    """Whether a counting row's cell holds text the scheduler reads as 0 though it says no "none" (``abc``, ``1.5``)."""
    return cell is not None and cell.strip() not in _NULLS and _int(cell) is None


def table_rows(lines: list[str]) -> list[Row]:
    """Every ``| key | value |`` row in the section, header and separator rows excluded."""
    return [Row(index, *cells) for index, line in enumerate(lines) if (cells := _cells(line)) is not None]


def _cells(line: str) -> tuple[str, str] | None:
    body = line_body(line)
    if not body.lstrip().startswith("|") or _SEPARATOR.match(body) or not (match := _ROW.match(body)):
        return None
    label, value = match.group(2).strip(), match.group(4).strip()
    return (label, value) if label and label.lower() != "field" else None


def read_state(lines: list[str]) -> dict[str, Any]:
    """The scheduler's view of the table: later duplicate rows win (no Row objects: a scheduler reads thousands)."""
    raw = {field_key(cells[0]): cells[1] for line in lines if (cells := _cells(line)) is not None}
    state: dict[str, Any] = {key: (None if value in _NULLS else value) for key, value in raw.items()}
    for key in ("iteration_count", "consecutive_errors"):
        if key in state:
            state[key] = _int(state[key]) or 0
    for key in ("paused", "completed"):
        if key in state:
            state[key] = str(state[key]).lower() == "true"
    state["recent_statuses"] = [
        s.strip().lower() for s in str(state.get("recent_statuses") or "").split(",") if s.strip()
    ]
    return state


def with_row(lines: list[str], label: str, value: str, newline: str) -> list[str]:
    """``lines`` with the last row ``label`` (the scheduler's) set to ``value``, else one added in canonical order."""
    value = value.replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    key = field_key(label)
    rows = table_rows(lines)
    out = list(lines)
    if found := next((row for row in reversed(rows) if row.key == key), None):  # rewritten in its own style
        out[found.index] = _new_row(lines, found, found.label, value, "")  # its line ending kept
        return out
    new_line = _new_row(lines, rows[-1] if rows else None, label, value, newline)
    order = [field_key(name) for name in CANONICAL_ROWS]
    rank = order.index(key) if key in order else len(order)
    earlier = [row for row in rows if row.key in order and order.index(row.key) < rank]
    separator = (i + 1 for i, line in enumerate(lines) if _SEPARATOR.match(line_body(line)) and "-" in line)
    # After the last row that comes before it, else before the first row, else under the header, else at the end.
    position = earlier[-1].index + 1 if earlier else rows[0].index if rows else next(separator, content_end(lines))
    if position > 0 and not line_ending(out[position - 1]):  # a file without a final newline keeps none
        out[position - 1] += newline
        new_line = line_body(new_line)
    out.insert(position, new_line)
    return out


def _new_row(lines: list[str], template: Row | None, label: str, value: str, newline: str) -> str:
    if template is not None and (match := _ROW.match(line_body(lines[template.index]))):
        # The space before the closing pipe, or none, but not column padding that no longer aligns.
        stripped = match.group(5).lstrip(" \t")
        tail = (" " if stripped != match.group(5) else "") + stripped
        ending = line_ending(lines[template.index]) or newline
        return f"{match.group(1)}{label}{match.group(3)}{value}{tail}{ending}"
    return f"| {label} | {value} |{newline}"


def label_for(name: str) -> str:
    """The row label for a label or a key (``"best_metric"`` → ``"Best Metric"``, unknown keys title-cased)."""
    if " " in name or name[:1].isupper():
        return name
    key = name.lower()
    return next(
        (label for label in CANONICAL_ROWS if field_key(label) == key), " ".join(map(str.capitalize, key.split("_")))
    )


def cell_text(value: CellValue) -> str:
    """A value as a cell: ``None`` or blank → ``—`` (an empty cell swallows the upstream regex's next row)."""
    if isinstance(value, (bool, list, tuple)):
        return str(value).lower() if isinstance(value, bool) else ", ".join(map(str, value))
    return NONE_VALUE if value is None or not str(value).strip() else str(value)


def state_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What a record changed that matters to people (best metric, pausing, completion), from before and after."""
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


# The Machine State rows holding a number the record rules compare against: scheduler key → row label.
NUMBER_ROWS = {"best_metric": "Best Metric", "target_metric": "Target Metric"}


def number_row_problem(state: Mapping[str, Any], key: str) -> str:
    """Why the :data:`NUMBER_ROWS` row ``key`` holds what the rules cannot compare (``lots``, ``1e9999999``), or ""."""
    number = leading_number(state.get(key))
    if number is None and not says_no_number(state.get(key)):
        what = "not a number (write the number, or — for none)"
    elif number is not None and not plausible(number):
        what = f"not a plausible number (beyond 1e±{MAX_EXPONENT})"
    else:
        return ""
    return f"the Machine State row '{NUMBER_ROWS[key]}' holds {clip(str(state.get(key)), 40)!r}, {what}"


def next_iteration_problem(count: int, highest: int) -> str:
    """Why the next iteration (past ``count`` and the history's ``highest``) would be beyond MAX_ITERATION, or ""."""
    if (number := max(count, highest) + 1) <= MAX_ITERATION:
        return ""
    where = f"the 'Iteration Count' row says {number_text(count)}" if count >= highest else ""
    where = where or f"the history goes up to iteration {highest:,}"
    return f"the next iteration would be {number_text(number)}, beyond {MAX_ITERATION:,}: {where}"
