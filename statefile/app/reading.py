"""The read side of the use cases: what commands that only look at the memory do, over a :class:`Store`.

Apart from :mod:`statefile.app.writing` so that the scheduler's pre-step (``report``, ``check``, ``list``) loads no
compaction or record rules.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timezone
from pathlib import Path
from typing import Any

from statefile.app.config import Config
from statefile.app.context import AppContext
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import InvalidDataError, NotFoundError, StatefileError, UsageError
from statefile.integrations.autoloop import merge_report, program_report, read_json_object, write_json_atomic
from statefile.integrations.ghaw import glob_matches
from statefile.model.anomalies import history_gaps
from statefile.model.archive import find_iteration_in_parts
from statefile.model.document import StateDocument, parse, read_machine_state
from statefile.model.history import Iteration
from statefile.model.spans import spans_text
from statefile.numbers import budget_text, percent
from statefile.store import Store
from statefile.store.files import read_state_file
from statefile.store.names import case_twins
from statefile.views.charts import metric_sparkline, trend_line
from statefile.views.hints import CLI, Hints
from statefile.views.history import ProgramHistory, history_rows, state_events
from statefile.views.render import RenderedView, render_view
from statefile.views.search import Hit, search
from statefile.views.status import count_archived_entries, pressure
from statefile.views.summary import step_summary

# Warning codes that fail ``check``: the scheduler cannot read the state (record refuses to go on from them too).
CHECK_ERRORS = frozenset(
    {"empty", "missing-machine-state", "machine-state-heading", "empty-machine-state", "unclosed-block",
     "implausible-machine-state"}
)  # fmt: skip


@dataclass
class CheckOutcome:
    """One program's (or file's) check: errors fail it; notes need nothing done; ``sized``: a file's, sized."""

    name: str
    size: int
    max_bytes: int
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sized: bool = True
    notes: list[str] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No errors."""
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        keys = ("name", "ok", "size", "max_bytes", "errors", "warnings", "notes", "acknowledged")
        return {key: getattr(self, key) for key in keys}


def state_files(store: Store, globs: tuple[str, ...] = ("*.md",)) -> dict[str, int]:
    """Programs whose ``{name}.md`` matches one of ``globs`` (repo-memory's file-glob), name → bytes."""
    return {name: size for name, size in store.programs().items() if glob_matches(f"{name}.md", globs)}


def unreadable_files(store: Store, globs: tuple[str, ...] = ("*.md",)) -> dict[str, str]:
    """State files matching ``globs`` that cannot be read (a symlink, a FIFO…), name → why: errors, never skipped."""
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
    outcomes: list[CheckOutcome] = []
    if not programs:
        outcomes += [
            CheckOutcome(name, 0, store.max_bytes, errors=[why]) for name, why in unreadable_files(store, globs).items()
        ]
        try:  # the shared lessons are no program, but a file every run reads: a link or a FIFO there is damage too
            store.read_text(SHARED_PROGRAM)
        except StatefileError as exc:
            outcomes.append(CheckOutcome(SHARED_PROGRAM, 0, store.max_bytes, errors=[str(exc)]))
        outcomes += _case_twins(store, globs)
    for name in programs or sorted(sizes):
        try:
            doc = store.read(name)
        except StatefileError as exc:
            outcomes.append(CheckOutcome(name, sizes.get(name, 0), store.max_bytes, errors=[str(exc)]))
            continue
        if doc is None:
            outcomes.append(CheckOutcome(name, 0, store.max_bytes, errors=[f"no program '{name}'"]))
            continue
        outcomes.append(check_document(name, doc, store.max_bytes))
        outcomes[-1].errors.extend(_archive_errors(store, name))
    return outcomes


def _archive_errors(store: Store, program: str) -> list[str]:
    """What ``expand`` and ``search`` would fail on later in the archive (a link, not UTF-8…), found by the gate."""
    errors = []
    try:
        for part in store.archive_parts(program):
            try:
                store.read_archive(program, part)
            except StatefileError as exc:
                errors.append(str(exc))
    except StatefileError as exc:
        errors.append(str(exc))
    return errors


def _case_twins(store: Store, globs: tuple[str, ...]) -> list[CheckOutcome]:
    """Memory files or archive folders whose names differ only in case: a checkout on macOS or Windows loses one."""
    try:
        paths = store.paths()
    except StatefileError:
        return []  # a store that cannot be listed fails the check on what reading it found

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


def is_path_argument(arg: str) -> bool:
    """Whether a command argument names a file rather than a program (it has a path separator or ends in .md)."""
    return arg.endswith(".md") or "/" in arg or os.sep in arg


def describe_target(app: AppContext, target: str) -> dict[str, Any]:
    """``show``'s data on a program or a state file by path, with the commit that paused (or completed) a program
    when it is near in the branch history (a file has none)."""
    on_disk = is_path_argument(target)
    doc = read_state_file(Path(target), app.config().max_bytes.value) if on_disk else read_program(app.reader(), target)
    kinds = Counter(entry.kind for entry in doc.history)
    info: dict[str, Any] = {
        "size_bytes": doc.size,
        "sections": [{"kind": s.kind, "title": s.title, "line": s.start + 1, "bytes": s.size} for s in doc.sections],
        "machine_state": doc.machine_state,
        "history": {
            "iterations": kinds["iteration"],
            "ranges": kinds["range"],
            "other": len(doc.history) - kinds["iteration"] - kinds["range"],
            "highest_iteration": doc.highest_iteration,
            "newest": doc.history[0].heading if doc.history else None,
        },
        "warnings": [str(w) for w in doc.warnings],
    }
    for event, reason in (("paused", "pause_reason"), ("completed", "completed_reason")):
        if doc.machine_state.get(event):
            since = None if on_disk else state_began(app.reader(), target, event)
            info[event] = {"reason": doc.machine_state.get(reason), "since": since}
    return info


def check_targets(app: AppContext, targets: Sequence[str]) -> list[CheckOutcome]:
    """``check``'s outcomes: state files by path, the named programs (all of them when no name is given) and, with
    repo-memory, what its push would drop or refuse (file-glob, max-file-size, max-file-count, max-patch-size)."""
    files = [t for t in targets if is_path_argument(t)]
    programs = [t for t in targets if not is_path_argument(t)]
    limit = int(app.config().max_bytes.value)
    outcomes: list[CheckOutcome] = []
    for name in files:
        try:
            outcomes.append(check_document(name, read_state_file(Path(name), limit), limit))
        except StatefileError as exc:
            outcomes.append(CheckOutcome(name, 0, limit, errors=[str(exc)]))
    if programs or not files:
        outcomes.extend(check_programs(app.reader(require_branch=False), programs or None, app.globs))
    if app.repo_memory:
        memory = app.memory_folder()
        found = memory.problems(programs or sorted(app.store().programs()))
        outcomes.append(CheckOutcome(f"repo-memory push ({memory.folder})", 0, 1, sized=False, errors=found["error"],
                                     warnings=found["warning"], notes=found["info"]))  # fmt: skip
    return outcomes


def list_programs(store: Store, globs: tuple[str, ...] = ("*.md",)) -> list[dict[str, Any]]:
    """Every program with size, % of budget, iteration count, last run and status, by name."""
    rows = []
    files = state_files(store, globs)
    errors: dict[str, StatefileError] = {}
    texts = store.read_texts(sorted(files), errors=errors)
    broken = {name: str(error) for name, error in errors.items()} | unreadable_files(store, globs)
    for name in sorted({*files, *broken}):
        text = None if name in broken else texts.get(name)
        state = read_machine_state(text) if text is not None else {}
        halted = "completed" if state.get("completed") else "paused" if state.get("paused") else None
        # One unreadable file must not hide the others.
        status = "unreadable" if name in broken else halted or (state.get("recent_statuses") or ["new"])[-1]
        size = files.get(name, 0)
        row = {"program": name, "size": size, "percent_of_budget": percent(size, store.max_bytes)}
        rows.append(row | {key: state.get(key) for key in ("iteration_count", "last_run", "best_metric")}
                    | {"status": status} | ({"error": broken[name]} if name in broken else {}))  # fmt: skip
    return rows


def list_trends(store: Store, programs: list[str], width: int = 12) -> dict[str, str]:
    """A metric sparkline per program from its file alone (the archive is not read: this is a glance)."""
    texts = store.read_texts(programs, errors={})
    return {
        name: metric_sparkline(history_rows(parse(text), name), width)
        for name, text in texts.items()
        if text is not None
    }


@dataclass(frozen=True)
class StatusReport:
    """Pressure reports by program, why the unreadable ones cannot be read, and trend lines."""

    reports: dict[str, dict[str, Any]]
    unreadable: dict[str, str]
    trends: dict[str, str]


def all_status(
    store: Store, program: str | None, config: Config, globs: tuple[str, ...], *, trends: bool = False
) -> StatusReport:
    """The pressure of ``program``, or of every program (one that cannot be read is listed as such), with metric
    trend lines when ``trends``."""
    report = StatusReport({}, {} if program else unreadable_files(store, globs), {})
    for name in [program] if program else sorted(state_files(store, globs)):
        try:
            doc = read_program(store, name)
            texts = archive_texts(store, name)
            # The next record's compaction reads these settings: status predicts with the same values.
            report.reports[name] = pressure(
                doc,
                max_bytes=store.max_bytes,
                archived_entries=count_archived_entries([text for _, text in texts]),
                archive_parts=len(texts),
                aggressive_at=config.aggressive_at.value,
                keep_aggressive=config.aggressive_keep.value,
            )
        except StatefileError as exc:
            if program:
                raise
            report.unreadable[name] = str(exc)
            continue
        if trends:
            report.trends[name] = trend_line(history_rows(doc, name, texts))
    return report


def memory_summary(store: Store, programs: Sequence[str], max_charts: int, globs: tuple[str, ...]) -> tuple[str, int]:
    """The summary of ``programs`` (all when none), charting the most recently run, and how many it lists."""
    rows = list_programs(store, globs)
    if programs:
        known = {str(r["program"]) for r in rows}
        for name in programs:
            if name not in known:
                raise missing_program(store, name)
        rows = [r for r in rows if r["program"] in programs]
    readable = [r for r in rows if r.get("status") != "unreadable"]
    recent = sorted(readable, key=lambda r: (str(r.get("last_run") or ""), str(r["program"])), reverse=True)
    histories = {str(r["program"]): program_history(store, str(r["program"])) for r in recent[:max_charts]}
    omitted = len(readable) - len(histories)
    return step_summary(rows, histories, max_bytes=store.max_bytes, omitted_charts=omitted), len(rows)


def expand_iteration(store: Store, program: str, number: int) -> tuple[str, str]:
    """The verbatim text of iteration ``number``: ``(where, text)`` from the file itself or its archive."""
    doc = read_program(store, program)
    for entry in doc.history:
        if isinstance(entry, Iteration) and number in entry.covers:
            return f"{program}.md", entry.raw
    parts = store.archive_part_paths(program)  # every layout: a branch both gh-aw paths wrote holds two
    # Newest first, each part once, only as far as needed.
    found = find_iteration_in_parts(functools.cache(lambda index: store.read_path(parts[index])), len(parts), number)
    if found is not None:
        return parts[found[0]], found[1]
    ranges = [e for e in doc.ranges if number in e.covers]
    hint = f"; it is summarized in '{ranges[0].heading.strip('# ')}'" if ranges else ""
    raise NotFoundError(f"iteration {number} of '{program}' is not in the file or its archive{hint}")


def archive_texts(store: Store, program: str) -> list[tuple[str, str]]:
    """``(path, text)`` of every archive part of ``program`` in every layout, oldest first."""
    return [(path, store.read_path(path)) for path in store.archive_part_paths(program)]


def read_program(store: Store, program: str) -> StateDocument:
    """The document of an existing ``program``; a missing one is a not-found error naming the fix."""
    doc = store.read(program)
    if doc is None:
        raise missing_program(store, program)
    return doc


def render_program(store: Store, program: str, *, budget: int, level: str, hints: Hints = CLI) -> RenderedView:
    """The budgeted view of ``program`` with the shared lessons; ``hints`` names what shows the rest."""
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


def program_log(store: Store, program: str, limit: int, *, patch: bool = False) -> list[dict[str, Any]]:
    """The commits of ``{program}.md``: when, who, which iteration, subject, state events (``patch``: and diffs)."""
    if store.read_text(program) is None and not store.log(program, 1):
        raise missing_program(store, program)
    patches = store.log_patches(program, limit) if patch else {}
    # The Machine State before and after each commit, for its events; the commits that created or deleted the file
    # have none.
    states = {
        commit: (read_machine_state(old), read_machine_state(new))
        for commit, (old, new) in store.log_texts(program, limit).items()
        if old is not None and new is not None
    }
    rows = []
    for entry in store.log(program, limit):
        subject = entry.message.splitlines()[0] if entry.message else ""
        match = re.search(r"iteration (\d+)", subject)
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
    """The state events of the recorded iterations among the newest ``limit`` commits, oldest first."""
    return [
        {"iteration": row["iteration"], "commit": row["commit"], "when_utc": row["when_utc"], **event}
        for row in reversed(program_log(store, program, limit))
        if row["iteration"] is not None
        for event in row["events"]
    ]


def state_began(store: Store, program: str, event: str, limit: int = 50) -> dict[str, Any] | None:
    """The commit among the newest ``limit`` that put ``program`` in its ``event`` state (``paused``, ``completed``),
    or ``None`` (a folder has no history; the bound keeps ``show`` fast)."""
    undone = {"paused": "unpaused", "completed": "uncompleted"}[event]
    for row in program_log(store, program, limit):
        kinds = {e["event"]: e for e in row["events"]}
        if event in kinds:
            return {key: row[key] for key in ("commit", "when_utc", "iteration")} | {"reason": kinds[event]["reason"]}
        if undone in kinds:
            return None  # undone since: the state now began in a commit the log cannot tell apart
    return None


def build_report(app: AppContext, out: Path | None, *, program: str | None, all_programs: bool) -> dict[str, Any]:
    """The scheduler's autoloop.json ``out`` (it must exist; written atomically) with statefile's sizes merged in
    (every existing key kept); without ``out``, the merge into an empty one."""
    if program and all_programs:
        raise UsageError("give --program or --all, not both")
    if out is not None and not out.is_file():
        # /dev/null or a folder is no autoloop.json; a mistyped path must not leave a file the scheduler never reads.
        exists = out.exists()
        what = "not a regular file" if exists else "no such file"
        fix = "pass that file's path" if exists else "check the path (the upstream one is /tmp/gh-aw/autoloop.json)"
        raise (UsageError if exists else NotFoundError)(f"--out {out}: {what}; report merges sizes into the "
              f"autoloop.json the scheduler wrote — {fix}, or leave out --out to print the merged JSON")  # fmt: skip
    aggressive_at = float(app.config().aggressive_at.value)
    store, globs = app.reader(require_branch=False), app.globs
    existing = read_json_object(out) if out is not None else {}
    sizes = state_files(store, globs)
    selected = program if program is not None else existing.get("selected")
    broken = unreadable_files(store, globs)
    if program is not None and program not in sizes:
        raise InvalidDataError(broken[program]) if program in broken else missing_program(store, program)
    everything = all_programs or (program is None and not selected)
    names = sorted(sizes) if everything else []
    if isinstance(selected, str) and selected not in names:
        names.append(selected)
    # One batch read at one tip, and only each file's Machine State: the scheduler's view of 1000 programs.
    errors: dict[str, StatefileError] = {}
    texts = store.read_texts([name for name in names if name in sizes], errors=errors)
    broken |= {name: str(error) for name, error in errors.items()}
    if isinstance(selected, str) and selected in broken:
        # The scheduler's own program: fail loudly rather than report it as healthy.
        raise errors.get(selected) or InvalidDataError(broken[selected])
    entries: dict[str, dict[str, Any]] = {}
    for name in names + ([name for name in broken if name not in names] if everything else []):
        text = None if name in broken else texts.get(name)
        state = read_machine_state(text) if text is not None else {}
        report = program_report(name, sizes.get(name, 0), store.max_bytes, state, aggressive_at=aggressive_at)
        entries[name] = report | ({"error": broken[name]} if name in broken else {})
    merged = merge_report(existing, entries, selected if isinstance(selected, str) else None)
    if out is not None:
        write_json_atomic(out, merged)
    return merged


def missing_program(store: Store, program: str, *, hint: str = "'statefile list' shows the programs") -> NotFoundError:
    """The error for a missing program: the closest names (a near spelling, or ``perf`` for ``perf-comparison``)."""
    names = sorted(store.programs())
    close = difflib.get_close_matches(program, names, n=3, cutoff=0.6)
    wanted = program.casefold()
    close += [n for n in names if n not in close and any(n.casefold().startswith(wanted + sep) for sep in "-_.")]
    mean = f" (did you mean {' or '.join(repr(c) for c in close[:3])}?)" if close else ""
    return NotFoundError(f"no program '{program}'{mean}; {hint}")
