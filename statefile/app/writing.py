"""The write side of the use cases: record, init, compact and edit, each one atomic write through a :class:`Store`.

Update functions handed to ``Store.update`` are pure functions of the document they get, because the store calls
them again when a concurrent writer got in first.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from statefile.app.config import Config
from statefile.app.reading import missing_program
from statefile.defaults import SUMMARY_CAP
from statefile.errors import ConflictError
from statefile.integrations.summarizer import command_summarizer
from statefile.model.document import StateDocument, parse
from statefile.model.machine_state import state_changes
from statefile.model.patterns import STATUS_GLYPHS
from statefile.model.template import new_state_file
from statefile.model.text import utf8_size
from statefile.policy.compaction import CompactionPolicy, CompactionReport, CompactionResult, compact
from statefile.policy.edits import removed_by_edit
from statefile.policy.repair import RepairResult, repair
from statefile.policy.rules import ITEM_TRAILER, RecordRequest, has_marker, record, recorded_iteration
from statefile.store import Change, Store, UpdateFn
from statefile.store.base import T


@dataclass(frozen=True)
class RecordOutcome:
    """What ``record`` did: the commit, the iteration number and status, what changed in the Machine State, and
    what compaction moved.  ``changes`` says what a person would want to hear about (see :func:`state_changes`)."""

    program: str
    commit: str
    iteration: int
    status: str
    size: int
    compaction: dict[str, Any]
    #: How many times the write was tried (more than 1 when concurrent writers got in first).
    attempts: int = 1
    max_bytes: int = 0
    #: The program did not exist: this record created it (``--create``, or the scheduler selected it).
    created: bool = False
    changes: dict[str, Any] = field(default_factory=dict)
    #: ``record --dry-run``: what the record would be on what is stored now; nothing was written (``commit`` "").
    dry_run: bool = False

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "program": self.program,
            "dry_run": self.dry_run,
            "commit": self.commit,
            "iteration": self.iteration,
            "status": self.status,
            "size": self.size,
            "max_bytes": self.max_bytes,
            "created": self.created,
            **self.changes,
            "compaction": self.compaction,
            "attempts": self.attempts,
        }


@dataclass
class CompactOutcome:
    """What ``compact`` did (or would do, with ``dry_run``) to one program."""

    program: str
    commit: str
    report: CompactionReport
    dry_run: bool
    #: The Machine State heading had drifted and was (or, with ``dry_run``, would be) restored.
    heading_restored: bool = False

    @property
    def changed(self) -> bool:
        """Whether anything was (or would be) written."""
        return self.report.changed or self.heading_restored


def compaction_policy(config: Config, *, aggressive: bool = False, now: datetime) -> CompactionPolicy:
    """The compaction policy the settings describe (``aggressive``: aggressive mode whatever the file's size)."""
    summarizer = None
    if config.summarizer.value:
        summarizer = command_summarizer(
            config.summarizer.value, timeout=config.summarizer_timeout.value, cap=SUMMARY_CAP
        )
    return CompactionPolicy(
        max_bytes=config.max_bytes.value,
        keep_recent=config.keep_recent.value,
        keep_recent_aggressive=config.aggressive_keep.value,
        aggressive_at=config.aggressive_at.value,
        low_water=min(0.6, config.aggressive_at.value),
        force_aggressive=aggressive,
        today=now.date(),
        summarizer=summarizer,
    )


def _policy_for(policy: CompactionPolicy, program: str, store: Store) -> CompactionPolicy:
    # Range lines point to where this store keeps the parts (repo-memory: _archive.perf.*.md), not a folder that
    # does not exist there.
    return replace(policy, program=program, archive_hint=store.archive_hint(program))


def _compaction_message(program: str, report: CompactionReport) -> str:
    folded = [m.label for m in report.moved if m.kind == "iteration"]
    numbers = sorted(int(n) for label in folded for n in re.findall(r"\d+", label)[:1])
    what = f"iterations {numbers[0]}–{numbers[-1]} to archive" if numbers else report.summary()
    return f"statefile: compact {program} — {what}"


#: A compaction function: :func:`statefile.policy.compaction.compact`, or one that also fits an outside limit
#: (repo-memory's push, :func:`statefile.app.ghaw.repo_memory_compactor`).
Compactor = Callable[[StateDocument, CompactionPolicy], CompactionResult]


def restore_heading(doc: StateDocument) -> StateDocument:
    """``doc`` with a drifted Machine State heading restored to the exact ``## ⚙️ Machine State`` (else ``doc``).

    Every write goes through this (record, compact, edit, the lesson commands, import): under any other heading
    the upstream scheduler does not find the table and treats the program as brand new.
    """
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


@dataclass(frozen=True)
class Recorded:
    """What one record did to the document: the iteration, what compaction moved, the Machine State changes people
    hear about (:func:`state_changes`), whether it created the program, and notes on inputs it did not use."""

    iteration: int
    report: CompactionReport
    changes: dict[str, Any]
    created: bool
    notes: tuple[str, ...] = ()
    archived_bytes: int = 0


def record_update(
    store: Store,
    program: str,
    request: RecordRequest,
    policy: CompactionPolicy,
    *,
    now: datetime,
    compactor: Compactor | None = None,
    create: bool = False,
    keep_issue: bool = False,
) -> Callable[[StateDocument | None], Change[Recorded | None]]:
    """The one record pipeline (``record`` and ``apply``): the update rules, compaction by policy, the heading
    restored, and a commit message that says what changed.  A pure function of the document, for ``Store.update``.

    ``create``: a missing program is created (else NotFoundError naming the closest programs).  ``keep_issue``:
    an Issue already recorded is kept, and the request's issue becomes a note (the agent's tool offers ``issue``
    only for a program whose issue is not recorded yet).  With ``request.marker`` (an item's identity), a document
    that already holds the entry carrying it is left as it is and the detail is ``None``: the item landed before.
    """
    hint = f"nothing was written — check the name, or pass --create to start '{program}'"
    scoped = _policy_for(policy, program, store)

    def apply(doc: StateDocument | None) -> Change[Recorded | None]:
        if doc is None and not create:
            raise missing_program(store, program, hint=hint)
        if doc is not None and request.marker and has_marker(doc.render(), request.marker):
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
        result = (compactor or compact)(recorded, scoped)
        document = restore_heading(result.document)
        changes = state_changes(before, document.machine_state)
        glyph = STATUS_GLYPHS.get(req.status, "•")
        body = change_lines(changes)
        if result.report.changed:
            body.append(result.report.summary())
        message = f"statefile: record iteration {number} of {program} ({glyph} {req.status})"
        if body:
            message += "\n\n" + "\n".join(body)
        if req.marker:
            message += f"\n\n{ITEM_TRAILER}: {req.marker}"  # git's trailer block: the message's last paragraph
        return Change(
            document,
            archive=result.archive,
            archive_label=f"compaction of {program}.md while recording iteration {number}",
            message=message,
            detail=Recorded(number, result.report, changes, doc is None, tuple(notes), utf8_size(result.archive)),
        )

    return apply


def record_iteration(
    store: Store,
    program: str,
    request: RecordRequest,
    policy: CompactionPolicy,
    *,
    now: datetime,
    compactor: Compactor | None = None,
    create: bool = False,
    dry_run: bool = False,
) -> RecordOutcome:
    """Apply the update rules for one iteration, compact by policy, and commit both in one atomic write.

    A program that does not exist is created only when ``create`` is true (``--create``, or the scheduler selected
    it); otherwise NotFoundError names the closest programs and nothing is written.  ``dry_run``: the same
    pipeline on what is stored now, and nothing written (a writer that gets in first changes what a real record
    then does, its iteration number included).
    """
    update = record_update(store, program, request, policy, now=now, compactor=compactor, create=create)
    if dry_run:
        would = update(store.read(program))
        assert would.detail is not None  # no marker: a record always makes an entry
        return RecordOutcome(
            program, "", would.detail.iteration, request.status, would.document.size, would.detail.report.as_dict(),
            0, store.max_bytes, would.detail.created, would.detail.changes, dry_run=True,
        )  # fmt: skip
    landed = store.update(program, update, f"statefile: record iteration of {program}")
    assert landed.detail is not None and landed.document is not None
    done = landed.detail
    return RecordOutcome(
        program,
        landed.commit or "",
        done.iteration,
        request.status,
        landed.document.size,
        done.report.as_dict(),
        landed.attempts,
        store.max_bytes,
        done.created,
        done.changes,
    )


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
        lines.append(
            "unpaused: an accepted iteration un-pauses the program, as the upstream prompt says"
            + (f" (the cleared pause reason was: {reason})" if reason else "")
        )
    if changes.get("paused_now"):
        lines.append(f"paused: {changes.get('pause_reason') or 'no reason given'}")
    if changes.get("completed_now"):
        lines.append(f"completed: {changes.get('completed_reason') or 'target reached'}")
    return lines


def init_program(store: Store, program: str, fields: dict[str, Any]) -> str:
    """Create ``{program}.md`` from the upstream template; an existing program is a conflict."""

    def create(doc: StateDocument | None) -> StateDocument:
        if doc is not None:
            raise ConflictError(f"program '{program}' already exists; use 'statefile show {program}' to see it")
        return parse(new_state_file(program, **fields))

    return store.update(program, create, f"statefile: init {program}").commit or ""


def compact_program(
    store: Store, program: str, policy: CompactionPolicy, *, dry_run: bool, compactor: Compactor | None = None
) -> CompactOutcome:
    """Compact one program by policy (or, with ``dry_run``, report what would move and change nothing).

    A drifted Machine State heading is restored even when there is nothing to compact.
    """
    policy = _policy_for(policy, program, store)
    run = compactor or compact
    if dry_run:
        doc = store.read(program)
        if doc is None:
            raise missing_program(store, program)
        result = run(doc, policy)
        restored = restore_heading(result.document) is not result.document
        return CompactOutcome(program, "", result.report, True, restored)

    def apply(doc: StateDocument | None) -> Change[tuple[CompactionReport, bool]]:
        if doc is None:
            raise missing_program(store, program)
        result = run(doc, policy)
        document = restore_heading(result.document)
        restored = document is not result.document
        if not result.report.changed and not restored:
            return Change(doc, detail=(result.report, False))  # the same document: nothing is written
        if not result.report.changed:
            message = f"statefile: restore the Machine State heading of {program}"
        else:
            message = _compaction_message(program, result.report) + f"\n\n{result.report.summary()}"
            if restored:
                message += "\nrestored the ⚙️ Machine State heading the scheduler looks for"
        return Change(
            document,
            archive=result.archive,
            archive_label=f"compaction of {program}.md",
            message=message,
            detail=(result.report, restored),
        )

    landed = store.update(program, apply, f"statefile: compact {program}")
    assert landed.detail is not None
    report, restored = landed.detail
    return CompactOutcome(program, landed.commit or "", report, False, restored)


def save_edit(store: Store, program: str, original: str, edited: str) -> str:
    """Commit a maintainer's edit, refusing if the file changed on the branch since it was opened.

    History entries and list items the edit took out go to the archive in the same commit (nothing is lost to a
    slip in the editor).
    """
    new_doc = parse(edited)
    removed = removed_by_edit(parse(original), new_doc)

    def apply(doc: StateDocument | None) -> Change[None]:
        current = doc.render() if doc is not None else ""
        if current != original:
            raise ConflictError(
                f"'{program}' changed on the branch while you were editing; your text was kept, edit again"
            )
        return Change(
            restore_heading(new_doc), archive=removed, archive_label=f"removed by a hand edit of {program}.md"
        )

    return store.update(program, apply, f"statefile: edit {program} by hand").commit or ""


@dataclass(frozen=True)
class RepairOutcome:
    """What ``repair`` did (or would do, with ``dry_run``) to one program: the fixes, what is left, the commit."""

    program: str
    commit: str
    result: RepairResult
    dry_run: bool
    #: Where the store keeps the program's archive parts (``archive/perf/``, repo-memory's ``_archive.perf.*.md``).
    archive: str = ""


def repair_program(store: Store, program: str, *, dry_run: bool) -> RepairOutcome:
    """Repair one program (:func:`statefile.policy.repair.repair`) in one commit, archiving what it removes."""
    if dry_run:
        doc = store.read(program)
        if doc is None:
            raise missing_program(store, program)
        hint = store.archive_hint(program)
        return RepairOutcome(program, "", repair(doc, program=program, archive=hint), True, hint)

    def apply(doc: StateDocument | None) -> Change[RepairResult]:
        if doc is None:
            raise missing_program(store, program)
        result = repair(doc, program=program, archive=store.archive_hint(program))
        if not result.changed:
            return Change(doc, detail=result)
        count = len(result.fixes)
        return Change(
            result.document,
            archive=result.archive,
            archive_label=f"repair of {program}.md",
            message=f"statefile: repair {program} — {count} fix{'es' if count != 1 else ''}\n\n"
            + "\n".join(f"- {fix}" for fix in result.fixes),
            detail=result,
        )

    landed = store.update(program, apply, f"statefile: repair {program}")
    assert landed.detail is not None
    commit = landed.commit or "" if landed.landed else ""
    return RepairOutcome(program, commit, landed.detail, False, store.archive_hint(program))
