"""The read use cases, apart from writing so the scheduler's pre-step loads no compaction or record rules."""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import timezone
from pathlib import Path
from typing import Any, TypeVar

from statefile.app.context import AppContext, Config
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import InvalidDataError, NotFoundError, StatefileError, UsageError
from statefile.integrations.ghaw import glob_matches, merge_report, program_report, read_json_object, write_text_atomic
from statefile.model.archive import find_iteration_in_parts
from statefile.model.document import StateDocument, history_gaps, parse, read_machine_state
from statefile.model.history import spans_text
from statefile.numbers import budget_text, percent
from statefile.store import Store
from statefile.store.atomic import read_state_file
from statefile.store.names import case_twins, validate_program
from statefile.views.history import (
    ProgramHistory,
    history_rows,
    metric_sparkline,
    pressure,
    state_events,
    step_summary,
    trend_line,
)
from statefile.views.render import CLI, Hints, RenderedView, render_view
from statefile.views.search import Hit, search

V = TypeVar("V")

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


def _globbed(found: Mapping[str, V], globs: tuple[str, ...]) -> dict[str, V]:
    # repo-memory's file-glob decides which ``{name}.md`` are state files; an unreadable one is an error, not skipped.
    return {name: value for name, value in found.items() if glob_matches(f"{name}.md", globs)}


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


def is_path_argument(arg: str) -> bool:
    """Whether a command argument names a file rather than a program (it has a path separator or ends in .md)."""
    return arg.endswith(".md") or "/" in arg or os.sep in arg


@dataclass(frozen=True)
class Target:
    """A program in the store, or (``path`` set) a state file named by its path, read from disk."""

    program: str
    path: Path | None = None

    @property
    def label(self) -> str:
        """How output names it: the path for a file, else the program."""
        return self.program if self.path is None else str(self.path)


@dataclass(frozen=True)
class Targets:
    """What was found, and (what the user typed, why) for each name that could not be: one does not hide others."""

    found: tuple[Target, ...]
    failures: tuple[tuple[str, StatefileError], ...] = ()


def resolve_targets(
    store: Store,
    names: Sequence[str],
    *,
    all_programs: bool,
    allow_paths: bool = True,
    verb: str = "act on",
    globs: tuple[str, ...] = ("*.md",),
) -> Targets:
    """The programs ``names`` stand for (or state files' paths, if ``allow_paths``), or every one matching ``globs``."""
    if all_programs and names:
        raise UsageError("give program names or --all, not both")
    if not all_programs and not names:
        raise UsageError(f"name the programs to {verb}, or pass --all")
    if all_programs:
        broken = sorted(_globbed(store.unreadable(), globs).items())
        found = tuple(Target(name) for name in sorted(_globbed(store.programs(), globs)))
        return Targets(found, tuple((name, InvalidDataError(why)) for name, why in broken))
    # State-file paths alone read no store (a caller may pass a stand-in for one outside any repository).
    known = store.programs() if not all(allow_paths and is_path_argument(name) for name in names) else {}
    targets: dict[object, Target] = {}
    failures: list[tuple[str, StatefileError]] = []
    for name in names:
        try:
            if allow_paths and is_path_argument(name):
                if not Path(name).is_file():
                    raise NotFoundError(f"{name}: no such file; check the path")
                target = Target(Path(name).stem, Path(name))
            # Not listed but there: the shared lessons, or a file that cannot be read (its read raises why).
            elif validate_program(name) not in known and store.read_text(name) is None:
                raise missing_program(store, name)
            else:
                target = Target(name)
        except StatefileError as exc:
            failures.append((name, exc))
            continue
        # The same file twice (``perf.md`` and ``./perf.md``) is one target; two folders' ``perf.md`` are two.
        targets.setdefault(target.program if target.path is None else target.path.resolve(), target)
    return Targets(tuple(targets.values()), tuple(failures))


def describe_target(app: AppContext, target: str) -> dict[str, Any]:
    """``show``'s data on a program or a state file by path, with the commit that paused (or completed) a program."""
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
    for event, undo, why in (("paused", "unpaused", "pause_reason"), ("completed", "uncompleted", "completed_reason")):
        if doc.machine_state.get(event):
            info[event] = {"reason": doc.machine_state.get(why), "since": None}
            for row in () if on_disk else program_log(app.reader(), target, 50):  # the bound keeps show fast
                events = {e["event"]: e for e in row["events"]}
                if event in events:
                    began = {key: row[key] for key in ("commit", "when_utc", "iteration")}
                    info[event]["since"] = began | {"reason": events[event]["reason"]}
                if event in events or undo in events:  # undone since: it began where the log cannot tell
                    break
    return info


def check_targets(app: AppContext, targets: Sequence[str]) -> list[CheckOutcome]:
    """``check``'s outcomes: files by path, the named programs (else all) and, with repo-memory, its push's limits."""
    files = [t for t in targets if is_path_argument(t)]
    programs = [t for t in targets if not is_path_argument(t)]
    limit = int(app.config().max_bytes.value)

    def failed(name: str, why: object, size: int = 0, sized: bool = True) -> CheckOutcome:
        return CheckOutcome(name, size, limit, errors=[str(why)], sized=sized)

    outcomes: list[CheckOutcome] = []
    for name in files:
        try:
            outcomes.append(check_document(name, read_state_file(Path(name), limit), limit))
        except StatefileError as exc:
            outcomes.append(failed(name, exc))
    if programs or not files:
        store, globs = app.reader(require_branch=False), app.globs
        sizes = _globbed(store.programs(), globs)
        if not programs:
            outcomes += [failed(name, why) for name, why in _globbed(store.unreadable(), globs).items()]
            try:  # the shared lessons are no program, but a file every run reads: a link or a FIFO there is damage too
                store.read_text(SHARED_PROGRAM)
            except StatefileError as exc:
                outcomes.append(failed(SHARED_PROGRAM, exc))
            with suppress(StatefileError):  # a store that cannot be listed fails on what reading it found
                for a, b in case_twins(store.paths()):
                    lost = f"{a} and {b} differ only in case: a checkout on macOS or Windows holds only one of them"
                    why = f"{lost}; keep one (merge what the other holds into it) and delete the other"
                    paths = (a.rstrip("/"), b.rstrip("/"))  # an archive path, or a state file's
                    if any(p.lower().split("/")[0] == "archive" or glob_matches(p, globs) for p in paths):
                        outcomes.append(failed(a, why, sized=False))
        for name in programs or sorted(sizes):
            try:
                if (doc := store.read(name)) is None:
                    raise NotFoundError(f"no program '{name}'")
            except StatefileError as exc:
                outcomes.append(failed(name, exc, sizes.get(name, 0)))
                continue
            outcomes.append(check_document(name, doc, limit))
            try:  # what expand and search would fail on later in the archive (a link, not UTF-8…)
                for part in store.archive_parts(name):
                    try:
                        store.read_archive(name, part)
                    except StatefileError as exc:
                        outcomes[-1].errors.append(str(exc))
            except StatefileError as exc:
                outcomes[-1].errors.append(str(exc))
    if app.repo_memory:
        memory = app.memory_folder()
        found = memory.problems(programs or sorted(app.store().programs()))
        outcomes.append(CheckOutcome(f"repo-memory push ({memory.folder})", 0, 1, sized=False, errors=found["error"],
                                     warnings=found["warning"], notes=found["info"]))  # fmt: skip
    return outcomes


def list_programs(store: Store, globs: tuple[str, ...] = ("*.md",)) -> list[dict[str, Any]]:
    """Every program with size, % of budget, iteration count, last run and status, by name."""
    rows = []
    files = _globbed(store.programs(), globs)
    states, broken = _machine_states(store, sorted(files), globs)
    for name in sorted({*files, *broken}):
        state = states.get(name, {})
        halted = "completed" if state.get("completed") else "paused" if state.get("paused") else None
        status = "unreadable" if name in broken else halted or (state.get("recent_statuses") or ["new"])[-1]
        size = files.get(name, 0)
        row = {"program": name, "size": size, "percent_of_budget": percent(size, store.max_bytes)}
        rows.append(row | {key: state.get(key) for key in ("iteration_count", "last_run", "best_metric")}
                    | {"status": status} | ({"error": str(broken[name])} if name in broken else {}))  # fmt: skip
    return rows


def _machine_states(
    store: Store, names: list[str], globs: tuple[str, ...]
) -> tuple[dict[str, dict[str, Any]], dict[str, StatefileError]]:
    # One batch read at one tip (the scheduler's view of 1000 programs); each unreadable file says why.
    broken: dict[str, StatefileError] = {n: InvalidDataError(w) for n, w in _globbed(store.unreadable(), globs).items()}
    texts = store.read_texts(names, errors=broken)
    return {name: read_machine_state(text) for name, text in texts.items() if text is not None}, broken


def list_trends(store: Store, programs: list[str], width: int = 12) -> dict[str, str]:
    """A metric sparkline per program from its file alone (the archive is not read: this is a glance)."""
    return {
        name: metric_sparkline(history_rows(parse(text), name), width)
        for name, text in store.read_texts(programs, errors={}).items()
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
    """The pressure of ``program``, or of every program (listing the unreadable ones), with trend lines if asked."""
    report = StatusReport({}, {} if program else _globbed(store.unreadable(), globs), {})
    for name in [program] if program else sorted(_globbed(store.programs(), globs)):
        try:
            doc = read_program(store, name)
            texts = archive_texts(store, name)
            # The next record's compaction reads these settings: status predicts with the same values.
            report.reports[name] = pressure(
                doc,
                max_bytes=store.max_bytes,
                archives=[text for _, text in texts],
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
    if missing := [name for name in programs if name not in {r["program"] for r in rows}]:
        raise missing_program(store, missing[0])
    rows = [r for r in rows if r["program"] in programs] if programs else rows
    readable = [r for r in rows if r.get("status") != "unreadable"]
    recent = sorted(readable, key=lambda r: (str(r.get("last_run") or ""), str(r["program"])), reverse=True)
    histories = {str(r["program"]): program_history(store, str(r["program"])) for r in recent[:max_charts]}
    omitted = len(readable) - len(histories)
    return step_summary(rows, histories, max_bytes=store.max_bytes, omitted_charts=omitted), len(rows)


def expand_iteration(store: Store, program: str, number: int) -> tuple[str, str]:
    """The verbatim text of iteration ``number``: ``(where, text)`` from the file itself or its archive."""
    doc = read_program(store, program)
    if entry := next((e for e in doc.iterations if number in e.covers), None):
        return f"{program}.md", entry.raw
    parts = store.archive_part_paths(program)  # every layout: a branch both gh-aw paths wrote holds two
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
    # A commit that created or deleted the file has no events.
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


def build_report(app: AppContext, out: Path | None, *, program: str | None, all_programs: bool) -> dict[str, Any]:
    """The scheduler's autoloop.json ``out`` with statefile's sizes merged in; without ``out``, into an empty one."""
    if program and all_programs:
        raise UsageError("give --program or --all, not both")
    if out is not None and not out.is_file():
        # /dev/null or a folder is no autoloop.json; a mistyped path must not leave a file the scheduler never reads.
        exists = out.exists()
        what = "not a regular file" if exists else "no such file"
        fix = "pass that file's path" if exists else "check the path (the upstream one is /tmp/gh-aw/autoloop.json)"
        raise (UsageError if exists else NotFoundError)(f"--out {out}: {what}; report merges sizes into the "
              f"autoloop.json the scheduler wrote — {fix}, or leave out --out to print the merged JSON")  # fmt: skip
    at = float(app.config().aggressive_at.value)  # where report says needs_compaction
    store, globs = app.reader(require_branch=False), app.globs
    existing = read_json_object(out) if out is not None else {}
    sizes = _globbed(store.programs(), globs)
    selected = program if program is not None else existing.get("selected")
    everything = all_programs or (program is None and not selected)
    names = sorted(sizes) if everything else []
    if isinstance(selected, str) and selected not in names:
        names.append(selected)
    states, broken = _machine_states(store, [name for name in names if name in sizes], globs)
    if program is not None and program not in sizes:
        raise broken.get(program) or missing_program(store, program)
    if isinstance(selected, str) and selected in broken:  # the scheduler's own program: never reported as healthy
        raise broken[selected]
    entries: dict[str, dict[str, Any]] = {}
    for name in names + ([name for name in broken if name not in names] if everything else []):
        report = program_report(name, sizes.get(name, 0), store.max_bytes, states.get(name, {}), aggressive_at=at)
        entries[name] = report | ({"error": str(broken[name])} if name in broken else {})
    merged = merge_report(existing, entries, selected if isinstance(selected, str) else None)
    if out is not None:
        write_text_atomic(out, json.dumps(merged, indent=2) + "\n")
    return merged


def missing_program(store: Store, program: str, *, hint: str = "'statefile list' shows the programs") -> NotFoundError:
    """The error for a missing program: the closest names (a near spelling, or ``perf`` for ``perf-comparison``)."""
    names = sorted(store.programs())
    close = difflib.get_close_matches(program, names, n=3, cutoff=0.6)
    wanted = program.casefold()
    close += [n for n in names if n not in close and any(n.casefold().startswith(wanted + sep) for sep in "-_.")]
    mean = f" (did you mean {' or '.join(repr(c) for c in close[:3])}?)" if close else ""
    return NotFoundError(f"no program '{program}'{mean}; {hint}")
