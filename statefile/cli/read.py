"""Commands that read the memory: show, list, log, expand, check, report, config; what an agent reads (render,
status, search); a program's whole run (history, summary).  Nothing of the write side loads here."""

from __future__ import annotations

import csv
import dataclasses
import io
import shlex
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from statefile.app import reading
from statefile.app.context import AppContext, option_docs
from statefile.cli.run import WholeNumber, escaped, paint, shown
from statefile.cli.support import Pager, command, echo, emit_json, plain, reader_options, say, table, without_checkout
from statefile.errors import EXIT_CHECK_FAILED
from statefile.model.document import REPAIRABLE
from statefile.model.machine_state import label_for
from statefile.model.text import clip
from statefile.numbers import budget_text, number_text, percent_text, plural
from statefile.store.atomic import write_output
from statefile.views.history import count_text, pressure_lines, where_sentence
from statefile.views.render import DEFAULT_BUDGET, DEFAULT_LEVEL, LEVELS, MIN_BUDGET
from statefile.views.search import hit_dict, hit_line

CSV_COLUMNS = ("first", "last", "kind", "date", "status", "metric", "best", "change", "source", "line")


def _utc(stamp: str) -> str:
    return stamp.replace("T", " ").removesuffix("Z") + " UTC"


@command("show", "statefile show perf --json", "statefile show memory/perf.md")
@click.argument("target")
def show_cmd(app: AppContext, target: str) -> Any:
    """Show a program's (or a state file's) structure, machine state, history summary and warnings."""
    info = reading.describe_target(app, target)
    if app.as_json:
        return info
    hist = info["history"]
    echo(f"{target}: {plural(info['size_bytes'], 'byte')}, {plural(len(info['sections']), 'section')}")
    for event in [event for event in ("paused", "completed") if event in info]:
        since = info[event]["since"]
        began = f" — since {_utc(since['when_utc'])}, commit {since['commit'][:10]}" if since else ""
        at = f", iteration {since['iteration']}" if since and since["iteration"] else ""
        echo(shown(f"{event}: {info[event]['reason'] or 'no reason given'}{began}{at}"))
    rows = ([label_for(key), value] for key, value in info["machine_state"].items())
    echo("\n".join(["machine state:", *(f"  {line}" for line in table(rows, ["FIELD", "VALUE"], right=())[1:])]))
    counts = f"{plural(hist['iterations'], 'iteration')}, {plural(hist['ranges'], 'range')}, {hist['other']} other"
    echo(f"history: {counts}; highest iteration {plain(hist['highest_iteration'] or None)}")
    echo("sections: " + ", ".join(f"{s['kind']} ({number_text(s['bytes'])} B)" for s in info["sections"]))
    for warning in info["warnings"]:
        echo(f"warning: {warning}")


#: ``list --sort`` keys: all but the name order largest (newest) first.
_LIST_ORDER: dict[str, Callable[[dict[str, Any]], Any]] = {
    "name": lambda r: str(r["program"]),
    "size": lambda r: r["size"],
    "iterations": lambda r: int(r["iteration_count"] or 0),
    "last-run": lambda r: str(r["last_run"] or ""),
}


@command("list", "statefile list --sort size", "statefile list --over-budget", "statefile --remote origin list --json")
@click.option("--sort", "sort_by", type=click.Choice(sorted(_LIST_ORDER)), default="name", show_default=True,
              help="Order: size and iterations largest first, last-run most recent first.")  # fmt: skip
@click.option("--over-budget", is_flag=True, help="Only programs larger than their byte budget.")
def list_cmd(app: AppContext, sort_by: str, over_budget: bool) -> Any:
    """List programs with size, % of budget, iteration count, last run and status, and a totals line."""
    store = app.reader()
    rows = reading.list_programs(store, app.globs)  # by name: the sort below is stable, ties stay in name order
    rows.sort(key=_LIST_ORDER[sort_by], reverse=sort_by != "name")
    everything = len(rows)
    rows = [r for r in rows if r["size"] > store.max_bytes] if over_budget else rows
    if app.as_json:
        return rows
    if not rows:  # with programs, --over-budget left them out
        over = f"no program is over its budget ({plural(store.max_bytes, 'byte')}); {plural(everything, 'program')}"
        none = "no programs on this branch yet ('statefile init PROGRAM' creates one)"
        say(app, f"{over} in all" if everything else none)
        return
    # The trend column parses every file's history: for people at a terminal only.
    trends = reading.list_trends(store, [r["program"] for r in rows]) if sys.stdout.isatty() else {}
    headers = ["PROGRAM", "BYTES", "BUDGET", "ITERS", "LAST RUN", "STATUS"] + (["TREND"] if trends else [])
    cells = ([r["program"], number_text(r["size"]), percent_text(r["percent_of_budget"]),
              count_text(r["iteration_count"]), r["last_run"], r["status"]]
             + ([trends.get(r["program"]) or None] if trends else []) for r in rows)  # fmt: skip
    echo("\n".join(table(cells, headers, right=(1, 2, 3))))
    statuses = Counter(r["status"] for r in rows)
    parts = [
        plural(len(rows), "program") + (f" of {number_text(everything)}" if len(rows) < everything else ""),
        plural(sum(r["size"] for r in rows), "byte"),
        plural(sum(int(r["iteration_count"] or 0) for r in rows), "iteration"),
        f"{number_text(sum(r['size'] > store.max_bytes for r in rows))} over budget",
        *(f"{number_text(statuses[s])} {s}" for s in ("paused", "completed", "unreadable") if statuses[s]),
    ]
    say(app, "total: " + " · ".join(parts))


@command("log", "statefile log perf -n 5", "statefile log perf -p -n 1")
@click.argument("program")
@click.option("--limit", "-n", type=WholeNumber(1), default=20, show_default=True)
@click.option("--patch", "-p", is_flag=True, help="Show what each commit changed in PROGRAM.md (a unified diff).")
def log_cmd(app: AppContext, program: str, limit: int, patch: bool) -> Any:
    """Show the branch history of PROGRAM.md: when (UTC), who, which iteration, what changed; -p adds the diff."""
    rows = reading.program_log(app.reader(), program, limit, patch=patch)
    if app.as_json:
        return rows
    if not rows:
        say(app, f"no commits for {program} (a --dir folder has no history)")
    for row in rows if patch else ():
        echo(f"commit {row['commit']}\nAuthor: {row['author']}\nDate:   {_utc(row['when_utc'])}\n")
        for line in [row["message"], *(["", *row["body"].splitlines()] if row["body"] else [])]:
            echo(f"    {line}".rstrip())
        for event in row["events"]:
            echo(f"    ↳ {shown(event['text'])}")
        echo(f"\n{row['patch']}" if row["patch"] else "")
    if patch or not rows:
        return
    lines = table(
        ([row["commit"][:10], _utc(row["when_utc"]), f"#{row['iteration']}" if row["iteration"] else None,
          row["author"].split(" <", 1)[0] or row["author"], row["message"]] for row in rows),
        ["COMMIT", "WHEN (UTC)", "ITER", "AUTHOR", "CHANGE"],
        right=(2,)
    )  # fmt: skip
    echo(lines[0])
    for line, row in zip(lines[1:], rows, strict=True):
        echo("\n".join([line, *(f"{'':12}↳ {shown(event['text'])}" for event in row["events"])]))


@command("expand", "statefile expand perf 57", "statefile expand perf 57 --max-chars 4000 --hints tools")
@click.argument("program")
@click.argument("iteration", type=WholeNumber(1))
@reader_options
def expand_cmd(app: AppContext, program: str, iteration: int, pager: Pager) -> Any:
    """Print iteration ITERATION of PROGRAM verbatim, from the file or from its archive."""
    where, text = reading.expand_iteration(app.reader(), program, iteration)
    if app.as_json:
        return {"program": program, "iteration": iteration, "source": where, "text": text}
    pager.echo(text, f"expand {program} {iteration}", iteration=iteration)


@command("check", "statefile check", "statefile check perf", "statefile check memory/*.md --max-bytes 30KB")
@click.argument("targets", nargs=-1)
def check_cmd(app: AppContext, targets: tuple[str, ...]) -> None:
    """Fail (exit 1) if any state file is over budget, unreadable, or unreadable by the scheduler.

    With no TARGETS, every program on the branch; TARGETS may be names or paths.  Warnings do not fail it."""
    outcomes = reading.check_targets(app, targets)
    if app.as_json:
        emit_json([o.as_dict() for o in outcomes])
    elif not outcomes:
        say(app, "no state files to check")
    for o in () if app.as_json else outcomes:
        # Names and messages echo what was typed (a pasted 100 KB path): each is cut (shown).
        if not app.quiet:
            state = paint("ok", fg="green") if o.ok else paint("FAIL", fg="red", bold=True)
            size = f", {budget_text(o.size, o.max_bytes)}" if o.sized else ""
            click.echo(f"{shown(o.name)}: {state}{size}")  # not echo(): the rest is escaped already, the colour stays
        for error in o.errors:
            echo(f"  error: {shown(error)}")
        labelled = (("warning", o.warnings), ("note", o.notes), ("acknowledged", o.acknowledged))
        say(app, *(f"  {label}: {shown(text)}" for label, texts in labelled for text in texts))
        fixable = sum(1 for text in [*o.errors, *o.warnings] if text.split(":", 1)[0] in REPAIRABLE)
        if fixable and not app.quiet and not reading.is_path_argument(o.name):
            echo(f"  `statefile repair {o.name}` can fix {plural(fixable, 'of these', 'of these')}"
                 " and archives what it takes out")  # fmt: skip
    if any(not o.ok for o in outcomes):
        sys.exit(EXIT_CHECK_FAILED)


@command(
    "report",
    "statefile --dir /tmp/gh-aw/repo-memory/autoloop report --out /tmp/gh-aw/autoloop.json",
    'statefile --remote "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git" report --out /tmp/gh-aw/autoloop.json',
)
@click.option("--program", help="Report this program (default: autoloop.json's 'selected').")
@click.option("--all", "all_programs", is_flag=True, help="Include every program in the per-program map.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="The scheduler's autoloop.json to "
              "merge into (written atomically); without it, print the merged JSON.")  # fmt: skip
def report_cmd(app: AppContext, program: str | None, all_programs: bool, out: Path | None) -> Any:
    """Merge state_file_size_bytes / state_file_max_bytes (and a per-program map) into autoloop.json."""
    merged = reading.build_report(app, out, program=program, all_programs=all_programs)
    if out is None or app.as_json:
        return merged
    count = plural(len(merged.get("statefile", {}).get("programs", {})), "program")
    say(app, f"{out}: state_file_size_bytes={merged.get('state_file_size_bytes')} "
             f"state_file_max_bytes={merged.get('state_file_max_bytes')} ({count})")  # fmt: skip


@command("config", "statefile config --json")
def config_cmd(app: AppContext) -> Any:
    """Print every setting, its value and where it came from (flag, env, TOML, workflow, default)."""
    rows = app.config().describe()
    if app.as_json:
        return [{"key": k, "value": v, "source": s} for k, v, s in rows]
    docs = {key: doc for key, _, _, _, doc in option_docs()} if app.env.get("STATEFILE_CONFIG_DOCS") else None
    lines = table(rows, ["KEY", "VALUE", "SOURCE"], right=())
    echo(lines[0])
    for (key, _, _), line in zip(rows, lines[1:], strict=True):
        echo(line if docs is None or app.quiet else f"{line}\n    {docs.get(key, '')}")


@command(
    "render",
    "statefile render perf --budget 8000",
    "statefile render perf --level index",
    "statefile render perf --level core --budget 3000 --hints tools",
)
@click.argument("program")
@click.option("--budget", type=WholeNumber(MIN_BUDGET), default=DEFAULT_BUDGET, show_default=True,
              help="Characters at most.")  # fmt: skip
@click.option("--level", type=click.Choice(LEVELS), default=DEFAULT_LEVEL, show_default=True)
@reader_options
def render_cmd(app: AppContext, program: str, budget: int, level: str, pager: Pager) -> Any:
    """Print the view of PROGRAM's memory an agent should read, never longer than --budget characters."""
    view = reading.render_program(app.reader(), program, budget=budget, level=level, hints=pager.hints)
    if app.as_json:
        return dict(program=program, level=level, budget=budget, chars=view.chars, omitted=view.omitted, text=view.text)
    pager.echo(view.text, f"render {program} --level {level} --budget {budget}", level=level)


@command("status", "statefile status perf --json")
@click.argument("program", required=False)
def status_cmd(app: AppContext, program: str | None) -> Any:
    """Pressure at a glance: size and % of budget, tokens per section, counts, next-record forecast."""
    # The sparkline is for people at a terminal: piped or --json output stays data.
    trends = not app.as_json and sys.stdout.isatty()
    found = reading.all_status(app.reader(), program, app.config(), app.globs, trends=trends)
    if app.as_json:
        broken = {name: {"status": "unreadable", "error": why} for name, why in found.unreadable.items()}
        return found.reports[program] if program else dict(sorted({**found.reports, **broken}.items()))
    for name in sorted({*found.reports, *found.unreadable}):
        if name in found.unreadable:
            echo(f"{name}: unreadable: {shown(found.unreadable[name])}")
            continue
        lines = pressure_lines(found.reports[name], program=name)
        lines[1:1] = [found.trends[name]] if found.trends.get(name) else []
        echo("\n".join(lines))


@command("search", 'statefile search "radix sort" --program perf')
@click.argument("query")
@click.option("--program", help="Only this program (and its archive).")
@click.option("--limit", "-n", type=WholeNumber(1), default=20, show_default=True)
@reader_options
def search_cmd(app: AppContext, query: str, program: str | None, limit: int, pager: Pager) -> Any:
    """Search every program's file and archive (and _shared.md), best matches first.

    Whole words, case-insensitive; a term ending in * matches word starts (cach*)."""
    hits = reading.search_memory(app.reader(), query, program=program, limit=limit)
    if app.as_json:
        return [hit_dict(hit) for hit in hits]
    if not hits:
        say(app, f"no matches for {shown(repr(clip(query, 200)))}")
        return
    lines = [hit_line(hit) for hit in hits]
    first = next((hit for hit in hits if hit.iteration is not None), None)
    if first is not None and first.iteration is not None and not app.quiet:
        lines.append(f"whole entries: {pager.hints.expand(first.program, first.iteration)}")
    again = f"search {shlex.quote(clip(query, 200))}" + (f" --program {program}" if program else "")
    pager.echo(lines, f"{again} --limit {limit}", query=query)


@command(
    "history", "statefile history perf", "statefile history perf --csv > perf.csv", "statefile history perf --json"
)
@click.argument("program")
@click.option("--csv", "as_csv", is_flag=True, help="Comma-separated values with a header row.")
@click.option("--last", "-n", type=WholeNumber(1), help="Only the newest N rows.")
@reader_options
def history_cmd(app: AppContext, program: str, as_csv: bool, last: int | None, pager: Pager) -> Any:
    """Every iteration of PROGRAM, oldest first: from the file, its range lines and its archive."""
    history = reading.program_history(app.reader(), program)
    rows = history.rows[-last:] if last else history.rows
    # The state events of these iterations, from the newest commits only (twice -n, or 50): a long history stays fast.
    numbers = {row.first for row in rows if row.kind == "iteration"}
    events = reading.iteration_events(app.reader(), program, 2 * last if last else 50)
    events = [event for event in events if event["iteration"] in numbers]
    if app.as_json:
        return dict(
            program=program, direction=history.direction, rows=list(map(dataclasses.asdict, rows)), events=events
        )
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
    short = {"accepted": "acc", "rejected": "rej", "error": "err", "other": "other"}
    headers = ["ITER", "DATE", "STATUS", "METRIC", "BEST", "WHERE", "CHANGE"]
    # BEST through plain(): every digit the history has, never 6 significant ones in exponent form.
    cells = [[row.label if row.kind == "iteration" else f"{row.label} (range)", row.date,
              " ".join(f"{short[word]} {number_text(n)}" for word, n in row.counts.items() if n)
              if row.kind != "iteration" and row.counts and any(row.counts.values()) else plain(row.status),
              row.metric, row.best, f"{row.source}:{row.line}", " ".join((row.change or "").split())]
             for row in rows]  # fmt: skip
    lines = table(cells, headers, right=(3, 4), fill=True)
    if pager.max_chars is not None or pager.offset:  # paged (a gh-aw tool's answer): the call gets the rest
        pager.echo(lines, f"history {program}" + (f" --last {last}" if last else ""))
        return
    echo("\n".join(lines))
    for event in events:
        echo(escaped(f"iteration {event['iteration']}: {event['text']}"))
    start, end, best = history.metric_ends() or (None, None, None)
    metric = f"; metric {plain(start)} → {plain(end)}" if start is not None else ""
    metric += f", best {plain(best)} ({history.direction} is better)" if best is not None else ""
    more = f"; showing the newest {number_text(len(rows))}" if len(rows) < len(history.rows) else ""
    say(app, f"{where_sentence(history)}{metric}{more}")


@command("summary", 'statefile --remote origin summary --out "$GITHUB_STEP_SUMMARY"', "statefile summary perf")
@click.argument("programs", nargs=-1)
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False),
              help="Append to this file (e.g. $GITHUB_STEP_SUMMARY) instead of printing.")  # fmt: skip
@click.option("--max-charts", type=WholeNumber(0), default=20, show_default=True,
              help="Chart at most this many programs (the most recently run).")  # fmt: skip
def summary_cmd(app: AppContext, programs: tuple[str, ...], out: Path | None, max_charts: int) -> None:
    """Markdown for a GitHub job summary: a table of every program and a Mermaid chart of each one's metric."""
    # A job summary on the very first run (no branch yet) has nothing to show, which is not an error.
    with without_checkout(app) as app, app.reader(require_branch=False) as store:
        text, count = reading.memory_summary(store, programs, max_charts, app.globs)
    if out is None:
        echo(text, nl=False)
        return
    write_output(out, (text + "\n").encode("utf-8"), append=True)  # $GITHUB_STEP_SUMMARY, a file or a device
    say(app, f"appended the summary of {plural(count, 'program')} to {out}")
