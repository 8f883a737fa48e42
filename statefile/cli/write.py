"""Commands that change the memory: init, record, compact, repair, edit, lesson …, sync; export, import; gh-aw's
prepare (before the agent) and apply (the safe-output job); demo (the main job on throwaway repositories)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import click

from statefile.app import ghaw, writing
from statefile.app.context import AppContext
from statefile.app.reading import is_path_argument, resolve_targets
from statefile.cli.run import GITHUB_NUMBER, WholeNumber, echo_error, escaped, invoke, paint, shown
from statefile.cli.support import command, echo, emit_json, fit, say, without_checkout
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import EnvironmentFailure, InvalidDataError, StatefileError, UsageError
from statefile.integrations.ghaw import tool_type, write_text_atomic
from statefile.model.patterns import STATUS_GLYPHS
from statefile.model.text import clip, encode, utf8_size
from statefile.numbers import budget_text, number_text, plural, size_text
from statefile.policy.repair import LEFT_BECAUSE
from statefile.policy.rules import RecordRequest, format_number, parse_metric
from statefile.store import Store
from statefile.store.atomic import IMPORT_LIMIT, read_regular_file, read_text_file
from statefile.store.base import decode_text
from statefile.store.exchange import import_json, loads
from statefile.store.folder import FolderStore
from statefile.views.render import CORE_BUDGET, MIN_BUDGET

R = TypeVar("R")
Failures = list[tuple[str, StatefileError]]
ALL = "Every program on the branch (or in the folder)."
DRY_RUN = "Say what would change; write nothing."
SUMMARIZER = "Command that summarizes folded entries (JSON on stdin, one line out)."


def _commit(commit: str | None) -> str:
    return f" ({commit[:10]})" if commit else ""


@command("init", "statefile init latency --metric-direction lower --target-metric 20 --issue 12")
@click.argument("program")
@click.option("--metric-direction", type=click.Choice(["higher", "lower"]), default="higher", show_default=True)
@click.option("--target-metric", help="Stop (Completed) when an accepted metric reaches this (a number).")
@click.option("--issue", type=GITHUB_NUMBER, help="Steering issue number.")
@click.option("--pr", type=GITHUB_NUMBER, help="Pull request number.")
@click.option("--goal", help="One line: what the program optimizes.")
@click.option("--metric", "metric_name", help="The metric's name, e.g. recall_at_10.")
def init_cmd(app: AppContext, program: str, metric_direction: str, target_metric: str | None, issue: int | None,
             pr: int | None, goal: str | None, metric_name: str | None) -> Any:  # fmt: skip
    """Create PROGRAM.md on the memory branch from the upstream template."""
    target = None if target_metric is None else format_number(parse_metric(target_metric, "--target-metric"))
    fields = {"metric_direction": metric_direction, "goal": goal, "metric": metric_name, "target_metric": target,
              "issue": issue and f"#{issue}", "pr": pr and f"#{pr}"}  # fmt: skip
    commit = writing.init_program(app, program, {k: v for k, v in fields.items() if v is not None})
    if app.as_json:
        return {"program": program, "commit": commit}
    say(app, f"created {program}.md{_commit(commit)}")


@command(
    "record", 'statefile record perf --status accepted --metric 0.93 --change "Cache parsed rows" --commit a1b2c3d'
)
@click.argument("program")
@click.option("--status", required=True, help="accepted | rejected | error | ci-fix-exhausted (else --new-status).")
@click.option("--new-status", is_flag=True, help="Record a status word the upstream prompt does not use (pending-ci).")
@click.option("--create", is_flag=True, help="Start PROGRAM (and the memory branch) if missing.")
@click.option("--metric", help="The iteration's metric value (a number).")
@click.option("--change", help="One line: what was tried.")
@click.option("--notes", help="One or two sentences.")
@click.option("--commit", help="Short sha of the accepted change.")
@click.option("--run-url", help="URL of the workflow run.")
@click.option("--pr", type=GITHUB_NUMBER, help="Pull request number (sets PR in Machine State).")
@click.option("--ci-fix-attempts", type=WholeNumber(0), default=0, help="CI fix attempts this iteration.")
@click.option("--lesson", help="A lesson learned, added to Lessons Learned.")
@click.option("--at", help="When the iteration ran (ISO 8601, default now).")
@click.option("--iteration", type=WholeNumber(1), help="Iteration number (default: next); taken → exit 5.")
@click.option("--pause-reason", help="Pause the program now with this reason (not with accepted).")
@click.option("--issue", type=GITHUB_NUMBER, help="The program issue's number (sets Issue).")
@click.option("--autoloop-json", type=click.Path(path_type=Path, dir_okay=False), envvar="STATEFILE_AUTOLOOP_JSON",
              help="The scheduler's autoloop.json: a PROGRAM it selected is started as it says.")  # fmt: skip
@click.option("--summarizer", help=SUMMARIZER)
@click.option("--dry-run", is_flag=True, help=DRY_RUN)
def record_cmd(app: AppContext, program: str, create: bool, autoloop_json: Path | None, summarizer: str | None,
               dry_run: bool, metric: str | None, at: str | None, **fields: Any) -> Any:  # fmt: skip
    """Record one iteration of PROGRAM by the upstream rules, compact by policy, commit atomically; say what changed."""
    try:
        when = None if at is None else datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--at {at!r} is not an ISO time; use e.g. 2026-01-15T12:00:00Z") from None
    request = RecordRequest(**fields, metric=None if metric is None else parse_metric(metric, "--metric"),
                            at=when if when is None or when.tzinfo else when.replace(tzinfo=timezone.utc))  # fmt: skip
    outcome = writing.record_program(app.with_summarizer(summarizer), program, request, create=create,
                                     autoloop_json=autoloop_json, dry_run=dry_run)  # fmt: skip
    if app.as_json:
        return outcome.as_dict()
    done, glyph = "dry run: would record" if dry_run else "recorded", STATUS_GLYPHS.get(outcome.status, "•")
    say(app, f"{done} iteration {outcome.iteration} of {program} ({glyph} {outcome.status}), "
             f"{budget_text(outcome.size, outcome.max_bytes)}")  # fmt: skip
    if outcome.created:
        why = "--create" if create else f"selected in {autoloop_json}"
        say(app, f"  {'would create' if dry_run else 'created'} {program}.md ({why})")
    say(app, *(f"  {line}" for line in writing.change_lines(outcome.changes)))
    for note in outcome.notes:
        echo(f"statefile: note: {note}", err=True)  # even with --quiet: what was not used is never silent
    if moved := outcome.compaction.get("moved"):
        folded = sum(1 for m in moved if m["kind"] == "iteration")
        what = plural(folded, "iteration") + " folded into range lines" if folded else plural(len(moved), "item")
        say(app, f"  compaction: {what}; the full text {'would go to' if dry_run else 'is in'} {outcome.archive}")


@command("compact", "statefile compact --all --dry-run", "statefile compact memory/perf.md --max-bytes 8KB")
@click.argument("targets", nargs=-1)
@click.option("--all", "all_programs", is_flag=True, help=ALL)
@click.option("--aggressive", is_flag=True, help="Use the aggressive policy now, whatever the file's size.")
@click.option("--dry-run", is_flag=True, help=DRY_RUN)
@click.option("--details", is_flag=True, help="With --dry-run: one line per entry, lesson and avenue that would move.")
@click.option("--summarizer", help=SUMMARIZER)
def compact_cmd(app: AppContext, targets: tuple[str, ...], all_programs: bool, aggressive: bool, dry_run: bool,
                details: bool, summarizer: str | None) -> Any:  # fmt: skip
    """Fold old history into range lines, prune lessons, archive what moved; stay under the budget.

    TARGETS are program names, or state files' paths."""
    app, now = app.with_summarizer(summarizer), datetime.now(timezone.utc)
    results, failures = _each(app, targets, all_programs, dry_run, "compact", lambda ctx, name: writing.compact_target(
        ctx, name, aggressive=aggressive, dry_run=dry_run, now=now))  # fmt: skip
    if app.as_json:
        return [{"program": r.program, "target": label, "commit": r.commit, "dry_run": r.dry_run,
                 "heading_restored": r.heading_restored, **r.report.as_dict()} for label, r in results]  # fmt: skip
    for label, r in results:
        restored = "would restore" if r.dry_run else "restored"
        if not r.report.changed:
            size = budget_text(r.report.bytes_after, r.report.max_bytes)
            say(app, f"{label}: nothing to compact at {size}; {restored} the ⚙️ Machine State heading"
                if r.heading_restored else f"{label}: nothing changed — nothing to compact at {size}")  # fmt: skip
            continue
        say(app, f"{label}: {'dry run: ' if r.dry_run else ''}{r.report.summary()}")
        if r.heading_restored:
            say(app, f"  {restored} the ⚙️ Machine State heading")
        if r.dry_run:
            say(app, *(f"  {line}" for line in r.report.details(r.folded)))
            say(app, *(f"    {item.kind}: {item.label} — {item.reason}" for item in r.report.moved if details))
    if dry_run and not details and not app.quiet and any(r.report.changed for _, r in results):
        echo("(--details lists every entry, lesson and avenue that would move)")
    _report_failures(failures)


def _each(app: AppContext, names: tuple[str, ...], all_programs: bool, dry_run: bool, verb: str,
          run: Callable[[AppContext, str], R]) -> tuple[list[tuple[str, R]], Failures]:  # fmt: skip
    """With --all a broken file is reported at the end, never skipped."""
    paths_only = not all_programs and all(is_path_argument(name) for name in names)
    store = FolderStore(Path.cwd()) if paths_only else app.reader() if dry_run else app.writer()
    targets = resolve_targets(store, names, all_programs=all_programs, verb=verb, globs=app.globs)
    if targets.failures and not all_programs:
        raise targets.failures[0][1]
    results: list[tuple[str, R]] = []
    failures: Failures = list(targets.failures)
    labels = [target.label for target in targets.found]
    many = not (app.quiet or app.as_json or len(labels) < 20 or not sys.stderr.isatty())  # a bar for people waiting
    with click.progressbar(labels, label=f"{verb}ing", file=sys.stderr) if many else nullcontext(labels) as bar:
        for target, label in zip(targets.found, bar, strict=True):
            try:
                results.append((label, run(app if target.path is None else app.with_folder(target.path.parent),
                                           target.program)))  # fmt: skip
            except StatefileError as exc:
                if not all_programs or isinstance(exc, EnvironmentFailure):
                    raise  # a full disk or a read-only folder fails every program alike: say it once
                failures.append((label, exc))
    return results, failures


@command("repair", "statefile repair perf --dry-run", "statefile --remote origin repair --all")
@click.argument("targets", nargs=-1)
@click.option("--all", "all_programs", is_flag=True, help=ALL)
@click.option("--dry-run", is_flag=True, help=DRY_RUN)
def repair_cmd(app: AppContext, targets: tuple[str, ...], all_programs: bool, dry_run: bool) -> None:
    """Fix what `check` warns about that has one right answer; archive everything taken out."""
    for name in (name for name in targets if not is_path_argument(name)):  # _shared.md: a usage error, missing or not
        writing.writable_program(name)
    done, failures = _each(app, targets, all_programs, dry_run, "repair", lambda ctx, name: writing.repair_program(
        ctx.reader() if dry_run else ctx.writer(), name, dry_run=dry_run))  # fmt: skip
    outcomes = [o for _, o in done]
    if app.as_json:
        emit_json([{"program": o.program, "dry_run": o.dry_run, "commit": o.commit,
                    "fixes": [{"code": f.code, "message": f.message} for f in o.result.fixes],
                    "archived_bytes": utf8_size(o.result.archive),
                    "remaining": [{"code": w.code, "message": w.message, "why": LEFT_BECAUSE.get(w.code, "")}
                                  for w in o.result.remaining]} for o in outcomes])  # fmt: skip
    for o in () if app.as_json else outcomes:
        fixes = o.result.fixes
        archived = utf8_size(o.result.archive)
        where = f", {plural(archived, 'byte')} archived to {o.archive}" if archived else ""
        say(app, f"{o.program}: nothing to repair" if not fixes else
            f"{o.program}: dry run: would fix {plural(len(fixes), 'problem')}" if o.dry_run else
            f"{o.program}: fixed {plural(len(fixes), 'problem')}{where}{_commit(o.commit)}")  # fmt: skip
        say(app, *(f"  {'would fix' if o.dry_run else 'fixed'} {fix}" for fix in fixes))
        why = {w.code: f" — {LEFT_BECAUSE[w.code]}" for w in o.result.remaining if LEFT_BECAUSE.get(w.code)}
        say(app, *(f"  left {warning}{why.get(warning.code, '')}" for warning in o.result.remaining))
    _report_failures(failures)


def _report_failures(failures: Failures) -> None:
    for name, error in failures:
        echo_error(f"{name}: {error}")
    if failures:
        sys.exit(max(error.exit_code for _, error in failures))


@command("edit", "EDITOR=vim statefile edit perf")
@click.argument("program")
def edit_cmd(app: AppContext, program: str) -> None:
    """Edit PROGRAM.md in $EDITOR; the result is validated and committed (or refused, keeping your text)."""
    outcome = writing.edit_program(app, program, lambda text, limit: _run_editor(program, text, limit),
                                   lambda text: _keep_text(program, text),
                                   lambda note: echo(f"statefile: {note}", err=True))  # fmt: skip
    if outcome is None:
        say(app, "nothing changed: the editor left the text as it was")
        return
    restored = ["  restored the ⚙️ Machine State heading the scheduler looks for (the edit had changed it)"]
    say(app, f"saved {program}.md{_commit(outcome.commit)}", *(restored if outcome.heading_restored else []))


def _run_editor(program: str, original: str, limit: int) -> str | None:
    """The file is read back only as a regular file within ``limit``: the editor may have replaced it."""
    # $VISUAL, else $EDITOR; None lets click pick one, only on a terminal (elsewhere vim waits forever).
    key = next((key for key in ("VISUAL", "EDITOR") if os.environ.get(key, "").strip()), None)
    if key is None and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("no editor to run: $VISUAL and $EDITOR are unset and this is not a terminal; set EDITOR "
                         "to a command that edits the file it is given")  # fmt: skip
    editor = os.environ[key] if key else None
    try:
        shlex.split(editor or "")
    except ValueError as exc:
        raise UsageError(f"${key} is not a command statefile can run ({exc}: {clip(editor or '', 80)!r}); fix its "
                         "quoting") from None  # fmt: skip
    path = _keep_text(program, original)
    try:
        click.edit(filename=str(path), editor=editor)
    except click.ClickException as exc:
        raise UsageError(f"the editor failed ({exc.format_message()}); your text is in {path}") from None
    try:
        text = read_regular_file(path, limit=limit, what="the edited file").decode("utf-8")
    except OSError as exc:  # some editors save by replacing the file; a failed one may leave nothing behind
        raise UsageError(f"the edited file {path} could not be read back ({exc.strerror or exc}); nothing was "
                         "saved, run 'statefile edit' again") from None  # fmt: skip
    except StatefileError as exc:
        raise UsageError(f"{str(exc).split(';')[0]}; nothing was saved, run 'statefile edit' again") from None
    except UnicodeDecodeError as exc:
        raise InvalidDataError(f"the edited text is not valid UTF-8 (byte {exc.start}); nothing was saved, your "
                               f"text is in {path}") from None  # fmt: skip
    path.unlink()
    return None if text == original else text


def _keep_text(program: str, text: str) -> Path:
    handle, name = tempfile.mkstemp(prefix=f"statefile-{program}-", suffix=".md")
    with open(handle, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
        fh.write(text)
    return Path(name)


@click.group("lesson")
def lesson_cmd() -> None:
    """Manage lessons: add, remove (to the archive, restorable), restore, pin, unpin, promote to _shared.md.

    \b
    Examples:
      statefile lesson add perf "Radix beats comparison sort above 1k rows"
      statefile lesson remove perf 2 --reason "superseded"
    """


def _lesson(name: str, *examples: str, then: str = "selector") -> Callable[[Callable[..., Any]], click.Command]:
    """A ``lesson`` subcommand: PROGRAM, then the argument ``then`` (if any), then those declared below it."""
    return lambda fn: command(name, *examples, group=lesson_cmd)(
        click.argument("program")(click.argument(then)(fn) if then else fn)
    )


def _said(app: AppContext, done: writing.LessonChange, said: str, noop: str) -> None:
    if done.changed:
        say(app, f"{said}{_commit(done.commit)}")
    elif done.landed:
        say(app, f"nothing changed in the lessons: {noop}; restored the ⚙️ Machine State heading"
                 f"{_commit(done.commit)}")  # fmt: skip
    else:
        say(app, f"nothing changed: {noop}")


@_lesson("list", "statefile lesson list perf", "statefile lesson list _shared --json", then="")
def lesson_list(app: AppContext, program: str) -> Any:
    """List PROGRAM's lessons with the numbers and ids the other lesson commands take (📌 pinned, expiry dates)."""
    listed = writing.list_lessons(app, program)
    if app.as_json:
        return [row.as_dict() for row in listed.rows]
    if not listed.rows:
        say(app, f"{program} has no lessons yet ('statefile lesson add {program} \"…\"' adds one)")
    width = shutil.get_terminal_size((120, 24)).columns
    for row in listed.rows:
        expires = f" (expires {row.expires})" if row.expires and "expires" not in row.text else ""
        marks = (" 📌" if row.pinned and "📌" not in row.text else "") + expires
        echo(fit(f"{row.number:>3}. [{row.id}] {' '.join(row.text.split())}{marks}", width))
    if listed.shared and not app.quiet:
        echo(f"{plural(listed.shared, 'shared lesson')} in {SHARED_PROGRAM}.md: statefile lesson list {SHARED_PROGRAM}")


@_lesson(
    "add", 'statefile lesson add perf "Radix beats comparison sort above 1k rows" --expires 2026-12-31', then="text"
)
@click.option("--expires", type=click.DateTime(formats=["%Y-%m-%d"]), help="Archive it after this date.")
@click.option("--pin", is_flag=True, help="Pinned lessons are never pruned.")
def lesson_add(app: AppContext, program: str, text: str, expires: dt.datetime | None, pin: bool) -> None:
    """Add a lesson to PROGRAM (adding one that is already there changes nothing)."""
    done = writing.add_lesson(app, program, text, expires=expires.date() if expires else None, pin=pin)
    _said(app, done, f"added the lesson to {program}", f"{program} already has this lesson")


@_lesson("remove", 'statefile lesson remove perf 3 --reason "superseded by the radix rewrite"')
@click.option("--reason", required=True, help="Why it is removed (kept in the archive with the lesson).")
def lesson_remove(app: AppContext, program: str, selector: str, reason: str) -> None:
    """Move lesson SELECTOR (1-based number, id or unique text) of PROGRAM to the archive, with a reason."""
    done = writing.remove_lesson(app, program, selector, reason=reason)
    say(app, f"moved lesson {done.lesson_id} to {done.archive}{_commit(done.commit)}: {done.summary} "
             f"(undo: statefile lesson restore {program} {done.lesson_id})")  # fmt: skip


@_lesson("restore", "statefile lesson restore perf", "statefile lesson restore perf 1", then="")
@click.argument("selector", required=False)
def lesson_restore(app: AppContext, program: str, selector: str | None) -> Any:
    """Restore a removed lesson of PROGRAM from its archive (no SELECTOR: list the restorable ones)."""
    if selector is not None:
        done = writing.restore_lesson(app, program, selector)
        named = f" {done.lesson_id}" if done.lesson_id else ""
        say(app, f"restored lesson{named}{_commit(done.commit)}" + (f": {done.summary}" if done.lesson_id else ""))
        return
    candidates = writing.restorable_lessons(app, program)
    if app.as_json:
        return [{"number": n, "lesson_id": c.lesson_id, **c.__dict__} for n, c in enumerate(candidates, 1)]
    if not candidates:
        say(app, f"no removed lessons to restore for {program}")
    for number, c in enumerate(candidates, 1):
        echo(f"{number}. [{c.lesson_id}] {c.text.strip()}  — removed {c.removed}: {c.reason}")


@_lesson("pin", 'statefile lesson pin perf "typed arrays"')
def lesson_pin(app: AppContext, program: str, selector: str) -> None:
    """Pin lesson SELECTOR of PROGRAM so compaction never prunes it."""
    done = writing.pin_lesson(app, program, selector)
    _said(app, done, "pinned the lesson (compaction never prunes it)", "the lesson is already pinned")


@_lesson("unpin", "statefile lesson unpin perf 2")
def lesson_unpin(app: AppContext, program: str, selector: str) -> None:
    """Unpin lesson SELECTOR of PROGRAM (compaction may prune it again)."""
    done = writing.pin_lesson(app, program, selector, pinned=False)
    _said(app, done, "unpinned the lesson", "the lesson is not pinned")


@_lesson("promote", 'statefile lesson promote perf "use for...of over typed arrays"')
def lesson_promote(app: AppContext, program: str, selector: str) -> None:
    """Copy lesson SELECTOR of PROGRAM into _shared.md, which `render` shows to every program."""
    done = writing.promote_lesson(app, program, selector)
    say(app, f"promoted lesson {done.lesson_id} to _shared.md{_commit(done.commit)}: {done.summary}" if done.landed
        else "nothing changed: _shared.md already has this lesson")  # fmt: skip


@command("sync", "statefile --remote origin sync --dry-run", "statefile --remote origin sync")
@click.option("--dry-run", is_flag=True, help=DRY_RUN)
def sync_cmd(app: AppContext, dry_run: bool) -> Any:
    """Bring the local memory branch and the remote's together, losing nothing.

    Local-only commits are pushed, or replayed onto the remote's tip; they stay under refs/statefile/kept/…."""
    outcome = writing.sync(app, dry_run=dry_run)
    if app.as_json:
        return {"dry_run": dry_run, **outcome.as_dict()}
    if outcome.action == "nothing":
        say(app, f"nothing changed: the local branch {outcome.branch} has no commits that {outcome.remote} lacks")
        return
    done = f"would {outcome.action.removesuffix('ed')}" if dry_run else outcome.action
    say(app, f"{done} {plural(outcome.commits, 'local-only commit')} to {outcome.remote}")
    say(app, *(f"  {step}" for step in outcome.steps))
    if outcome.kept:
        say(app, f"  the local commits are kept at {outcome.kept}")


@command("export", "statefile export --out memory.json")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Write here instead of stdout.")
def export_cmd(app: AppContext, out: Path | None) -> None:
    """Export every program and archive as one JSON document."""
    text, count = writing.export_memory(app.reader())
    if out is None:
        # C1 controls and bidi marks \u-escaped (the same JSON); a file written with --out keeps dumps' bytes.
        click.echo(escaped(text, in_json=True), nl=False)
        return
    write_text_atomic(out, text)
    say(app, f"exported {plural(count, 'file')} to {out}")


@command("import", "statefile --branch memory/restored import memory.json")
@click.argument("source", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True))
@click.option("--force", is_flag=True, help="Overwrite files that exist with different content.")
def import_cmd(app: AppContext, source: Path, force: bool) -> Any:
    """Import an export (all files, byte for byte) as one commit on the branch (or one write to --dir).

    Over-budget files are restored as they were; files that exist with other content are refused unless --force."""
    # An export holds every file of a branch: read whole, up to the import limit.
    data = sys.stdin.buffer.read(IMPORT_LIMIT + 1) if str(source) == "-" else None
    if data is not None and len(data) > IMPORT_LIMIT:
        raise UsageError(f"the export on stdin is over the {IMPORT_LIMIT:,} bytes statefile reads; nothing was read")
    files = import_json(loads(read_text_file(source, bounded=False) if data is None else decode_text(data, "stdin")))
    budget = app.config().max_bytes.value
    largest = max((len(encode(text)) for text in files.values()), default=0)
    # Restore what the export holds, whatever its size; compaction is a later step.
    store = app.with_max_bytes(largest if largest > budget else None).writer(create=True)
    done = writing.import_files(store, files, budget=budget, force=force)
    if app.as_json:
        return dataclasses.asdict(done)
    same = done.files - len(done.written)
    also = f" ({number_text(same)} already there)" if same else ""
    say(app, f"imported {plural(len(done.written), 'file')}{also}{_commit(done.commit)}"
        if done.written else f"nothing changed: all {plural(done.files, 'file')} of the export are already there, "
        "byte for byte")  # fmt: skip
    for path in done.over_budget:
        size = budget_text(len(encode(files[path])), budget)
        say(app, f"  {path} is over the budget at {size}, as in the export: "
                 f"'statefile compact {path[: -len('.md')]}' brings it under")  # fmt: skip
    for name in done.headings_restored:
        say(app, f"  restored the ⚙️ Machine State heading of {name}.md (a separate commit after the import)")


_PATH = click.Path(path_type=Path, dir_okay=False)
_FOLDER = click.Path(path_type=Path, file_okay=False)


@command("prepare", "statefile --dir /tmp/gh-aw/repo-memory/autoloop prepare")
@click.option("--autoloop-json", type=_PATH, default="/tmp/gh-aw/autoloop.json", show_default=True,
              help="The scheduler's output: which program this run works on.")  # fmt: skip
@click.option("--out", type=_FOLDER, default=ghaw.PREPARE_DIR, show_default=True,
              help="Folder for memory.md, what the agent reads.")  # fmt: skip
@click.option("--context-out", type=_FOLDER, show_default=f"$RUNNER_TEMP/{ghaw.CONTEXT_ARTIFACT}",
              default=lambda: str(Path(os.environ.get("RUNNER_TEMP") or tempfile.gettempdir()) / ghaw.CONTEXT_ARTIFACT),
              help="Folder for context.json, what the safe-output job trusts (not /tmp/gh-aw/agent/).")  # fmt: skip
@click.option("--budget", type=click.IntRange(min=MIN_BUDGET), default=CORE_BUDGET, show_default=True,
              help="Characters at most.")  # fmt: skip
def prepare_cmd(app: AppContext, autoloop_json: Path, out: Path, context_out: Path, budget: int) -> Any:
    """Before the agent: write the selected program's memory view and this run's context."""
    with without_checkout(app) as app:  # the URL the component falls back to works without a checkout
        done = ghaw.prepare(app.store, autoloop_json, out, context_out=context_out, budget=budget, env=app.env,
                            cwd=Path.cwd())  # fmt: skip
    memory, context = done.memory_path, done.context_path
    if app.as_json:
        return {"selected": done.selected, "memory": str(memory), "context": str(context), "chars": done.chars,
                "new_program": done.new_program}  # fmt: skip
    what = "a first-iteration note" if done.new_program else f"a {number_text(done.chars)}-character memory view"
    say(app, f"no program selected; wrote {memory} and {context}" if done.selected is None else
        f"{done.selected}: wrote {what} to {memory}, the run context to {context}")  # fmt: skip


@command(
    "apply",
    'statefile --remote "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git" apply --agent-output "$GH_AW_AGENT_OUTPUT" '
    '--context "$RUNNER_TEMP/statefile-context/context.json"',
)
@click.option("--agent-output", type=_PATH, envvar="GH_AW_AGENT_OUTPUT", required=True,
              help='gh-aw\'s agent output file ({"items": [...]}). [env GH_AW_AGENT_OUTPUT]')  # fmt: skip
@click.option("--type", "item_type", default=ghaw.ITEM_TYPE, show_default=True,
              help="The item type to apply: the custom job's id with '-' as '_'.")  # fmt: skip
@click.option("--context", "context_path", type=_PATH, help=f"The {ghaw.CONTEXT_FILE} 'statefile prepare' wrote: "
              "which program this run may record.  Required in a gh-aw job.")  # fmt: skip
@click.option("--any-program", is_flag=True, help="By hand, without a context: items may name any existing program.")
@click.option("--run-id", envvar="GITHUB_RUN_ID", help="The workflow run's id. [env GITHUB_RUN_ID]")
@click.option("--run-url", help="Link written in each entry (default: the run of $GITHUB_RUN_ID).")
@click.option("--dry-run", is_flag=True, help=f"Write nothing (also when {ghaw.STAGED_VARIABLE}=true).")
def apply_cmd(app: AppContext, agent_output: Path, item_type: str, context_path: Path | None, run_id: str | None,
              run_url: str | None, dry_run: bool, any_program: bool) -> None:  # fmt: skip
    """Record the iteration the agent reported (gh-aw safe outputs) on the memory branch.

    The agent is untrusted: only the context's program, texts cleaned and capped.  Exit code: the highest failed."""
    with without_checkout(app) as scoped:
        done = ghaw.apply(scoped, agent_output, item_type=item_type, context_path=context_path,
                          any_program=any_program, run_id=run_id, run_url=run_url, dry_run=dry_run)  # fmt: skip
    for error in done.dropped:
        _problem(app, "warning", f"gh-aw dropped an item before this job: {error}")
    if not done.items:
        say(app, f"no {tool_type(item_type)} items in {agent_output}; nothing to do")
    elif app.as_json:
        emit_json([o.as_dict() for o in done.items])
    for o in () if app.as_json else done.items:
        who = f"item {o.index}" + (f" ({o.program})" if o.program else "")
        for warning in o.warnings:
            _problem(app, "warning", f"{who}: {warning}")
        if o.action == "skipped":
            say(app, f"{who}: already on the branch ({o.marker}); skipped")
        if o.action == "failed":
            _problem(app, "error", f"{who}: {o.error}")
        if (r := o.record) is None:  # failed or skipped
            continue
        line = f"{who}: {'would record' if r.dry_run else 'recorded'} iteration {r.iteration} ({o.status}), "
        line += budget_text(r.size, r.max_bytes)
        if r.moved:
            line += f"; compaction {'would archive' if r.dry_run else 'archived'} {plural(r.moved, 'item')}, "
            line += size_text(r.archived_bytes)
        line += f" [{r.commit[:10]}]" if r.commit else ""
        say(app, line + (f" after {number_text(r.attempts)} tries" if r.attempts > 1 else ""))
        # Never silent: an un-pause (with the reason it cleared), a pause, a completion, a new best.
        say(app, *(f"{who}: {change}" for change in writing.change_lines(r.changes)))
    if done.exit_code:
        sys.exit(done.exit_code)


def _problem(app: AppContext, level: str, message: str) -> None:
    """One line on stderr and, in GitHub Actions, an annotation on the run."""
    label = paint("error:", fg="red", bold=True, err=True) if level == "error" else "warning:"
    click.echo(f"statefile: {label} {shown(message)}", err=True)
    if app.env.get("GITHUB_ACTIONS") == "true":
        text = shown(message).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        click.echo(f"::{level} title=statefile apply::{text}")


SAMPLE_PROGRAMS = ("fresh", "mid-life", "long-running", "messy")
#: Who the demo's commits are by: set in each repository's own config, so the user's environment is left alone.
_IDENTITY = (["config", "user.name", "statefile demo"], ["config", "user.email", "demo@statefile.invalid"])


def sample_text(name: str) -> str:
    """The text of a bundled sample (``fresh``, ``mid-life``, ``long-running``, ``messy``, ``autoloop.json``)."""
    filename = name if name.endswith(".json") else f"{name}.md"
    return resources.files("statefile.samples").joinpath(filename).read_text(encoding="utf-8")


def run_demo(command: click.Command, echo: Callable[[str], None], *, keep: bool = False) -> None:
    """Run the demo with the root ``command``, printing each command line and its output through ``echo``."""
    root = Path(tempfile.mkdtemp(prefix="statefile-demo-"))
    seed, runner = root / "seed", root / "runner"
    try:
        for args in (["init", "--bare", "--quiet", "--initial-branch=main", "remote.git"],
                     ["init", "--quiet", "--initial-branch=main", "seed"], *(["-C", "seed", *c] for c in _IDENTITY),
                     ["-C", "seed", "commit", "--quiet", "--allow-empty", "-m", "Initial commit"],
                     ["-C", "seed", "remote", "add", "origin", str(root / "remote.git")],
                     ["-C", "seed", "push", "--quiet", "origin", "main"]):  # fmt: skip
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
        # Seeded as agents leave it today: the long-running file is far over the 30 KB budget.
        with Store.open(seed, remote="origin", max_bytes=10_000_000) as store:
            files = {f"{name}.md": sample_text(name) for name in SAMPLE_PROGRAMS}
            store.write_files(files, "Seed memory/autoloop with the statefile samples")
        for args in (["clone", "--quiet", "remote.git", "runner"], *(["-C", "runner", *c] for c in _IDENTITY)):
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
        shutil.rmtree(seed)
        autoloop_json = root / "autoloop.json"
        autoloop_json.write_text(sample_text("autoloop.json"), encoding="utf-8")
        echo(f"demo: a bare remote and a runner clone in {root}; memory branch seeded with the samples")
        for args in (["list"], ["check"], ["compact", "long-running"],
                     ["record", "mid-life", "--status", "accepted", "--change",
                      "Vectorize the tokenizer inner loop", "--metric", "131.5"],
                     ["record", "mid-life", "--status", "rejected", "--change",
                      "Swap the hash map for a sorted vector", "--metric", "130.9"],
                     ["record", "messy", "--status", "error", "--change", "Parallel parse (CI timed out)"],
                     ["check"], ["report", "--out", str(autoloop_json)], ["log", "long-running"],
                     ["expand", "long-running", "7"], ["render", "mid-life", "--level", "index"],
                     ["render", "mid-life", "--budget", "1500"]):  # fmt: skip
            echo(f"\n$ {shlex.join(['statefile', *args])}")  # quoted: each line can be pasted into a shell
            if code := invoke(command, ["--repo", str(runner), "--remote", "origin", *args]):
                echo(f"(exit {code})")
            if args[0] == "report":
                report = json.loads(autoloop_json.read_text(encoding="utf-8"))
                echo(f"autoloop.json now has state_file_size_bytes={report.get('state_file_size_bytes')} "
                     f"for selected={report.get('selected')!r}, every scheduler key kept")  # fmt: skip
        echo("\nThat is the whole job: records, compaction with an archive, a scheduler report, a readable log.")
    finally:
        if keep:
            echo(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


@command("demo", "statefile demo --keep")
@click.option("--keep", is_flag=True, help="Keep the temporary repositories and print where they are.")
def demo_cmd(app: AppContext, keep: bool) -> None:
    """Run the main job end to end on a temporary repo with a bare remote built from the samples."""
    run_demo(click.get_current_context().find_root().command, echo=echo, keep=keep)
