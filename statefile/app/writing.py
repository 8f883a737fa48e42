"""The write side of the use cases: record, init, compact, repair and edit, each one atomic write through a store.

Update functions are pure (the store calls them again after a lost race); :func:`record_update` is the one record
pipeline ``record``, ``apply`` and ``sync`` share."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from decimal import Decimal
from itertools import chain
from pathlib import Path
from typing import Any

from statefile.app.config import Config
from statefile.app.context import AppContext
from statefile.app.reading import check_document, missing_program
from statefile.defaults import SHARED_PROGRAM, SUMMARY_CAP
from statefile.errors import BudgetError, ConflictError, NotFoundError, StatefileError, UsageError
from statefile.integrations.autoloop import read_json_object
from statefile.integrations.ghaw import InputError, number_value
from statefile.integrations.repo_memory import RepoMemoryFolder
from statefile.integrations.summarizer import command_summarizer
from statefile.model.archive import make_chunk, plan_append
from statefile.model.document import StateDocument, parse
from statefile.model.machine_state import state_changes
from statefile.model.patterns import STATUS_GLYPHS, lesson_key
from statefile.model.template import new_state_file
from statefile.model.text import utf8_size
from statefile.numbers import number_text, plural
from statefile.policy.compaction import CompactionPolicy, CompactionReport, CompactionResult, compact
from statefile.policy.edits import removed_by_edit
from statefile.policy.repair import RepairResult, repair
from statefile.policy.rules import ITEM_TRAILER, RecordRequest, format_number, has_marker, record, recorded_iteration
from statefile.policy.spreading import compact_within
from statefile.store import Change, Store, UpdateFn, UpdateResult
from statefile.store.atomic import INPUT_LIMIT, read_regular_file
from statefile.store.base import T
from statefile.store.files import read_limit
from statefile.store.names import validate_program

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
    """``doc`` with a drifted Machine State heading restored to the exact ``## ⚙️ Machine State`` (else ``doc``):
    under any other heading the upstream scheduler does not find the table and treats the program as new."""
    if any(w.code == "machine-state-heading" for w in doc.warnings) and doc.section("machine_state") is not None:
        return doc.with_fields({})
    return doc


def restoring_heading(fn: Callable[[StateDocument | None], StateDocument | Change[T]]) -> UpdateFn[T]:
    """An update function that does what ``fn`` does, then restores a drifted Machine State heading."""

    def apply(doc: StateDocument | None) -> StateDocument | Change[T]:
        result = fn(doc)
        if isinstance(result, Change):
            return replace(result, document=restore_heading(result.document))
        return restore_heading(result)

    return apply


def record_update(store: Store, program: str, request: RecordRequest, policy: CompactionPolicy, *, now: datetime,
                  compactor: Compactor | None = None, create: bool = False, keep_issue: bool = False,
                  note: str = "") -> Callable[[StateDocument | None], Change[RecordOutcome]]:  # fmt: skip
    """The one record pipeline: the update rules, compaction, the heading restored, a commit message with trailers
    naming the program and iteration.  ``create``: a missing program is created.  ``keep_issue``: a recorded Issue
    is kept (the request's becomes a note).  An entry carrying ``request.marker`` already there: the detail is
    ``None``.  ``note``: a line for the commit message."""
    hint = f"nothing was written — check the name, or pass --create to start '{program}'"
    # Range lines point to where this store keeps the parts (repo-memory: _archive.perf.*.md).
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
    """What a record did (``dry_run``: would do; ``commit`` ""): the iteration, its status, the Machine State
    changes, what compaction moved, and ``notes`` on inputs it did not use; the detail of :func:`record_update`."""

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
                     compactor: Compactor | None = None, create: bool = False,
                     dry_run: bool = False) -> RecordOutcome:  # fmt: skip
    """Record one iteration and compact by policy in one atomic write; a missing program is created with ``create``."""
    update = record_update(store, program, request, policy, now=now, compactor=compactor, create=create)
    done = run_update(store, program, update, dry_run=dry_run)
    assert done.detail is not None  # no marker: a record always makes an entry
    return replace(done.detail, commit=done.commit or "", attempts=done.attempts, dry_run=dry_run)


def record_program(app: AppContext, program: str, request: RecordRequest, *, create: bool = False,
                   autoloop_json: Path | None = None, dry_run: bool = False) -> RecordOutcome:  # fmt: skip
    """``statefile record``: when autoloop.json selected ``program``, its direction, target, goal and issue are used
    and the program may be started; otherwise only ``create`` starts one."""
    writable_program(program)
    if autoloop_json is not None and not autoloop_json.exists():
        raise NotFoundError(f"--autoloop-json {autoloop_json}: no such file; pass the scheduler's autoloop.json")
    context = autoloop_context(autoloop_json, env={}) if autoloop_json is not None else None
    own = context is not None and context.selected == program
    if context is not None and own:
        issue = request.issue if request.issue is not None else context.issue
        request = replace(request, issue=issue, metric_direction=context.metric_direction,
                          target_metric=context.target_metric, goal=context.goal)  # fmt: skip
    config = app.config()
    # The scheduler's first run may start the configured memory branch, never one named by a --branch flag (a
    # typo there must not start a new memory).
    store = app.writer(create=create or (own and not config.branch.source.startswith("flag")))
    now = datetime.now(timezone.utc)
    return record_iteration(
        store, program, request, compaction_policy(config, now=now), now=now,
        compactor=compactor_for(app, program), create=create or own, dry_run=dry_run,
    )  # fmt: skip


def change_lines(changes: dict[str, Any]) -> list[str]:
    """What a record changed, one line each, for people (``record``'s output and its commit message)."""
    lines = []
    if changes.get("was_completed"):
        lines.append("note: the program was already completed (the scheduler no longer selects it)")
    if changes.get("was_paused") and not changes.get("unpaused"):
        lines.append(f"note: the program is paused ({changes.get('pause_reason') or 'no reason given'})")
    best = changes.get("best_metric") or {}
    if best.get("new_best"):
        was = best.get("before")
        lines.append(f"new best metric: {best.get('after')}" + (f" (was {was})" if was is not None else ""))
    if changes.get("unpaused"):
        reason = changes.get("previous_pause_reason")
        cleared = f" (the cleared pause reason was: {reason})" if reason else ""
        lines.append(f"unpaused: an accepted iteration un-pauses the program, as the upstream prompt says{cleared}")
    if changes.get("paused_now"):
        lines.append(f"paused: {changes.get('pause_reason') or 'no reason given'}")
    if changes.get("completed_now"):
        lines.append(f"completed: {changes.get('completed_reason') or 'target reached'}")
    return lines


#: Version 1 travelled inside the agent's artifact, where the agent could rewrite it: it is refused.
CONTEXT_VERSION = 2


@dataclass(frozen=True)
class RunContext:
    """What the pre-agent step knew that the safe-output job may trust: the selected program, its definition's
    direction, target and goal, its issue, and the run's id and attempt."""

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
        keys = ("selected", "metric_direction", "target_metric", "issue", "goal", "run_id", "run_attempt")
        context = _context(*(data.get(key) for key in keys))
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
    """The run context from the scheduler's autoloop.json (githubnext/autoloop ``autoloop_scheduler.py`` output),
    the goal from the selected program's definition (``selected_file``, relative to ``cwd``)."""
    autoloop = read_json_object(path)  # a FIFO or a device is refused there, unread
    target, file = autoloop.get("selected_target_metric"), autoloop.get("selected_file")
    selected = isinstance(autoloop.get("selected"), str) and autoloop["selected"].strip()
    goal = program_goal(Path(cwd or ".", file)) if selected and isinstance(file, str) else None
    return _context(autoloop.get("selected"), autoloop.get("selected_metric_direction"),
                    None if isinstance(target, str) else target, autoloop.get("selected_issue"), goal,
                    env.get("GITHUB_RUN_ID"), env.get("GITHUB_RUN_ATTEMPT"))  # fmt: skip


def program_goal(path: Path) -> str | None:
    """The first paragraph of the ``## Goal`` section of a program definition, on one line (at most 240 chars)."""
    try:
        text = read_regular_file(path, limit=INPUT_LIMIT).decode("utf-8")
    except (OSError, UnicodeDecodeError, StatefileError):
        return None
    match = re.search(r"^##\s+Goal\s*\n(.*?)(?=^#{1,2}\s|\Z)", text, re.M | re.S)
    paragraph = next((p for p in re.split(r"\n\s*\n", match.group(1)) if p.strip()), "") if match else ""
    line = " ".join(paragraph.split()).replace("|", "/")
    return (line[:239] + "…" if len(line) > 240 else line) or None


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
    """What ``compact`` did (or would do, with ``dry_run``) to one program, and whether it restored the heading."""

    program: str
    commit: str
    report: CompactionReport
    heading_restored: bool = False
    dry_run: bool = False
    folded: tuple[int, ...] = ()  # the iterations whose entries were (or would be) folded into range lines


def compact_program(
    store: Store, program: str, policy: CompactionPolicy, *, dry_run: bool, compactor: Compactor | None = None
) -> CompactOutcome:
    """Compact one program by policy (``dry_run``: change nothing), restoring a drifted Machine State heading."""
    policy = replace(policy, program=program, archive_hint=store.archive_hint(program))

    def apply(doc: StateDocument | None) -> Change[CompactOutcome]:
        if doc is None:
            raise missing_program(store, program)
        result = (compactor or compact)(doc, policy)
        document = restore_heading(result.document)
        restored = document is not result.document
        if not result.report.changed and not restored:  # the same document: nothing is written
            return Change(doc, detail=CompactOutcome(program, "", result.report, dry_run=dry_run))
        folded = sorted(_detailed(doc) - _detailed(document))
        span = f"iterations {folded[0]}–{folded[-1]} to archive" if folded else result.report.summary()
        heading = f"restore the Machine State heading of {program}"
        lines = [result.report.summary()] if result.report.changed else []
        lines += ["restored the ⚙️ Machine State heading the scheduler looks for"] if restored else []
        message = f"statefile: {f'compact {program} — {span}' if result.report.changed else heading}\n\n"
        detail = CompactOutcome(program, "", result.report, restored, dry_run, tuple(folded))
        return Change(document, result.archive, f"compaction of {program}.md", message + "\n".join(lines), detail)

    done = run_update(store, program, apply, dry_run=dry_run)
    assert done.detail is not None
    return replace(done.detail, commit=done.commit or "")


def _detailed(doc: StateDocument) -> set[int]:
    return {number for entry in doc.iterations for number in entry.covers}


def compact_target(app: AppContext, program: str, *, aggressive: bool, dry_run: bool, now: datetime) -> CompactOutcome:
    """``statefile compact`` of one program of ``app``'s store."""
    store = app.reader() if dry_run else app.writer()
    policy = compaction_policy(app.config(), aggressive=aggressive, now=now)
    return compact_program(store, program, policy, dry_run=dry_run, compactor=compactor_for(app, program))


@dataclass(frozen=True)
class RepairOutcome:
    """What ``repair`` did (or would do, with ``dry_run``) to one program, and where its archive parts are."""

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
        if doc is None:
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
    """What ``edit`` saved (``commit`` "" when nothing changed), and whether it restored the heading."""

    commit: str
    changed: bool
    heading_restored: bool = False


def edit_program(app: AppContext, program: str, run_editor: Callable[[str, int], str | None],
                 keep: Callable[[str], Path], tell: Callable[[str], None]) -> EditOutcome:  # fmt: skip
    """``statefile edit``: the text ``run_editor(original, limit)`` returns is validated and committed (what it took
    out goes to the archive); a refused or failed save keeps the text (``keep``) and says where (``tell``)."""
    writable_program(program)
    store = app.writer()
    original = store.read_text(program)
    if original is None:
        raise missing_program(store, program, hint=f"'statefile init {program}' creates it")
    edited = run_editor(original, read_limit(app.config().max_bytes.value))
    if edited is None or edited == original:
        return EditOutcome("", False)
    parsed = parse(edited)
    restored = restore_heading(parsed)
    outcome = check_document(program, restored, store.max_bytes)
    if not outcome.ok:
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
    return EditOutcome(commit, True, restored is not parsed)


def repo_memory_compactor(folder: RepoMemoryFolder, store: Store, program: str) -> Compactor:
    """A compaction repo-memory's push accepts: a state file or archive its file-glob would drop is refused, and
    compaction is spread under the push's own measure (what its ``git diff`` adds against the clone's HEAD)."""

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


def compactor_for(app: AppContext, program: str) -> Compactor | None:
    """The compaction writes to ``program`` use: under repo-memory's push limits with ``--repo-memory``, else plain."""
    return repo_memory_compactor(app.memory_folder(), app.store(), program) if app.repo_memory else None
