"""The use cases of a gh-aw run: give the agent its memory, apply what it reports, fit repo-memory's push.

A gh-aw agent runs read-only, without git credentials; everything it writes goes through safe outputs, which run
in separate jobs after it (docs/gh-aw.md; the guide is workflows/README.md).  So statefile takes part at three points:

- **before the agent** (:func:`prepare`): the budgeted view of the program the scheduler selected, written where
  the agent reads it, and a small :class:`RunContext` (the selected program, its definition's direction, target
  and goal, the run's id and attempt).  The context is the job's authority, so it must reach the safe-output job
  through a channel the agent cannot write: the component uploads it as an artifact of its own *before the agent
  starts* (workflows/README.md, "Trust model"), never inside ``/tmp/gh-aw/agent/``, which the agent writes;
- **in the custom safe-output job** (:func:`apply_items`): the agent is untrusted, so what it reported through
  the ``record_iteration`` tool is data checked against that context: only the selected program, at most one
  report per run, every text cleaned and capped, every number bounded before it is converted.  Each item is one
  compare-and-swap commit through the remote; a bad item is reported and the others are still tried; an item
  whose entry is already on the branch (the job was re-run) is skipped;
- **in folder mode** (:func:`repo_memory_compactor`): when the agent keeps repo-memory, compaction is spread over
  runs so that no push exceeds ``max-patch-size``.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from statefile.app.context import AppContext
from statefile.app.reading import missing_program
from statefile.app.writing import Compactor, Recorded, record_update
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import EXIT_INTERNAL, EXIT_USAGE, BudgetError, NotFoundError, StatefileError, UsageError
from statefile.integrations.autoloop import read_json_object, write_text_atomic
from statefile.integrations.ghaw import (
    AgentOutput,
    InputError,
    clean_text,
    count_value,
    cut_bytes,
    lines_value,
    number_value,
    reference_value,
    text_value,
    tool_type,
)
from statefile.integrations.repo_memory import RepoMemoryFolder
from statefile.model.archive import make_chunk, plan_append
from statefile.model.document import StateDocument
from statefile.model.patterns import leading_status
from statefile.numbers import number_text, plural
from statefile.policy.compaction import CompactionPolicy, CompactionResult, compact
from statefile.policy.rules import AGENT_SOURCE, UPSTREAM_STATUSES, RecordRequest, format_number, has_marker
from statefile.policy.spreading import compact_within
from statefile.store import Store
from statefile.store.atomic import INPUT_LIMIT, read_regular_file
from statefile.store.names import validate_program
from statefile.views.hints import TOOLS
from statefile.views.render import render_view

#: The custom safe-output job's id in the shipped component, and the item type / tool name gh-aw derives from it.
JOB_ID = "record-iteration"
ITEM_TYPE = "record_iteration"
#: Where :func:`prepare` writes the agent's view: inside ``/tmp/gh-aw/agent/``, the agent's own folder.
AGENT_DIR = "/tmp/gh-aw/agent"
PREPARE_DIR = f"{AGENT_DIR}/statefile"
MEMORY_FILE = "memory.md"
CONTEXT_FILE = "context.json"
#: The artifact the component uploads the context in, before the agent starts (and downloads in the job).
CONTEXT_ARTIFACT = "statefile-context"
#: Version 1 travelled inside the agent's artifact, where the agent could rewrite it: it is refused.
CONTEXT_VERSION = 2


#: Every input of the ``record-iteration`` job: name → (required, description).  The shipped component declares
#: exactly these (a test holds them together).
INPUTS: dict[str, tuple[bool, str]] = {
    "program": (True, "The program you ran (autoloop.json's 'selected')."),
    "status": (True, "accepted, rejected, error or ci-fix-exhausted; or pending-ci when CI has not finished yet."),
    "metric": (
        False,
        'The metric this iteration measured: a number written as text (e.g. "0.93"). Omit when evaluation could not '
        "run.",
    ),
    "change": (False, "One line: what you tried."),
    "notes": (False, "One or two sentences: why it worked or failed; for errors, the error."),
    "commit": (False, "Short sha of the accepted commit."),
    "pr": (False, 'The program\'s pull request number, as text (e.g. "12").'),
    "issue": (False, "The program issue's number, only when you created it (a recorded issue is kept)."),
    "ci_fix_attempts": (False, 'How many CI fix attempts this iteration took, as text (e.g. "2"); omit when 0.'),
    "lessons": (False, "New lessons learned, one per line."),
    "pause_reason": (
        False,
        "Why the program must pause, e.g. 'ci-fix-exhausted: <signature>', 'stuck in CI fix loop: <signature>', "
        "'ci-timeout'. Never with accepted.",
    ),
    "future_directions": (False, "New promising ideas to try next, one per line."),
    "foreclosed_avenues": (False, "Approaches now conclusively ruled out, with the reason, one per line."),
}
#: Status words beyond the upstream four that the job records (the tool's description offers them).
EXTRA_STATUSES = ("pending-ci",)
#: Inputs the job refuses to act on, with why: Current Priorities is the maintainers' steering, and nothing an
#: agent reports can show that a maintainer asked for it (the request may be an injection it read).
REFUSED_INPUTS = {
    "priorities": "Current Priorities is maintainer-owned; report the idea as future_directions instead",
}


# -- the run context ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunContext:
    """What the pre-agent step knew that the safe-output job needs, and may trust: the program the scheduler
    selected, its definition's direction, target and goal, its issue, and the run's id and attempt."""

    selected: str | None = None
    metric_direction: str | None = None
    target_metric: Decimal | None = None
    issue: int | None = None
    goal: str | None = None
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
            "run_id": self.run_id,
            "run_attempt": self.run_attempt,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any], source: str) -> RunContext:
        """Read ``context.json``; UsageError when it is not one this version writes."""
        version = data.get("statefile_context")
        if version != CONTEXT_VERSION:
            why = (
                "an older context, which travelled where the agent could rewrite it; re-run 'statefile prepare' "
                "with this version"
                if version == 1
                else "not a statefile run context (written by 'statefile prepare')"
            )
            raise UsageError(f"{source} is {why}")
        selected = _str_or_none(data.get("selected"))
        if selected is not None:
            validate_program(selected)
        issue = data.get("issue")
        return RunContext(
            selected=selected,
            metric_direction=_direction(data.get("metric_direction")),
            target_metric=_target(data.get("target_metric")),
            issue=issue if isinstance(issue, int) and not isinstance(issue, bool) and issue > 0 else None,
            goal=_str_or_none(data.get("goal")),
            run_id=_run_number(data.get("run_id")),
            run_attempt=_run_number(data.get("run_attempt")),
        )


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _run_number(value: object) -> str | None:
    """A run id or attempt: ASCII digits (GitHub's own), else none; it goes into the item marker."""
    return value if isinstance(value, str) and re.fullmatch(r"[0-9]{1,20}", value) else None


def _target(value: object) -> Decimal | None:
    """A target metric read from JSON: a finite number (or, in context.json, its text); anything else is none."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = number_value({"target": value}, "target")
    except InputError:
        return None
    return number


def _direction(value: object) -> str | None:
    return value if value in ("higher", "lower") else None


def context_from_autoloop(autoloop: Mapping[str, Any], *, goal: str | None, env: Mapping[str, str]) -> RunContext:
    """The run context from the scheduler's autoloop.json (githubnext/autoloop ``autoloop_scheduler.py`` output)."""
    selected = _str_or_none(autoloop.get("selected"))
    target = autoloop.get("selected_target_metric")
    issue = autoloop.get("selected_issue")
    return RunContext(
        selected=selected,
        metric_direction=_direction(autoloop.get("selected_metric_direction")) if selected else None,
        target_metric=None if isinstance(target, str) else _target(target),
        issue=issue if isinstance(issue, int) and not isinstance(issue, bool) else None,
        goal=goal,
        run_id=_run_number(env.get("GITHUB_RUN_ID")),
        run_attempt=_run_number(env.get("GITHUB_RUN_ATTEMPT")),
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
    open_store: Callable[[], Store],
    autoloop_path: Path,
    out: Path,
    *,
    context_out: Path,
    budget: int,
    env: Mapping[str, str],
    cwd: Path,
) -> PrepareOutcome:
    """Write the selected program's budgeted memory view into ``out`` and the run context into ``context_out``.

    ``context_out`` may not be ``out`` or lie inside the agent's folder: the agent can rewrite anything there
    before a later job reads it, and the context is what the safe-output job trusts.  That is checked before the
    store is opened (``open_store``), so a misplaced context costs no fetch.
    """
    if _inside(context_out, Path(AGENT_DIR)) or _inside(context_out, out):
        raise UsageError(
            f"--context-out {context_out} is where the agent can rewrite it; write the context outside "
            f"{AGENT_DIR} and the memory folder (e.g. $RUNNER_TEMP/{CONTEXT_ARTIFACT}) and upload it before the agent"
        )
    autoloop = read_json_object(autoloop_path)
    selected = _str_or_none(autoloop.get("selected"))
    selected_file = autoloop.get("selected_file")
    goal = None
    if selected and isinstance(selected_file, str):
        goal = program_goal(Path(selected_file) if Path(selected_file).is_absolute() else cwd / selected_file)
    context = context_from_autoloop(autoloop, goal=goal, env=env)
    store = open_store()
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
        # The core view, its hints in the agent's terms: the agent's checkout has no memory branch, so a
        # `statefile expand` there fails; the component's read tools run where the scheduler's clone is.
        view = render_view(doc, program=selected, budget=budget, level="core", shared=shared, hints=TOOLS)
        text = (
            f"<!-- statefile: a read-only view of {selected}.md on the memory branch. Do not edit state files: "
            f"report your iteration with the {ITEM_TYPE} tool. -->\n{view.text}"
        )
        if not text.endswith("\n"):
            text += "\n"
    memory_path, context_path = out / MEMORY_FILE, context_out / CONTEXT_FILE
    write_text_atomic(memory_path, text)
    write_text_atomic(context_path, _json(context.as_json()))
    return PrepareOutcome(selected, memory_path, context_path, len(text), selected is not None and doc is None)


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or inside it (links resolved, so a link cannot hide the agent's folder)."""
    resolved, root = path.resolve(), folder.resolve()
    return resolved == root or root in resolved.parents


def read_context(path: Path, agent_output: Path) -> RunContext:
    """The run context in ``path``; UsageError when it is missing or lies where the agent wrote files.

    The agent's artifact is downloaded around ``agent_output`` (its folder holds the agent's scratch folder, its
    logs and everything else the agent job uploaded after the agent ran): a context found anywhere in it may be
    the agent's own, so it is refused whatever it says.
    """
    if _inside(path, agent_output.parent):
        raise UsageError(
            f"--context {path} is inside the agent's artifact, which the agent can write; pass the context "
            f"downloaded from the '{CONTEXT_ARTIFACT}' artifact"
        )
    if not path.exists():
        raise NotFoundError(
            f"--context {path}: no such file; download the '{CONTEXT_ARTIFACT}' artifact 'statefile prepare' wrote"
        )
    return RunContext.from_json(read_json_object(path), str(path))


# -- the safe-output job ----------------------------------------------------------------------------------------------


@dataclass
class ItemOutcome:
    """What happened to one item (``action``: recorded, skipped, would-record, failed).

    ``changes`` are the Machine State changes people hear about (:func:`statefile.app.writing.state_changes`:
    a new best, a pause, an un-pause with the reason it cleared, a completion); ``warnings`` what was cut, left out
    or not used of the item's inputs.
    """

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
    changes: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    exit_code: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)


def item_marker(item: Mapping[str, Any], index: int, run_id: str | None, attempt: str | None) -> str:
    """The identity an item's entry carries, so a re-run of the job recognises an item that already landed.

    ``run R attempt A item K``: ``R`` is the job's own run id and ``A`` the *agent's* attempt from the trusted
    run context, so re-running only the safe-output job finds the same identity, while re-running the whole
    workflow (a new agent attempt, a genuinely new iteration) gets a new one.  Without a context (a maintainer's
    ``--any-program``) the item's content digest stands in for the attempt: the same report in the same run is
    recognised; a new report never is.  Nothing of it is the agent's text.
    """
    if run_id and attempt:
        return f"run {run_id} attempt {attempt} item {index}"
    import hashlib  # here: OpenSSL is loaded only when an item has no run context

    digest = hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]
    return f"run {run_id} item {index} sha {digest}" if run_id else f"item {index} sha {digest}"


def _status(item: Mapping[str, Any]) -> tuple[str, bool]:
    """The item's status word and whether it is one of :data:`EXTRA_STATUSES` (recorded as a word of its own)."""
    raw = text_value(item, "status")
    if raw is None:
        raise InputError("status is missing; report accepted, rejected, error or ci-fix-exhausted")
    # The one reading of a status for every module: "✅", "Accepted ✅", "accepted." and "Rejected (metric worse)"
    # all state theirs first.  Only a text that *starts* with its status counts, so "not accepted" is no "accepted".
    known = leading_status(raw)
    if known is not None:
        return known, known in EXTRA_STATUSES
    word = re.sub(r"^[^A-Za-z]+", "", raw).strip().lower().replace("_", "-").replace(" ", "-")
    if word in UPSTREAM_STATUSES or word in EXTRA_STATUSES:
        return word, word in EXTRA_STATUSES
    close = difflib.get_close_matches(word, (*UPSTREAM_STATUSES, *EXTRA_STATUSES), n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise InputError(
        f"status {cut_bytes(raw, 60)!r} is not one this job records; {hint}report one of "
        f"{', '.join((*UPSTREAM_STATUSES, *EXTRA_STATUSES))}"
    )


def _text(item: Mapping[str, Any], name: str, warnings: list[str]) -> str | None:
    value = text_value(item, name, warnings)
    if value is None:
        return None
    # gh-aw escapes template delimiters ({{ → \{\{, ${ → \$\{) in string inputs; a state file is no template.
    return value.replace("\\{\\{", "{{").replace("\\$\\{", "${")


def _program(item: Mapping[str, Any]) -> str:
    program = text_value(item, "program")
    if program is None:
        raise InputError("program is missing; report the program you ran (autoloop.json's 'selected')")
    program = program.strip("`")
    validate_program(program)
    if program == SHARED_PROGRAM:
        raise InputError(f"'{SHARED_PROGRAM}' is not a program")
    return program


def request_from_item(
    item: Mapping[str, Any], *, context: RunContext | None, run_url: str | None, marker: str
) -> tuple[str, RecordRequest, list[str]]:
    """The program, the record request and warnings for one agent output item.  InputError/UsageError if unusable.

    Every value is the agent's and is treated as data: texts cleaned and capped
    (:data:`~statefile.integrations.ghaw.AGENT_TEXT_LIMITS`), numbers bounded, the lists' new bullets marked as
    the agent's.  Authority (the direction, target, goal and issue of the program) comes from ``context`` only.
    """
    program = _program(item)
    warnings: list[str] = []
    for name, why in REFUSED_INPUTS.items():
        if item.get(name) not in (None, "", []):
            warnings.append(f"{name} not recorded: {why}")
    # An input the tool does not declare reaches the job as the agent wrote it: gh-aw sanitises declared inputs only.
    unknown = sorted(k for k in item if k != "type" and k not in INPUTS and k not in REFUSED_INPUTS)
    if unknown:
        listed = ", ".join(cut_bytes(clean_text(str(k)[:200]), 40) for k in unknown[:5])  # cut, then cleaned
        warnings.append(f"not an input of the tool, ignored: {listed}" + (" …" if len(unknown) > 5 else ""))
    pr, warning = reference_value(item, "pr")
    if warning:
        warnings.append(warning)
    issue, warning = reference_value(item, "issue")
    if warning:
        warnings.append(warning)
    commit = _text(item, "commit", warnings)
    status, new_status = _status(item)
    own = context is not None and context.selected == program
    # The issue the scheduler knows for the program wins: the agent's may only fill in one nobody recorded.
    trusted_issue = context.issue if own and context is not None else None
    if trusted_issue is not None and issue is not None and issue != trusted_issue:
        warnings.append(f"issue #{issue} not recorded: the scheduler names #{trusted_issue} for this program")
    request = RecordRequest(
        status=status,
        new_status=new_status,
        metric=number_value(item, "metric"),
        change=_text(item, "change", warnings),
        notes=_text(item, "notes", warnings),
        commit=commit.strip("`") if commit else None,
        run_url=run_url,
        pr=pr,
        ci_fix_attempts=count_value(item, "ci_fix_attempts") or 0,
        lessons=tuple(lines_value(item, "lessons", warnings)),
        pause_reason=_text(item, "pause_reason", warnings),
        metric_direction=context.metric_direction if own and context else None,
        target_metric=context.target_metric if own and context else None,
        goal=context.goal if own and context else None,
        issue=trusted_issue if trusted_issue is not None else issue,
        foreclosed=tuple(lines_value(item, "foreclosed_avenues", warnings)),
        future_directions=tuple(lines_value(item, "future_directions", warnings)),
        marker=marker,
        source=AGENT_SOURCE,
    )
    return program, request, warnings


def already_applied(store: Store, program: str, marker: str) -> bool:
    """Whether an entry carrying ``marker`` is on the branch: in the state file or in its archive.

    Entries only ever move from the state file to the archive, and archives are append-only, so once there the
    marker stays; before the item lands, nothing else writes it (it is read only where statefile writes it:
    :func:`~statefile.policy.rules.has_marker`).
    """
    text = store.read_text(program)
    if text is not None and has_marker(text, marker):
        return True
    # Every layout: an entry path 2 archived (_archive.perf.*.md) is as landed as one path 1 archived.
    return any(has_marker(store.read_path(path), marker) for path in store.archive_part_paths(program))


#: Reports one gh-aw run records: a run is one iteration (the component sets the tool's ``max: 1``, gh-aw's own
#: default for a custom job); a second report is refused, whatever it says, so one agent cannot turn one run
#: into many iterations.
MAX_ITEMS_PER_RUN = 1
#: Items a maintainer's ``apply --any-program`` records from one output (each is a commit of its own).
MAX_ITEMS = 100


def apply_items(
    store: Store,
    output: AgentOutput,
    item_type: str,
    *,
    context: RunContext | None,
    any_program: bool = False,
    run_id: str | None,
    run_url: str | None,
    policy: CompactionPolicy,
    now: datetime,
    dry_run: bool = False,
    compactor: Callable[[str], Compactor] | None = None,
) -> list[ItemOutcome]:
    """Record the items of ``item_type`` in order; each item's failure is its own (see the module docstring).

    With a ``context`` (a gh-aw run) only the selected program is written, and only the first
    :data:`MAX_ITEMS_PER_RUN` items; without one, only with ``any_program`` (a maintainer applying an output by
    hand: any *existing* program, at most :data:`MAX_ITEMS` items), else every item is refused.  Any error inside
    an item, even an unexpected one, fails that item only.
    """
    items = output.of_type(item_type)
    if len(items) > MAX_ITEMS:
        raise UsageError(
            f"the agent output has {len(items):,} {tool_type(item_type)} items; one run records at most "
            f"{MAX_ITEMS_PER_RUN} — nothing was written; check what the agent reported"
        )
    # What refuses the whole output, before any item is read: one line, not one per item.
    if context is None and not any_program:
        raise UsageError(
            "no run context, so nothing was written: in a gh-aw job pass --context with the file 'statefile "
            f"prepare' wrote (the '{CONTEXT_ARTIFACT}' artifact); a maintainer applying an output by hand passes "
            "--any-program"
        )
    if context is not None and context.run_id and run_id and context.run_id != run_id:
        raise UsageError(
            f"the run context is from run {context.run_id}, this job is run {run_id}, so nothing was written; "
            f"download this run's '{CONTEXT_ARTIFACT}' artifact"
        )
    if context is not None and context.selected is None:
        raise UsageError("the scheduler selected no program for this run, so nothing was written")
    cap = MAX_ITEMS_PER_RUN if context is not None else MAX_ITEMS
    run_id = run_id or (context.run_id if context is not None else None)
    attempt = context.run_attempt if context is not None else None
    known: set[str] | None = None
    outcomes: list[ItemOutcome] = []
    for index, item in enumerate(items, 1):
        marker = item_marker(item, index, run_id, attempt)
        outcome = ItemOutcome(index, None, None, "failed", marker)
        outcomes.append(outcome)
        try:
            outcome.program = _program(item)
            if index > cap:
                why = (
                    "an agent calls record_iteration once per iteration"
                    if context is not None
                    else "apply the rest from another output"
                )
                raise UsageError(
                    f"{'a run records' if context is not None else '--any-program records at most'} "
                    f"{plural(cap, 'report')} and this is report {index}; nothing was written for it — {why}"
                )
            program, request, warnings = request_from_item(item, context=context, run_url=run_url, marker=marker)
            outcome.status, outcome.warnings = request.status, warnings
            if context is not None:
                if program != context.selected:
                    raise UsageError(
                        f"this run was selected for '{context.selected}', not '{program}'; nothing was written for "
                        f"this item — a run records only its own program (program: {context.selected})"
                    )
                create = True
            else:
                if known is None:
                    known = set(store.programs())
                if program not in known:
                    raise missing_program(store, program, hint="nothing was written for this item")
                create = False
            if already_applied(store, program, marker):
                outcome.action = "skipped"
                continue
            update = record_update(
                store, program, request, policy, now=now, create=create, keep_issue=True,
                compactor=compactor(program) if compactor is not None else None,
            )  # fmt: skip
            if dry_run:
                planned = update(store.read(program))
                assert planned.detail is not None
                outcome.action = "would-record"
                _fill(outcome, planned.detail, planned.document.size)
                continue
            landed = store.update(program, update, f"statefile: record iteration of {program}")
            if landed.detail is None:  # the marker was in the document at the tip the write ran on
                outcome.action = "skipped"
                continue
            outcome.action = "recorded"
            _fill(outcome, landed.detail, landed.document.size if landed.document is not None else None)
            outcome.commit, outcome.attempts = landed.commit, landed.attempts
        except StatefileError as exc:
            outcome.action, outcome.error = "failed", str(exc)
            outcome.exit_code = exc.exit_code if not isinstance(exc, InputError) else EXIT_USAGE
        except Exception as exc:  # one item's bug must not stop the others: they are still tried
            outcome.action, outcome.exit_code = "failed", EXIT_INTERNAL
            outcome.error = f"internal error on this item ({type(exc).__name__}); nothing was written for it"
    return outcomes


def _fill(outcome: ItemOutcome, done: Recorded, size: int | None) -> None:
    outcome.iteration, outcome.size = done.iteration, size
    outcome.moved, outcome.archived_bytes = len(done.report.moved), done.archived_bytes
    outcome.changes = done.changes
    outcome.warnings.extend(done.notes)


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
                f"writing {state} and its archive would make {plural(count, 'file')} match repo-memory's file-glob, "
                f"over its max-file-count ({number_text(folder.max_file_count)}); nothing was written — raise "
                "max-file-count"
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
