"""The read side of the use cases: what commands that only look at the memory do, over a :class:`Store`.

Kept apart from :mod:`statefile.app.writing` so that the scheduler's pre-step (``report``, ``check``, ``list``)
loads no compaction or record rules: each import here is paid on every scheduled run.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import timezone
from typing import Any

from statefile.app.config import Config
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import InvalidDataError, NotFoundError, StatefileError
from statefile.integrations.autoloop import merge_report, program_report
from statefile.integrations.ghaw import glob_matches
from statefile.model.anomalies import history_gaps
from statefile.model.archive import find_iteration_in_parts
from statefile.model.document import StateDocument, parse, read_machine_state
from statefile.model.history import Iteration
from statefile.model.spans import spans_text
from statefile.numbers import budget_text, percent
from statefile.store import Store
from statefile.store.names import case_twins
from statefile.views.charts import metric_sparkline
from statefile.views.hints import CLI, Hints
from statefile.views.history import ProgramHistory, history_rows, state_events
from statefile.views.render import RenderedView, render_view
from statefile.views.search import Hit, search
from statefile.views.status import count_archived_entries, pressure

# Warning codes that make ``check`` fail: the scheduler cannot read the program's state correctly.
CHECK_ERRORS = frozenset(
    {"empty", "missing-machine-state", "machine-state-heading", "empty-machine-state", "unclosed-block",
     "implausible-machine-state"}  # record refuses to go on from these: the gate fails first
)  # fmt: skip


@dataclass
class CheckOutcome:
    """One program's (or file's) check: its size, errors (which fail the check) and warnings."""

    name: str
    size: int
    max_bytes: int
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Whether the outcome is one file's, with a size worth showing (not a check of names or of a push).
    sized: bool = True
    #: What a person may want to know that needs nothing done (files the push leaves as they are).
    notes: list[str] = field(default_factory=list)
    #: Warnings a maintainer accepted in the file (``<!-- statefile: gap 12–40 acknowledged -->``): shown, not warned.
    acknowledged: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No errors."""
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "ok": self.ok,
            "size": self.size,
            "max_bytes": self.max_bytes,
            "errors": self.errors,
            "warnings": self.warnings,
            "notes": self.notes,
            "acknowledged": self.acknowledged,
        }


def state_files(store: Store, globs: tuple[str, ...] = ("*.md",)) -> dict[str, int]:
    """Programs whose ``{name}.md`` matches one of ``globs`` (repo-memory's file-glob, read with gh-aw's own
    semantics: ``*`` never crosses ``/``, ``?`` and ``[`` are literal), name → bytes."""

    return {name: size for name, size in store.programs().items() if glob_matches(f"{name}.md", globs)}


def unreadable_files(store: Store, globs: tuple[str, ...] = ("*.md",)) -> dict[str, str]:
    """Entries matching ``globs`` that look like state files but cannot be read (a symlink, a FIFO, a missing
    object…): name → why.  Commands that go over every program report them as errors, never skip them."""
    return {name: why for name, why in store.unreadable().items() if glob_matches(f"{name}.md", globs)}


def check_document(name: str, doc: StateDocument, max_bytes: int) -> CheckOutcome:
    """Check one parsed file: within budget and readable by the scheduler (errors), plus its warnings."""
    outcome = CheckOutcome(name, doc.size, max_bytes)
    if doc.size > max_bytes:
        outcome.errors.append(
            f"over budget: {budget_text(doc.size, max_bytes)}; run 'statefile compact {name}' to fold old entries"
        )
    for warning in doc.warnings:
        (outcome.errors if warning.code in CHECK_ERRORS else outcome.warnings).append(str(warning))
    _, acknowledged = history_gaps(doc)
    if acknowledged:
        outcome.acknowledged.append(f"history-gap: iterations {spans_text(acknowledged)} (acknowledged in the file)")
    return outcome


def check_programs(store: Store, programs: list[str] | None, globs: tuple[str, ...] = ("*.md",)) -> list[CheckOutcome]:
    """Check the named programs (all when ``None``); unreadable files are errors, not exceptions."""

    sizes = state_files(store, globs)
    names = programs if programs else sorted(sizes)
    outcomes: list[CheckOutcome] = []
    if not programs:
        for name, why in unreadable_files(store, globs).items():
            outcomes.append(CheckOutcome(name, 0, store.max_bytes, errors=[why]))
        try:  # the shared lessons are no program, but a file every run reads: a link or a FIFO there is damage too
            store.read_text(SHARED_PROGRAM)
        except StatefileError as exc:
            outcomes.append(CheckOutcome(SHARED_PROGRAM, 0, store.max_bytes, errors=[str(exc)]))
        outcomes.extend(_case_twins(store, globs))
    for name in names:
        try:
            doc = store.read(name)
        except StatefileError as exc:
            outcomes.append(CheckOutcome(name, sizes.get(name, 0), store.max_bytes, errors=[str(exc)]))
            continue
        if doc is None:
            outcomes.append(CheckOutcome(name, 0, store.max_bytes, errors=[f"no program '{name}'"]))
            continue
        outcome = check_document(name, doc, store.max_bytes)
        outcome.errors.extend(_archive_errors(store, name))
        outcomes.append(outcome)
    return outcomes


def _case_twins(store: Store, globs: tuple[str, ...]) -> list[CheckOutcome]:
    """State files or archive folders whose names differ only in case (``PERF.md`` and ``perf.md``, ``Archive/``
    and ``archive/``): one file or folder on macOS and Windows, so a checkout there loses one of them; ``import``
    and ``init`` refuse to make them.  Other files on the branch (a README, a workflow) are not statefile's to judge.
    """
    try:
        paths = store.paths()
    except StatefileError:
        return []  # a store that cannot be listed (a link on the way) fails the check on what reading it found

    def ours(name: str) -> bool:
        name = name.rstrip("/")
        return name.lower().split("/")[0] == "archive" or glob_matches(name, globs)

    return [
        CheckOutcome(name, 0, store.max_bytes, sized=False, errors=[
            f"{name} and {other} differ only in case: a checkout on macOS or Windows holds only one of them; keep "
            "one (merge what the other holds into it) and delete the other"
        ])
        for name, other in case_twins(paths)
        if ours(name) or ours(other)
    ]  # fmt: skip


def _archive_errors(store: Store, program: str) -> list[str]:
    """Why parts of ``program``'s archive cannot be read back (a link, a FIFO, not UTF-8…): what ``expand`` and
    ``search`` would fail on later, found by the gate instead."""
    try:
        parts = store.archive_parts(program)
    except StatefileError as exc:
        return [str(exc)]
    errors = []
    for part in parts:
        try:
            store.read_archive(program, part)
        except StatefileError as exc:
            errors.append(str(exc))
    return errors


def list_programs(store: Store, globs: tuple[str, ...] = ("*.md",)) -> list[dict[str, Any]]:
    """Every program with size, % of budget, iteration count, last run and status."""

    rows = []
    files = sorted(state_files(store, globs).items())
    errors: dict[str, StatefileError] = {}
    texts = store.read_texts([name for name, _ in files], errors=errors)
    for name, size in files:
        if name in errors:
            # One unreadable file must not hide the others: it is listed as such.
            rows.append(_unreadable_row(name, size, store.max_bytes, str(errors[name])))
            continue
        text = texts.get(name)
        state = read_machine_state(text) if text is not None else {}
        if state.get("completed"):
            status = "completed"
        elif state.get("paused"):
            status = "paused"
        else:
            recent = state.get("recent_statuses") or []
            status = recent[-1] if recent else "new"
        rows.append(
            {
                "program": name,
                "size": size,
                "percent_of_budget": percent(size, store.max_bytes),
                "iteration_count": state.get("iteration_count"),
                "last_run": state.get("last_run"),
                "best_metric": state.get("best_metric"),
                "status": status,
            }
        )
    for name, why in unreadable_files(store, globs).items():
        rows.append(_unreadable_row(name, 0, store.max_bytes, why))
    rows.sort(key=lambda row: str(row["program"]))
    return rows


def list_trends(store: Store, programs: list[str], width: int = 12) -> dict[str, str]:
    """A metric sparkline per program from its file alone (the archive is not read: this is a glance)."""
    texts = store.read_texts(programs, errors={})
    return {
        name: metric_sparkline(history_rows(parse(text), name), width)
        for name, text in texts.items()
        if text is not None
    }


def _unreadable_row(name: str, size: int, max_bytes: int, error: str) -> dict[str, Any]:
    return {
        "program": name,
        "size": size,
        "percent_of_budget": percent(size, max_bytes),
        "iteration_count": None,
        "last_run": None,
        "best_metric": None,
        "status": "unreadable",
        "error": error,
    }


def expand_iteration(store: Store, program: str, number: int) -> tuple[str, str]:
    """The verbatim text of iteration ``number``: ``(where, text)`` from the file itself or its archive."""

    doc = store.read(program)
    if doc is None:
        raise missing_program(store, program)
    for entry in doc.history:
        if isinstance(entry, Iteration) and number in entry.covers:
            return f"{program}.md", entry.raw
    parts = store.archive_part_paths(program)  # every layout: a branch both gh-aw paths wrote holds two
    texts: dict[int, str] = {}

    def read(index: int) -> str:  # newest first, each part once, only as far as needed
        if index not in texts:
            texts[index] = store.read_path(parts[index])
        return texts[index]

    found = find_iteration_in_parts(read, len(parts), number)
    if found is not None:
        return parts[found[0]], found[1]
    ranges = [e for e in doc.ranges if number in e.covers]
    hint = f"; it is summarized in '{ranges[0].heading.strip('# ')}'" if ranges else ""
    raise NotFoundError(f"iteration {number} of '{program}' is not in the file or its archive{hint}")


def archive_texts(store: Store, program: str) -> list[tuple[str, str]]:
    """``(path, text)`` of every archive part of ``program`` in every layout (:meth:`Store.archive_part_paths`),
    oldest first."""
    return [(path, store.read_path(path)) for path in store.archive_part_paths(program)]


def read_program(store: Store, program: str) -> StateDocument:
    """The document of an existing ``program``; a missing one is a not-found error naming the fix."""
    doc = store.read(program)
    if doc is None:
        raise missing_program(store, program)
    return doc


def program_status(
    store: Store, program: str, config: Config
) -> tuple[dict[str, Any], StateDocument, list[tuple[str, str]]]:
    """The pressure report of ``program`` (:func:`statefile.views.status.pressure`), its document and archive
    parts (``(name, text)``, oldest first) for callers that show more."""
    doc = read_program(store, program)
    texts = archive_texts(store, program)
    archived = count_archived_entries([text for _, text in texts])
    report = pressure(
        doc,
        max_bytes=store.max_bytes,
        archived_entries=archived,
        archive_parts=len(texts),
        # The next record's compaction reads these settings; status must predict with the same values.
        aggressive_at=config.aggressive_at.value,
        keep_aggressive=config.aggressive_keep.value,
    )
    return report, doc, texts


def render_program(store: Store, program: str, *, budget: int, level: str, hints: Hints = CLI) -> RenderedView:
    """The budgeted view of ``program`` an agent reads, with the shared lessons of ``_shared.md``; ``hints`` names
    what shows the rest (commands, or a gh-aw agent's tool calls)."""
    doc = read_program(store, program)
    shared = store.read(SHARED_PROGRAM) if program != SHARED_PROGRAM else None
    return render_view(doc, program=program, budget=budget, level=level, shared=shared, hints=hints)


def search_memory(store: Store, query: str, *, program: str | None, limit: int) -> list[Hit]:
    """Search every program's file and archive and the shared lessons (see :mod:`statefile.views.search`)."""
    if program is not None:
        read_program(store, program)  # a typo is "not found", not "no matches"
    return search(store.read_all(), query, program=program, limit=limit)


def program_history(store: Store, program: str) -> ProgramHistory:
    """Every iteration of ``program`` its file and archive know, oldest first (see :mod:`statefile.views.history`)."""
    return history_rows(read_program(store, program), program, archive_texts(store, program))


_ITERATION_IN_MESSAGE = re.compile(r"iteration (\d+)")


def program_log(store: Store, program: str, limit: int, *, patch: bool = False) -> list[dict[str, Any]]:
    """The branch history of ``{program}.md``: when (and in UTC), who, which iteration, what changed (commit
    subject) and, with ``patch``, the unified diff of the file in that commit."""
    if store.read_text(program) is None and not store.log(program, 1):
        raise missing_program(store, program)
    patches = store.log_patches(program, limit) if patch else {}
    # Pauses, un-pauses, completion and best-metric changes: the Machine State before and after each commit, read
    # for the same -n commits (one more git log and one batch read).  The commit that created the file starts
    # its state rather than changing one, and one that deleted it has none left: no events for either.
    states = {
        commit: (read_machine_state(old), read_machine_state(new))
        for commit, (old, new) in store.log_texts(program, limit).items()
        if old is not None and new is not None
    }
    rows = []
    for entry in store.log(program, limit):
        subject = entry.message.splitlines()[0] if entry.message else ""
        match = _ITERATION_IN_MESSAGE.search(subject)
        when = entry.when if entry.when.tzinfo is not None else entry.when.replace(tzinfo=timezone.utc)
        row: dict[str, Any] = {
            "commit": entry.commit,
            "when": entry.when.isoformat(),
            "when_utc": when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "author": entry.author,
            "iteration": int(match.group(1)) if match else None,
            "message": subject,
            "events": state_events(*states[entry.commit]) if entry.commit in states else [],
        }
        if patch:
            row["body"] = entry.message.partition("\n")[2].strip()
            row["patch"] = patches.get(entry.commit, "")
        rows.append(row)
    return rows


def iteration_events(store: Store, program: str, limit: int) -> list[dict[str, Any]]:
    """The state events (:func:`~statefile.views.history.state_events`) of the recorded iterations among the newest
    ``limit`` commits, oldest first: ``{"iteration", "commit", "when_utc", "event", "reason", "text", …}``."""
    return [
        {"iteration": row["iteration"], "commit": row["commit"], "when_utc": row["when_utc"], **event}
        for row in reversed(program_log(store, program, limit))
        if row["iteration"] is not None
        for event in row["events"]
    ]


def state_began(store: Store, program: str, event: str, limit: int = 50) -> dict[str, Any] | None:
    """The commit among the newest ``limit`` that put ``program`` in its current ``event`` state (``paused`` or
    ``completed``): ``{"commit", "when_utc", "iteration", "reason"}``, or ``None`` when those commits do not show
    it (a folder has no history; an older pause is beyond the bound, which keeps ``show`` fast)."""
    undone = {"paused": "unpaused", "completed": "uncompleted"}[event]
    for row in program_log(store, program, limit):
        kinds = {e["event"]: e for e in row["events"]}
        if event in kinds:
            return {key: row[key] for key in ("commit", "when_utc", "iteration")} | {"reason": kinds[event]["reason"]}
        if undone in kinds:
            return None  # it was undone since, so the state now began in a commit the log cannot tell apart
    return None


def build_report(
    store: Store,
    existing: dict[str, Any],
    *,
    program: str | None,
    all_programs: bool,
    aggressive_at: float,
    globs: tuple[str, ...] = ("*.md",),
) -> dict[str, Any]:
    """The scheduler's autoloop.json with statefile's sizes merged in (every existing key kept)."""

    sizes = state_files(store, globs)
    selected = program if program is not None else existing.get("selected")
    broken = unreadable_files(store, globs)
    if program is not None and program not in sizes:
        if program in broken:
            raise InvalidDataError(broken[program])
        raise missing_program(store, program)
    names = sorted(sizes) if all_programs or (program is None and not selected) else []
    if isinstance(selected, str) and selected not in names:
        names.append(selected)

    # One batch read at one tip, and only each file's Machine State: the scheduler's view of 1000 programs.
    errors: dict[str, StatefileError] = {}
    texts = store.read_texts([name for name in names if name in sizes], errors=errors)
    entries: dict[str, dict[str, Any]] = {}
    for name in names:
        if name in errors:
            if name == selected:
                raise errors[name]  # the scheduler's own program: fail loudly rather than report it as healthy
            entries[name] = {**program_report(name, sizes[name], store.max_bytes, None, aggressive_at=aggressive_at),
                             "error": str(errors[name])}  # fmt: skip
            continue
        text = texts.get(name)
        state = read_machine_state(text) if text is not None else {}
        entries[name] = program_report(
            name, sizes.get(name, 0), store.max_bytes, None, aggressive_at=aggressive_at, state=state
        )
    for name, why in broken.items():
        if name == selected:
            raise InvalidDataError(why)  # the scheduler's own program: fail loudly rather than report it as healthy
        if all_programs or (program is None and not selected):
            entries[name] = {**program_report(name, 0, store.max_bytes, None, aggressive_at=aggressive_at),
                             "error": why}  # fmt: skip
    return merge_report(existing, entries, selected if isinstance(selected, str) else None)


def closest_programs(store: Store, program: str) -> str:
    """`` (did you mean 'perf'?)`` with the closest program names in the store, or "" when none is close.

    Close is a near spelling (difflib) or the name cut short at a word (``perf`` for ``perf-comparison``): people
    shorten long program names, which difflib alone does not see.
    """
    names = sorted(store.programs())
    close = difflib.get_close_matches(program, names, n=3, cutoff=0.6)
    wanted = program.casefold()
    words = [n for n in names if n not in close and any(n.casefold().startswith(wanted + sep) for sep in "-_.")]
    close = (close + words)[:3]
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def missing_program(store: Store, program: str, *, hint: str = "'statefile list' shows the programs") -> NotFoundError:
    """The error for a program that does not exist: the closest names in the store, and what to do."""
    return NotFoundError(f"no program '{program}'{closest_programs(store, program)}; {hint}")
