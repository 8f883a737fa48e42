"""Commands that change the memory (init, record, compact, repair, edit, lesson …, sync): each parses its
arguments, calls its use case in :mod:`statefile.app` and prints the result."""

from __future__ import annotations

import datetime as dt
import os
import shlex
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import click

from statefile.app import lessons, writing
from statefile.app.context import AppContext
from statefile.app.sync import sync
from statefile.app.targets import is_path_argument, resolve_targets
from statefile.cli.run import echo_error
from statefile.cli.support import SIZE, display_width, echo, emit_json, example, pass_app, progress, say, unchanged
from statefile.cli.types import GITHUB_NUMBER, whole_number
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import EnvironmentFailure, InvalidDataError, StatefileError, UsageError
from statefile.model.patterns import STATUS_GLYPHS
from statefile.model.spans import of_numbers, spans_text
from statefile.model.text import clip, utf8_size
from statefile.numbers import budget_text, number_text, plural
from statefile.policy.compaction import CompactionReport, MovedItem
from statefile.policy.repair import LEFT_BECAUSE
from statefile.policy.rules import RecordRequest, format_number, parse_metric
from statefile.store.atomic import read_regular_file
from statefile.store.folder import FolderStore

R = TypeVar("R")
Failures = list[tuple[str, StatefileError]]


def _commit(commit: str | None) -> str:
    return f" ({commit[:10]})" if commit else ""


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
@click.option("--target-metric", help="Stop (Completed) when an accepted metric reaches this (a number).")
@click.option("--issue", type=GITHUB_NUMBER, help="Steering issue number.")
@click.option("--pr", type=GITHUB_NUMBER, help="Pull request number.")
@click.option("--goal", help="One line: what the program optimizes.")
@click.option("--metric", "metric_name", help="The metric's name, e.g. recall_at_10.")
@example("statefile init latency --metric-direction lower --target-metric 20 --issue 12")
@pass_app
def init_cmd(app: AppContext, program: str, metric_direction: str, target_metric: str | None, issue: int | None,
             pr: int | None, goal: str | None, metric_name: str | None) -> None:  # fmt: skip
    """Create PROGRAM.md on the memory branch from the upstream template."""
    target = None if target_metric is None else format_number(parse_metric(target_metric, "--target-metric"))
    fields = {"metric_direction": metric_direction, "goal": goal, "metric": metric_name, "target_metric": target,
              "issue": issue and f"#{issue}", "pr": pr and f"#{pr}"}  # fmt: skip
    commit = writing.init_program(app, program, {k: v for k, v in fields.items() if v is not None})
    if app.as_json:
        emit_json({"program": program, "commit": commit})
    else:
        say(app, f"created {program}.md{_commit(commit)}")


@click.command("record")
@click.argument("program")
@click.option("--status", required=True, help="accepted | rejected | error | ci-fix-exhausted (else --new-status).")
@click.option("--new-status", is_flag=True, help="Record a status word the upstream prompt does not use (pending-ci).")
@click.option("--create", is_flag=True, help="Start PROGRAM (and the memory branch) if missing; without it a missing "
              "program is an error (exit 3) unless --autoloop-json selected it.")  # fmt: skip
@click.option("--metric", help="The iteration's metric value (a number).")
@click.option("--change", help="One line: what was tried.")
@click.option("--notes", help="One or two sentences.")
@click.option("--commit", help="Short sha of the accepted change.")
@click.option("--run-url", help="URL of the workflow run.")
@click.option("--pr", type=GITHUB_NUMBER, help="Pull request number (sets PR in Machine State).")
@click.option("--ci-fix-attempts", type=whole_number(0), default=0, help="CI fix attempts this iteration.")
@click.option("--lesson", help="A lesson learned, added to Lessons Learned.")
@click.option("--at", help="When the iteration ran (ISO 8601, default now).")
@click.option("--iteration", type=whole_number(1), help="Iteration number (default: next); taken → exit 5.")
@click.option("--pause-reason", help="Pause the program now with this reason (any status but accepted; the reason "
              "for ci-fix-exhausted and for the third consecutive error).")  # fmt: skip
@click.option("--issue", type=GITHUB_NUMBER, help="The program issue's number (sets Issue).")
@click.option("--autoloop-json", type=click.Path(path_type=Path, dir_okay=False), envvar="STATEFILE_AUTOLOOP_JSON",
              help="The scheduler's autoloop.json: when it selected PROGRAM, its metric direction and target are "
              "used and written. [env STATEFILE_AUTOLOOP_JSON]")  # fmt: skip
@click.option("--summarizer", help="Command that summarizes folded entries (JSON on stdin, one line out).")
@click.option("--dry-run", is_flag=True, help="Say what would be recorded and what would change; write nothing.")
@example('statefile record perf --status accepted --metric 0.93 --change "Cache parsed rows" --commit a1b2c3d')
@pass_app
def record_cmd(app: AppContext, program: str, create: bool, autoloop_json: Path | None, summarizer: str | None,
               dry_run: bool, metric: str | None, at: str | None, **fields: Any) -> None:  # fmt: skip
    """Record one iteration of PROGRAM by the upstream rules, compact by policy, commit atomically; say what changed
    (a new best metric, a pause, an un-pause with the cleared reason, completion, compaction)."""
    request = RecordRequest(**fields, metric=None if metric is None else parse_metric(metric, "--metric"), at=_when(at))
    outcome = writing.record_program(app.with_summarizer(summarizer), program, request, create=create,
                                     autoloop_json=autoloop_json, dry_run=dry_run)  # fmt: skip
    if app.as_json:
        emit_json(outcome.as_dict())
        return
    done, glyph = "dry run: would record" if dry_run else "recorded", STATUS_GLYPHS.get(outcome.status, "•")
    say(app, f"{done} iteration {outcome.iteration} of {program} ({glyph} {outcome.status}), "
             f"{budget_text(outcome.size, outcome.max_bytes)}")  # fmt: skip
    if outcome.created:
        why = "--create" if create else f"selected in {autoloop_json}"
        say(app, f"  {'would create' if dry_run else 'created'} {program}.md ({why})")
    for line in writing.change_lines(outcome.changes):
        say(app, f"  {line}")
    for note in outcome.notes:
        echo(f"statefile: note: {note}", err=True)  # even with --quiet: what was not used is never silent
    moved = outcome.compaction.get("moved") or []
    if moved:
        folded = sum(1 for m in moved if m["kind"] == "iteration")
        what = plural(folded, "iteration") + " folded into range lines" if folded else plural(len(moved), "item")
        say(app, f"  compaction: {what}; the full text {'would go to' if dry_run else 'is in'} {outcome.archive}")


@click.command("compact")
@click.argument("targets", nargs=-1)
@click.option("--all", "all_programs", is_flag=True, help="Every program on the branch (or in the folder).")
@click.option("--aggressive", is_flag=True, help="Use the aggressive policy now, whatever the file's size.")
@click.option("--dry-run", is_flag=True, help="Summarize what would move, per program; change nothing.")
@click.option("--details", is_flag=True, help="With --dry-run: one line per entry, lesson and avenue that would move.")
@click.option("--max-bytes", type=SIZE, help="Byte budget for this run, such as 30720 or 30KB (overrides config).")
@click.option("--summarizer", help="Command that summarizes folded entries (JSON on stdin, one line out).")
@example("statefile compact --all --dry-run", "statefile compact memory/perf.md --max-bytes 8KB")
@pass_app
def compact_cmd(app: AppContext, targets: tuple[str, ...], all_programs: bool, aggressive: bool, dry_run: bool,
                details: bool, max_bytes: int | None, summarizer: str | None) -> None:  # fmt: skip
    """Fold old history into range lines, prune lessons, archive what moved; stay under the budget.

    TARGETS are program names, or paths to state files in a folder (archived to archive/PROGRAM/ beside the file).
    """
    app = app.with_max_bytes(max_bytes).with_summarizer(summarizer)
    now = datetime.now(timezone.utc)
    results, failures = _each(app, targets, all_programs, dry_run, "compact",
                              lambda ctx, name: writing.compact_target(ctx, name, aggressive=aggressive,
                                                                       dry_run=dry_run, now=now))  # fmt: skip
    if app.as_json:
        emit_json([{"program": r.program, "target": label, "commit": r.commit, "dry_run": r.dry_run,
                    "heading_restored": r.heading_restored, **r.report.as_dict()} for label, r in results])  # fmt: skip
        return
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
        if r.dry_run and not app.quiet:
            for line in dry_run_summary(r.report, r.folded):
                echo(f"  {line}")
            for item in r.report.moved if details else ():
                echo(f"    {item.kind}: {item.label} — {item.reason}")
    if dry_run and not details and not app.quiet and any(r.report.changed for _, r in results):
        echo("(--details lists every entry, lesson and avenue that would move)")
    _report_failures(failures)


def _each(app: AppContext, names: tuple[str, ...], all_programs: bool, dry_run: bool, verb: str,
          run: Callable[[AppContext, str], R]) -> tuple[list[tuple[str, R]], Failures]:  # fmt: skip
    """``run`` on each target; with --all a broken file is reported at the end, never skipped."""
    paths_only = not all_programs and all(is_path_argument(name) for name in names)
    store = FolderStore(Path.cwd()) if paths_only else app.reader() if dry_run else app.writer()
    targets = resolve_targets(store, names, all_programs=all_programs, verb=verb, globs=app.globs)
    if targets.failures and not all_programs:
        raise targets.failures[0][1]
    results: list[tuple[str, R]] = []
    failures: Failures = list(targets.failures)
    with progress(app, [target.label for target in targets.found], f"{verb}ing") as labels:
        for target, label in zip(targets.found, labels, strict=True):
            try:
                results.append((label, run(app if target.path is None else app.with_folder(target.path.parent),
                                           target.program)))  # fmt: skip
            except StatefileError as exc:
                if not all_programs or isinstance(exc, EnvironmentFailure):
                    raise  # a full disk or a read-only folder fails every program alike: say it once
                failures.append((label, exc))
    return results, failures


def dry_run_summary(report: CompactionReport, folded: tuple[int, ...]) -> list[str]:
    """What a compaction would do, a line per kind (``fold 230 iterations (#1–230) into 5 range lines: …``)."""
    out: list[str] = []
    by_kind: dict[str, list[MovedItem]] = {}
    for item in report.moved:
        into_range = item.kind == "iteration" and item.reason.startswith("folded into")
        by_kind.setdefault("folded" if into_range else item.kind, []).append(item)
    if "folded" in by_kind:
        items = by_kind.pop("folded")
        heads = [line.split(" — ", 1)[0].lstrip("# ") for line in report.ranges_written]
        shown = ", ".join(heads[:5]) + (f", … ({number_text(len(heads) - 5)} more)" if len(heads) > 5 else "")
        runs = of_numbers(folded)
        more = f" ({plural(len(runs) - 4, 'more run')})" if len(runs) > 4 else ""
        out.append(f"fold {plural(len(items), 'iteration')} ({spans_text(runs, mark='#', limit=4)}{more}) into "
                   f"{plural(len(heads), 'range line')}: {shown}")  # fmt: skip
    for kind, items in sorted(by_kind.items(), key=lambda pair: pair[0] != "iteration"):
        reasons = Counter(" ".join(item.reason.split()) for item in items)
        why = "; ".join(f"{number_text(count)}: {clip(reason, 60)}" for reason, count in reasons.most_common(3))
        more = f"; {plural(len(reasons) - 3, 'other reason')}" if len(reasons) > 3 else ""
        noun = {"range": "range line", "foreclosed": "foreclosed avenue"}.get(kind, kind)
        out.append(f"archive {plural(len(items), noun)} ({why}{more})")
    return out


@click.command("repair")
@click.argument("targets", nargs=-1)
@click.option("--all", "all_programs", is_flag=True, help="Every program on the branch (or in the folder).")
@click.option("--dry-run", is_flag=True, help="Say what would be repaired; change nothing.")
@example("statefile repair perf --dry-run", "statefile --remote origin repair --all")
@pass_app
def repair_cmd(app: AppContext, targets: tuple[str, ...], all_programs: bool, dry_run: bool) -> None:
    """Fix what `check` warns about that has one right answer; archive everything taken out.

    Restores drifted headings, merges duplicated sections and overlapping range lines, archives repeated and
    (partial) entries.  What needs a person (gaps, a wrong Iteration Count, an open code fence) is only listed.
    """
    for name in targets:  # _shared.md is refused whether or not it exists: a usage error, not a missing file
        if not is_path_argument(name):
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
        if not app.quiet:
            for fix in fixes:
                echo(f"  {'would fix' if o.dry_run else 'fixed'} {fix}")
            for warning in o.result.remaining:
                why = LEFT_BECAUSE.get(warning.code)
                echo(f"  left {warning}" + (f" — {why}" if why else ""))
    _report_failures(failures)


def _report_failures(failures: Failures) -> None:
    for name, error in failures:
        echo_error(f"{name}: {error}")
    if failures:
        sys.exit(max(error.exit_code for _, error in failures))


@click.command("edit")
@click.argument("program")
@example("EDITOR=vim statefile edit perf")
@pass_app
def edit_cmd(app: AppContext, program: str) -> None:
    """Edit PROGRAM.md in $EDITOR; the result is validated and committed (or refused, keeping your text)."""
    outcome = writing.edit_program(app, program, lambda text, limit: _run_editor(program, text, limit),
                                   lambda text: _keep_text(program, text),
                                   lambda note: echo(f"statefile: {note}", err=True))  # fmt: skip
    if not outcome.changed:
        unchanged(app, "the editor left the text as it was")
        return
    say(app, f"saved {program}.md{_commit(outcome.commit)}")
    if outcome.heading_restored:
        say(app, "  restored the ⚙️ Machine State heading the scheduler looks for (the edit had changed it)")


def _run_editor(program: str, original: str, limit: int) -> str | None:
    """``original`` edited in $EDITOR through a temporary file, read back only as a regular file within ``limit``."""
    editor = _editor()
    path = _keep_text(program, original)
    try:
        click.edit(filename=str(path), editor=editor)
    except click.ClickException as exc:
        raise UsageError(f"the editor failed ({exc.format_message()}); your text is in {path}") from None
    try:
        data = read_regular_file(path, limit=limit, what="the edited file")
    except OSError as exc:  # some editors save by replacing the file; a failed one may leave nothing behind
        raise UsageError(f"the edited file {path} could not be read back ({exc.strerror or exc}); nothing was "
                         "saved, run 'statefile edit' again") from None  # fmt: skip
    except StatefileError as exc:
        raise UsageError(f"{str(exc).split(';')[0]}; nothing was saved, run 'statefile edit' again") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDataError(f"the edited text is not valid UTF-8 (byte {exc.start}); nothing was saved, your "
                               f"text is in {path}") from None  # fmt: skip
    path.unlink()
    return None if text == original else text


def _editor() -> str | None:
    """$VISUAL, else $EDITOR; ``None`` lets click pick one, only on a terminal (elsewhere vim waits forever)."""
    key = next((key for key in ("VISUAL", "EDITOR") if os.environ.get(key, "").strip()), None)
    if key is None:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise UsageError("no editor to run: $VISUAL and $EDITOR are unset and this is not a terminal; set EDITOR "
                             "to a command that edits the file it is given")  # fmt: skip
        return None
    try:
        shlex.split(value := os.environ[key])
    except ValueError as exc:
        raise UsageError(f"${key} is not a command statefile can run ({exc}: {clip(value, 80)!r}); fix its "
                         "quoting") from None  # fmt: skip
    return value


def _keep_text(program: str, text: str) -> Path:
    handle, name = tempfile.mkstemp(prefix=f"statefile-{program}-", suffix=".md")
    with open(handle, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
        fh.write(text)
    return Path(name)


@click.group("lesson")
@example('statefile lesson add perf "Radix beats comparison sort above 1k rows"',
         'statefile lesson remove perf 2 --reason "superseded"')  # fmt: skip
def lesson_group() -> None:
    """Manage lessons: add, remove (to the archive, restorable), restore, pin, unpin, promote to _shared.md."""


def _lesson(name: str, *examples: str) -> Callable[[Callable[..., None]], click.Command]:
    """A ``lesson`` subcommand: PROGRAM, then the arguments declared below it; the run's AppContext; examples."""
    return lambda fn: lesson_group.command(name)(click.argument("program")(example(*examples)(pass_app(fn))))


@_lesson("list", "statefile lesson list perf", "statefile lesson list _shared --json")
def lesson_list(app: AppContext, program: str) -> None:
    """List PROGRAM's lessons with the numbers and ids `lesson remove/pin/unpin/promote` take (📌 pinned, expiry
    dates); numbers shift as lessons come and go, ids do not."""
    listed = lessons.list_lessons(app, program)
    if app.as_json:
        emit_json([row.as_dict() for row in listed.rows])
        return
    if not listed.rows:
        say(app, f"{program} has no lessons yet ('statefile lesson add {program} \"…\"' adds one)")
    width = shutil.get_terminal_size((120, 24)).columns
    for row in listed.rows:
        expires = f" (expires {row.expires})" if row.expires and "expires" not in row.text else ""
        marks = (" 📌" if row.pinned and "📌" not in row.text else "") + expires
        line = f"{row.number:>3}. [{row.id}] {' '.join(row.text.split())}{marks}"
        echo(line if display_width(line) <= width else line[: width - 1] + "…")
    if listed.shared and not app.quiet:
        echo(f"{plural(listed.shared, 'shared lesson')} in {SHARED_PROGRAM}.md: statefile lesson list {SHARED_PROGRAM}")


def _said(app: AppContext, done: lessons.LessonChange, said: str, noop: str) -> None:
    if done.changed:
        say(app, f"{said}{_commit(done.commit)}")
    elif done.landed:
        say(app, f"nothing changed in the lessons: {noop}; restored the ⚙️ Machine State heading"
                 f"{_commit(done.commit)}")  # fmt: skip
    else:
        unchanged(app, noop)


@_lesson("add", 'statefile lesson add perf "Radix beats comparison sort above 1k rows" --expires 2026-12-31')
@click.argument("text")
@click.option("--expires", type=click.DateTime(formats=["%Y-%m-%d"]), help="Archive it after this date.")
@click.option("--pin", is_flag=True, help="Pinned lessons are never pruned.")
def lesson_add(app: AppContext, program: str, text: str, expires: dt.datetime | None, pin: bool) -> None:
    """Add a lesson to PROGRAM (adding one that is already there changes nothing)."""
    done = lessons.add(app, program, text, expires=expires.date() if expires else None, pin=pin)
    _said(app, done, f"added the lesson to {program}", f"{program} already has this lesson")


@_lesson("remove", 'statefile lesson remove perf 3 --reason "superseded by the radix rewrite"')
@click.argument("selector")
@click.option("--reason", required=True, help="Why it is removed (kept in the archive with the lesson).")
def lesson_remove(app: AppContext, program: str, selector: str, reason: str) -> None:
    """Move lesson SELECTOR (1-based number, id or unique text) of PROGRAM to the archive, with a reason."""
    done = lessons.remove(app, program, selector, reason=reason)
    say(app, f"moved lesson {done.lesson_id} to {done.archive}{_commit(done.commit)}: {done.summary} "
             f"(undo: statefile lesson restore {program} {done.lesson_id})")  # fmt: skip


@_lesson("restore", "statefile lesson restore perf", "statefile lesson restore perf 1")
@click.argument("selector", required=False)
def lesson_restore(app: AppContext, program: str, selector: str | None) -> None:
    """Restore a removed lesson of PROGRAM from its archive (no SELECTOR: list the restorable ones).

    SELECTOR is a number from that list (they shift after each restore), the lesson's id or a piece of its text.
    """
    if selector is not None:
        done = lessons.restore(app, program, selector)
        named = f" {done.lesson_id}" if done.lesson_id else ""
        say(app, f"restored lesson{named}{_commit(done.commit)}" + (f": {done.summary}" if done.lesson_id else ""))
        return
    candidates = lessons.restorable(app, program)
    if app.as_json:
        emit_json([{"number": n, "lesson_id": c.lesson_id, **c.__dict__} for n, c in enumerate(candidates, 1)])
        return
    if not candidates:
        say(app, f"no removed lessons to restore for {program}")
    for number, c in enumerate(candidates, 1):
        echo(f"{number}. [{c.lesson_id}] {c.text.strip()}  — removed {c.removed}: {c.reason}")


@_lesson("pin", 'statefile lesson pin perf "typed arrays"')
@click.argument("selector")
def lesson_pin(app: AppContext, program: str, selector: str) -> None:
    """Pin lesson SELECTOR of PROGRAM so compaction never prunes it."""
    done = lessons.pin(app, program, selector)
    _said(app, done, "pinned the lesson (compaction never prunes it)", "the lesson is already pinned")


@_lesson("unpin", "statefile lesson unpin perf 2")
@click.argument("selector")
def lesson_unpin(app: AppContext, program: str, selector: str) -> None:
    """Unpin lesson SELECTOR of PROGRAM (compaction may prune it again)."""
    _said(app, lessons.pin(app, program, selector, pinned=False), "unpinned the lesson", "the lesson is not pinned")


@_lesson("promote", 'statefile lesson promote perf "use for...of over typed arrays"')
@click.argument("selector")
def lesson_promote(app: AppContext, program: str, selector: str) -> None:
    """Copy lesson SELECTOR of PROGRAM into _shared.md, which `render` shows to every program."""
    done = lessons.promote(app, program, selector)
    if not done.landed:
        unchanged(app, "_shared.md already has this lesson")
    else:
        say(app, f"promoted lesson {done.lesson_id} to _shared.md{_commit(done.commit)}: {done.summary}")


@click.command("sync")
@click.option("--dry-run", is_flag=True, help="Say what would be pushed or replayed; change nothing.")
@example("statefile --remote origin sync --dry-run", "statefile --remote origin sync")
@pass_app
def sync_cmd(app: AppContext, dry_run: bool) -> None:
    """Bring the local memory branch and the remote's together, losing nothing.

    Local-only commits are pushed when the remote has not moved; else each is replayed onto the remote's tip (a
    record gets the next free iteration number; another change the remote also made goes to the program's
    archive).  The local commits stay under refs/statefile/kept/….
    """
    outcome = sync(app, dry_run=dry_run)
    if app.as_json:
        emit_json({"dry_run": dry_run, **outcome.as_dict()})
        return
    if outcome.action == "nothing":
        unchanged(app, f"the local branch {outcome.branch} has no commits that {outcome.remote} lacks")
        return
    done = f"would {outcome.action.removesuffix('ed')}" if dry_run else outcome.action
    say(app, f"{done} {plural(outcome.commits, 'local-only commit')} to {outcome.remote}")
    for step in outcome.steps:
        say(app, f"  {step}")
    if outcome.kept:
        say(app, f"  the local commits are kept at {outcome.kept}")
