"""Commands that show a program's whole run: ``history`` (every iteration as a table, JSON or CSV) and ``summary``
(markdown with Mermaid charts for ``$GITHUB_STEP_SUMMARY``).

Read-only; apart from :mod:`statefile.cli.read` because they read every archive part, which the scheduler's
pre-step never needs.
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import click

from statefile.app.context import AppContext
from statefile.app.reading import list_programs, program_history
from statefile.cli.support import emit_json, example, pass_app, say
from statefile.errors import NotFoundError
from statefile.views.history import HistoryRow, ProgramHistory
from statefile.views.summary import step_summary, where_sentence

CSV_COLUMNS = ("first", "last", "kind", "date", "status", "metric", "best", "change", "source", "line")


def _status_text(row: HistoryRow) -> str:
    if row.kind == "iteration" or not row.counts or not any(row.counts.values()):
        return row.status or "—"
    short = {"accepted": "acc", "rejected": "rej", "error": "err", "other": "other"}
    return " ".join(f"{short[word]} {n}" for word, n in row.counts.items() if n)


def _best_text(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


def history_table(history: ProgramHistory, width: int) -> list[str]:
    """The rows as aligned text columns, CHANGE cut to fit ``width`` characters."""
    headers = ("ITER", "DATE", "STATUS", "METRIC", "BEST", "WHERE", "CHANGE")
    cells = [
        (
            row.label if row.kind == "iteration" else f"{row.label} (range)",
            row.date or "—",
            _status_text(row),
            row.metric or "—",
            _best_text(row.best),
            f"{row.source}:{row.line}",
            " ".join((row.change or "").split()) or "—",
        )
        for row in history.rows
    ]
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(headers[:-1])]
    aligned = ("<", "<", "<", ">", ">", "<")
    lead = sum(widths) + 2 * len(widths)
    room = max(20, width - lead)

    def line(values: tuple[str, ...]) -> str:
        head = "  ".join(f"{v:{a}{w}}" for v, a, w in zip(values[:-1], aligned, widths, strict=True))
        last = values[-1] if len(values[-1]) <= room else values[-1][: room - 1] + "…"
        return f"{head}  {last}".rstrip()

    return [line(headers), *(line(c) for c in cells)]


@click.command("history")
@click.argument("program")
@click.option("--csv", "as_csv", is_flag=True, help="Comma-separated values with a header row.")
@click.option("--last", "-n", type=click.IntRange(min=1), help="Only the newest N rows.")
@example("statefile history perf    ·    statefile history perf --csv > perf.csv    ·    statefile history perf --json")
@pass_app
def history_cmd(app: AppContext, program: str, as_csv: bool, last: int | None) -> None:
    """Every iteration of PROGRAM, oldest first: from the file, its range lines and its archive.

    One row per iteration with its number, date, status, metric, the best metric so far and what it changed, and
    where its text lives.  Iterations known only from a range line appear as one aggregated row.
    """

    history = program_history(app.store(), program)
    rows = history.rows[-last:] if last else history.rows
    if app.as_json:
        emit_json({**history.as_dict(), "rows": [r.as_dict() for r in rows]})
        return
    if as_csv:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row in rows:
            writer.writerow(["" if (v := getattr(row, c)) is None else v for c in CSV_COLUMNS])
        click.echo(buffer.getvalue(), nl=False)
        return
    if not rows:
        say(app, f"{program} has no iterations yet")
        return
    shown = ProgramHistory(history.program, history.direction, rows)
    for text in history_table(shown, shutil.get_terminal_size((120, 24)).columns):
        click.echo(text)
    metric = ""
    points = history.points()
    if points:
        best = history.best_points()
        metric = f"; metric {points[0][1]:g} → {points[-1][1]:g}" + (
            f", best {best[-1][1]:g} ({history.direction} is better)" if best else ""
        )
    more = f"; showing the newest {len(rows)}" if len(rows) < len(history.rows) else ""
    say(app, f"{where_sentence(history)}{metric}{more}")


@click.command("summary")
@click.argument("programs", nargs=-1)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Append to this file (e.g. $GITHUB_STEP_SUMMARY) instead of printing.",
)
@click.option(
    "--max-charts",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Chart at most this many programs (the most recently run).",
)
@example('statefile --remote origin summary --out "$GITHUB_STEP_SUMMARY"    ·    statefile summary perf')
@pass_app
def summary_cmd(app: AppContext, programs: tuple[str, ...], out: Path | None, max_charts: int) -> None:
    """Markdown for a GitHub job summary: a table of every program and a Mermaid chart of each one's metric.

    With PROGRAMS, only those.  GitHub renders the charts in the run's summary page (and in any markdown file).
    """

    store = app.store()
    rows = list_programs(store, app.globs)
    if programs:
        known = {str(r["program"]) for r in rows}
        missing = [p for p in programs if p not in known]
        if missing:
            raise NotFoundError(f"no program '{missing[0]}'; 'statefile list' shows the programs")
        rows = [r for r in rows if r["program"] in programs]
    readable = [r for r in rows if r.get("status") != "unreadable"]
    recent = sorted(readable, key=lambda r: (str(r.get("last_run") or ""), str(r["program"])), reverse=True)
    charted = recent[:max_charts]
    histories = {str(r["program"]): program_history(store, str(r["program"])) for r in charted}
    text = step_summary(rows, histories, max_bytes=store.max_bytes, omitted_charts=len(readable) - len(charted))
    if out is None:
        click.echo(text, nl=False)
        return
    with out.open("a", encoding="utf-8") as fh:
        fh.write(text + "\n")
    say(app, f"appended the summary of {len(rows)} program(s) to {out}")
