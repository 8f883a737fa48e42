"""The memory at a glance as GitHub-flavoured markdown for ``$GITHUB_STEP_SUMMARY``: a table row per program,
then a Mermaid chart of each charted program's metric and where its iterations live."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from statefile.model.patterns import first_number
from statefile.numbers import budget_text, number_text, plural
from statefile.views.charts import mermaid_xychart, metric_series, metric_sparkline
from statefile.views.charts import number_text as metric_text
from statefile.views.history import ProgramHistory


def _cell(value: Any) -> str:
    """A table cell: ``—`` for nothing, pipes escaped, one line."""
    if value is None or value == "":
        return "—"
    return " ".join(str(value).split()).replace("|", "\\|")


def count_text(value: Any) -> Any:
    """A Machine State count (an int, or whatever the file holds) with separators: ``1,234``."""
    return number_text(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _best_disagrees(history: ProgramHistory, best_metric: Any) -> str:
    """A sentence when the history's best differs from the Machine State's, which record and the scheduler follow."""
    stated = first_number(str(best_metric)) if best_metric is not None else None
    series = metric_series(history)
    reached = series[-1][2] if series else None  # the best the history reaches in its Metric Direction
    if stated is None or reached is None or float(stated) == reached:
        return ""
    return (
        f"  The history's best is {metric_text(reached)}, the Machine State's Best Metric {metric_text(float(stated))}:"
        " the table is what `record` and the scheduler use."
    )


def where_sentence(history: ProgramHistory) -> str:
    """``240 iterations: 10 in perf.md, 228 in the archive, 2 only in range lines``."""
    parts = [f"{number_text(history.in_file)} in {history.program}.md"]
    if history.archived:
        parts.append(f"{number_text(history.archived)} in the archive")
    if history.only_in_ranges:
        parts.append(f"{number_text(history.only_in_ranges)} only in range lines")
    return f"{plural(history.iterations, 'iteration')}: " + ", ".join(parts)


def step_summary(
    rows: Sequence[Mapping[str, Any]],
    histories: Mapping[str, ProgramHistory],
    *,
    max_bytes: int,
    omitted_charts: int = 0,
) -> str:
    """The markdown summary of ``rows`` (from ``list_programs``), a chart for each program in ``histories``, and
    a line for the ``omitted_charts`` programs left without one."""
    count = len(rows)
    out = [f"## Autoloop memory — {plural(count, 'program')}", ""]
    if not rows:
        return "\n".join([*out, "No programs on the memory branch yet.", ""])
    out += [
        "| program | status | iterations | best metric | trend | last run | size |",
        "|---|---|--:|--:|---|---|--:|",
    ]
    for row in rows:
        name = str(row["program"])
        history = histories.get(name)
        trend = metric_sparkline(history, 16) if history is not None else ""
        size = int(row.get("size") or 0)
        over = " ⚠️ over budget" if size > max_bytes else ""
        out.append(
            f"| {_cell(name)} | {_cell(row.get('status'))} | {_cell(count_text(row.get('iteration_count')))} | "
            f"{_cell(row.get('best_metric'))} | {_cell(trend)} | {_cell(row.get('last_run'))} | "
            f"{_cell(budget_text(size, max_bytes) + over)} |"
        )
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
            + _best_disagrees(history, row.get("best_metric"))
        )
    if omitted_charts:
        out += [
            "",
            f"Charts are shown for the most recently run programs; {number_text(omitted_charts)} more "
            f"program{'s have' if omitted_charts != 1 else ' has'} none here — `statefile summary PROGRAM` draws one.",
        ]
    return "\n".join(out) + "\n"
