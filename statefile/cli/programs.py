"""Commands on one program: init, record, show, list, log, expand, edit."""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import click

from statefile.app.context import AppContext
from statefile.cli.support import emit_json, example, is_file_argument, pass_app, say
from statefile.errors import NotFoundError, UsageError


def _writable_program(program: str) -> str:
    from statefile.store.names import SHARED_PROGRAM, validate_program

    if program == SHARED_PROGRAM:
        raise UsageError(f"'{SHARED_PROGRAM}' is reserved for shared lessons; use 'statefile lesson promote'")
    return validate_program(program)


def _metric(value: str | None) -> Decimal | None:
    # Parsed straight from the text as a Decimal: a float would round 99999999999999999999 and friends.
    if value is None:
        return None
    try:
        number = Decimal(value.strip().replace("_", ""))
    except InvalidOperation:
        raise UsageError(f"--metric {value!r} is not a number; pass the metric value, e.g. --metric 0.93") from None
    if not number.is_finite():
        raise UsageError(f"--metric {value!r} is not a finite number")
    return number


def _when(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--at {value!r} is not an ISO time; use e.g. 2026-01-15T12:00:00Z") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


@click.command("init")
@click.argument("program")
@click.option("--metric-direction", type=click.Choice(["higher", "lower"]), default="higher", show_default=True)
@click.option("--target-metric", type=float, help="Stop (Completed) when an accepted metric reaches this.")
@click.option("--issue", type=click.IntRange(min=1), help="Steering issue number.")
@click.option("--pr", type=click.IntRange(min=1), help="Pull request number.")
@click.option("--goal", help="One line: what the program optimizes.")
@click.option("--metric", "metric_name", help="The metric's name, e.g. recall_at_10.")
@example("statefile init perf --metric-direction lower --target-metric 20 --issue 12")
@pass_app
def init_cmd(
    app: AppContext,
    program: str,
    metric_direction: str,
    target_metric: float | None,
    issue: int | None,
    pr: int | None,
    goal: str | None,
    metric_name: str | None,
) -> None:
    """Create PROGRAM.md on the memory branch from the upstream template."""
    from statefile.app.operations import init_program
    from statefile.policy.rules import format_number

    _writable_program(program)
    fields: dict[str, Any] = {"metric_direction": metric_direction, "goal": goal, "metric": metric_name}
    if target_metric is not None:
        from decimal import Decimal

        fields["target_metric"] = format_number(Decimal(str(target_metric)))
    if issue is not None:
        fields["issue"] = f"#{issue}"
    if pr is not None:
        fields["pr"] = f"#{pr}"
    commit = init_program(app.store(), program, fields)
    if app.as_json:
        emit_json({"program": program, "commit": commit})
    else:
        say(app, f"created {program}.md" + (f" ({commit[:10]})" if commit else ""))


@click.command("record")
@click.argument("program")
@click.option(
    "--status",
    required=True,
    help="accepted | rejected | error | ci-fix-exhausted | another one-word status (pending-ci, …).",
)
@click.option("--metric", help="The iteration's metric value (a number).")
@click.option("--change", help="One line: what was tried.")
@click.option("--notes", help="One or two sentences.")
@click.option("--commit", "commit_sha", help="Short sha of the accepted change.")
@click.option("--run-url", help="URL of the workflow run.")
@click.option("--pr", type=click.IntRange(min=1), help="Pull request number (sets PR in Machine State).")
@click.option("--ci-fix-attempts", type=click.IntRange(min=0), default=0, help="CI fix attempts this iteration.")
@click.option("--lesson", help="A lesson learned, added to Lessons Learned.")
@click.option("--at", help="When the iteration ran (ISO 8601, default now).")
@click.option("--iteration", type=click.IntRange(min=1), help="Iteration number (default: next); taken → exit 5.")
@click.option("--summarizer", help="Command that summarizes folded entries (JSON on stdin, one line out).")
@example('statefile record perf --status accepted --metric 0.93 --change "Cache parsed rows" --commit a1b2c3d')
@pass_app
def record_cmd(
    app: AppContext,
    program: str,
    status: str,
    metric: str | None,
    change: str | None,
    notes: str | None,
    commit_sha: str | None,
    run_url: str | None,
    pr: int | None,
    ci_fix_attempts: int,
    lesson: str | None,
    at: str | None,
    iteration: int | None,
    summarizer: str | None,
) -> None:
    """Record one iteration of PROGRAM by the upstream rules, compact by policy, commit atomically."""
    from statefile.app.operations import record_iteration
    from statefile.policy.rules import RecordRequest

    _writable_program(program)
    request = RecordRequest(
        status=status,
        metric=_metric(metric),
        change=change,
        notes=notes,
        commit=commit_sha,
        run_url=run_url,
        pr=pr,
        ci_fix_attempts=ci_fix_attempts,
        lesson=lesson,
        at=_when(at),
        iteration=iteration,
    )
    app = app.with_summarizer(summarizer)
    store = app.store()
    outcome = record_iteration(store, program, request, app.policy(), now=datetime.now(timezone.utc))
    if app.as_json:
        emit_json(outcome.__dict__)
        return
    moved = outcome.compaction.get("moved") or []
    line = f"recorded iteration {outcome.iteration} of {program} ({outcome.status}), {outcome.size} bytes"
    if moved:
        line += f"; compaction moved {len(moved)} item(s) to archive/{program}/"
    say(app, line)


@click.command("show")
@click.argument("target")
@example("statefile show perf --json    ·    statefile show memory/perf.md")
@pass_app
def show_cmd(app: AppContext, target: str) -> None:
    """Show a program's (or a state file's) structure, machine state, history summary and warnings."""
    from statefile.views.describe import describe

    if is_file_argument(target):
        from statefile.store.files import read_state_file

        doc = read_state_file(Path(target), app.config().max_bytes.value)
        name = target
    else:
        loaded = app.store().read(target)
        if loaded is None:
            raise NotFoundError(f"no program '{target}'; 'statefile list' shows the programs")
        doc, name = loaded, target
    info = describe(doc)
    if app.as_json:
        emit_json(info)
        return
    click.echo(f"{name}: {info['size_bytes']} bytes, {len(info['sections'])} sections")
    click.echo("machine state:")
    for key, value in info["machine_state"].items():
        click.echo(f"  {key}: {value}")
    hist = info["history"]
    click.echo(
        f"history: {hist['iterations']} iterations, {hist['ranges']} ranges, {hist['other']} other; "
        f"highest iteration {hist['highest_iteration']}"
    )
    click.echo("sections: " + ", ".join(f"{s['kind']} ({s['bytes']} B)" for s in info["sections"]))
    for warning in info["warnings"]:
        click.echo(f"warning: {warning}")


@click.command("list")
@example("statefile --remote origin list --json")
@pass_app
def list_cmd(app: AppContext) -> None:
    """List programs with size, % of budget, iteration count, last run and status."""
    from statefile.app.operations import list_programs

    rows = list_programs(app.store(), app.globs)
    if app.as_json:
        emit_json(rows)
        return
    if not rows:
        say(app, "no programs on this branch yet ('statefile init PROGRAM' creates one)")
        return
    width = max(len(r["program"]) for r in rows)
    click.echo(f"{'PROGRAM':<{width}}  {'BYTES':>7}  {'BUDGET':>6}  {'ITERS':>5}  {'LAST RUN':<20}  STATUS")
    for r in rows:
        click.echo(
            f"{r['program']:<{width}}  {r['size']:>7}  {r['percent_of_budget']:>5}%  "
            f"{r['iteration_count'] if r['iteration_count'] is not None else '—':>5}  "
            f"{r['last_run'] or '—':<20}  {r['status']}"
        )


@click.command("log")
@click.argument("program")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True)
@example("statefile log perf -n 5")
@pass_app
def log_cmd(app: AppContext, program: str, limit: int) -> None:
    """Show the branch history of PROGRAM.md: when, which iteration, what changed."""
    from statefile.app.operations import program_log

    rows = program_log(app.store(), program, limit)
    if app.as_json:
        emit_json(rows)
        return
    if not rows:
        say(app, f"no commits for {program} (a --dir folder has no history)")
    for row in rows:
        iteration = f"#{row['iteration']}" if row["iteration"] is not None else "-"
        click.echo(f"{row['commit'][:10]}  {row['when'][:19]}  {iteration:>6}  {row['message']}")


@click.command("expand")
@click.argument("program")
@click.argument("iteration", type=click.IntRange(min=1))
@example("statefile expand perf 57")
@pass_app
def expand_cmd(app: AppContext, program: str, iteration: int) -> None:
    """Print iteration ITERATION of PROGRAM verbatim, from the file or from its archive."""
    from statefile.app.operations import expand_iteration

    where, text = expand_iteration(app.store(), program, iteration)
    if app.as_json:
        emit_json({"program": program, "iteration": iteration, "source": where, "text": text})
    else:
        click.echo(text, nl=not text.endswith("\n"))


@click.command("edit")
@click.argument("program")
@example("EDITOR=vim statefile edit perf")
@pass_app
def edit_cmd(app: AppContext, program: str) -> None:
    """Edit PROGRAM.md in $EDITOR; the result is validated and committed (or refused, keeping your text)."""
    from statefile.app.operations import check_document, save_edit
    from statefile.model.document import parse

    _writable_program(program)
    store = app.store()
    original = store.read_text(program)
    if original is None:
        raise NotFoundError(f"no program '{program}'; 'statefile init {program}' creates it")
    edited = _run_editor(program, original)
    if edited is None or edited == original:
        say(app, "no changes")
        return
    outcome = check_document(program, parse(edited), store.max_bytes)
    if not outcome.ok:
        saved = _keep_text(program, edited)
        raise UsageError(f"edit refused: {outcome.errors[0]}; your text is saved in {saved}")
    try:
        commit = save_edit(store, program, original, edited)
    except Exception:
        saved = _keep_text(program, edited)
        click.echo(f"statefile: your edited text is saved in {saved}", err=True)
        raise
    say(app, f"saved {program}.md" + (f" ({commit[:10]})" if commit else ""))


def _run_editor(program: str, original: str) -> str | None:
    """Open ``original`` in $EDITOR through a temporary file; ``None`` when the editor left it unchanged."""
    import tempfile

    from statefile.errors import InvalidDataError

    handle, name = tempfile.mkstemp(prefix=f"statefile-{program}-", suffix=".md")
    path = Path(name)
    with open(handle, "w", encoding="utf-8", newline="") as fh:
        fh.write(original)
    try:
        click.edit(filename=str(path))
    except click.ClickException as exc:
        raise UsageError(f"the editor failed ({exc.format_message()}); your text is in {path}") from None
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDataError(
            f"the edited text is not valid UTF-8 (byte {exc.start}); nothing was saved, your text is in {path}"
        ) from None
    path.unlink()
    return None if text == original else text


def _keep_text(program: str, text: str) -> Path:
    import tempfile

    handle, name = tempfile.mkstemp(prefix=f"statefile-{program}-", suffix=".md")
    with open(handle, "w", encoding="utf-8", errors="surrogateescape") as fh:
        fh.write(text)
    return Path(name)


COMMANDS = [init_cmd, record_cmd, show_cmd, list_cmd, log_cmd, expand_cmd, edit_cmd]
