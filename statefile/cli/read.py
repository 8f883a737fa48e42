"""Commands that read the memory for the scheduler and maintainers: show, list, log, expand, check, report, config.

The scheduler's pre-step runs ``report`` and ``check`` on every scheduled run, so this module imports only the
read side (:mod:`statefile.app.reading`, the views): no compaction, no record rules.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from statefile.app.config import option_docs
from statefile.app.context import AppContext
from statefile.app.reading import (
    CheckOutcome,
    build_report,
    check_document,
    check_programs,
    expand_iteration,
    list_programs,
    list_trends,
    program_log,
    state_began,
)
from statefile.cli.run import shown
from statefile.cli.support import (
    SIZE,
    echo,
    echo_page,
    emit_json,
    example,
    hints_of,
    is_file_argument,
    paint,
    pass_app,
    plain,
    plural,
    reader_options,
    require_program,
    say,
    table,
)
from statefile.cli.types import whole_number
from statefile.errors import EXIT_CHECK_FAILED, NotFoundError, StatefileError, UsageError
from statefile.integrations.autoloop import read_json_object, write_json_atomic
from statefile.model.anomalies import REPAIRABLE
from statefile.model.machine_state import label_for
from statefile.numbers import budget_text, number_text, percent_text
from statefile.store.files import read_state_file
from statefile.views.describe import describe
from statefile.views.hints import TOOL_EXPAND


@click.command("show")
@click.argument("target")
@example("statefile show perf --json", "statefile show memory/perf.md")
@pass_app
def show_cmd(app: AppContext, target: str) -> None:
    """Show a program's (or a state file's) structure, machine state, history summary and warnings."""

    if is_file_argument(target):
        doc = read_state_file(Path(target), app.config().max_bytes.value)
        name = target
    else:
        doc, name = require_program(app, target), target
    info = describe(doc)
    # When and why the program stopped being selected: the commit that paused (or completed) it, from the branch
    # history when it is near (a file argument or a folder has none).
    state = doc.machine_state
    for event, reason in (("paused", "pause_reason"), ("completed", "completed_reason")):
        if state.get(event):
            since = None if is_file_argument(target) else state_began(app.reader(), target, event)
            info[event] = {"reason": state.get(reason), "since": since}
    if app.as_json:
        emit_json(info)
        return
    hist = info["history"]
    echo(f"{name}: {plural(info['size_bytes'], 'byte')}, {plural(len(info['sections']), 'section')}")
    for event in ("paused", "completed"):
        if event in info:
            since = info[event]["since"]
            began = f" — since {_utc(since['when_utc'])}, commit {since['commit'][:10]}" if since else ""
            at = f", iteration {since['iteration']}" if since and since["iteration"] else ""
            echo(shown(f"{event}: {info[event]['reason'] or 'no reason given'}{began}{at}"))
    echo("machine state:")
    for line in table(
        ([label_for(key), value] for key, value in info["machine_state"].items()), ["FIELD", "VALUE"], right=()
    )[1:]:
        echo(f"  {line}")
    echo(
        f"history: {plural(hist['iterations'], 'iteration')}, {plural(hist['ranges'], 'range')}, "
        f"{hist['other']} other; highest iteration {plain(hist['highest_iteration'] or None)}"
    )
    echo("sections: " + ", ".join(f"{s['kind']} ({number_text(s['bytes'])} B)" for s in info["sections"]))
    for warning in info["warnings"]:
        echo(f"warning: {warning}")


#: ``list --sort`` keys: how each orders the rows (largest, most iterated, most recently run first; names A–Z).
_LIST_ORDER: dict[str, tuple[Callable[[dict[str, Any]], Any], bool]] = {
    "name": (lambda r: str(r["program"]), False),
    "size": (lambda r: int(r["size"] or 0), True),
    "iterations": (lambda r: int(r["iteration_count"] or 0), True),
    "last-run": (lambda r: str(r["last_run"] or ""), True),
}


@click.command("list")
@click.option(
    "--sort",
    "sort_by",
    type=click.Choice(sorted(_LIST_ORDER)),
    default="name",
    show_default=True,
    help="Order: size and iterations largest first, last-run most recent first.",
)
@click.option("--over-budget", is_flag=True, help="Only programs larger than their byte budget.")
@example("statefile list --sort size", "statefile list --over-budget", "statefile --remote origin list --json")
@pass_app
def list_cmd(app: AppContext, sort_by: str, over_budget: bool) -> None:
    """List programs with size, % of budget, iteration count, last run and status, and a totals line."""

    store = app.reader()
    rows = list_programs(store, app.globs)
    key, newest_first = _LIST_ORDER[sort_by]
    rows.sort(key=lambda r: str(r["program"]))
    rows.sort(key=key, reverse=newest_first)  # stable: ties stay in name order
    everything = len(rows)
    if over_budget:
        rows = [r for r in rows if int(r["size"] or 0) > store.max_bytes]
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
    # A trend column for people at a terminal only: it parses each file's history, which a pipe does not need.
    trends = list_trends(store, [r["program"] for r in rows]) if sys.stdout.isatty() else {}
    headers = ["PROGRAM", "BYTES", "BUDGET", "ITERS", "LAST RUN", "STATUS"] + (["TREND"] if trends else [])
    lines = table(
        ([r["program"], number_text(r["size"]), percent_text(r["percent_of_budget"]), _count(r["iteration_count"]),
          r["last_run"], r["status"]]
         + ([trends.get(r["program"]) or None] if trends else []) for r in rows),
        headers,
        right=(1, 2, 3),
    )  # fmt: skip
    for line in lines:
        echo(line)
    say(app, _totals(rows, store.max_bytes, everything))


def _count(value: Any) -> Any:
    """A count from a Machine State (an int, or None when unknown) as the table shows it: ``1,234``."""
    return number_text(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _totals(rows: list[dict[str, Any]], max_bytes: int, everything: int) -> str:
    """``3 programs · 45,123 bytes · 482 iterations · 1 over budget · 1 paused``."""
    parts = [plural(len(rows), "program") + (f" of {number_text(everything)}" if len(rows) < everything else "")]
    parts.append(plural(sum(int(r["size"] or 0) for r in rows), "byte"))
    parts.append(plural(sum(int(r["iteration_count"] or 0) for r in rows), "iteration"))
    over = sum(1 for r in rows if int(r["size"] or 0) > max_bytes)
    parts.append(f"{number_text(over)} over budget")
    for status in ("paused", "completed", "unreadable"):
        count = sum(1 for r in rows if r["status"] == status)
        if count:
            parts.append(f"{number_text(count)} {status}")
    return "total: " + " · ".join(parts)


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
            echo(f"commit {row['commit']}")
            echo(f"Author: {row['author']}")
            echo(f"Date:   {_utc(row['when_utc'])}")
            echo("")
            for line in [row["message"], *(["", *row["body"].splitlines()] if row["body"] else [])]:
                echo(f"    {line}".rstrip())
            for event in row["events"]:
                echo(f"    ↳ {shown(event['text'])}")
            echo("")
            if row["patch"]:
                echo(row["patch"], nl=False)
                echo("")
        return
    lines = table(
        ([row["commit"][:10], _utc(row["when_utc"]), f"#{row['iteration']}" if row["iteration"] else None,
          _name(row["author"]), row["message"]] for row in rows),
        ["COMMIT", "WHEN (UTC)", "ITER", "AUTHOR", "CHANGE"],
        right=(2,),
    )  # fmt: skip
    echo(lines[0])
    for line, row in zip(lines[1:], rows, strict=True):
        echo(line)
        # What the commit did to the program's state, under its subject: a pause and its reason, an un-pause, …
        for event in row["events"]:
            echo(f"{'':12}↳ {shown(event['text'])}")


def _utc(stamp: str) -> str:
    """``2026-01-05T14:16:03Z`` → ``2026-01-05 14:16:03 UTC``."""
    return stamp.replace("T", " ").removesuffix("Z") + " UTC"


def _name(author: str) -> str:
    """``statefile <bot@…>`` → ``statefile`` (the address is in --json)."""
    return author.split(" <", 1)[0] or author


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
    hints = hints_of(app, hint_style)
    echo_page(text, max_chars=max_chars, offset=offset,
              more=lambda at: hints.more(TOOL_EXPAND, command, at, iteration=iteration))  # fmt: skip


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
    files = [t for t in targets if is_file_argument(t)]
    programs = [t for t in targets if not is_file_argument(t)]
    outcomes: list[CheckOutcome] = []
    if files:
        max_bytes = int(app.config().max_bytes.value)
        for name in files:
            try:
                outcomes.append(check_document(name, read_state_file(Path(name), max_bytes), max_bytes))
            except StatefileError as exc:
                outcomes.append(CheckOutcome(name, 0, max_bytes, errors=[str(exc)]))
    if programs or not files:
        outcomes.extend(check_programs(app.reader(require_branch=False), programs or None, app.globs))
    if app.repo_memory:
        # What repo-memory's push would drop or refuse (file-glob, max-file-size, max-file-count, max-patch-size).
        memory = app.memory_folder()
        names = programs or sorted(app.store().programs())
        found = memory.problems(names)
        outcomes.append(CheckOutcome(
            f"repo-memory push ({memory.folder})", 0, 1, sized=False,
            errors=[p.message for p in found if p.severity == "error"],
            warnings=[p.message for p in found if p.severity == "warning"],
            notes=[p.message for p in found if p.severity == "info"],
        ))  # fmt: skip
    if app.as_json:
        emit_json([o.as_dict() for o in outcomes])
    else:
        for o in outcomes:
            state = paint("ok", fg="green") if o.ok else paint("FAIL", fg="red", bold=True)
            # Names and messages echo what was typed (a pasted 100 KB path): each line is cut like an error line.
            name = shown(o.name)
            size = f", {budget_text(o.size, o.max_bytes)}" if o.sized else ""
            if not app.quiet:
                # Not echo(): the name is escaped already (shown) and the rest is ours, so ok/FAIL keep their colour.
                click.echo(f"{name}: {state}{size}")
            for error in o.errors:
                echo(f"  error: {shown(error)}")
            if not app.quiet:
                for warning in o.warnings:
                    echo(f"  warning: {shown(warning)}")
                for note in o.notes:
                    echo(f"  note: {shown(note)}")
                for accepted in o.acknowledged:
                    echo(f"  acknowledged: {shown(accepted)}")
                fixable = sum(1 for text in [*o.errors, *o.warnings] if text.split(":", 1)[0] in REPAIRABLE)
                if fixable and not is_file_argument(o.name):
                    echo(f"  `statefile repair {o.name}` can fix {plural(fixable, 'of these', 'of these')}"
                         " and archives what it takes out")  # fmt: skip
        if not outcomes:
            say(app, "no state files to check")
    if any(not o.ok for o in outcomes):
        sys.exit(EXIT_CHECK_FAILED)


@click.command("report")
@click.option("--program", help="Report this program (default: autoloop.json's 'selected').")
@click.option("--all", "all_programs", is_flag=True, help="Include every program in the per-program map.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The scheduler's autoloop.json to merge into (it must exist; written atomically); without it, print the "
    "merged JSON.",
)
@example(
    "statefile --dir /tmp/gh-aw/repo-memory/autoloop report --out /tmp/gh-aw/autoloop.json",
    'statefile --remote "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git" report --out /tmp/gh-aw/autoloop.json',
)
@pass_app
def report_cmd(app: AppContext, program: str | None, all_programs: bool, out: Path | None) -> None:
    """Merge state_file_size_bytes / state_file_max_bytes (and a per-program map) into autoloop.json."""

    if program and all_programs:
        raise UsageError("give --program or --all, not both")
    if out is not None and out.exists() and not out.is_file():
        # /dev/null, a FIFO, a folder: there is no autoloop.json there to merge into (and "no such file" is false).
        raise UsageError(
            f"--out {out}: not a regular file; report merges sizes into the autoloop.json the scheduler wrote — pass "
            "that file's path, or leave out --out to print the merged JSON"
        )
    if out is not None and not out.is_file():
        # A mistyped path must not leave a new file behind that the scheduler never reads.
        raise NotFoundError(
            f"--out {out}: no such file; report merges sizes into the autoloop.json the scheduler wrote — check the "
            "path (the upstream one is /tmp/gh-aw/autoloop.json), or leave out --out to print the merged JSON"
        )
    existing = read_json_object(out) if out is not None else {}
    merged = build_report(
        app.reader(require_branch=False),
        existing,
        program=program,
        all_programs=all_programs,
        aggressive_at=float(app.config().aggressive_at.value),
        globs=app.globs,
    )
    if out is None:
        emit_json(merged)
        return
    write_json_atomic(out, merged)
    if app.as_json:
        emit_json(merged)
    else:
        say(
            app,
            f"{out}: state_file_size_bytes={merged.get('state_file_size_bytes')} "
            f"state_file_max_bytes={merged.get('state_file_max_bytes')} "
            f"({plural(len(merged.get('statefile', {}).get('programs', {})), 'program')})",
        )


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
    lines = table(([key, value, source] for key, value, source in rows), ["KEY", "VALUE", "SOURCE"], right=())
    echo(lines[0])
    for (key, _, _), line in zip(rows, lines[1:], strict=True):
        echo(line)
        if show_docs:
            echo(f"    {docs.get(key, '')}")
