"""The write side of the use cases: record, init, compact and edit, each one atomic write through a :class:`Store`.

Update functions handed to ``Store.update`` are pure functions of the document they get, because the store calls
them again when a concurrent writer got in first.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from statefile.app.config import Config
from statefile.errors import ConflictError, NotFoundError
from statefile.integrations.summarizer import command_summarizer
from statefile.model.document import StateDocument, parse
from statefile.model.history import STATUS_GLYPHS
from statefile.model.template import new_state_file
from statefile.policy.compaction import CompactionPolicy, CompactionReport, CompactionResult, compact
from statefile.policy.edits import removed_by_edit
from statefile.policy.repair import RepairResult, repair
from statefile.policy.rules import RecordRequest, record
from statefile.store import Change, Store


@dataclass(frozen=True)
class RecordOutcome:
    """What ``record`` did: the commit, the iteration number and status, and what compaction moved."""

    program: str
    commit: str
    iteration: int
    status: str
    size: int
    compaction: dict[str, Any]
    #: How many times the write was tried (more than 1 when concurrent writers got in first).
    attempts: int = 1


@dataclass
class CompactOutcome:
    """What ``compact`` did (or would do, with ``dry_run``) to one program."""

    program: str
    commit: str
    report: CompactionReport
    dry_run: bool


def compaction_policy(config: Config, *, aggressive: bool = False, now: datetime) -> CompactionPolicy:
    """The compaction policy the settings describe (``aggressive``: aggressive mode whatever the file's size)."""
    summarizer = None
    if config.summarizer.value:
        summarizer = command_summarizer(config.summarizer.value, timeout=config.summarizer_timeout.value)
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


def _policy_for(policy: CompactionPolicy, program: str) -> CompactionPolicy:
    return replace(policy, program=program)


def _compaction_message(program: str, report: CompactionReport) -> str:
    folded = [m.label for m in report.moved if m.kind == "iteration"]
    numbers = sorted(int(n) for label in folded for n in re.findall(r"\d+", label)[:1])
    what = f"iterations {numbers[0]}–{numbers[-1]} to archive" if numbers else report.summary()
    return f"statefile: compact {program} — {what}"


#: A compaction function: :func:`statefile.policy.compaction.compact`, or one that also fits an outside limit
#: (repo-memory's push, :func:`statefile.app.ghaw.repo_memory_compactor`).
Compactor = Callable[[StateDocument, CompactionPolicy], CompactionResult]


def record_iteration(
    store: Store,
    program: str,
    request: RecordRequest,
    policy: CompactionPolicy,
    *,
    now: datetime,
    compactor: Compactor | None = None,
) -> RecordOutcome:
    """Apply the update rules for one iteration, compact by policy, and commit both in one atomic write."""

    def apply(doc: StateDocument | None) -> Change[tuple[int, CompactionReport]]:
        recorded = record(doc, request, program=program, now=now)
        number = recorded.history[0].covers[0] if recorded.history else 0
        result = (compactor or compact)(recorded, _policy_for(policy, program))
        glyph = STATUS_GLYPHS.get(request.status, "•")
        message = f"statefile: record iteration {number} of {program} ({glyph} {request.status})"
        if result.report.changed:
            message += f"\n\n{result.report.summary()}"
        return Change(
            result.document,
            archive=result.archive,
            archive_label=f"compaction of {program}.md while recording iteration {number}",
            message=message,
            detail=(number, result.report),  # the store hands back the detail of the call that landed
        )

    landed = store.update(program, apply, f"statefile: record iteration of {program}")
    assert landed.detail is not None and landed.document is not None
    number, report = landed.detail
    size = landed.document.size
    return RecordOutcome(program, landed.commit or "", number, request.status, size, report.as_dict(), landed.attempts)


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
    """Compact one program by policy (or, with ``dry_run``, report what would move and change nothing)."""
    policy = _policy_for(policy, program)
    run = compactor or compact
    if dry_run:
        doc = store.read(program)
        if doc is None:
            raise NotFoundError(f"no program '{program}' in {store}; 'statefile list' shows the programs")
        result = run(doc, policy)
        return CompactOutcome(program, "", result.report, True)

    def apply(doc: StateDocument | None) -> Change[CompactionReport]:
        if doc is None:
            raise NotFoundError(f"no program '{program}' in {store}; 'statefile list' shows the programs")
        result = run(doc, policy)
        if not result.report.changed:
            return Change(doc, detail=result.report)  # the same document: nothing is written
        return Change(
            result.document,
            archive=result.archive,
            archive_label=f"compaction of {program}.md",
            message=_compaction_message(program, result.report) + f"\n\n{result.report.summary()}",
            detail=result.report,
        )

    landed = store.update(program, apply, f"statefile: compact {program}")
    assert landed.detail is not None
    return CompactOutcome(program, landed.commit or "", landed.detail, False)


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
        return Change(new_doc, archive=removed, archive_label=f"removed by a hand edit of {program}.md")

    return store.update(program, apply, f"statefile: edit {program} by hand").commit or ""


@dataclass(frozen=True)
class RepairOutcome:
    """What ``repair`` did (or would do, with ``dry_run``) to one program: the fixes, what is left, the commit."""

    program: str
    commit: str
    result: RepairResult
    dry_run: bool


def repair_program(store: Store, program: str, *, dry_run: bool) -> RepairOutcome:
    """Repair one program (:func:`statefile.policy.repair.repair`) in one commit, archiving what it removes."""
    if dry_run:
        doc = store.read(program)
        if doc is None:
            raise NotFoundError(f"no program '{program}'; 'statefile list' shows the programs")
        return RepairOutcome(program, "", repair(doc, program=program), True)

    def apply(doc: StateDocument | None) -> Change[RepairResult]:
        if doc is None:
            raise NotFoundError(f"no program '{program}'; 'statefile list' shows the programs")
        result = repair(doc, program=program)
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
    return RepairOutcome(program, landed.commit or "" if landed.landed else "", landed.detail, False)
