"""A program's whole run as data: every iteration the file and its archive know, one row each, oldest first.

A detailed entry counts once per iteration number (the file's copy over an archived one, a complete one over a
``(partial)`` one, a later archived copy over an earlier one); a range line becomes one aggregated row only for
numbers no detailed entry covers (the file's first, then the archive's newest first, so archived copies of a range
line never show twice).  Each row carries the best metric so far in the Metric Direction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from statefile.model.archive import archive_entries
from statefile.model.document import StateDocument
from statefile.model.history import Entry, Iteration, IterationRange
from statefile.model.machine_state import state_changes
from statefile.model.patterns import first_number, state_direction
from statefile.model.spans import Span, holds, merge, of_numbers, size
from statefile.policy.ranges import STATUS_BUCKETS, band_from_range, change_of

_BUCKET_WORDS = ("accepted", "rejected", "error", "other")


def _value(text: str | None) -> float | None:
    """A metric's number for charts and sorting."""
    found = first_number(text)
    return float(found) if found is not None else None


_ISO_T = re.compile(r"(?<=\d)T(?=\d)")


@dataclass(frozen=True)
class HistoryRow:
    """One iteration (``kind == "iteration"``) or one range line's aggregate (``kind == "range"``)."""

    kind: str
    first: int
    last: int
    date: str | None  # a range's is the span 2026-01-01…2026-01-04
    status: str | None  # a range's is the glyphs it shows
    metric: str | None  # a range's is the band 100→118.22
    value: float | None  # the metric as a number (a range's band end)
    best: float | None  # the best metric so far, this row included
    change: str | None
    source: str  # where the text lives (perf.md, archive/perf/0001.md) and its 1-based line
    line: int
    counts: dict[str, int] | None = None  # a range's accepted, rejected, error, other

    @property
    def label(self) -> str:
        """``57``, ``12+13`` or ``1–27``."""
        if self.first == self.last:
            return str(self.first)
        return f"{self.first}+{self.last}" if self.kind == "iteration" else f"{self.first}–{self.last}"


@dataclass(frozen=True)
class ProgramHistory:
    """The rows of one program, its Metric Direction, and how many rows came from where."""

    program: str
    direction: str
    rows: tuple[HistoryRow, ...]
    covered: tuple[Span, ...] = ()  # every iteration number known (merged intervals)
    in_file: int = 0  # of those with a detailed entry: in the file, and in the archive only
    archived: int = 0

    @property
    def iterations(self) -> int:
        """How many iteration numbers are known (each once, however many rows mention it)."""
        return size(self.covered)

    @property
    def only_in_ranges(self) -> int:
        """How many known iteration numbers have no detailed entry left, only a range line."""
        return self.iterations - self.in_file - self.archived

    def points(self) -> list[tuple[int, float]]:
        """``(iteration, metric)`` for every row with a numeric metric, oldest first (ranges at their end)."""
        return [(row.last, row.value) for row in self.rows if row.value is not None]

    def best_points(self) -> list[tuple[int, float]]:
        """``(iteration, best so far)`` for every row once a best exists, oldest first."""
        return [(row.last, row.best) for row in self.rows if row.best is not None]


@dataclass(frozen=True)
class _Found:
    entry: Entry
    source: str
    line: int
    rank: tuple[int, int, int]  # (complete, from the file, position): the highest copy wins


def history_rows(doc: StateDocument | None, program: str, archives: Sequence[tuple[str, str]] = ()) -> ProgramHistory:
    """Every iteration of ``program`` that ``doc`` and its archive parts (``(name, text)``, oldest first) know."""
    found: list[_Found] = []
    position = 0
    for part, text in archives:
        for archived in archive_entries(text):
            position += 1
            partial = isinstance(archived.entry, Iteration) and archived.entry.partial
            where = part if "/" in part or part.startswith("_") else f"archive/{program}/{part}"  # a path, or a name
            found.append(_Found(archived.entry, where, archived.line, (not partial, 0, position)))
    if doc is not None:
        lines = doc.entry_lines
        for index, entry in enumerate(doc.history):
            if entry.kind == "opaque":
                continue
            partial = isinstance(entry, Iteration) and entry.partial
            found.append(_Found(entry, f"{program}.md", lines[index] + 1, (not partial, 1, -index)))
    direction = state_direction(doc.machine_state) if doc is not None else "higher"

    winner: dict[int, _Found] = {}
    for item in found:
        if isinstance(item.entry, Iteration):
            for n in item.entry.covers:
                if n not in winner or item.rank > winner[n].rank:
                    winner[n] = item
    chosen = {id(item): item for item in winner.values()}
    rows = [_iteration_row(item) for item in chosen.values()]

    claimed = of_numbers(winner)  # intervals: a range can stand for any number of iterations
    for item in sorted((f for f in found if isinstance(f.entry, IterationRange)), key=lambda f: f.rank[1:],
                       reverse=True):  # fmt: skip
        entry = item.entry
        assert isinstance(entry, IterationRange)
        if holds(claimed, entry.spans):
            continue
        claimed = merge(claimed + entry.spans)
        rows.append(_range_row(item, entry))
    rows.sort(key=lambda r: (r.first, r.last, r.kind))
    only_archived = sum(1 for item in winner.values() if item.source.startswith("archive/"))
    best = tuple(with_best(rows, direction))
    return ProgramHistory(program, direction, best, tuple(claimed), len(winner) - only_archived, only_archived)


def _iteration_row(item: _Found) -> HistoryRow:
    entry = item.entry
    assert isinstance(entry, Iteration)
    when = _ISO_T.sub(" ", entry.when).removesuffix("Z").removesuffix("UTC").strip() if entry.when else None
    return HistoryRow(
        kind="iteration",
        first=entry.spans[0][0],
        last=entry.spans[-1][1],
        date=when,
        status=entry.status,
        metric=entry.metric,
        value=_value(entry.metric),
        best=None,
        change=change_of(entry) or entry.notes,
        source=item.source,
        line=item.line,
    )


def _range_row(item: _Found, entry: IterationRange) -> HistoryRow:
    band = band_from_range(entry)
    dates = band.date_from if band.date_to in (None, band.date_from) else f"{band.date_from}…{band.date_to}"
    metric = f"{band.metric_from}→{band.metric_to}" if None not in (band.metric_from, band.metric_to) else None
    counts = dict(zip(_BUCKET_WORDS, band.counts, strict=True))
    shown = " ".join(f"{glyph} {n}" for glyph, n in zip(STATUS_BUCKETS, band.counts, strict=True) if n)
    return HistoryRow(
        kind="range",
        first=band.first,
        last=band.last,
        date=dates if band.date_from else None,
        status=shown or entry.status,
        metric=metric,
        value=_value(band.metric_to),
        best=None,
        change=" / ".join(band.parts) or None,
        source=item.source,
        line=item.line,
        counts=counts,
    )


def with_best(rows: list[HistoryRow], direction: str) -> list[HistoryRow]:
    """``rows`` with the best metric so far: accepted iterations' metrics and ranges' band ends count."""
    best: float | None = None
    out = []
    for row in rows:
        candidate = row.value if (row.kind == "range" or row.status == "accepted") else None
        if candidate is not None and (best is None or (candidate < best if direction == "lower" else candidate > best)):
            best = candidate
        out.append(replace(row, best=best))
    return out


# -- what a commit did to the program's state: pauses, un-pauses, completion, best metric ---------------------------


def state_events(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """What one commit did to the Machine State (``paused``, ``unpaused``, ``completed``, ``uncompleted`` with the
    reason, ``best_metric`` before and after), each with a ``text``, by the rule ``record`` reports with."""
    changes = state_changes(before, after)
    events: list[dict[str, Any]] = []
    if changes["paused_now"]:
        reason = changes["pause_reason"]
        events.append({"event": "paused", "reason": reason, "text": f"paused: {reason or 'no reason given'}"})
    if changes["unpaused"]:
        was = changes["previous_pause_reason"]
        events.append(
            {"event": "unpaused", "reason": was, "text": "unpaused" + (f" (was paused: {was})" if was else "")}
        )
    if changes["completed_now"]:
        reason = changes["completed_reason"]
        events.append({"event": "completed", "reason": reason, "text": f"completed: {reason or 'no reason given'}"})
    elif before.get("completed") and not after.get("completed"):
        events.append({"event": "uncompleted", "reason": before.get("completed_reason"), "text": "no longer completed"})
    best = changes["best_metric"]
    if best["new_best"]:
        was, now = best["before"], best["after"]
        text = f"best metric {now}" if now is not None else "best metric cleared"
        events.append({"event": "best_metric", "before": was, "after": now,
                       "text": text + (f" (was {was})" if was is not None else "")})  # fmt: skip
    return events
