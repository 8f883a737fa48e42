"""Commands that change the memory: init, record, compact, edit, lesson …, import.

Each change is one atomic write through the store (:mod:`statefile.app.writing` and the lesson policy).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from statefile.app.context import AppContext
from statefile.app.ghaw import compactor_for, context_from_autoloop, program_goal
from statefile.app.reading import check_document, missing_program, state_files, unreadable_files
from statefile.app.sync import sync_branch
from statefile.app.writing import (
    CompactOutcome,
    RepairOutcome,
    change_lines,
    compact_program,
    compaction_policy,
    init_program,
    record_iteration,
    repair_program,
    restore_heading,
    restoring_heading,
    save_edit,
)
from statefile.cli.run import echo_error
from statefile.cli.support import (
    SIZE,
    display_width,
    echo,
    emit_json,
    example,
    file_program,
    is_file_argument,
    pass_app,
    plural,
    progress,
    require_program,
    say,
    unchanged,
)
from statefile.cli.types import GITHUB_NUMBER, whole_number
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import EnvironmentFailure, InvalidDataError, NotFoundError, StatefileError, UsageError
from statefile.integrations.autoloop import read_json_object
from statefile.model.archive import unwrap_chunk
from statefile.model.document import StateDocument, parse
from statefile.model.patterns import STATUS_GLYPHS
from statefile.model.text import clip, utf8_size
from statefile.numbers import budget_text, number_text
from statefile.policy.compaction import CompactionReport, MovedItem
from statefile.policy.lessons import (
    Tombstone,
    add_lesson,
    find_lesson,
    find_tombstone,
    lesson_id,
    lesson_summary,
    numbered_lessons,
    pin_lesson,
    promote_lesson,
    remove_lesson,
    restorable_lessons,
    restore_lesson,
    restored_chunk,
    unpin_lesson,
)
from statefile.policy.repair import LEFT_BECAUSE
from statefile.policy.rules import RecordRequest, format_number, parse_metric
from statefile.store import Change, GitStore
from statefile.store.atomic import read_regular_file
from statefile.store.files import read_limit
from statefile.store.names import validate_program


def _writable_program(program: str) -> str:

    if program == SHARED_PROGRAM:
        raise UsageError(f"'{SHARED_PROGRAM}' is reserved for shared lessons; use 'statefile lesson promote'")
    return validate_program(program)


def _metric(value: str | None, what: str = "--metric") -> Decimal | None:
    return None if value is None else parse_metric(value, what)


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
def init_cmd(
    app: AppContext,
    program: str,
    metric_direction: str,
    target_metric: str | None,
    issue: int | None,
    pr: int | None,
    goal: str | None,
    metric_name: str | None,
) -> None:
    """Create PROGRAM.md on the memory branch from the upstream template."""

    _writable_program(program)
    fields: dict[str, Any] = {"metric_direction": metric_direction, "goal": goal, "metric": metric_name}
    if target_metric is not None:
        fields["target_metric"] = format_number(parse_metric(target_metric, "--target-metric"))
    if issue is not None:
        fields["issue"] = f"#{issue}"
    if pr is not None:
        fields["pr"] = f"#{pr}"
    commit = init_program(app.writer(create=True), program, fields)
    if app.as_json:
        emit_json({"program": program, "commit": commit})
    else:
        say(app, f"created {program}.md" + (f" ({commit[:10]})" if commit else ""))


@click.command("record")
@click.argument("program")
@click.option(
    "--status",
    required=True,
    help="accepted | rejected | error | ci-fix-exhausted (the upstream words; another word needs --new-status).",
)
@click.option("--new-status", is_flag=True, help="Record a status word the upstream prompt does not use (pending-ci).")
@click.option(
    "--create",
    is_flag=True,
    help="Start PROGRAM (and the memory branch) if it does not exist; without it a missing program is an error "
    "(exit 3, with the closest names), unless it is the program --autoloop-json selected.",
)
@click.option("--metric", help="The iteration's metric value (a number).")
@click.option("--change", help="One line: what was tried.")
@click.option("--notes", help="One or two sentences.")
@click.option("--commit", "commit_sha", help="Short sha of the accepted change.")
@click.option("--run-url", help="URL of the workflow run.")
@click.option("--pr", type=GITHUB_NUMBER, help="Pull request number (sets PR in Machine State).")
@click.option("--ci-fix-attempts", type=whole_number(0), default=0, help="CI fix attempts this iteration.")
@click.option("--lesson", help="A lesson learned, added to Lessons Learned.")
@click.option("--at", help="When the iteration ran (ISO 8601, default now).")
@click.option("--iteration", type=whole_number(1), help="Iteration number (default: next); taken → exit 5.")
@click.option(
    "--pause-reason",
    help="Pause the program now with this reason (any status but accepted; the reason for ci-fix-exhausted and "
    "for the third consecutive error).",
)
@click.option("--issue", type=GITHUB_NUMBER, help="The program issue's number (sets Issue).")
@click.option(
    "--autoloop-json",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The scheduler's autoloop.json: when it selected PROGRAM, its metric direction and target (the program "
    "definition's) are used and written, and a new file starts with them. [env STATEFILE_AUTOLOOP_JSON]",
    envvar="STATEFILE_AUTOLOOP_JSON",
)
@click.option("--summarizer", help="Command that summarizes folded entries (JSON on stdin, one line out).")
@click.option("--dry-run", is_flag=True, help="Say what would be recorded and what would change; write nothing.")
@example('statefile record perf --status accepted --metric 0.93 --change "Cache parsed rows" --commit a1b2c3d')
@pass_app
def record_cmd(
    app: AppContext,
    program: str,
    status: str,
    new_status: bool,
    create: bool,
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
    pause_reason: str | None,
    issue: int | None,
    autoloop_json: Path | None,
    summarizer: str | None,
    dry_run: bool,
) -> None:
    """Record one iteration of PROGRAM by the upstream rules, compact by policy, commit atomically.

    Says what changed: the iteration, a new best metric, a pause (and why), an un-pause (an accepted iteration
    un-pauses, as the upstream prompt says; the cleared reason is reported), completion and compaction.
    """

    _writable_program(program)
    context = None
    if autoloop_json is not None:
        if not autoloop_json.exists():
            raise NotFoundError(f"--autoloop-json {autoloop_json}: no such file; pass the scheduler's autoloop.json")
        autoloop = read_json_object(autoloop_json)  # a FIFO or a device is refused there, unread
        selected_file = autoloop.get("selected_file")
        goal = program_goal(Path(selected_file)) if isinstance(selected_file, str) else None
        context = context_from_autoloop(autoloop, goal=goal, env={})
    own = context is not None and context.selected == program
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
        pause_reason=pause_reason,
        issue=issue if issue is not None else (context.issue if own and context else None),
        metric_direction=context.metric_direction if own and context else None,
        target_metric=context.target_metric if own and context else None,
        goal=context.goal if own and context else None,
        new_status=new_status,
    )
    app = app.with_summarizer(summarizer)
    # The scheduler's first run: the program it selected may start the configured memory branch, never one named
    # by a --branch flag (a typo there must not start a new memory).
    first_run = own and not app.config().branch.source.startswith("flag")
    store = app.writer(create=create or first_run)
    now = datetime.now(timezone.utc)
    compactor = compactor_for(app)
    outcome = record_iteration(
        store,
        program,
        request,
        compaction_policy(app.config(), now=now),
        now=now,
        compactor=compactor(program) if compactor else None,
        create=create or own,
        dry_run=dry_run,
    )
    if app.as_json:
        emit_json(outcome.as_dict())
        return
    glyph = STATUS_GLYPHS.get(outcome.status, "•")
    size = budget_text(outcome.size, outcome.max_bytes)
    done = "dry run: would record" if dry_run else "recorded"
    say(app, f"{done} iteration {outcome.iteration} of {program} ({glyph} {outcome.status}), {size}")
    if outcome.created:
        why = "--create" if create else f"selected in {autoloop_json}"
        say(app, f"  {'would create' if dry_run else 'created'} {program}.md ({why})")
    for line in change_lines(outcome.changes):
        say(app, f"  {line}")
    moved = outcome.compaction.get("moved") or []
    if moved:
        folded = sum(1 for m in moved if m["kind"] == "iteration")
        what = plural(folded, "iteration") + " folded into range lines" if folded else plural(len(moved), "item")
        where = "would go to" if dry_run else "is in"
        say(app, f"  compaction: {what}; the full text {where} {store.archive_hint(program)}")


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
def compact_cmd(
    app: AppContext,
    targets: tuple[str, ...],
    all_programs: bool,
    aggressive: bool,
    dry_run: bool,
    details: bool,
    max_bytes: int | None,
    summarizer: str | None,
) -> None:
    """Fold old history into range lines, prune lessons, archive what moved; stay under the budget.

    TARGETS are program names, or paths to state files in a folder (the archive goes to archive/PROGRAM/ beside
    the file).
    """

    app = app.with_max_bytes(max_bytes).with_summarizer(summarizer)
    if all_programs and targets:
        raise UsageError("give program names or --all, not both")
    if not all_programs and not targets:
        raise UsageError("name the programs to compact, or pass --all")
    # One job per file argument: (where to look, program, how to name it).  Two files with the same name in two
    # folders (a/perf.md b/perf.md) are two jobs, each with its own folder store; the same target twice is one.
    jobs: list[tuple[AppContext, str, str]] = []
    seen: set[str] = set()
    for target in targets:
        if is_file_argument(target):
            folder, program = file_program(Path(target))
            if not Path(target).is_file():
                raise NotFoundError(f"{target}: no such file; check the path")
            key = str(Path(target).resolve())
            job = (app.with_folder(folder), program, target)
        else:
            key, job = f"program:{target}", (app, target, target)
        if key not in seen:
            seen.add(key)
            jobs.append(job)
    results: list[tuple[str, CompactOutcome]] = []
    failures: list[tuple[str, StatefileError]] = []
    if all_programs:
        jobs = [(app, name, name) for name in sorted(state_files(app.reader(), app.globs))]
        # What cannot be read cannot be compacted: an error at the end, never a silent skip.
        failures.extend((name, InvalidDataError(why)) for name, why in unreadable_files(app.store(), app.globs).items())
    now = datetime.now(timezone.utc)
    with progress(app, [label for _, _, label in jobs], "compacting") as labels:
        for (ctx, name, label), _ in zip(jobs, labels, strict=True):
            try:
                compactor = compactor_for(ctx)
                outcome = compact_program(
                    ctx.reader() if dry_run else ctx.writer(),
                    name,
                    compaction_policy(ctx.config(), aggressive=aggressive, now=now),
                    dry_run=dry_run,
                    compactor=compactor(name) if compactor else None,
                )
            except StatefileError as exc:
                if not all_programs or isinstance(exc, EnvironmentFailure):
                    raise  # a full disk or a read-only folder fails every program alike: say it once
                # With --all, one broken file must not keep the others over budget: report it, go on, fail at the end.
                failures.append((label, exc))
                continue
            results.append((label, outcome))
    if app.as_json:
        emit_json(
            [
                {
                    "program": r.program,
                    "target": label,
                    "commit": r.commit,
                    "dry_run": r.dry_run,
                    "heading_restored": r.heading_restored,
                    **r.report.as_dict(),
                }
                for label, r in results
            ]
        )
        return
    for label, r in results:
        restored = "would restore" if r.dry_run else "restored"
        if not r.report.changed:
            size = budget_text(r.report.bytes_after, r.report.max_bytes)
            if r.heading_restored:
                say(app, f"{label}: nothing to compact at {size}; {restored} the ⚙️ Machine State heading")
            else:
                say(app, f"{label}: nothing changed — nothing to compact at {size}")
            continue
        say(app, f"{label}: {'dry run: ' if r.dry_run else ''}{r.report.summary()}")
        if r.heading_restored:
            say(app, f"  {restored} the ⚙️ Machine State heading")
        if r.dry_run and not app.quiet:
            for line in dry_run_summary(r.report):
                echo(f"  {line}")
            if details:
                for item in r.report.moved:
                    echo(f"    {item.kind}: {item.label} — {item.reason}")
    if dry_run and not details and not app.quiet and any(r.report.changed for _, r in results):
        echo("(--details lists every entry, lesson and avenue that would move)")
    _report_failures(failures)


_NOUNS = {"iteration": ("iteration", "iterations"), "range": ("range line", "range lines"),
          "lesson": ("lesson", "lessons"), "foreclosed": ("foreclosed avenue", "foreclosed avenues")}  # fmt: skip


def dry_run_summary(report: CompactionReport) -> list[str]:
    """What a compaction would do, a line per kind: ``fold 230 iterations (#1–230) into 5 range lines: Iters
    221–230, …`` and ``archive 5 lessons (5: over the limit of 20)``."""
    out: list[str] = []
    by_kind: dict[str, list[MovedItem]] = {}
    for item in report.moved:
        by_kind.setdefault(item.kind, []).append(item)
    iterations = by_kind.pop("iteration", [])
    folded = [item for item in iterations if item.reason.startswith("folded into")]
    if len(folded) < len(iterations):  # one pass, not a membership test per item (quadratic on a long history)
        by_kind = {"iteration": [item for item in iterations if not item.reason.startswith("folded into")], **by_kind}
    if folded:
        numbers = sorted({int(n) for item in folded for n in re.findall(r"\d+", item.label.split("(")[0])})
        heads = [line.split(" — ", 1)[0].lstrip("# ") for line in report.ranges_written]
        shown = ", ".join(heads[:5]) + (f", … ({number_text(len(heads) - 5)} more)" if len(heads) > 5 else "")
        out.append(f"fold {plural(len(folded), 'iteration')} ({_spans(numbers)}) into "
                   f"{plural(len(heads), 'range line')}: {shown}")  # fmt: skip
    for kind, items in by_kind.items():
        one, many = _NOUNS.get(kind, (kind, kind + "s"))
        reasons = Counter(re.sub(r"\s+", " ", item.reason).strip() for item in items)
        why = "; ".join(f"{number_text(count)}: {clip(reason, 60)}" for reason, count in reasons.most_common(3))
        more = f"; {plural(len(reasons) - 3, 'other reason')}" if len(reasons) > 3 else ""
        out.append(f"archive {plural(len(items), one, many)} ({why}{more})")
    return out


def _spans(numbers: list[int]) -> str:
    """``[1, 2, 3, 7]`` → ``#1–3, #7`` (at most four runs, then a count)."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ", ".join(f"#{a}–{b}" if a != b else f"#{a}" for a, b in runs[:4])
    return text + (f", … ({plural(len(runs) - 4, 'more run')})" if len(runs) > 4 else "")


@click.command("repair")
@click.argument("targets", nargs=-1)
@click.option("--all", "all_programs", is_flag=True, help="Every program on the branch (or in the folder).")
@click.option("--dry-run", is_flag=True, help="Say what would be repaired; change nothing.")
@example("statefile repair perf --dry-run", "statefile --remote origin repair --all")
@pass_app
def repair_cmd(app: AppContext, targets: tuple[str, ...], all_programs: bool, dry_run: bool) -> None:
    """Fix what `check` warns about that has one right answer; archive everything taken out.

    Restores drifted section headings, adds a missing history heading, merges duplicated sections (the copy goes
    to the archive), archives repeated and (partial) entries, merges overlapping range lines.  What needs a
    person (gaps, a wrong Iteration Count, an unclosed code fence) is listed, not touched.
    """

    if all_programs and targets:
        raise UsageError("give program names or --all, not both")
    if not all_programs and not targets:
        raise UsageError("name the programs to repair, or pass --all")
    jobs: list[tuple[AppContext, str]] = []
    for target in targets:
        if is_file_argument(target):
            folder, program = file_program(Path(target))
            if not Path(target).is_file():
                raise NotFoundError(f"{target}: no such file; check the path")
            jobs.append((app.with_folder(folder), program))
        else:
            jobs.append((app, _writable_program(target)))
    outcomes: list[RepairOutcome] = []
    failures: list[tuple[str, StatefileError]] = []
    if all_programs:
        jobs = [(app, name) for name in sorted(state_files(app.reader(), app.globs))]
        # What cannot be read cannot be repaired: an error at the end, never a silent skip.
        failures.extend((name, InvalidDataError(why)) for name, why in unreadable_files(app.store(), app.globs).items())
    for ctx, name in jobs:
        try:
            outcomes.append(repair_program(ctx.reader() if dry_run else ctx.writer(), name, dry_run=dry_run))
        except StatefileError as exc:
            if not all_programs or isinstance(exc, EnvironmentFailure):
                raise
            failures.append((name, exc))
    if app.as_json:
        emit_json(
            [
                {
                    "program": o.program,
                    "dry_run": o.dry_run,
                    "commit": o.commit,
                    "fixes": [{"code": f.code, "message": f.message} for f in o.result.fixes],
                    "archived_bytes": utf8_size(o.result.archive),
                    "remaining": [
                        {"code": w.code, "message": w.message, "why": LEFT_BECAUSE.get(w.code, "")}
                        for w in o.result.remaining
                    ],
                }
                for o in outcomes
            ]
        )
    else:
        for o in outcomes:
            fixes = o.result.fixes
            if not fixes:
                say(app, f"{o.program}: nothing to repair")
            elif o.dry_run:
                say(app, f"{o.program}: dry run: would fix {plural(len(fixes), 'problem')}")
            else:
                archived = utf8_size(o.result.archive)
                where = f", {plural(archived, 'byte')} archived to {o.archive}" if archived else ""
                commit = f" ({o.commit[:10]})" if o.commit else ""
                say(app, f"{o.program}: fixed {plural(len(fixes), 'problem')}{where}{commit}")
            if not app.quiet:
                for fix in fixes:
                    echo(f"  {'would fix' if o.dry_run else 'fixed'} {fix}")
                for warning in o.result.remaining:
                    why = LEFT_BECAUSE.get(warning.code)
                    echo(f"  left {warning}" + (f" — {why}" if why else ""))
    _report_failures(failures)


def _report_failures(failures: list[tuple[str, StatefileError]]) -> None:
    """After ``compact --all``: one line per program that failed, and the worst exit code."""
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

    _writable_program(program)
    store = app.writer()
    original = store.read_text(program)
    if original is None:
        raise missing_program(store, program, hint=f"'statefile init {program}' creates it")
    edited = _run_editor(program, original, read_limit(app.config().max_bytes.value))
    if edited is None or edited == original:
        unchanged(app, "the editor left the text as it was")
        return
    parsed = parse(edited)
    restored = restore_heading(parsed)
    outcome = check_document(program, restored, store.max_bytes)
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
    if restored is not parsed:
        say(app, "  restored the ⚙️ Machine State heading the scheduler looks for (the edit had changed it)")


def _run_editor(program: str, original: str, limit: int) -> str | None:
    """Open ``original`` in $EDITOR through a temporary file; ``None`` when the editor left it unchanged.

    What the editor left is read back only if it is a regular file of at most ``limit`` bytes: an editor (or
    anything else) that put a FIFO, a link to a device or a huge file in its place gets a clear error.
    """

    editor = _editor()
    handle, name = tempfile.mkstemp(prefix=f"statefile-{program}-", suffix=".md")
    path = Path(name)
    with open(handle, "w", encoding="utf-8", newline="") as fh:
        fh.write(original)
    try:
        click.edit(filename=str(path), editor=editor)
    except click.ClickException as exc:
        raise UsageError(f"the editor failed ({exc.format_message()}); your text is in {path}") from None
    try:
        data = read_regular_file(path, limit=limit, what="the edited file")
    except OSError as exc:
        # Some editors save by replacing the file, and a failed one may leave nothing behind.
        raise UsageError(
            f"the edited file {path} could not be read back ({exc.strerror or exc}); nothing was saved, "
            "run 'statefile edit' again"
        ) from None
    except StatefileError as exc:
        raise UsageError(f"{str(exc).split(';')[0]}; nothing was saved, run 'statefile edit' again") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDataError(
            f"the edited text is not valid UTF-8 (byte {exc.start}); nothing was saved, your text is in {path}"
        ) from None
    path.unlink()
    return None if text == original else text


def _editor() -> str | None:
    """The editor to run: $VISUAL, else $EDITOR, checked before anything is written; ``None`` lets click pick one.

    click's own choice (vim, nano, vi) is only made on a terminal: without one such an editor waits for keys that
    never come, and a scheduled job would hang until it is killed.
    """
    for key in ("VISUAL", "EDITOR"):
        value = os.environ.get(key, "")
        if not value.strip():
            continue  # an empty variable is an unset one, as for every setting
        try:
            shlex.split(value)
        except ValueError as exc:
            raise UsageError(
                f"${key} is not a command statefile can run ({exc}: {clip(value, 80)!r}); fix its quoting"
            ) from None
        return value
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(
            "no editor to run: $VISUAL and $EDITOR are unset and this is not a terminal; set EDITOR to a command "
            "that edits the file it is given"
        )
    return None


def _keep_text(program: str, text: str) -> Path:

    handle, name = tempfile.mkstemp(prefix=f"statefile-{program}-", suffix=".md")
    with open(handle, "w", encoding="utf-8", errors="surrogateescape") as fh:
        fh.write(text)
    return Path(name)


@click.group("lesson")
@example(
    'statefile lesson add perf "Radix beats comparison sort above 1k rows"',
    'statefile lesson remove perf 2 --reason "superseded"',
)
def lesson_group() -> None:
    """Manage lessons: add, remove (to the archive, restorable), restore, pin, unpin, promote to _shared.md."""


@lesson_group.command("list")
@click.argument("program")
@example("statefile lesson list perf", "statefile lesson list _shared --json")
@pass_app
def lesson_list(app: AppContext, program: str) -> None:
    """List PROGRAM's lessons with the numbers and ids `lesson remove/pin/unpin/promote` take (📌 pinned, expiry
    dates); numbers shift as lessons come and go, ids do not."""

    doc = require_program(app, program)
    rows = numbered_lessons(doc)
    if app.as_json:
        emit_json([row.as_dict() for row in rows])
        return
    if not rows:
        say(app, f"{program} has no lessons yet ('statefile lesson add {program} \"…\"' adds one)")
    width = shutil.get_terminal_size((120, 24)).columns
    for row in rows:
        marks = (" 📌" if row.pinned and "📌" not in row.text else "") + (
            f" (expires {row.expires})" if row.expires and "expires" not in row.text else ""
        )
        text = " ".join(row.text.split()) + marks
        line = f"{row.number:>3}. [{row.id}] {text}"
        echo(line if display_width(line) <= width else line[: width - 1] + "…")
    if program != SHARED_PROGRAM and not app.quiet:
        shared = app.store().read(SHARED_PROGRAM)
        count = len(numbered_lessons(shared)) if shared is not None else 0
        if count:
            echo(f"{plural(count, 'shared lesson')} in {SHARED_PROGRAM}.md: statefile lesson list {SHARED_PROGRAM}")


@lesson_group.command("add")
@click.argument("program")
@click.argument("text")
@click.option("--expires", type=click.DateTime(formats=["%Y-%m-%d"]), help="Archive it after this date.")
@click.option("--pin", is_flag=True, help="Pinned lessons are never pruned.")
@example('statefile lesson add perf "Radix beats comparison sort above 1k rows" --expires 2026-12-31')
@pass_app
def lesson_add(app: AppContext, program: str, text: str, expires: dt.datetime | None, pin: bool) -> None:
    """Add a lesson to PROGRAM (adding one that is already there changes nothing)."""

    day = expires.date() if expires else None
    _edit_lessons(
        app,
        program,
        lambda doc: add_lesson(doc, text, expires=day, pinned=pin),
        done=f"added the lesson to {program}",
        noop=f"{program} already has this lesson",
        verb="add",
    )


@lesson_group.command("remove")
@click.argument("program")
@click.argument("selector")
@click.option("--reason", required=True, help="Why it is removed (kept in the archive with the lesson).")
@example('statefile lesson remove perf 3 --reason "superseded by the radix rewrite"')
@pass_app
def lesson_remove(app: AppContext, program: str, selector: str, reason: str) -> None:
    """Move lesson SELECTOR (1-based number, id or unique text) of PROGRAM to the archive, with a reason."""

    today = dt.datetime.now(dt.timezone.utc).date()

    store = app.writer()

    def apply(doc: StateDocument | None) -> Change[str]:
        if doc is None:
            raise missing_program(store, program)
        removed = find_lesson(doc, _selector(selector)).text  # the one remove_lesson takes out, to name it
        new, chunk = remove_lesson(doc, _selector(selector), reason=reason, today=today)
        what, body = unwrap_chunk(chunk)
        return Change(new, archive=body, archive_label=what or f"lesson removed from {program}.md", detail=removed)

    result = store.update(program, restoring_heading(apply), f"statefile: remove a lesson from {program}")
    text = result.detail or ""
    ident = lesson_id(text)
    say(app, f"moved lesson {ident} to {store.archive_hint(program)}{_commit_note(result.commit)}: "
             f"{lesson_summary(text)} (undo: statefile lesson restore {program} {ident})")  # fmt: skip


def _commit_note(commit: str | None) -> str:
    return f" ({commit[:10]})" if commit else ""


@lesson_group.command("restore")
@click.argument("program")
@click.argument("selector", required=False)
@example("statefile lesson restore perf", "statefile lesson restore perf 1")
@pass_app
def lesson_restore(app: AppContext, program: str, selector: str | None) -> None:
    """Restore a removed lesson of PROGRAM from its archive (no SELECTOR: list the restorable ones).

    SELECTOR is a number from that list (they shift after each restore), the lesson's id (which does not: naming
    it again says it is already restored) or a piece of its text.
    """

    store = app.reader() if selector is None else app.writer()
    if store.read_text(program) is None:
        raise missing_program(store, program)
    texts = [store.read_path(path) for path in store.archive_part_paths(program)]  # every layout
    if selector is None:
        candidates = restorable_lessons(texts)
        if app.as_json:
            emit_json([{"number": n, "lesson_id": c.lesson_id, **c.__dict__} for n, c in enumerate(candidates, 1)])
            return
        if not candidates:
            say(app, f"no removed lessons to restore for {program}")
        for number, candidate in enumerate(candidates, 1):
            echo(f"{number}. [{candidate.lesson_id}] {candidate.text.strip()}  — removed {candidate.removed}: "
                       f"{candidate.reason}")  # fmt: skip
        return
    today = dt.datetime.now(dt.timezone.utc).date()

    def apply(doc: StateDocument | None) -> Change[Tombstone]:
        if doc is None:
            raise missing_program(store, program)
        # Re-read the archive as of this attempt: a concurrent restore of the same lesson must be refused.
        current = [store.read_path(path) for path in store.archive_part_paths(program)]
        tombstone = find_tombstone(current, _selector(selector))
        what, body = unwrap_chunk(restored_chunk(tombstone, today=today))
        return Change(restore_lesson(doc, tombstone), archive=body, archive_label=what, detail=tombstone)

    result = store.update(program, restoring_heading(apply), f"statefile: restore a lesson of {program}")
    restored = result.detail
    named = f" {restored.lesson_id}" if restored else ""
    say(app, f"restored lesson{named}{_commit_note(result.commit)}" + (f": {restored.summary}" if restored else ""))


def _edit_lessons(
    app: AppContext, program: str, edit: Callable[[StateDocument], StateDocument], *, done: str, noop: str, verb: str
) -> None:
    """Apply ``edit`` to an existing program's document in one commit; say what happened, or that nothing did.

    ``done`` is said when the lessons changed, ``noop`` (after "nothing changed: ") when ``edit`` changed nothing.
    A drifted Machine State heading is restored either way.
    """
    store = app.writer()

    def apply(doc: StateDocument | None) -> Change[bool]:
        if doc is None:
            raise missing_program(store, program)
        new = edit(doc)
        return Change(new, detail=new.render() != doc.render())

    result = store.update(program, restoring_heading(apply), f"statefile: {verb} a lesson of {program}")
    commit = f" ({result.commit[:10]})" if result.landed and result.commit else ""
    if result.detail:
        say(app, f"{done}{commit}")
    elif result.landed:
        say(app, f"nothing changed in the lessons: {noop}; restored the ⚙️ Machine State heading{commit}")
    else:
        unchanged(app, noop)


def _selector(selector: str) -> int | str:
    return int(selector) if selector.isdigit() else selector


@lesson_group.command("pin")
@click.argument("program")
@click.argument("selector")
@example('statefile lesson pin perf "typed arrays"')
@pass_app
def lesson_pin(app: AppContext, program: str, selector: str) -> None:
    """Pin lesson SELECTOR of PROGRAM so compaction never prunes it."""

    _edit_lessons(
        app,
        program,
        lambda doc: pin_lesson(doc, _selector(selector)),
        done="pinned the lesson (compaction never prunes it)",
        noop="the lesson is already pinned",
        verb="pin",
    )


@lesson_group.command("unpin")
@click.argument("program")
@click.argument("selector")
@example("statefile lesson unpin perf 2")
@pass_app
def lesson_unpin(app: AppContext, program: str, selector: str) -> None:
    """Unpin lesson SELECTOR of PROGRAM (compaction may prune it again)."""

    _edit_lessons(
        app,
        program,
        lambda doc: unpin_lesson(doc, _selector(selector)),
        done="unpinned the lesson",
        noop="the lesson is not pinned",
        verb="unpin",
    )


@lesson_group.command("promote")
@click.argument("program")
@click.argument("selector")
@example('statefile lesson promote perf "use for...of over typed arrays"')
@pass_app
def lesson_promote(app: AppContext, program: str, selector: str) -> None:
    """Copy lesson SELECTOR of PROGRAM into _shared.md, which `render` shows to every program."""

    store = app.writer()
    doc = store.read(program)
    if doc is None:
        raise missing_program(store, program)
    lesson = find_lesson(doc, _selector(selector)).text

    def apply(shared: StateDocument | None) -> StateDocument:
        return promote_lesson(doc, _selector(selector), shared, program=program)

    result = store.update(SHARED_PROGRAM, apply, f"statefile: promote a lesson of {program} to _shared.md")
    if not result.landed:
        unchanged(app, "_shared.md already has this lesson")
        return
    shown = f"lesson {lesson_id(lesson)} to _shared.md{_commit_note(result.commit)}: {lesson_summary(lesson)}"
    say(app, f"promoted {shown}")


@click.command("sync")
@click.option("--dry-run", is_flag=True, help="Say what would be pushed or replayed; change nothing.")
@example("statefile --remote origin sync --dry-run", "statefile --remote origin sync")
@pass_app
def sync_cmd(app: AppContext, dry_run: bool) -> None:
    """Bring the local memory branch and the remote's together, losing nothing.

    Local commits the remote lacks (written without --remote) are pushed when the remote has not moved since;
    when both sides moved, each local-only commit is replayed onto the remote's tip: a record is recorded again
    (it gets the next free iteration number), other changes are taken where the remote left the file alone and
    otherwise kept verbatim in the program's archive.  The local commits stay under refs/statefile/kept/….
    """

    store = app.store()
    if not isinstance(store, GitStore):
        raise UsageError("sync works on a branch with --remote; a --dir folder has nothing to sync")
    now = datetime.now(timezone.utc)
    outcome = sync_branch(store, compaction_policy(app.config(), now=now), now=now, dry_run=dry_run)
    if app.as_json:
        emit_json({"dry_run": dry_run, **outcome.as_dict()})
        return
    if outcome.action == "nothing":
        unchanged(app, f"the local branch {store.branch} has no commits that {store.remote} lacks")
        return
    verb = {"pushed": "would push" if dry_run else "pushed", "replayed": "would replay" if dry_run else "replayed"}
    say(app, f"{verb[outcome.action]} {plural(outcome.commits, 'local-only commit')} to {store.remote}")
    for step in outcome.steps:
        say(app, f"  {step}")
    if outcome.kept:
        say(app, f"  the local commits are kept at {outcome.kept}")
