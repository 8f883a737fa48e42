"""A program at a glance and its whole run as data: memory pressure (how full the file is, what each section costs,
what the next record will do; tokens estimated as ``ceil(UTF-8 bytes / 4)``, so emoji and non-Latin text are not
undercounted); every iteration the file and its archive know, one row each, oldest first; a sparkline of the metric for
terminals, a Mermaid ``xychart-beta`` for GitHub, the memory at a glance as markdown for ``$GITHUB_STEP_SUMMARY``."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from statistics import median
from typing import Any

from statefile.defaults import AGGRESSIVE_AT, AGGRESSIVE_KEEP
from statefile.model.archive import archive_entries
from statefile.model.document import StateDocument
from statefile.model.history import Entry, Iteration, IterationRange, Span, holds, merge, of_numbers, size
from statefile.model.machine_state import state_changes
from statefile.model.patterns import first_number, state_direction
from statefile.model.text import utf8_size
from statefile.numbers import budget_text, percent, percent_text, plural, size_text
from statefile.numbers import number_text as count_number
from statefile.policy.compaction import is_pinned
from statefile.policy.ranges import STATUS_BUCKETS, band_from_range, change_of

_ISO_T = re.compile(r"(?<=\d)T(?=\d)")
SPARK_LEVELS = "▁▂▃▄▅▆▇█"
#: Points a Mermaid chart draws at most: GitHub renders it about 700 px wide.
MAX_CHART_POINTS = 60
# The corpus's median detailed entry (154 entries, 27 files), for a file with none of its own.
TYPICAL_ENTRY_BYTES = 640


def _value(text: str | None) -> float | None:
    return float(found) if (found := first_number(text)) is not None else None


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
        joined = f"{self.first}{'+' if self.kind == 'iteration' else '–'}{self.last}"
        return str(self.first) if self.first == self.last else joined


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

    def metric_ends(self) -> tuple[float, float, float | None] | None:
        """The first and the last numeric metric and the best at the end; ``None`` when no row has a numeric metric."""
        values = [row.value for row in self.rows if row.value is not None]
        return (values[0], values[-1], self.rows[-1].best) if values else None


def history_rows(doc: StateDocument | None, program: str, archives: Sequence[tuple[str, str]] = ()) -> ProgramHistory:
    """Every iteration of ``program`` that ``doc`` and its archive parts (``(name, text)``, oldest first) know.

    An iteration number's row is its best detailed entry (the file's over an archived one, a complete one over a
    ``(partial)`` one, a later archived one over an earlier one); a range line gives one row only for numbers no
    detailed entry covers (the file's first, then the archive's newest first).  Each row carries the best so far."""
    # What each entry is found as: (order: from the file, position), the entry, where its text lives, its line.
    archived = [(part, a) for part, text in archives for a in archive_entries(text)]
    found: list[tuple[tuple[int, int], Entry, str, int]] = [
        ((0, n), a.entry, part if "/" in part or part.startswith("_") else f"archive/{program}/{part}", a.line)
        for n, (part, a) in enumerate(archived, 1)  # a part's path, or its name
    ]
    located = enumerate(doc.located_history if doc is not None else ())
    found += [((1, -i), e, f"{program}.md", start + 1) for i, (start, _, e) in located if e.kind != "opaque"]
    direction = state_direction(doc.machine_state) if doc is not None else "higher"

    winner: dict[int, tuple[tuple[bool, int, int], Iteration, str, int]] = {}
    for order, entry, source, line in found:
        if isinstance(entry, Iteration):
            rank = (not entry.partial, *order)  # a complete copy first, then the file's, then by position
            for n in entry.covers:
                if n not in winner or rank > winner[n][0]:
                    winner[n] = (rank, entry, source, line)
    rows = []
    for _, entry, source, line in {id(won[1]): won for won in winner.values()}.values():
        when = _ISO_T.sub(" ", entry.when).removesuffix("Z").removesuffix("UTC").strip() if entry.when else None
        head = (entry.spans[0][0], entry.spans[-1][1], when, entry.status, entry.metric, _value(entry.metric))
        rows.append(HistoryRow("iteration", *head, None, change_of(entry) or entry.notes, source, line))
    claimed = of_numbers(winner)  # intervals: a range can stand for any number of iterations
    ranges = [(order, e, source, line) for order, e, source, line in found if isinstance(e, IterationRange)]
    for _, entry, source, line in sorted(ranges, key=lambda found_range: found_range[0], reverse=True):
        if holds(claimed, entry.spans):
            continue
        claimed = merge(claimed + entry.spans)
        band = band_from_range(entry)
        dates = band.date_from if band.date_to in (None, band.date_from) else f"{band.date_from}…{band.date_to}"
        metric = f"{band.metric_from}→{band.metric_to}" if None not in (band.metric_from, band.metric_to) else None
        shown = " ".join(f"{glyph} {n}" for glyph, n in zip(STATUS_BUCKETS, band.counts, strict=True) if n)
        span = (band.first, band.last, dates if band.date_from else None, shown or entry.status, metric)
        change = " / ".join(band.parts) or None
        counts = dict(zip(("accepted", "rejected", "error", "other"), band.counts, strict=True))
        rows.append(HistoryRow("range", *span, _value(band.metric_to), None, change, source, line, counts))
    rows.sort(key=lambda r: (r.first, r.last, r.kind))
    only_archived = sum(1 for _, _, source, _ in winner.values() if source.startswith("archive/"))
    best = tuple(with_best(rows, direction))
    return ProgramHistory(program, direction, best, tuple(claimed), len(winner) - only_archived, only_archived)


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


def state_events(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """What one commit did to the Machine State, by ``record``'s rule: events with a reason or values and a ``text``."""
    changes = state_changes(before, after)
    paused, done, was = changes["pause_reason"], changes["completed_reason"], changes["previous_pause_reason"]
    gone = before.get("completed_reason")
    found = [
        ("paused", changes["paused_now"], paused, f"paused: {paused or 'no reason given'}"),
        ("unpaused", changes["unpaused"], was, "unpaused" + (f" (was paused: {was})" if was else "")),
        ("completed", changes["completed_now"], done, f"completed: {done or 'no reason given'}"),
        ("uncompleted", changes["was_completed"] and not changes["completed"], gone, "no longer completed"),
    ]
    events: list[dict[str, Any]] = [{"event": e, "reason": why, "text": text} for e, when, why, text in found if when]
    if (best := changes["best_metric"])["new_best"]:
        old, now = best["before"], best["after"]
        text = f"best metric {now}" if now is not None else "best metric cleared"
        text += f" (was {old})" if old is not None else ""
        events.append({"event": "best_metric", "before": old, "after": now, "text": text})
    return events


def sparkline(values: Sequence[float], width: int = 24) -> str:
    """``values`` as ``▁`` (lowest) to ``█`` (highest), at most ``width`` wide (neighbours averaged)."""
    if not values or width < 1:
        return ""
    # Scaled into [-1, 1]: sums of metrics near 1e308 would overflow.
    scale = max(abs(v) for v in values) or 1.0
    values = [v / scale for v in values]
    if len(values) > width:
        step = len(values) / width
        # Neighbours averaged; step > 1, so no part is empty.
        values = [sum(part) / len(part) for i in range(width) if (part := values[int(i * step) : int((i + 1) * step)])]
    low, high = min(values), max(values)
    if high == low:
        return SPARK_LEVELS[3] * len(values)
    return "".join(SPARK_LEVELS[round((v - low) / (high - low) * (len(SPARK_LEVELS) - 1))] for v in values)


def metric_series(history: ProgramHistory) -> list[tuple[int, float, float | None]]:
    """``(iteration, metric, best so far)`` per number, oldest first; an iteration wins its number over a range."""
    chosen: dict[int, HistoryRow] = {}
    for row in history.rows:
        if row.value is not None and (row.kind == "iteration" or row.last not in chosen):
            chosen[row.last] = row
    rows = with_best([chosen[number] for number in sorted(chosen)], history.direction)
    return [(row.last, row.value, row.best) for row in rows if row.value is not None]


def metric_sparkline(history: ProgramHistory, width: int = 24) -> str:
    """The sparkline of ``history``'s metric over iterations (``""`` when no iteration has a numeric metric)."""
    return sparkline([value for _, value, _ in metric_series(history)], width)


def trend_line(history: ProgramHistory) -> str:
    """``  metric ▁▂▄▆█ 100.65 → 270 over 241 iterations (best 270, higher is better)``, or ``""``."""
    if (ends := history.metric_ends()) is None:
        return ""
    first, last, best = ends
    tail = f" (best {best:g}, {history.direction} is better)" if best is not None else ""
    return f"  metric {metric_sparkline(history, 32)} {first:g} → {last:g} over {history.iterations} iterations{tail}"


def nice_bounds(low: float, high: float, ticks: int = 6) -> tuple[Decimal, Decimal]:
    """Axis bounds around ``[low, high]`` on a round step (1, 2, 2.5 or 5 × 10ⁿ); a flat series gets a band."""
    lo, hi = Decimal(repr(low)), Decimal(repr(high))
    span = hi - lo
    if span == 0:
        span = abs(hi) / 5 or Decimal(2)
        lo, hi = lo - span / 2, hi + span / 2
    raw = span / ticks
    magnitude = Decimal(1).scaleb(raw.adjusted())
    step = next(m * magnitude for m in map(Decimal, ("1", "2", "2.5", "5", "10")) if m * magnitude >= raw)
    bottom = (lo / step).to_integral_value(rounding=ROUND_FLOOR) * step
    return bottom, (hi / step).to_integral_value(rounding=ROUND_CEILING) * step


def number_text(value: float | Decimal) -> str:
    """A number as Mermaid reads one: plain decimal, no exponent, no trailing zeros (a float: 6 significant digits)."""
    text = format(value.normalize(), "f") if isinstance(value, Decimal) else f"{value:.6g}"
    if "e" in text:
        text = format(Decimal(text).normalize(), "f")
    return "0" if text in ("-0", "") else text


def thin(points: Sequence[tuple[int, float]], limit: int) -> list[tuple[int, float]]:
    """At most ``limit`` of ``points``, evenly spaced, the first and the last always kept."""
    if len(points) <= limit:
        return list(points)
    if limit < 2:
        return [points[-1]]
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def _quoted(text: str) -> str:
    """A Mermaid string: nothing can escape a double quote in one."""
    return '"' + text.replace('"', "'").replace("\n", " ") + '"'


def mermaid_xychart(history: ProgramHistory, *, max_points: int = MAX_CHART_POINTS) -> str | None:
    """A Mermaid ``xychart-beta`` (no fence) of the metric per iteration and best so far; ``None``: no metric."""
    if not (series := metric_series(history)):
        return None
    chosen = thin([(n, v) for n, v, _ in series], max_points)
    best_at = {n: b for n, _, b in series}
    values = [value for _, value in chosen]
    first_best = next((b for _, _, b in series if b is not None), None)
    best = [b if (b := best_at[n]) is not None else first_best for n, _ in chosen]
    drawn = [b for b in best if b is not None]
    low, high = nice_bounds(min(values + drawn), max(values + drawn))
    lines = [
        "xychart-beta",
        f"    title {_quoted(f'{history.program}: metric per iteration ({history.direction} is better)')}",
        f"    x-axis {_quoted('iteration')} [{', '.join(str(n) for n, _ in chosen)}]",
        f"    y-axis {_quoted('metric')} {number_text(low)} --> {number_text(high)}",
        f"    line [{', '.join(number_text(v) for v in values)}]",
    ]
    if len(drawn) == len(values):
        lines.append(f"    line [{', '.join(number_text(v) for v in drawn)}]")
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    return "—" if value is None or value == "" else " ".join(str(value).split()).replace("|", "\\|")


def count_text(value: Any) -> Any:
    """A Machine State count (an int, or whatever the file holds) with separators: ``1,234``."""
    return count_number(value) if isinstance(value, int) and not isinstance(value, bool) else value


def where_sentence(history: ProgramHistory) -> str:
    """``240 iterations: 10 in perf.md, 228 in the archive, 2 only in range lines``."""
    counts = [(history.archived, "in the archive"), (history.only_in_ranges, "only in range lines")]
    parts = [f"{count_number(history.in_file)} in {history.program}.md"]
    parts += [f"{count_number(n)} {where}" for n, where in counts if n]
    return f"{plural(history.iterations, 'iteration')}: " + ", ".join(parts)


def step_summary(
    rows: Sequence[Mapping[str, Any]],
    histories: Mapping[str, ProgramHistory],
    *,
    max_bytes: int,
    omitted_charts: int = 0,
) -> str:
    """The markdown summary of ``rows`` (``list_programs``) with a chart per program in ``histories``."""
    out = [f"## Autoloop memory — {plural(len(rows), 'program')}", ""]
    if not rows:
        return "\n".join([*out, "No programs on the memory branch yet.", ""])
    out += ["| program | status | iterations | best metric | trend | last run | size |\n|---|---|--:|--:|---|---|--:|"]
    for row in rows:
        name = str(row["program"])
        history = histories.get(name)
        trend = metric_sparkline(history, 16) if history is not None else ""
        size = int(row.get("size") or 0)
        cells = [name, row.get("status"), count_text(row.get("iteration_count")), row.get("best_metric"), trend]
        cells += [row.get("last_run"), budget_text(size, max_bytes) + (" ⚠️ over budget" if size > max_bytes else "")]
        out.append("| " + " | ".join(map(_cell, cells)) + " |")
    for row in rows:
        history = histories.get(str(row["program"]))
        if history is None:
            continue
        out += ["", f"### {history.program}", ""]
        chart = mermaid_xychart(history)
        if chart is None:
            out.append(f"No iteration of {history.program} has a numeric metric yet ({where_sentence(history)}).")
            continue
        out += ["```mermaid", chart.rstrip("\n"), "```", ""]
        out.append(
            f"Metric of each iteration (first line) and best so far (second line), {history.direction} is better; "
            f"{where_sentence(history)}.  `statefile history {history.program}` lists them."
        )
        # When the history's best differs from the Machine State's, say which one record and the scheduler follow.
        stated = first_number(str(row["best_metric"])) if row.get("best_metric") is not None else None
        reached = metric_series(history)[-1][2]  # the chart exists: the series is not empty
        if stated is not None and reached is not None and float(stated) != reached:
            out[-1] += (
                f"  The history's best is {number_text(reached)}, the Machine State's Best Metric "
                f"{number_text(float(stated))}: the table is what `record` and the scheduler use."
            )
    if omitted_charts:
        out += [
            "",
            f"Charts are shown for the most recently run programs; {count_number(omitted_charts)} more "
            f"program{'s have' if omitted_charts != 1 else ' has'} none here — `statefile summary PROGRAM` draws one.",
        ]
    return "\n".join(out) + "\n"


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ``ceil(UTF-8 bytes / 4)``."""
    return math.ceil(utf8_size(text) / 4)


def typical_entry_bytes(doc: StateDocument) -> int:
    """Median UTF-8 size of the newest 10 detailed entries, or :data:`TYPICAL_ENTRY_BYTES` when there are none."""
    sizes = [utf8_size(entry.raw) for entry in doc.iterations[:10]]
    return int(median(sizes)) if sizes else TYPICAL_ENTRY_BYTES


def pressure(
    doc: StateDocument,
    *,
    max_bytes: int,
    archives: Sequence[str] = (),
    aggressive_at: float = AGGRESSIVE_AT,
    keep_aggressive: int = AGGRESSIVE_KEEP,
) -> dict[str, Any]:
    """How full ``doc`` is, each section's cost, what its archive parts hold, when compaction turns aggressive."""
    size = doc.size
    typical = typical_entry_bytes(doc)
    threshold = int(aggressive_at * max_bytes)
    items = {k: [i for i in doc.list_items(k) if not i.is_placeholder] for k in ("lessons", "foreclosed", "future")}
    kinds = Counter(entry.kind for entry in doc.history)
    return {
        "size_bytes": size,
        "max_bytes": max_bytes,
        "percent_of_budget": percent(size, max_bytes),
        "headroom_bytes": max_bytes - size,
        "over_budget": size > max_bytes,
        "tokens": estimate_tokens(doc.render()),
        "token_estimate": "ceil(utf8_bytes / 4)",
        "sections": [
            {"kind": s.kind, "title": s.title, "bytes": s.size, "tokens": estimate_tokens(s.text)} for s in doc.sections
        ],
        "counts": {
            "iterations": kinds["iteration"],
            "ranges": kinds["range"],
            "other_entries": kinds["opaque"],
            "lessons": len(items["lessons"]),
            "pinned_lessons": sum(1 for item in items["lessons"] if is_pinned(item.text)),
            "foreclosed": len(items["foreclosed"]),
            "future": len(items["future"]),
            "archived_entries": sum(len(archive_entries(text)) for text in archives),
            "archive_parts": len(archives),
        },
        "typical_entry_bytes": typical,
        "aggressive_at": aggressive_at,
        "aggressive_threshold_bytes": threshold,
        "keep_aggressive": keep_aggressive,
        "next_record_bytes": size + typical,
        "next_record_triggers_aggressive": size + typical > threshold,
        "records_until_aggressive": max(0, (threshold - size) // typical),
    }


def pressure_lines(report: dict[str, Any], *, program: str | None = None) -> list[str]:
    """Human-readable lines for a :func:`pressure` report."""
    counts, n = report["counts"], count_number
    lines = [
        f"{program + ': ' if program else ''}{budget_text(report['size_bytes'], report['max_bytes'])}"
        + f", ~{plural(report['tokens'], 'token')} to read"
        + (" — OVER BUDGET" if report["over_budget"] else ""),
        f"  entries: {n(counts['iterations'])} detailed, {plural(counts['ranges'], 'range')}"
        + (f", {n(counts['other_entries'])} other" if counts["other_entries"] else "")
        + f"; archived: {plural(counts['archived_entries'], 'entry', 'entries')} in "
        + plural(counts["archive_parts"], "part"),
        f"  lessons: {n(counts['lessons'])} ({n(counts['pinned_lessons'])} pinned); "
        f"foreclosed: {n(counts['foreclosed'])}; future directions: {n(counts['future'])}",
    ]
    for section in report["sections"]:
        title = section["title"] or "(before the first heading)"
        lines.append(f"  {n(section['bytes']):>7} B  ~{n(section['tokens']):>6} tok  {title}")
    typical = size_text(report["typical_entry_bytes"])
    aggressive = (
        f"  next record (~{typical}) passes {percent_text(100 * report['aggressive_at'])} of the budget: "
        f"compaction will keep only the newest {plural(report['keep_aggressive'], 'entry', 'entries')} and merge ranges"
    )
    later = f"  about {plural(report['records_until_aggressive'], 'more record')} before compaction turns aggressive"
    return [*lines, aggressive if report["next_record_triggers_aggressive"] else f"{later} (typical entry ~{typical})"]
