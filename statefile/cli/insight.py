"""Commands that show a program's whole run: ``history`` (every iteration as a table, JSON or CSV) and ``summary``
(markdown with Mermaid charts for ``$GITHUB_STEP_SUMMARY``); apart from :mod:`statefile.cli.read` because they read
every archive part, which the scheduler's pre-step never needs.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import shutil
from pathlib import Path

import click

from statefile.app.context import AppContext
from statefile.app.reading import iteration_events, memory_summary, program_history
from statefile.cli.run import escaped
from statefile.cli.support import (
    MISSING,
    display_width,
    echo,
    echo_page,
    emit_json,
    example,
    hints_of,
    pass_app,
    plain,
    plural,
    reader_options,
    say,
    table,
    without_checkout,
)
from statefile.cli.types import whole_number
from statefile.numbers import number_text
from statefile.store.atomic import write_output
from statefile.views.hints import TOOL_HISTORY
from statefile.views.history import HistoryRow, ProgramHistory
from statefile.views.summary import where_sentence

CSV_COLUMNS = ("first", "last", "kind", "date", "status", "metric", "best", "change", "source", "line")


def _status_text(row: HistoryRow) -> str:
    if row.kind == "iteration" or not row.counts or not any(row.counts.values()):
        return row.status or MISSING
    short = {"accepted": "acc", "rejected": "rej", "error": "err", "other": "other"}
    return " ".join(f"{short[word]} {number_text(n)}" for word, n in row.counts.items() if n)


def history_table(history: ProgramHistory, width: int) -> list[str]:
    """The rows as aligned text columns, CHANGE cut to fit ``width`` terminal columns."""
    headers = ["ITER", "DATE", "STATUS", "METRIC", "BEST", "WHERE"]
    # BEST through plain(): every digit the history has, never 6 significant ones in exponent form.
    cells = [[row.label if row.kind == "iteration" else f"{row.label} (range)", row.date, _status_text(row), row.metric,
              row.best, f"{row.source}:{row.line}"] for row in history.rows]  # fmt: skip
    lead = max(display_width(line) for line in table(cells, headers, right=(3, 4)))
    room = max(20, width - lead - 2)
    # Escaped before it is cut, so the cut counts the columns printed.
    changes = [escaped(" ".join((row.change or "").split())) for row in history.rows]
    cut = [c if display_width(c) <= room else c[: room - 1] + "…" for c in changes]
    return table(
        [[*cell, change or None] for cell, change in zip(cells, cut, strict=True)], [*headers, "CHANGE"], right=(3, 4)
    )


@click.command("history")
@click.argument("program")
@click.option("--csv", "as_csv", is_flag=True, help="Comma-separated values with a header row.")
@click.option("--last", "-n", type=whole_number(1), help="Only the newest N rows.")
@reader_options
@example("statefile history perf", "statefile history perf --csv > perf.csv", "statefile history perf --json")
@pass_app
def history_cmd(
    app: AppContext, program: str, as_csv: bool, last: int | None, hint_style: str, max_chars: int | None, offset: int
) -> None:
    """Every iteration of PROGRAM, oldest first: from the file, its range lines and its archive.

    One row per iteration with its number, date, status, metric, the best metric so far and what it changed, and
    where its text lives.  Iterations known only from a range line appear as one aggregated row.
    """

    history = program_history(app.reader(), program)
    rows = history.rows[-last:] if last else history.rows
    # The state events of these iterations, from the newest commits only (twice -n, or 50): a long history stays fast.
    numbers = {row.first for row in rows if row.kind == "iteration"}
    events = [e for e in iteration_events(app.reader(), program, 2 * last if last else 50) if e["iteration"] in numbers]
    if app.as_json:
        rows_data = [dataclasses.asdict(row) for row in rows]
        emit_json({"program": program, "direction": history.direction, "rows": rows_data, "events": events})
        return
    if as_csv:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(dataclasses.asdict(row) for row in rows)
        echo(buffer.getvalue(), nl=False)
        return
    if not rows:
        say(app, f"{program} has no iterations yet")
        return
    lines = history_table(dataclasses.replace(history, rows=rows), shutil.get_terminal_size((120, 24)).columns)
    if max_chars is not None or offset:  # paged (a gh-aw tool's answer): the table, then the call that gets the rest
        command = f"history {program} --max-chars {max_chars}" + (f" --last {last}" if last else "")
        echo_page("".join(line + "\n" for line in lines), max_chars=max_chars, offset=offset,
                  more=lambda at: hints_of(app, hint_style).more(TOOL_HISTORY, command, at))  # fmt: skip
        return
    echo("\n".join(lines))
    for event in events:
        echo(escaped(f"iteration {event['iteration']}: {event['text']}"))
    metric = ""
    points = history.points()
    if points:
        best = history.best_points()
        metric = f"; metric {plain(points[0][1])} → {plain(points[-1][1])}" + (
            f", best {plain(best[-1][1])} ({history.direction} is better)" if best else ""
        )
    more = f"; showing the newest {number_text(len(rows))}" if len(rows) < len(history.rows) else ""
    say(app, f"{where_sentence(history)}{metric}{more}")


@click.command("summary")
@click.argument("programs", nargs=-1)
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False),
              help="Append to this file (e.g. $GITHUB_STEP_SUMMARY) instead of printing.")  # fmt: skip
@click.option("--max-charts", type=whole_number(0), default=20, show_default=True,
              help="Chart at most this many programs (the most recently run).")  # fmt: skip
@example('statefile --remote origin summary --out "$GITHUB_STEP_SUMMARY"', "statefile summary perf")
@pass_app
def summary_cmd(app: AppContext, programs: tuple[str, ...], out: Path | None, max_charts: int) -> None:
    """Markdown for a GitHub job summary: a table of every program and a Mermaid chart of each one's metric.

    With PROGRAMS, only those.  GitHub renders the charts in the run's summary page (and in any markdown file).
    """

    # A job summary on the very first run (no branch yet) has nothing to show, which is not an error.
    with without_checkout(app) as app, app.reader(require_branch=False) as store:
        text, count = memory_summary(store, programs, max_charts, app.globs)
    if out is None:
        echo(text, nl=False)
        return
    write_output(out, (text + "\n").encode("utf-8"), append=True)  # $GITHUB_STEP_SUMMARY, a file or a device
    say(app, f"appended the summary of {plural(count, 'program')} to {out}")
