"""The use cases of a gh-aw run: give the agent its memory, apply what it reports, fit repo-memory's push.

A gh-aw agent runs read-only, without git credentials; everything it writes goes through safe outputs, which run
in separate jobs after it (README, "Autoloop on gh-aw: two paths").  So statefile takes part at three points:

- **before the agent** (:func:`prepare`): the budgeted view of the program the scheduler selected, written where
  the agent reads it, and a small :class:`RunContext` (the program definition's direction, target and goal, the
  programs the scheduler knows, the run's id and attempt) that travels to the safe-output job in the agent
  artifact;
- **in the custom safe-output job** (:func:`apply_items`): every item the agent reported through the
  ``record_iteration`` tool is recorded on the memory branch through the remote, one compare-and-swap commit per
  item, in order; a bad item is reported and the others still land; an item whose entry is already on the branch
  (the job was re-run) is skipped;
- **in folder mode** (:func:`repo_memory_compactor`): when the agent keeps repo-memory, compaction is spread over
  runs so that no push exceeds ``max-patch-size``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from statefile.app.context import AppContext
from statefile.app.writing import Compactor
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import EXIT_USAGE, BudgetError, NotFoundError, StatefileError, UsageError
from statefile.integrations.autoloop import read_json_object, write_text_atomic
from statefile.integrations.ghaw import (
    AgentOutput,
    InputError,
    count_value,
    lines_value,
    number_value,
    reference_value,
    text_value,
    tool_type,
)
from statefile.integrations.repo_memory import RepoMemoryFolder
from statefile.model.archive import make_chunk, plan_append
from statefile.model.document import StateDocument
from statefile.model.patterns import STATUS_GLYPHS, leading_status
from statefile.model.text import utf8_size
from statefile.policy.compaction import CompactionPolicy, CompactionResult, compact
from statefile.policy.rules import RecordRequest, format_number, marker_comment, record, recorded_iteration
from statefile.policy.spreading import compact_within
from statefile.store import Change, Store
from statefile.store.atomic import INPUT_LIMIT, read_regular_file
from statefile.store.names import validate_program
from statefile.views.render import render_view

#: The custom safe-output job's id in the shipped component, and the item type / tool name gh-aw derives from it.
JOB_ID = "record-iteration"
ITEM_TYPE = "record_iteration"
#: Where :func:`prepare` writes by default: inside ``/tmp/gh-aw/agent/``, which gh-aw uploads in the ``agent``
#: artifact that the safe-output job downloads next to ``$GH_AW_AGENT_OUTPUT`` (the lock's "Upload agent
#: artifacts" step; the common root ``/tmp/gh-aw`` is kept, so ``agent/statefile/context.json`` lands beside
#: ``agent_output.json``).
PREPARE_DIR = "/tmp/gh-aw/agent/statefile"
MEMORY_FILE = "memory.md"
CONTEXT_FILE = "context.json"
CONTEXT_VERSION = 1


#: Every input of the ``record-iteration`` job: name → (required, description).  The shipped component declares
#: exactly these (a test holds them together).
INPUTS: dict[str, tuple[bool, str]] = {
    "program": (True, "The program you ran (autoloop.json's 'selected')."),
    "status": (True, "accepted, rejected, error or ci-fix-exhausted (or another one-word status such as pending-ci)."),
    "metric": (
        False,
        "The metric this iteration measured, as a number (e.g. 0.93). Omit when evaluation could not run.",
    ),
    "change": (False, "One line: what you tried."),
    "notes": (False, "One or two sentences: why it worked or failed; for errors, the error."),
    "commit": (False, "Short sha of the accepted commit."),
    "pr": (False, "The program's pull request number (e.g. 12)."),
    "issue": (False, "The program issue's number, when you created it or it is not recorded yet."),
    "ci_fix_attempts": (False, "How many CI fix attempts this iteration took (omit when 0)."),
    "lessons": (False, "New lessons learned, one per line."),
    "pause_reason": (
        False,
        "Why the program must pause, e.g. 'ci-fix-exhausted: <signature>', 'stuck in CI fix loop: <signature>', "
        "'ci-timeout'. Never with accepted.",
    ),
    "future_directions": (False, "New promising ideas to try next, one per line."),
    "foreclosed_avenues": (False, "Approaches now conclusively ruled out, with the reason, one per line."),
    "priorities": (False, "Only when a maintainer asked for it (e.g. in the program issue): a priority to record."),
}


# -- the run context ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunContext:
    """What the pre-agent step knew that the safe-output job needs (it runs elsewhere, without autoloop.json)."""

    selected: str | None = None
    metric_direction: str | None = None
    target_metric: Decimal | None = None
    issue: int | None = None
    goal: str | None = None
    programs: frozenset[str] = field(default_factory=frozenset)
    run_id: str | None = None
    run_attempt: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The JSON written to ``context.json``."""
        return {
            "statefile_context": CONTEXT_VERSION,
            "selected": self.selected,
            "metric_direction": self.metric_direction,
            "target_metric": None if self.target_metric is None else format_number(self.target_metric),
            "issue": self.issue,
            "goal": self.goal,
            "programs": sorted(self.programs),
            "run_id": self.run_id,
            "run_attempt": self.run_attempt,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any], source: str) -> RunContext:
        """Read ``context.json``; UsageError when it is not one."""
        if data.get("statefile_context") != CONTEXT_VERSION:
            raise UsageError(f"{source} is not a statefile run context (written by 'statefile prepare')")
        target = data.get("target_metric")
        programs = data.get("programs") or []
        return RunContext(
            selected=_str_or_none(data.get("selected")),
            metric_direction=_direction(data.get("metric_direction")),
            target_metric=_target(target),
            issue=data["issue"] if isinstance(data.get("issue"), int) else None,
            goal=_str_or_none(data.get("goal")),
            programs=frozenset(str(p) for p in programs if isinstance(p, str)),
            run_id=_str_or_none(data.get("run_id")),
            run_attempt=_str_or_none(data.get("run_attempt")),
        )


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _target(value: object) -> Decimal | None:
    """A target metric read from JSON: a finite number (or, in context.json, its text); anything else is none."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = Decimal(repr(value) if isinstance(value, float) else str(value))
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _direction(value: object) -> str | None:
    return value if value in ("higher", "lower") else None


def context_from_autoloop(autoloop: Mapping[str, Any], *, goal: str | None, env: Mapping[str, str]) -> RunContext:
    """The run context from the scheduler's autoloop.json (githubnext/autoloop ``autoloop_scheduler.py`` output)."""
    programs: set[str] = set()
    selected = _str_or_none(autoloop.get("selected"))
    if selected:
        programs.add(selected)
    for key in ("deferred", "unconfigured"):
        programs.update(p for p in autoloop.get(key) or [] if isinstance(p, str))
    programs.update(s["name"] for s in autoloop.get("skipped") or [] if isinstance(s, dict) and "name" in s)
    issue_programs = autoloop.get("issue_programs")
    if isinstance(issue_programs, dict):
        programs.update(p for p in issue_programs if isinstance(p, str))
    target = autoloop.get("selected_target_metric")
    issue = autoloop.get("selected_issue")
    return RunContext(
        selected=selected,
        metric_direction=_direction(autoloop.get("selected_metric_direction")) if selected else None,
        target_metric=None if isinstance(target, str) else _target(target),
        issue=issue if isinstance(issue, int) and not isinstance(issue, bool) else None,
        goal=goal,
        programs=frozenset(programs),
        run_id=_str_or_none(env.get("GITHUB_RUN_ID")),
        run_attempt=_str_or_none(env.get("GITHUB_RUN_ATTEMPT")),
    )


def program_goal(path: Path) -> str | None:
    """The first paragraph of the ``## Goal`` section of a program definition, on one line (at most 240 chars)."""
    try:
        text = read_regular_file(path, limit=INPUT_LIMIT).decode("utf-8")
    except (OSError, UnicodeDecodeError, StatefileError):
        return None
    match = re.search(r"^##\s+Goal\s*\n(.*?)(?=^#{1,2}\s|\Z)", text, re.M | re.S)
    if not match:
        return None
    paragraph = next((p for p in re.split(r"\n\s*\n", match.group(1)) if p.strip()), "")
    line = " ".join(paragraph.split()).replace("|", "/")
    return (line[:239] + "…" if len(line) > 240 else line) or None


# -- before the agent -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrepareOutcome:
    """What :func:`prepare` wrote."""

    selected: str | None
    memory_path: Path
    context_path: Path
    chars: int
    new_program: bool


def prepare(
    store: Store, autoloop_path: Path, out: Path, *, budget: int, env: Mapping[str, str], cwd: Path
) -> PrepareOutcome:
    """Write the selected program's budgeted memory view and the run context into ``out``."""
    autoloop = read_json_object(autoloop_path)
    selected = _str_or_none(autoloop.get("selected"))
    selected_file = autoloop.get("selected_file")
    goal = None
    if selected and isinstance(selected_file, str):
        goal = program_goal(Path(selected_file) if Path(selected_file).is_absolute() else cwd / selected_file)
    context = context_from_autoloop(autoloop, goal=goal, env=env)
    doc = store.read(validate_program(selected)) if selected else None
    tool = f"`{ITEM_TYPE}`"
    if selected is None:
        text = f"No Autoloop program was selected for this run ({autoloop_path}); there is no memory to read.\n"
    elif doc is None:
        direction = context.metric_direction or "higher"
        target = "none" if context.target_metric is None else format_number(context.target_metric)
        text = (
            f"# Memory of Autoloop program `{selected}`\n\nThis program has no state file yet: this is its first "
            f"iteration. Report it with the {tool} tool; statefile creates `{selected}.md` (metric direction "
            f"{direction}, target metric {target}).\n"
        )
    else:
        shared = store.read(SHARED_PROGRAM)
        view = render_view(doc, program=selected, budget=budget, level="full", shared=shared)
        text = (
            f"<!-- statefile: a read-only view of {selected}.md on the memory branch. Do not edit state files: "
            f"report your iteration with the {ITEM_TYPE} tool. -->\n{view.text}"
        )
        if not text.endswith("\n"):
            text += "\n"
    memory_path, context_path = out / MEMORY_FILE, out / CONTEXT_FILE
    write_text_atomic(memory_path, text)
    write_text_atomic(context_path, _json(context.as_json()))
    return PrepareOutcome(selected, memory_path, context_path, len(text), selected is not None and doc is None)


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def read_context(path: Path) -> RunContext | None:
    """The run context in ``path``; ``None`` when the file does not exist."""
    if not path.is_file():
        return None
    return RunContext.from_json(read_json_object(path), str(path))


# -- the safe-output job ----------------------------------------------------------------------------------------------


@dataclass
class ItemOutcome:
    """What happened to one item (``action``: recorded, skipped, would-record, failed)."""

    index: int
    program: str | None
    status: str | None
    action: str
    marker: str
    iteration: int | None = None
    size: int | None = None
    moved: int = 0
    archived_bytes: int = 0
    commit: str | None = None
    attempts: int = 0
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    exit_code: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)


def item_marker(item: Mapping[str, Any], index: int, run_id: str | None, attempt: str | None) -> str:
    """The identity an item's entry carries, so a re-run of the job recognises an item that already landed.

    ``run R attempt A item K``: ``A`` is the *agent's* attempt (from the run context), so re-running only the
    safe-output job finds the same identity, while re-running the whole workflow — a new agent attempt and a
    genuinely new iteration — gets a new one.  Without a context the item's content digest stands in for the
    attempt (the same report in the same run is then recognised; a new report never is).
    """
    if run_id and attempt:
        return f"run {run_id} attempt {attempt} item {index}"
    import hashlib  # here: OpenSSL is loaded only when an item has no run context

    digest = hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]
    return f"run {run_id} item {index} sha {digest}" if run_id else f"item {index} sha {digest}"


def _status(item: Mapping[str, Any]) -> str:
    raw = text_value(item, "status")
    if raw is None:
        raise InputError("status is missing; report accepted, rejected, error or ci-fix-exhausted")
    # The one reading of a status for every module: "✅", "Accepted ✅", "accepted." and "Rejected (metric worse)"
    # all state theirs first.  Only a text that *starts* with its status counts, so "not accepted" is no "accepted".
    known = leading_status(raw)
    if known is not None:
        return known
    # A word the patterns do not know (a new status, or a typo the record rules refuse with a hint).
    word = re.sub(r"^[^A-Za-z]+", "", raw).strip().lower()
    return word.replace("_", "-").replace(" ", "-")


def _text(item: Mapping[str, Any], name: str) -> str | None:
    value = text_value(item, name)
    if value is None:
        return None
    # gh-aw escapes template delimiters ({{ → \{\{, ${ → \$\{) in string inputs; a state file is no template.
    return value.replace("\\{\\{", "{{").replace("\\$\\{", "${")


def request_from_item(
    item: Mapping[str, Any], *, context: RunContext | None, run_url: str | None, marker: str
) -> tuple[str, RecordRequest, list[str]]:
    """The program, the record request and warnings for one agent output item.  InputError/UsageError if unusable."""
    program = text_value(item, "program")
    if program is None:
        raise InputError("program is missing; report the program you ran (autoloop.json's 'selected')")
    program = program.strip("`")
    validate_program(program)
    if program == SHARED_PROGRAM:
        raise InputError(f"'{SHARED_PROGRAM}' is not a program")
    warnings: list[str] = []
    pr, warning = reference_value(item, "pr")
    if warning:
        warnings.append(warning)
    issue, warning = reference_value(item, "issue")
    if warning:
        warnings.append(warning)
    commit = _text(item, "commit")
    own = context is not None and context.selected == program
    request = RecordRequest(
        status=_status(item),
        metric=number_value(item, "metric"),
        change=_text(item, "change"),
        notes=_text(item, "notes"),
        commit=commit.strip("`") if commit else None,
        run_url=run_url,
        pr=pr,
        ci_fix_attempts=count_value(item, "ci_fix_attempts") or 0,
        lessons=tuple(lines_value(item, "lessons")) + tuple(lines_value(item, "lesson")),
        pause_reason=_text(item, "pause_reason"),
        metric_direction=context.metric_direction if own and context else None,
        target_metric=context.target_metric if own and context else None,
        goal=context.goal if own and context else None,
        issue=issue if issue is not None else (context.issue if own and context else None),
        foreclosed=tuple(lines_value(item, "foreclosed_avenues")),
        future_directions=tuple(lines_value(item, "future_directions")),
        priorities=tuple(lines_value(item, "priorities")),
        marker=marker,
    )
    return program, request, warnings


def already_applied(store: Store, program: str, marker: str) -> bool:
    """Whether an entry carrying ``marker`` is on the branch: in the state file or in its archive.

    Entries only ever move from the state file to the archive, and archives are append-only, so once there the
    marker stays; before the item lands, nothing else writes it.
    """
    needle = marker_comment(marker)
    text = store.read_text(program)
    if text is not None and needle in text:
        return True
    return any(needle in store.read_archive(program, part) for part in store.archive_parts(program))


#: Items of one type ``apply`` records from one agent output.  A run is one iteration; gh-aw keeps only the first
#: ``max`` items of a custom type (1 unless the workflow raises it), so hundreds mean a runaway agent, and each
#: item is a commit of its own (about 25 ms).
MAX_ITEMS = 100


def apply_items(
    store: Store,
    output: AgentOutput,
    item_type: str,
    *,
    context: RunContext | None,
    run_id: str | None,
    run_url: str | None,
    policy: CompactionPolicy,
    now: datetime,
    dry_run: bool = False,
    compactor: Callable[[str], Compactor] | None = None,
) -> list[ItemOutcome]:
    """Record every item of ``item_type`` in order; each item's failure is its own (see the module docstring).

    More than :data:`MAX_ITEMS` items is one UsageError before anything is written.
    """
    count = len(output.of_type(item_type))
    if count > MAX_ITEMS:
        raise UsageError(
            f"the agent output has {count:,} {tool_type(item_type)} items; one run records at most {MAX_ITEMS} "
            "(gh-aw itself passes on 1 unless the job sets max) — nothing was written; check what the agent reported"
        )
    attempt = context.run_attempt if context is not None else None
    known: set[str] | None = None
    outcomes: list[ItemOutcome] = []
    for index, item in enumerate(output.of_type(item_type), 1):
        marker = item_marker(item, index, run_id, attempt)
        outcome = ItemOutcome(index, None, None, "failed", marker)
        outcomes.append(outcome)
        try:
            named = item.get("program")
            outcome.program = named.strip() if isinstance(named, str) and named.strip() else None
            program, request, warnings = request_from_item(item, context=context, run_url=run_url, marker=marker)
            outcome.program, outcome.status, outcome.warnings = program, request.status, warnings
            if known is None:
                known = set(store.programs())
            if program not in known and (context is None or program not in context.programs):
                listed = sorted(known | (context.programs if context else set()))
                raise NotFoundError(
                    f"unknown program '{program}' (known: {', '.join(listed) or 'none'}); nothing was written for "
                    "this item — a typo never creates a program"
                )
            if already_applied(store, program, marker):
                outcome.action = "skipped"
                continue
            compact_fn = compactor(program) if compactor is not None else None
            if dry_run:
                planned = _record_change(program, request, policy, now, marker, compact_fn)(store.read(program))
                assert planned.detail is not None
                outcome.action = "would-record"
                outcome.iteration, outcome.moved, outcome.archived_bytes = planned.detail
                outcome.size = planned.document.size
                continue
            landed = store.update(
                program,
                _record_change(program, request, policy, now, marker, compact_fn),
                f"statefile: record iteration of {program}",
            )
            known.add(program)
            if landed.detail is None:  # the marker was in the document at the tip the write ran on
                outcome.action = "skipped"
                continue
            outcome.action = "recorded"
            outcome.iteration, outcome.moved, outcome.archived_bytes = landed.detail
            outcome.size = landed.document.size if landed.document is not None else None
            outcome.commit, outcome.attempts = landed.commit, landed.attempts
        except StatefileError as exc:
            outcome.action, outcome.error = "failed", str(exc)
            outcome.exit_code = exc.exit_code if not isinstance(exc, InputError) else EXIT_USAGE
    return outcomes


def _record_change(
    program: str,
    request: RecordRequest,
    policy: CompactionPolicy,
    now: datetime,
    marker: str,
    compactor: Compactor | None,
) -> Callable[[StateDocument | None], Change[tuple[int, int, int]]]:
    """The pure update function for one item: record, compact, and detail (iteration, items moved, archived bytes)."""
    needle = marker_comment(marker)
    scoped = policy if policy.program == program else _with_program(policy, program)

    def apply(doc: StateDocument | None) -> Change[tuple[int, int, int]]:
        if doc is not None and needle in doc.render():
            return Change(doc)  # landed already (a re-run raced nothing: the marker only comes with this item)
        recorded = record(doc, request, program=program, now=now)
        number = recorded_iteration(recorded)
        result = (compactor or compact)(recorded, scoped)
        glyph = STATUS_GLYPHS.get(request.status, "•")
        message = (
            f"statefile: record iteration {number} of {program} ({glyph} {request.status})\n\nStatefile-Item: {marker}"
        )
        if result.report.changed:
            message += f"\n\n{result.report.summary()}"
        return Change(
            result.document,
            archive=result.archive,
            archive_label=f"compaction of {program}.md while recording iteration {number}",
            message=message,
            detail=(number, len(result.report.moved), utf8_size(result.archive)),
        )

    return apply


def _with_program(policy: CompactionPolicy, program: str) -> CompactionPolicy:
    return replace(policy, program=program)


# -- folder mode: compaction that fits the push -----------------------------------------------------------------------

# A stand-in for the archive chunk heading's variable parts (time and label), at least as long as the real ones.
_CHUNK_WHEN = "0000-00-00T00:00:00Z"
_CHUNK_WHAT = "x" * 200


def repo_memory_compactor(folder: RepoMemoryFolder, store: Store, program: str) -> Compactor:
    """A compaction for ``program`` in gh-aw's repo-memory folder that its push will accept.

    It refuses (before anything is written) a state file or archive the file-glob would drop, then runs
    :func:`statefile.policy.spreading.compact_within` with the push's own measure: the bytes its ``git diff``
    would add, over the whole folder, against the clone's HEAD.
    """

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
                chunk = make_chunk(result.archive, when=_CHUNK_WHEN, what=_CHUNK_WHAT)
                for name, content in plan_append(program, last, chunk, store.max_bytes):
                    files[layout.part_path(program, name)] = content
            return files

        def cost(result: CompactionResult) -> int:
            return folder.write_cost(files_of(result), snapshot).added

        if not folder.has_baseline:
            result = compact(doc, policy)
        else:
            result = compact_within(
                doc, policy, cost, soft_limit=folder.max_patch_size, hard_limit=folder.patch_limit,
                what=f"this run's change to {state}",
            )  # fmt: skip
        count = folder.write_cost(files_of(result), snapshot).files
        if count > folder.max_file_count:
            raise BudgetError(
                f"writing {state} and its archive would make {count} files match repo-memory's file-glob, over its "
                f"max-file-count ({folder.max_file_count}); nothing was written — raise max-file-count"
            )
        return result

    return run


def compactor_for(app: AppContext) -> Callable[[str], Compactor] | None:
    """The compaction writes must use for each program: spread under repo-memory's push limits with
    ``--repo-memory``; ``None`` (the policy's plain compaction) otherwise."""
    if not app.repo_memory:
        return None
    folder, store = app.memory_folder(), app.store()
    return lambda program: repo_memory_compactor(folder, store, program)


__all__ = [
    "CONTEXT_FILE",
    "INPUTS",
    "ITEM_TYPE",
    "JOB_ID",
    "MEMORY_FILE",
    "PREPARE_DIR",
    "Compactor",
    "ItemOutcome",
    "PrepareOutcome",
    "RunContext",
    "already_applied",
    "apply_items",
    "compactor_for",
    "context_from_autoloop",
    "item_marker",
    "prepare",
    "program_goal",
    "read_context",
    "repo_memory_compactor",
    "request_from_item",
]
