"""Commands that read the memory for the scheduler and maintainers: show, list, log, expand, check, report, config.

The scheduler's pre-step runs ``report`` and ``check`` on every scheduled run: this module loads no write side.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from statefile.app.config import option_docs
from statefile.app.context import AppContext
from statefile.app.reading import (
    CheckOutcome,
    build_report,
    check_targets,
    describe_target,
    expand_iteration,
    is_path_argument,
    list_programs,
    list_trends,
    program_log,
)
from statefile.cli.run import shown
from statefile.cli.support import (
    SIZE,
    echo,
    echo_page,
    emit_json,
    example,
    hints_of,
    paint,
    pass_app,
    plain,
    plural,
    reader_options,
    say,
    table,
)
from statefile.cli.types import whole_number
from statefile.errors import EXIT_CHECK_FAILED
from statefile.model.anomalies import REPAIRABLE
from statefile.model.machine_state import label_for
from statefile.numbers import budget_text, number_text, percent_text
from statefile.views.hints import TOOL_EXPAND
from statefile.views.summary import count_text


@click.command("show")
@click.argument("target")
@example("statefile show perf --json", "statefile show memory/perf.md")
@pass_app
def show_cmd(app: AppContext, target: str) -> None:
    """Show a program's (or a state file's) structure, machine state, history summary and warnings."""

    info = describe_target(app, target)
    if app.as_json:
        emit_json(info)
        return
    hist = info["history"]
    echo(f"{target}: {plural(info['size_bytes'], 'byte')}, {plural(len(info['sections']), 'section')}")
    for event in ("paused", "completed"):
        if event in info:
            since = info[event]["since"]
            began = f" — since {_utc(since['when_utc'])}, commit {since['commit'][:10]}" if since else ""
            at = f", iteration {since['iteration']}" if since and since["iteration"] else ""
            echo(shown(f"{event}: {info[event]['reason'] or 'no reason given'}{began}{at}"))
    echo("machine state:")
    rows = ([label_for(key), value] for key, value in info["machine_state"].items())
    for line in table(rows, ["FIELD", "VALUE"], right=())[1:]:
        echo(f"  {line}")
    echo(
        f"history: {plural(hist['iterations'], 'iteration')}, {plural(hist['ranges'], 'range')}, "
        f"{hist['other']} other; highest iteration {plain(hist['highest_iteration'] or None)}"
    )
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


@click.command("list")
@click.option("--sort", "sort_by", type=click.Choice(sorted(_LIST_ORDER)), default="name", show_default=True,
              help="Order: size and iterations largest first, last-run most recent first.")  # fmt: skip
@click.option("--over-budget", is_flag=True, help="Only programs larger than their byte budget.")
@example("statefile list --sort size", "statefile list --over-budget", "statefile --remote origin list --json")
@pass_app
def list_cmd(app: AppContext, sort_by: str, over_budget: bool) -> None:
    """List programs with size, % of budget, iteration count, last run and status, and a totals line."""

    store = app.reader()
    rows = list_programs(store, app.globs)  # sorted by name: the sort below is stable, so ties stay in name order
    rows.sort(key=_LIST_ORDER[sort_by], reverse=sort_by != "name")
    everything = len(rows)
    if over_budget:
        rows = [r for r in rows if r["size"] > store.max_bytes]
    if app.as_json:
        emit_json(rows)
        return
    if not rows:
        if over_budget and everything:
            budget = plural(store.max_bytes, "byte")
            say(app, f"no program is over its budget ({budget}); {plural(everything, 'program')} in all")
        else:
            say(app, "no programs on this branch yet ('statefile init PROGRAM' creates one)")
        return
    # The trend column parses every file's history: for people at a terminal only.
    trends = list_trends(store, [r["program"] for r in rows]) if sys.stdout.isatty() else {}
    headers = ["PROGRAM", "BYTES", "BUDGET", "ITERS", "LAST RUN", "STATUS"] + (["TREND"] if trends else [])
    cells = (
        [r["program"], number_text(r["size"]), percent_text(r["percent_of_budget"]), count_text(r["iteration_count"]),
         r["last_run"], r["status"]] + ([trends.get(r["program"]) or None] if trends else [])
        for r in rows
    )  # fmt: skip
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


@click.command("log")
@click.argument("program")
@click.option("--limit", "-n", type=whole_number(1), default=20, show_default=True)
@click.option("--patch", "-p", is_flag=True, help="Show what each commit changed in PROGRAM.md (a unified diff).")
@example("statefile log perf -n 5", "statefile log perf -p -n 1")
@pass_app
def log_cmd(app: AppContext, program: str, limit: int, patch: bool) -> None:
    """Show the branch history of PROGRAM.md: when (UTC), who, which iteration, what changed; -p adds the diff.

    Under a commit that paused, un-paused or completed the program or moved its best metric, a line says so (with
    the reason); --json has them as each commit's "events".
    """

    rows = program_log(app.reader(), program, limit, patch=patch)
    if app.as_json:
        emit_json(rows)
        return
    if not rows:
        say(app, f"no commits for {program} (a --dir folder has no history)")
        return
    if patch:
        for row in rows:
            echo(f"commit {row['commit']}\nAuthor: {row['author']}\nDate:   {_utc(row['when_utc'])}\n")
            for line in [row["message"], *(["", *row["body"].splitlines()] if row["body"] else [])]:
                echo(f"    {line}".rstrip())
            for event in row["events"]:
                echo(f"    ↳ {shown(event['text'])}")
            echo("")
            if row["patch"]:
                echo(row["patch"])
        return
    lines = table(
        ([row["commit"][:10], _utc(row["when_utc"]), f"#{row['iteration']}" if row["iteration"] else None,
          row["author"].split(" <", 1)[0] or row["author"], row["message"]] for row in rows),
        ["COMMIT", "WHEN (UTC)", "ITER", "AUTHOR", "CHANGE"],
        right=(2,)
    )  # fmt: skip
    echo(lines[0])
    for line, row in zip(lines[1:], rows, strict=True):
        echo(line)
        for event in row["events"]:
            echo(f"{'':12}↳ {shown(event['text'])}")


def _utc(stamp: str) -> str:
    """``2026-01-05T14:16:03Z`` → ``2026-01-05 14:16:03 UTC``."""
    return stamp.replace("T", " ").removesuffix("Z") + " UTC"


@click.command("expand")
@click.argument("program")
@click.argument("iteration", type=whole_number(1))
@reader_options
@example("statefile expand perf 57", "statefile expand perf 57 --max-chars 4000 --hints tools")
@pass_app
def expand_cmd(
    app: AppContext, program: str, iteration: int, hint_style: str, max_chars: int | None, offset: int
) -> None:
    """Print iteration ITERATION of PROGRAM verbatim, from the file or from its archive."""

    where, text = expand_iteration(app.reader(), program, iteration)
    if app.as_json:
        emit_json({"program": program, "iteration": iteration, "source": where, "text": text})
        return
    command = f"expand {program} {iteration} --max-chars {max_chars}"
    more = functools.partial(hints_of(app, hint_style).more, TOOL_EXPAND, command, iteration=iteration)
    echo_page(text, max_chars=max_chars, offset=offset, more=more)


@click.command("check")
@click.argument("targets", nargs=-1)
@click.option("--max-bytes", type=SIZE, help="Byte budget for this run, such as 30720 or 30KB (overrides config).")
@example("statefile check", "statefile check perf", "statefile check memory/*.md --max-bytes 30KB")
@pass_app
def check_cmd(app: AppContext, targets: tuple[str, ...], max_bytes: int | None) -> None:
    """Fail (exit 1) if any state file is over budget, unreadable, or unreadable by the scheduler.

    With no TARGETS, every program on the branch is checked.  TARGETS may be program names or file paths (as a
    pre-commit hook passes them).  Warnings are listed but do not fail the check.
    """

    app = app.with_max_bytes(max_bytes)
    outcomes = check_targets(app, targets)
    if app.as_json:
        emit_json([o.as_dict() for o in outcomes])
    else:
        for o in outcomes:
            _print_check(app, o)
        if not outcomes:
            say(app, "no state files to check")
    if any(not o.ok for o in outcomes):
        sys.exit(EXIT_CHECK_FAILED)


def _print_check(app: AppContext, o: CheckOutcome) -> None:
    """One outcome; names and messages echo what was typed (a pasted 100 KB path), so each is cut (``shown``)."""
    if not app.quiet:
        state = paint("ok", fg="green") if o.ok else paint("FAIL", fg="red", bold=True)
        size = f", {budget_text(o.size, o.max_bytes)}" if o.sized else ""
        click.echo(f"{shown(o.name)}: {state}{size}")  # not echo(): the rest is escaped already, the colour stays
    for error in o.errors:
        echo(f"  error: {shown(error)}")
    if app.quiet:
        return
    for label, texts in (("warning", o.warnings), ("note", o.notes), ("acknowledged", o.acknowledged)):
        for text in texts:
            echo(f"  {label}: {shown(text)}")
    fixable = sum(1 for text in [*o.errors, *o.warnings] if text.split(":", 1)[0] in REPAIRABLE)
    if fixable and not is_path_argument(o.name):
        echo(f"  `statefile repair {o.name}` can fix {plural(fixable, 'of these', 'of these')}"
             " and archives what it takes out")  # fmt: skip


@click.command("report")
@click.option("--program", help="Report this program (default: autoloop.json's 'selected').")
@click.option("--all", "all_programs", is_flag=True, help="Include every program in the per-program map.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="The scheduler's autoloop.json to "
              "merge into (it must exist; written atomically); without it, print the merged JSON.")  # fmt: skip
@example(
    "statefile --dir /tmp/gh-aw/repo-memory/autoloop report --out /tmp/gh-aw/autoloop.json",
    'statefile --remote "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git" report --out /tmp/gh-aw/autoloop.json',
)
@pass_app
def report_cmd(app: AppContext, program: str | None, all_programs: bool, out: Path | None) -> None:
    """Merge state_file_size_bytes / state_file_max_bytes (and a per-program map) into autoloop.json."""

    merged = build_report(app, out, program=program, all_programs=all_programs)
    if out is None or app.as_json:
        emit_json(merged)
        return
    count = plural(len(merged.get("statefile", {}).get("programs", {})), "program")
    say(app, f"{out}: state_file_size_bytes={merged.get('state_file_size_bytes')} "
             f"state_file_max_bytes={merged.get('state_file_max_bytes')} ({count})")  # fmt: skip


@click.command("config")
@example("statefile config --json")
@pass_app
def config_cmd(app: AppContext) -> None:
    """Print every setting, its value and where it came from (flag, env, TOML, workflow, default)."""

    rows = app.config().describe()
    if app.as_json:
        emit_json([{"key": k, "value": v, "source": s} for k, v, s in rows])
        return
    docs = {key: doc for key, _, _, _, doc in option_docs()}
    show_docs = not app.quiet and app.env.get("STATEFILE_CONFIG_DOCS")
    lines = table(rows, ["KEY", "VALUE", "SOURCE"], right=())
    echo(lines[0])
    for (key, _, _), line in zip(rows, lines[1:], strict=True):
        echo(line)
        if show_docs:
            echo(f"    {docs.get(key, '')}")
