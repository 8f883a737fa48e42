"""Commands that keep files healthy and inform the scheduler: compact, check, report, config, demo."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from statefile.app.context import AppContext
from statefile.cli.support import emit_json, example, file_program, is_file_argument, pass_app, progress, say
from statefile.errors import EXIT_CHECK_FAILED, StatefileError, UsageError


@click.command("compact")
@click.argument("targets", nargs=-1)
@click.option("--all", "all_programs", is_flag=True, help="Every program on the branch (or in the folder).")
@click.option("--aggressive", is_flag=True, help="Use the aggressive policy now, whatever the file's size.")
@click.option("--dry-run", is_flag=True, help="Show what would move; change nothing.")
@click.option("--max-bytes", type=click.IntRange(min=1), help="Byte budget for this run (overrides config).")
@click.option("--summarizer", help="Command that summarizes folded entries (JSON on stdin, one line out).")
@example("statefile compact --all --dry-run    ·    statefile compact memory/perf.md --max-bytes 8192")
@pass_app
def compact_cmd(
    app: AppContext,
    targets: tuple[str, ...],
    all_programs: bool,
    aggressive: bool,
    dry_run: bool,
    max_bytes: int | None,
    summarizer: str | None,
) -> None:
    """Fold old history into range lines, prune lessons, archive what moved; stay under the budget.

    TARGETS are program names, or paths to state files in a folder (the archive goes to archive/PROGRAM/ beside
    the file).
    """
    from statefile.app.operations import compact_program

    app = app.with_max_bytes(max_bytes).with_summarizer(summarizer)
    if all_programs and targets:
        raise UsageError("give program names or --all, not both")
    if not all_programs and not targets:
        raise UsageError("name the programs to compact, or pass --all")
    jobs: list[tuple[AppContext, str]] = []
    for target in targets:
        if is_file_argument(target):
            folder, program = file_program(Path(target))
            if not Path(target).is_file():
                from statefile.errors import NotFoundError

                raise NotFoundError(f"{target}: no such file; check the path")
            jobs.append((app.with_folder(folder), program))
        else:
            jobs.append((app, target))
    if all_programs:
        from statefile.app.operations import state_files

        jobs = [(app, name) for name in sorted(state_files(app.store(), app.globs))]
    results = []
    failures: list[tuple[str, StatefileError]] = []
    names = [name for _, name in jobs]
    by_name = dict(zip(names, (ctx for ctx, _ in jobs), strict=True))
    with progress(app, names, "compacting") as items:
        for name in items:
            ctx = by_name[name]
            try:
                outcome = compact_program(ctx.store(), name, ctx.policy(aggressive=aggressive), dry_run=dry_run)
            except StatefileError as exc:
                if not all_programs:
                    raise
                # With --all, one broken file must not keep the others over budget: report it, go on, fail at the end.
                failures.append((name, exc))
                continue
            results.append(outcome)
    if app.as_json:
        emit_json(
            [{"program": r.program, "commit": r.commit, "dry_run": r.dry_run, **r.report.as_dict()} for r in results]
        )
        return
    for r in results:
        if not r.report.changed:
            say(app, f"{r.program}: nothing to compact ({r.report.bytes_after} bytes)")
            continue
        say(app, f"{r.program}: {'dry run: ' if r.dry_run else ''}{r.report.summary()}")
        if r.dry_run and not app.quiet:
            for item in r.report.moved:
                click.echo(f"  {item.kind}: {item.label} — {item.reason}")
    _report_failures(failures)


def _report_failures(failures: list[tuple[str, StatefileError]]) -> None:
    """After ``compact --all``: one line per program that failed, and the worst exit code."""
    for name, error in failures:
        click.echo(f"statefile: error: {name}: {error}", err=True)
    if failures:
        sys.exit(max(error.exit_code for _, error in failures))


@click.command("check")
@click.argument("targets", nargs=-1)
@click.option("--max-bytes", type=click.IntRange(min=1), help="Byte budget for this run (overrides config).")
@example("statefile check    ·    statefile check perf    ·    statefile check memory/*.md --max-bytes 30720")
@pass_app
def check_cmd(app: AppContext, targets: tuple[str, ...], max_bytes: int | None) -> None:
    """Fail (exit 1) if any state file is over budget, unreadable, or unreadable by the scheduler.

    With no TARGETS, every program on the branch is checked.  TARGETS may be program names or file paths (as a
    pre-commit hook passes them).  Warnings are listed but do not fail the check.
    """
    from statefile.app.operations import CheckOutcome, check_document, check_programs
    from statefile.errors import StatefileError
    from statefile.store.files import read_state_file

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
        outcomes.extend(check_programs(app.store(), programs or None, app.globs))
    if app.as_json:
        emit_json([o.as_dict() for o in outcomes])
    else:
        for o in outcomes:
            state = "ok" if o.ok else "FAIL"
            say(app, f"{o.name}: {state}, {o.size} bytes ({100 * o.size // o.max_bytes}% of {o.max_bytes})")
            for error in o.errors:
                click.echo(f"  error: {error}")
            if not app.quiet:
                for warning in o.warnings:
                    click.echo(f"  warning: {warning}")
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
    help="autoloop.json to merge into (written atomically); without it, print the merged JSON.",
)
@example("statefile --remote origin report --out /tmp/gh-aw/autoloop.json")
@pass_app
def report_cmd(app: AppContext, program: str | None, all_programs: bool, out: Path | None) -> None:
    """Merge state_file_size_bytes / state_file_max_bytes (and a per-program map) into autoloop.json."""
    from statefile.app.operations import build_report
    from statefile.integrations.autoloop import read_json_object, write_json_atomic

    if program and all_programs:
        raise UsageError("give --program or --all, not both")
    existing = read_json_object(out) if out is not None else {}
    merged = build_report(
        app.store(),
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
            f"({len(merged.get('statefile', {}).get('programs', {}))} program(s))",
        )


@click.command("config")
@example("statefile config --json")
@pass_app
def config_cmd(app: AppContext) -> None:
    """Print every setting, its value and where it came from (flag, env, TOML, workflow, default)."""
    from statefile.app.config import option_docs

    rows = app.config().describe()
    if app.as_json:
        emit_json([{"key": k, "value": v, "source": s} for k, v, s in rows])
        return
    width = max(len(k) for k, _, _ in rows)
    docs = {key: doc for key, _, _, _, doc in option_docs()}
    for key, value, source in rows:
        shown = "—" if value is None else ",".join(value) if isinstance(value, tuple) else value
        click.echo(f"{key:<{width}}  {shown!s:<18}  ({source})")
        if not app.quiet and app.env.get("STATEFILE_CONFIG_DOCS"):
            click.echo(f"{'':<{width}}  {docs.get(key, '')}")


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the temporary repositories and print where they are.")
@example("statefile demo --keep")
@pass_app
def demo_cmd(app: AppContext, keep: bool) -> None:
    """Run the main job end to end on a temporary repo with a bare remote built from the samples.

    Records iterations, compacts a long-running file, reports for the scheduler, and shows the log.
    """
    from statefile.cli.demo import run_demo

    run_demo(echo=click.echo, keep=keep)


COMMANDS = [compact_cmd, check_cmd, report_cmd, config_cmd, demo_cmd]
