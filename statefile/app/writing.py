"""The write use cases and export, one atomic write each; updates are pure (a lost race calls them again)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timezone
from decimal import Decimal, InvalidOperation
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any

from statefile.app.context import AppContext, Config
from statefile.app.reading import archive_texts, check_document, missing_program, read_program
from statefile.defaults import SHARED_PROGRAM, SUMMARY_CAP
from statefile.errors import BudgetError, ConflictError, NotFoundError, StatefileError, UsageError
from statefile.integrations.ghaw import InputError, number_value, read_json_object
from statefile.integrations.summarizer import command_summarizer
from statefile.model.archive import make_chunk, plan_append, unwrap_chunk
from statefile.model.document import StateDocument, parse
from statefile.model.machine_state import state_changes
from statefile.model.patterns import STATUS_GLYPHS, lesson_key
from statefile.model.template import new_state_file
from statefile.model.text import encode, utf8_size
from statefile.numbers import number_text, plural
from statefile.policy import lessons
from statefile.policy.compaction import CompactionPolicy, CompactionReport, CompactionResult, compact, compact_within
from statefile.policy.lessons import NumberedLesson, Tombstone
from statefile.policy.repair import RepairResult, removed_by_edit, repair
from statefile.policy.rules import (
    ITEM_TRAILER,
    UPSTREAM_STATUSES,
    RecordRequest,
    format_number,
    has_marker,
    record,
    recorded_iteration,
)
from statefile.store import Change, GitStore, Store, UpdateResult
from statefile.store.atomic import INPUT_LIMIT, read_limit, read_regular_file
from statefile.store.base import T
from statefile.store.exchange import dumps, export_json
from statefile.store.names import case_twins, is_program_name, validate_program

#: The trailers a record commit carries (``git log --format=%(trailers:key=…)`` reads them back; ``sync`` does).
PROGRAM_TRAILER = "Statefile-Program"
ITERATION_TRAILER = "Statefile-Iteration"


def writable_program(program: str) -> str:
    """``program`` validated as one a write may name (``_shared`` takes lessons only through ``lesson promote``)."""
    if program == SHARED_PROGRAM:
        raise UsageError(f"'{SHARED_PROGRAM}' is reserved for shared lessons; use 'statefile lesson promote'")
    return validate_program(program)


def compaction_policy(config: Config, *, aggressive: bool = False, now: datetime) -> CompactionPolicy:
    """The compaction policy the settings describe (``aggressive``: aggressive mode whatever the file's size)."""
    command, timeout = config.summarizer.value, config.summarizer_timeout.value
    return CompactionPolicy(
        max_bytes=config.max_bytes.value, keep_recent=config.keep_recent.value,
        keep_recent_aggressive=config.aggressive_keep.value, aggressive_at=config.aggressive_at.value,
        low_water=min(0.6, config.aggressive_at.value), force_aggressive=aggressive, today=now.date(),
        summarizer=command_summarizer(command, timeout=timeout, cap=SUMMARY_CAP) if command else None,
    )  # fmt: skip


#: A compaction function: :func:`statefile.policy.compaction.compact`, or one that also fits repo-memory's push.
Compactor = Callable[[StateDocument, CompactionPolicy], CompactionResult]


def restore_heading(doc: StateDocument) -> StateDocument:
    """``doc`` with a drifted heading restored to ``## ⚙️ Machine State``, where the scheduler looks (else ``doc``)."""
    if any(w.code == "machine-state-heading" for w in doc.warnings) and doc.section("machine_state") is not None:
        return doc.with_fields({})
    return doc


def on_existing(
    store: Store, program: str, fn: Callable[[StateDocument], Change[T]], missing: StatefileError | None = None
) -> Callable[[StateDocument | None], Change[T]]:
    """An update of an existing program (else ``missing``, or not found) that restores a drifted heading too."""

    def apply(doc: StateDocument | None) -> Change[T]:
        if doc is None:
            raise missing or missing_program(store, program)
        change = fn(doc)
        return replace(change, document=restore_heading(change.document))

    return apply


def record_update(store: Store, program: str, request: RecordRequest, policy: CompactionPolicy, *, now: datetime,
                  compactor: Compactor | None = None, create: bool = False, keep_issue: bool = False,
                  note: str = "") -> Callable[[StateDocument | None], Change[RecordOutcome]]:  # fmt: skip
    """The one record pipeline; ``keep_issue`` keeps a recorded Issue; a known ``request.marker`` makes no entry."""
    hint = f"nothing was written — check the name, or pass --create to start '{program}'"
    scoped = replace(policy, program=program, archive_hint=store.archive_hint(program))

    def apply(doc: StateDocument | None) -> Change[RecordOutcome]:
        if doc is None and not create:
            raise missing_program(store, program, hint=hint)
        if doc is not None and request.marker:  # entries only move to the append-only archive: the marker stays
            archived = (store.read_path(path) for path in store.archive_part_paths(program))
            if any(has_marker(text, request.marker) for text in chain([doc.render()], archived)):
                return Change(doc)
        before = doc.machine_state if doc is not None else {}
        notes: list[str] = []
        req = request
        if keep_issue and req.issue is not None and isinstance(before.get("issue"), str):
            if before["issue"].strip("` ") != f"#{req.issue}":
                notes.append(f"issue #{req.issue} not recorded: the program's issue is {before['issue']} already")
            req = replace(req, issue=None)
        recorded = record(doc, req, program=program, now=now)
        number = recorded_iteration(recorded)
        asked = len(req.lessons) + (req.lesson is not None)
        had = {lesson_key(item.text) for item in doc.list_items("lessons")} if doc is not None else set()
        if asked and (repeated := asked - len({lesson_key(i.text) for i in recorded.list_items("lessons")} - had)) > 0:
            notes.append(f"{plural(repeated, 'lesson')} not added: repeats a lesson already there")
        result = (compactor or compact)(recorded, scoped)
        document = restore_heading(result.document)
        changes = state_changes(before, document.machine_state)
        body = [note] if note else []
        body += change_lines(changes) + ([result.report.summary()] if result.report.changed else [])
        trailers = [f"{PROGRAM_TRAILER}: {program}", f"{ITERATION_TRAILER}: {number}"]
        if req.marker:
            trailers.append(f"{ITEM_TRAILER}: {req.marker}")
        glyph = STATUS_GLYPHS.get(req.status, "•")
        subject = f"statefile: record iteration {number} of {program} ({glyph} {req.status})"
        return Change(
            document, result.archive, f"compaction of {program}.md while recording iteration {number}",
            "\n\n".join([subject, *(["\n".join(body)] if body else []), "\n".join(trailers)]),
            RecordOutcome(program, "", number, req.status, document.size, result.report.as_dict(), 1, store.max_bytes,
                          doc is None, changes, False, store.archive_hint(program), tuple(notes),
                          len(result.report.moved), utf8_size(result.archive)),
        )  # fmt: skip

    return apply


@dataclass(frozen=True)
class RecordOutcome:
    """What a record did (or would do), with ``notes`` on inputs it did not use; :func:`record_update`'s detail."""

    program: str
    commit: str
    iteration: int
    status: str
    size: int
    compaction: dict[str, Any]
    attempts: int = 1  # more than 1 when concurrent writers got in first
    max_bytes: int = 0
    created: bool = False
    changes: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False
    archive: str = ""  # where the store keeps the program's archive parts
    notes: tuple[str, ...] = ()
    moved: int = 0
    archived_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        hidden = ("changes", "compaction", "attempts", "archive", "moved", "archived_bytes")
        data = {k: v for k, v in self.__dict__.items() if k not in hidden}
        return {**data, **self.changes, "compaction": self.compaction, "attempts": self.attempts}


def run_update(
    store: Store, program: str, update: Callable[[StateDocument | None], Change[T]], *, dry_run: bool
) -> UpdateResult[T]:
    """``store.update`` (the Change carries the message), or with ``dry_run`` the update on what is stored now."""
    if not dry_run:
        return store.update(program, update)
    planned = update(store.read(program))
    return UpdateResult(None, False, (), planned.document, planned.detail, 0)


def record_iteration(store: Store, program: str, request: RecordRequest, policy: CompactionPolicy, *, now: datetime,
                     compactor: Compactor | None = None, create: bool = False, keep_issue: bool = False,
                     dry_run: bool = False) -> RecordOutcome | None:  # fmt: skip
    """Record one iteration and compact by policy in one atomic write (``None``: ``request.marker`` is there)."""
    update = record_update(
        store, program, request, policy, now=now, compactor=compactor, create=create, keep_issue=keep_issue
    )
    done = run_update(store, program, update, dry_run=dry_run)
    return done.detail and replace(done.detail, commit=done.commit or "", attempts=done.attempts, dry_run=dry_run)


def record_program(app: AppContext, program: str, request: RecordRequest, *, create: bool = False,
                   autoloop_json: Path | None = None, dry_run: bool = False) -> RecordOutcome:  # fmt: skip
    """``statefile record``; a program autoloop.json selected takes its settings from there and may be started."""
    writable_program(program)
    if autoloop_json is not None and not autoloop_json.exists():
        raise NotFoundError(f"--autoloop-json {autoloop_json}: no such file; pass the scheduler's autoloop.json")
    context = autoloop_context(autoloop_json, env={}) if autoloop_json is not None else RunContext()
    if own := context.selected == program:
        issue = request.issue if request.issue is not None else context.issue
        request = replace(request, issue=issue, metric_direction=context.metric_direction,
                          target_metric=context.target_metric, goal=context.goal)  # fmt: skip
    config = app.config()
    # The scheduler's first run may start the configured branch, never a --branch flag's (a typo).
    store = app.writer(create=create or (own and not config.branch.source.startswith("flag")))
    now = datetime.now(timezone.utc)
    policy, compactor = compaction_policy(config, now=now), compactor_for(app, program)
    done = record_iteration(
        store, program, request, policy, now=now, compactor=compactor, create=create or own, dry_run=dry_run
    )
    assert done is not None  # no marker: a record always makes an entry
    return done


def change_lines(changes: dict[str, Any]) -> list[str]:
    """What a record changed, one line each, for people (``record``'s output and its commit message)."""
    best, reason = changes.get("best_metric") or {}, changes.get("pause_reason") or "no reason given"
    was, cleared = best.get("before"), changes.get("previous_pause_reason")
    unpaused = "unpaused: an accepted iteration un-pauses the program, as the upstream prompt says"
    lines = (
        (changes.get("was_completed"), "note: the program was already completed (the scheduler no longer selects it)"),
        (changes.get("was_paused") and not changes.get("unpaused"), f"note: the program is paused ({reason})"),
        (best.get("new_best"), f"new best metric: {best.get('after')}" + (f" (was {was})" if was is not None else "")),
        (changes.get("unpaused"), unpaused + (f" (the cleared pause reason was: {cleared})" if cleared else "")),
        (changes.get("paused_now"), f"paused: {reason}"),
        (changes.get("completed_now"), f"completed: {changes.get('completed_reason') or 'target reached'}"),
    )
    return [line for shown, line in lines if shown]


#: Version 1 travelled inside the agent's artifact, where the agent could rewrite it: it is refused.
CONTEXT_VERSION = 2


@dataclass(frozen=True)
class RunContext:
    """What the pre-agent step knew that the safe-output job may trust: the selected program and its settings."""

    selected: str | None = None
    metric_direction: str | None = None
    target_metric: Decimal | None = None
    issue: int | None = None
    goal: str | None = None
    run_id: str | None = None
    run_attempt: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The JSON written to ``context.json``."""
        target = None if self.target_metric is None else format_number(self.target_metric)
        return {"statefile_context": CONTEXT_VERSION, **self.__dict__, "target_metric": target}

    @staticmethod
    def from_json(data: Mapping[str, Any], source: str) -> RunContext:
        """Read ``context.json``; UsageError when it is not one this version writes."""
        if (version := data.get("statefile_context")) == 1:
            raise UsageError(f"{source} is an older context, which travelled where the agent could rewrite it; "
                             "re-run 'statefile prepare' with this version")  # fmt: skip
        if version != CONTEXT_VERSION:
            raise UsageError(f"{source} is not a statefile run context (written by 'statefile prepare')")
        context = _context(*(data.get(key) for key in RunContext.__dataclass_fields__))
        if context.selected is not None:
            validate_program(context.selected)
        return context


def _context(selected: object, direction: object, target: object, issue: object, goal: object, run_id: object,
             run_attempt: object) -> RunContext:  # fmt: skip
    selected = selected if isinstance(selected, str) and selected.strip() else None
    number = None
    with suppress(InputError):  # a target that is no number (a bool, a list, NaN) is no target
        number = number_value({"target": target}, "target")
    return RunContext(
        selected, direction if selected and direction in ("higher", "lower") else None, number,
        issue if isinstance(issue, int) and not isinstance(issue, bool) and issue > 0 else None,
        goal if isinstance(goal, str) and goal.strip() else None,
        *(n if isinstance(n, str) and re.fullmatch(r"[0-9]{1,20}", n) else None for n in (run_id, run_attempt)),
    )  # fmt: skip


def autoloop_context(path: Path, *, env: Mapping[str, str], cwd: Path | None = None) -> RunContext:
    """The run context from the scheduler's autoloop.json; the goal from the program's definition under ``cwd``."""
    autoloop = read_json_object(path)  # a FIFO or a device is refused there, unread
    target, file = autoloop.get("selected_target_metric"), autoloop.get("selected_file")
    goal = None
    with suppress(OSError, UnicodeDecodeError, StatefileError):  # an unreadable definition gives no goal
        if isinstance(autoloop.get("selected"), str) and autoloop["selected"].strip() and isinstance(file, str):
            text = read_regular_file(Path(cwd or ".", file), limit=INPUT_LIMIT).decode("utf-8")
            match = re.search(r"^##\s+Goal\s*\n(.*?)(?=^#{1,2}\s|\Z)", text, re.M | re.S)
            paragraph = next((p for p in re.split(r"\n\s*\n", match.group(1)) if p.strip()), "") if match else ""
            line = " ".join(paragraph.split()).replace("|", "/")
            goal = (line[:239] + "…" if len(line) > 240 else line) or None
    return _context(autoloop.get("selected"), autoloop.get("selected_metric_direction"),
                    None if isinstance(target, str) else target, autoloop.get("selected_issue"), goal,
                    env.get("GITHUB_RUN_ID"), env.get("GITHUB_RUN_ATTEMPT"))  # fmt: skip


def init_program(app: AppContext, program: str, fields: dict[str, Any]) -> str:
    """``statefile init``: ``{program}.md`` from the upstream template (the branch too); an existing one conflicts."""
    writable_program(program)
    store = app.writer(create=True)

    def create(doc: StateDocument | None) -> StateDocument:
        if doc is not None:
            raise ConflictError(f"program '{program}' already exists; use 'statefile show {program}' to see it")
        return parse(new_state_file(program, **fields))

    return store.update(program, create, f"statefile: init {program}").commit or ""


@dataclass(frozen=True)
class CompactOutcome:
    """What ``compact`` did (or would do) to one program."""

    program: str
    commit: str
    report: CompactionReport
    heading_restored: bool = False
    dry_run: bool = False
    folded: tuple[int, ...] = ()  # iterations folded into range lines


def compact_program(
    store: Store, program: str, policy: CompactionPolicy, *, dry_run: bool, compactor: Compactor | None = None
) -> CompactOutcome:
    """Compact one program by policy, restoring a drifted Machine State heading."""
    policy = replace(policy, program=program, archive_hint=store.archive_hint(program))

    def apply(doc: StateDocument) -> Change[CompactOutcome]:
        result = (compactor or compact)(doc, policy)
        document = restore_heading(result.document)
        restored = document is not result.document
        if not result.report.changed and not restored:  # the same document: nothing is written
            return Change(doc, detail=CompactOutcome(program, "", result.report, dry_run=dry_run))
        before, after = ({n for entry in d.iterations for n in entry.covers} for d in (doc, document))
        folded = sorted(before - after)
        span = f"iterations {folded[0]}–{folded[-1]} to archive" if folded else result.report.summary()
        heading = f"restore the Machine State heading of {program}"
        lines = [result.report.summary()] if result.report.changed else []
        lines += ["restored the ⚙️ Machine State heading the scheduler looks for"] if restored else []
        message = f"statefile: {f'compact {program} — {span}' if result.report.changed else heading}\n\n"
        detail = CompactOutcome(program, "", result.report, restored, dry_run, tuple(folded))
        return Change(document, result.archive, f"compaction of {program}.md", message + "\n".join(lines), detail)

    done = run_update(store, program, on_existing(store, program, apply), dry_run=dry_run)
    assert done.detail is not None
    return replace(done.detail, commit=done.commit or "")


def compact_target(app: AppContext, program: str, *, aggressive: bool, dry_run: bool, now: datetime) -> CompactOutcome:
    """``statefile compact`` of one target, with its own settings: a bad summarizer fails for this target only."""
    policy = compaction_policy(app.config(), aggressive=aggressive, now=now)
    store = app.reader() if dry_run else app.writer()
    return compact_program(store, program, policy, dry_run=dry_run, compactor=compactor_for(app, program))


@dataclass(frozen=True)
class RepairOutcome:
    """What ``repair`` did (or would do) to one program, and where its archive parts are."""

    program: str
    commit: str
    result: RepairResult
    dry_run: bool
    archive: str = ""


def repair_program(store: Store, program: str, *, dry_run: bool) -> RepairOutcome:
    """Repair one program (:func:`statefile.policy.repair.repair`) in one commit, archiving what it removes."""
    writable_program(program)
    hint = store.archive_hint(program)

    def apply(doc: StateDocument | None) -> Change[RepairResult]:
        if doc is None:  # not on_existing: what repair leaves alone, it leaves alone
            raise missing_program(store, program)
        result = repair(doc, program=program, archive=hint)
        if not result.changed:
            return Change(doc, detail=result)
        fixes = "\n".join(f"- {fix}" for fix in result.fixes)
        message = f"statefile: repair {program} — {plural(len(result.fixes), 'fix', 'fixes')}\n\n{fixes}"
        return Change(result.document, result.archive, f"repair of {program}.md", message, result)

    done = run_update(store, program, apply, dry_run=dry_run)
    assert done.detail is not None
    return RepairOutcome(program, done.commit or "" if done.landed else "", done.detail, dry_run, hint)


@dataclass(frozen=True)
class EditOutcome:
    """What ``edit`` saved (``commit`` "" in a folder), and whether it restored the heading."""

    commit: str
    heading_restored: bool = False


def edit_program(app: AppContext, program: str, run_editor: Callable[[str, int], str | None],
                 keep: Callable[[str], Path], tell: Callable[[str], None]) -> EditOutcome | None:  # fmt: skip
    """``statefile edit``: the edited text, validated, in one commit (``None``: unchanged); a failed save keeps it."""
    writable_program(program)
    store = app.writer()
    original = store.read_text(program)
    if original is None:
        raise missing_program(store, program, hint=f"'statefile init {program}' creates it")
    edited = run_editor(original, read_limit(app.config().max_bytes.value))
    if edited is None or edited == original:
        return None
    parsed = parse(edited)
    restored = restore_heading(parsed)
    if not (outcome := check_document(program, restored, store.max_bytes)).ok:
        raise UsageError(f"edit refused: {outcome.errors[0]}; your text is saved in {keep(edited)}")
    removed = removed_by_edit(parse(original), parsed)

    def apply(doc: StateDocument | None) -> Change[None]:
        if (doc.render() if doc is not None else "") != original:
            raise ConflictError(f"'{program}' changed on the branch while you were editing; your text was kept, "
                                "edit again")  # fmt: skip
        return Change(restored, archive=removed, archive_label=f"removed by a hand edit of {program}.md")

    try:
        commit = store.update(program, apply, f"statefile: edit {program} by hand").commit or ""
    except Exception:
        tell(f"your edited text is saved in {keep(edited)}")  # even with --quiet: the user's text is there
        raise
    return EditOutcome(commit, restored is not parsed)


def compactor_for(app: AppContext, program: str) -> Compactor | None:
    """Plain compaction, or with ``--repo-memory`` one its push accepts (file-glob, max-patch-size, max-file-count)."""
    if not app.repo_memory:
        return None
    folder, store = app.memory_folder(), app.store()

    def run(doc: StateDocument, policy: CompactionPolicy) -> CompactionResult:
        folder.require_state_path(program)
        layout = folder.layout_for(program)
        parts = store.archive_parts(program)
        last = (parts[-1], store.read_archive(program, parts[-1])) if parts else None
        snapshot = folder.snapshot()
        state = f"{program}.md"

        def files_of(result: CompactionResult) -> dict[str, str]:
            files = {state: result.document.render()}
            if result.archive:
                # Stand-ins for the chunk heading's time and label, at least as long as the real ones.
                chunk = make_chunk(result.archive, when="0000-00-00T00:00:00Z", what="x" * 200)
                for name, content in plan_append(program, last, chunk, store.max_bytes):
                    files[layout.part_path(program, name)] = content
            return files

        if not folder.has_baseline:
            result = compact(doc, policy)
        else:
            result = compact_within(
                doc, policy, lambda r: folder.write_cost(files_of(r), snapshot).added,
                soft_limit=folder.max_patch_size, hard_limit=folder.patch_limit,
                what=f"this run's change to {state}",
            )  # fmt: skip
        count = folder.write_cost(files_of(result), snapshot).files
        if count > folder.max_file_count:
            raise BudgetError(f"writing {state} and its archive would make {plural(count, 'file')} match repo-memory's "
                              f"file-glob, over its max-file-count ({number_text(folder.max_file_count)}); nothing was "
                              "written — raise max-file-count")  # fmt: skip
        return result

    return run


# -- lessons: list, add, remove, restore, pin, unpin, promote; each change is one commit ----------------------
@dataclass(frozen=True)
class LessonList:
    """A program's lessons, numbered as the other lesson commands take them, and how many shared lessons there are."""

    rows: tuple[NumberedLesson, ...]
    shared: int = 0


@dataclass(frozen=True)
class LessonChange:
    """What a lesson command did: ``changed`` the lessons, ``landed`` a commit, the lesson it names, the archive."""

    changed: bool
    landed: bool
    commit: str = ""
    lesson_id: str = ""
    summary: str = ""
    archive: str = ""


def _selector(selector: str) -> int | str:
    return int(selector) if selector.isdigit() else selector


def list_lessons(app: AppContext, program: str) -> LessonList:
    """``lesson list``: PROGRAM's lessons with their numbers and ids."""
    doc = read_program(app.reader(), program)
    shared = app.store().read(SHARED_PROGRAM) if program != SHARED_PROGRAM else None
    return LessonList(tuple(lessons.numbered_lessons(doc)), len(lessons.numbered_lessons(shared)) if shared else 0)


def _lesson_update(app: AppContext, program: str, message: str,
                   change: Callable[[Store, StateDocument], Change[LessonChange]]) -> LessonChange:  # fmt: skip
    """``change`` of an existing program's document in one commit (``message``): its detail, with the commit."""
    store = app.writer()
    result = store.update(program, on_existing(store, program, partial(change, store)), message)
    assert result.detail is not None
    return replace(result.detail, landed=result.landed, commit=result.commit or "" if result.landed else "")


def _amend(app: AppContext, program: str, verb: str, fn: Callable[[StateDocument], StateDocument]) -> LessonChange:
    def change(_: Store, doc: StateDocument) -> Change[LessonChange]:
        new = fn(doc)
        return Change(new, detail=LessonChange(new.render() != doc.render(), False))

    return _lesson_update(app, program, f"statefile: {verb} a lesson of {program}", change)


def add_lesson(app: AppContext, program: str, text: str, *, expires: date | None, pin: bool) -> LessonChange:
    """``lesson add``: one that is already there changes nothing."""
    return _amend(app, program, "add", lambda doc: lessons.add_lesson(doc, text, expires=expires, pinned=pin))


def pin_lesson(app: AppContext, program: str, selector: str, *, pinned: bool = True) -> LessonChange:
    """``lesson pin`` (compaction never prunes a pinned lesson), or with ``pinned=False`` ``lesson unpin``."""
    verb = "pin" if pinned else "unpin"
    return _amend(app, program, verb, lambda doc: lessons.pin_lesson(doc, _selector(selector), pinned=pinned))


def remove_lesson(app: AppContext, program: str, selector: str, *, reason: str) -> LessonChange:
    """``lesson remove``: the lesson goes to the archive with ``reason``, restorable."""
    today = datetime.now(timezone.utc).date()

    def change(store: Store, doc: StateDocument) -> Change[LessonChange]:
        text = lessons.find_lesson(doc, _selector(selector)).text
        new, chunk = lessons.remove_lesson(doc, _selector(selector), reason=reason, today=today)
        what, body = unwrap_chunk(chunk)
        done = LessonChange(
            True, True, "", lessons.lesson_id(text), lessons.lesson_summary(text), store.archive_hint(program)
        )
        return Change(new, archive=body, archive_label=what or f"lesson removed from {program}.md", detail=done)

    return _lesson_update(app, program, f"statefile: remove a lesson from {program}", change)


def restorable_lessons(app: AppContext, program: str) -> list[Tombstone]:
    """``lesson restore`` without a selector: the removed lessons that can be restored, numbered from 1."""
    store = app.reader()
    read_program(store, program)
    return lessons.restorable_lessons([text for _, text in archive_texts(store, program)])


def restore_lesson(app: AppContext, program: str, selector: str) -> LessonChange:
    """``lesson restore``: a removed lesson back from the archive (an id already restored is refused)."""
    today = datetime.now(timezone.utc).date()

    def change(store: Store, doc: StateDocument) -> Change[LessonChange]:
        # The archive as of this attempt: a concurrent restore of the same lesson must be refused.
        tombstone = lessons.find_tombstone([text for _, text in archive_texts(store, program)], _selector(selector))
        new, chunk = lessons.restore_lesson(doc, tombstone, today=today)
        what, body = unwrap_chunk(chunk)
        done = LessonChange(True, True, "", tombstone.lesson_id, tombstone.summary)
        return Change(new, archive=body, archive_label=what, detail=done)

    return _lesson_update(app, program, f"statefile: restore a lesson of {program}", change)


def promote_lesson(app: AppContext, program: str, selector: str) -> LessonChange:
    """``lesson promote``: a copy of the lesson in _shared.md, which ``render`` shows to every program."""
    store = app.writer()
    doc = read_program(store, program)
    lesson = lessons.find_lesson(doc, _selector(selector)).text
    promote = partial(lessons.promote_lesson, doc, _selector(selector), program=program)
    result = store.update(SHARED_PROGRAM, promote, f"statefile: promote a lesson of {program} to _shared.md")
    return LessonChange(result.landed, result.landed, result.commit or "", lessons.lesson_id(lesson),
                        lessons.lesson_summary(lesson))  # fmt: skip


# -- export and import: the whole memory as one JSON document, and back as one commit --------------------------
def export_memory(store: Store) -> tuple[str, int]:
    """The export of every file in ``store`` as JSON text, and how many files it holds."""
    branch, commit = (store.branch, store.tip()) if isinstance(store, GitStore) else ("", None)
    data = export_json(store.read_all(), branch=branch, commit=commit)
    return dumps(data), len(data["files"])


@dataclass(frozen=True)
class ImportOutcome:
    """What an import wrote (paths), its commit, the state files over ``budget`` and the headings it restored."""

    files: int
    written: list[str]
    commit: str | None
    over_budget: list[str]
    headings_restored: list[str]


def import_files(store: Store, files: dict[str, str], *, budget: int, force: bool) -> ImportOutcome:
    """``files`` as one commit (overwriting only with ``force``), then drifted headings restored, a commit each."""
    existing = store.read_all()
    # Refused even with --force: overwriting replaces a file, but a name differing only in case adds a second.
    if twins := case_twins([path for path in files if path not in existing], existing):
        name, other = twins[0]
        there = any(p == other or (other.endswith("/") and p.startswith(other)) for p in existing)
        where = ("on the branch" if isinstance(store, GitStore) else "in the folder") if there else "in the export"
        more = f" (and {plural(len(twins) - 1, 'other name')})" if len(twins) > 1 else ""
        if name.rstrip("/") == other.rstrip("/"):  # perf.md and perf.md/x: a file and a folder of one name
            kinds = ("a folder", "a file") if name.endswith("/") else ("a file", "a folder")
            raise UsageError(
                f"{other.rstrip('/')} is {kinds[0]} in the export and {kinds[1]} {where}{more} — no tree or file "
                "system holds both; nothing was written — rename one of them"
            )
        raise UsageError(
            f"{name} in the export differs only in case from {other} {where}{more} — a checkout on macOS or Windows "
            "could hold only one of them; nothing was written — rename one of them"
        )
    if not force:
        clashes = sorted(path for path, text in files.items() if path in existing and existing[path] != text)
        if clashes:
            shown = ", ".join(clashes[:3]) + (f" and {number_text(len(clashes) - 3)} more" if len(clashes) > 3 else "")
            raise ConflictError(
                f"{plural(len(clashes), 'file')} {'exists' if len(clashes) == 1 else 'exist'} with different "
                f"content ({shown}); nothing was written — "
                "import into an empty branch (--branch NEW) or pass --force to overwrite"
            )
    changed = {path: text for path, text in files.items() if existing.get(path) != text}
    states = [path for path in changed if "/" not in path and path.endswith(".md")]
    commit = store.write_files(changed, f"statefile: import {plural(len(changed), 'file')}").commit if changed else None
    restored = []
    for name in (n for n in (path[: -len(".md")] for path in states) if is_program_name(n) and n != SHARED_PROGRAM):
        if (doc := store.read(name)) is not None and restore_heading(doc) is not doc:
            restore = on_existing(store, name, Change)
            store.update(name, restore, f"statefile: restore the Machine State heading of {name}")
            restored.append(name)
    over = sorted(path for path in states if len(encode(files[path])) > budget)
    return ImportOutcome(len(files), sorted(changed), commit, over, restored)


# -- sync: a local branch replayed onto the remote's (a record, found by its trailers, is recorded again) ----------

_ARCHIVE_PATH = re.compile(r"^archive/([^/]+)/")


@dataclass
class SyncOutcome:
    """What ``sync`` did (``nothing``, ``pushed``, ``replayed``) to each local-only commit, and where they are kept."""

    action: str
    commits: int = 0
    steps: list[str] = field(default_factory=list)
    kept: str = ""
    tip: str | None = None
    branch: str = ""
    remote: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"action": self.action, "commits": self.commits, "steps": self.steps, "kept": self.kept,
                "commit": self.tip}  # fmt: skip


def sync(app: AppContext, *, dry_run: bool = False) -> SyncOutcome:
    """``statefile sync`` on the run's store (a git branch with a remote); ``dry_run`` changes nothing."""
    store = app.store()
    if not isinstance(store, GitStore):
        raise UsageError("sync works on a branch with --remote; a --dir folder has nothing to sync")
    if store.remote is None:
        raise UsageError("sync reconciles the local branch with a remote; pass --remote NAME (e.g. --remote origin)")
    now = datetime.now(timezone.utc)
    policy = compaction_policy(app.config(), now=now)
    outcome_of = partial(SyncOutcome, branch=store.branch, remote=store.remote)
    state = store.branch_state()
    if state.local is None or state.ahead == 0:
        return outcome_of("nothing", tip=state.tracking or state.local)
    commits = store.local_only_commits()
    if not state.diverged or dry_run:
        verb, action = ("replay", "replayed") if state.diverged else ("push", "pushed")
        steps = [f"{verb} {commit[:10]} {(message.splitlines() or [''])[0]}" for commit, _, message, _ in commits]
        return outcome_of(action, len(commits), steps, tip=None if dry_run else store.publish())
    kept = f"refs/statefile/kept/{store.branch}/{now.strftime('%Y%m%dT%H%M%SZ')}"
    store.set_aside_local(kept)
    outcome = outcome_of("replayed", len(commits), kept=kept)
    for commit, parent, message, paths in commits:
        try:
            program = next(iter(store.trailers(commit, PROGRAM_TRAILER)), None)
            number = next((int(n) for n in store.trailers(commit, ITERATION_TRAILER) if n.isdigit()), None)
            for path in paths:
                if (archive := _ARCHIVE_PATH.match(path)) and archive.group(1) == program:
                    continue  # what that record's compaction archived is still in the file or archive it came from
                if number is not None and path == f"{program}.md":
                    outcome.steps.append(_replay_record(store, policy, commit, parent, number, path, now=now))
                else:
                    outcome.steps.append(_replay_file(store, commit, parent, path))
        except StatefileError as exc:
            subject = (message.splitlines() or [""])[0]
            where = f"the local-only commits are kept at {kept} (`git log {kept}`); the ones before it were replayed"
            raise type(exc)(f"sync stopped at local commit {commit[:10]} ({subject}): {exc} — {where}") from None
    outcome.tip = store.tip()
    return outcome


def _replay_record(store: GitStore, policy: CompactionPolicy, commit: str, parent: str | None, number: int, path: str,
                   *, now: datetime) -> str:  # fmt: skip
    """Record local iteration ``number`` again, its request rebuilt from its entry and what the commit changed."""
    program, new, old = path.removesuffix(".md"), *(parse(store.file_at(c, path) or "") for c in (commit, parent))
    entry = next((e for e in new.iterations if number in e.covers), None)
    if entry is None:
        return _replay_file(store, commit, parent, path)
    metric: Decimal | None = None
    at = None
    with suppress(InvalidOperation):
        metric = Decimal(entry.metric.replace(",", "")) if entry.metric else None
    with suppress(ValueError):
        at = datetime.fromisoformat(entry.when.replace(" UTC", "").replace("Z", "").strip()) if entry.when else None
    attempts = re.match(r"^\s*(\d+)", entry.fields.get("ci fix attempts", ""))
    before = {item.text for item in old.list_items("lessons")}
    added = [item.text for item in new.list_items("lessons") if item.text not in before]
    pr, old_pr = new.machine_state.get("pr"), old.machine_state.get("pr")
    status = entry.status or "error"
    request = RecordRequest(
        status=status, metric=metric if metric is not None and metric.is_finite() else None, change=entry.change,
        notes=entry.notes, commit=entry.commit, run_url=entry.run_url,
        pr=int(str(pr).lstrip("#")) if pr != old_pr and pr and str(pr).lstrip("#").isdigit() else None,
        ci_fix_attempts=int(attempts.group(1)) if attempts else 0,
        lesson=added[0].strip().lstrip("-*+").strip() if added else None,
        at=at.replace(tzinfo=timezone.utc) if at else None, new_status=status not in UPSTREAM_STATUSES,
    )  # fmt: skip
    note = f"replayed local iteration {number} ({commit[:10]})"
    landed = store.update(program, record_update(store, program, request, policy, now=now, create=True, note=note))
    got = landed.detail.iteration if landed.detail else None
    return f"recorded local iteration {number} of {program} again as iteration {got} ({commit[:10]})"


def _replay_file(store: GitStore, commit: str, parent: str | None, path: str) -> str:
    """A three-way replay of one file: take the local change when the remote left the file as it was."""
    old, new, current = (store.file_at(c, path) for c in (parent, commit, store.tip()))
    if current == old:
        if new == current:
            return f"{path}: unchanged ({commit[:10]})"
        store.write_files({path: new}, f"statefile: sync {path} from local commit {commit[:10]}")
        return f"{path}: took the local change ({commit[:10]})"
    if current == new:
        return f"{path}: already as the local commit left it ({commit[:10]})"
    if new is None:
        return f"{path}: kept the remote's version; the local commit {commit[:10]} deleted it"
    archive = _ARCHIVE_PATH.match(path)  # the program whose archive can hold the local version
    owner = archive.group(1) if archive else path[:-3] if path.endswith(".md") and "/" not in path else None
    if owner is None or owner == SHARED_PROGRAM or not is_program_name(owner):
        raise UsageError(f"{path} changed on both sides and is not a program's file, so it has no archive to keep "
                         "the local version in; reconcile it by hand")  # fmt: skip
    label = f"local-only version of {path} from commit {commit[:10]}, kept by sync (the remote changed it too)"
    text = new
    if path.startswith("archive/") and old is not None and new.startswith(old):
        label, text = f"archive text appended by local commit {commit[:10]}, kept by sync", new[len(old) :]

    gone = UsageError(f"{owner}.md is gone from the remote; the local version of {path} cannot be archived")
    keep = on_existing(store, owner, lambda doc: Change(doc, archive=text, archive_label=label), gone)
    store.update(owner, keep, f"statefile: sync keeps the local version of {path}")
    return f"{path}: kept the remote's version; the local one is in archive/{owner}/ ({commit[:10]})"
