"""gh-aw: :func:`prepare` shows the agent its memory, its context out of reach; :func:`apply` checks its reports."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from statefile.app.context import AppContext
from statefile.app.reading import missing_program
from statefile.app.writing import (
    RecordOutcome,
    RunContext,
    autoloop_context,
    compaction_policy,
    compactor_for,
    record_iteration,
)
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import EXIT_INTERNAL, NotFoundError, StatefileError, UsageError
from statefile.integrations.ghaw import (
    InputError,
    clean_text,
    count_value,
    cut_bytes,
    lines_value,
    number_value,
    read_agent_output,
    read_json_object,
    reference_value,
    text_value,
    tool_type,
    write_text_atomic,
)
from statefile.model.patterns import leading_status
from statefile.numbers import plural
from statefile.policy.rules import AGENT_SOURCE, UPSTREAM_STATUSES, RecordRequest, format_number
from statefile.store import Store
from statefile.store.names import validate_program
from statefile.views.render import TOOLS, render_view

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
#: gh-aw's staged mode: the safe-output jobs say what they would do and write nothing.
STAGED_VARIABLE = "GH_AW_SAFE_OUTPUTS_STAGED"

#: Every input of the ``record-iteration`` job: name → (required, description), as the shipped component declares.
INPUTS: dict[str, tuple[bool, str]] = {
    "program": (True, "The program you ran (autoloop.json's 'selected')."),
    "status": (True, "accepted, rejected, error or ci-fix-exhausted; or pending-ci when CI has not finished yet."),
    "metric": (False, 'The metric this iteration measured: a number written as text (e.g. "0.93"). Omit when '
               "evaluation could not run."),
    "change": (False, "One line: what you tried."),
    "notes": (False, "One or two sentences: why it worked or failed; for errors, the error."),
    "commit": (False, "Short sha of the accepted commit."),
    "pr": (False, 'The program\'s pull request number, as text (e.g. "12").'),
    "issue": (False, "The program issue's number, only when you created it (a recorded issue is kept)."),
    "ci_fix_attempts": (False, 'How many CI fix attempts this iteration took, as text (e.g. "2"); omit when 0.'),
    "lessons": (False, "New lessons learned, one per line."),
    "pause_reason": (False, "Why the program must pause, e.g. 'ci-fix-exhausted: <signature>', 'stuck in CI fix "
                     "loop: <signature>', 'ci-timeout'. Never with accepted."),
    "future_directions": (False, "New promising ideas to try next, one per line."),
    "foreclosed_avenues": (False, "Approaches now conclusively ruled out, with the reason, one per line."),
}  # fmt: skip
#: Status words beyond the upstream four that the job records (the tool's description offers them).
EXTRA_STATUSES = ("pending-ci",)
#: Inputs the job refuses to act on, with why: an agent cannot show that a maintainer asked for it.
REFUSED_INPUTS = {"priorities": "Current Priorities is maintainer-owned; report the idea as future_directions instead"}
#: Reports one gh-aw run records: a run is one iteration, so one agent cannot turn one run into many.
MAX_ITEMS_PER_RUN = 1
#: Items a maintainer's ``apply --any-program`` records from one output (each is a commit of its own).
MAX_ITEMS = 100


@dataclass(frozen=True)
class PrepareOutcome:
    """What :func:`prepare` wrote."""

    selected: str | None
    memory_path: Path
    context_path: Path
    chars: int
    new_program: bool


def prepare(open_store: Callable[[], Store], autoloop_path: Path, out: Path, *, context_out: Path, budget: int,
            env: Mapping[str, str], cwd: Path) -> PrepareOutcome:  # fmt: skip
    """The selected program's memory view into ``out``, the run context into ``context_out`` (out of its reach)."""
    # Links resolved: a link cannot hide the agent's folder.
    if any(context_out.resolve().is_relative_to(folder.resolve()) for folder in (Path(AGENT_DIR), out)):
        raise UsageError(f"--context-out {context_out} is where the agent can rewrite it; write the context outside "
                         f"{AGENT_DIR} and the memory folder (e.g. $RUNNER_TEMP/{CONTEXT_ARTIFACT}) and upload it "
                         "before the agent")  # fmt: skip
    context = autoloop_context(autoloop_path, env=env, cwd=cwd)
    selected = context.selected
    store = open_store()
    doc = store.read(validate_program(selected)) if selected else None
    if selected is None:
        text = f"No Autoloop program was selected for this run ({autoloop_path}); there is no memory to read.\n"
    elif doc is None:
        target = "none" if context.target_metric is None else format_number(context.target_metric)
        text = (f"# Memory of Autoloop program `{selected}`\n\nThis program has no state file yet: this is its first "
                f"iteration. Report it with the `{ITEM_TYPE}` tool; statefile creates `{selected}.md` (metric "
                f"direction {context.metric_direction or 'higher'}, target metric {target}).\n")  # fmt: skip
    else:
        # Hints as the component's tool calls: the agent's checkout has no memory branch for `statefile expand`.
        view = render_view(doc, program=selected, budget=budget, level="core", shared=store.read(SHARED_PROGRAM),
                           hints=TOOLS)  # fmt: skip
        text = (f"<!-- statefile: a read-only view of {selected}.md on the memory branch. Do not edit state files: "
                f"report your iteration with the {ITEM_TYPE} tool. -->\n{view.text}")  # fmt: skip
        text += "" if text.endswith("\n") else "\n"
    memory_path, context_path = out / MEMORY_FILE, context_out / CONTEXT_FILE
    write_text_atomic(memory_path, text)
    write_text_atomic(context_path, json.dumps(context.as_json(), indent=2, ensure_ascii=False) + "\n")
    return PrepareOutcome(selected, memory_path, context_path, len(text), selected is not None and doc is None)


@dataclass
class ItemOutcome:
    """What happened to one item (``action``: recorded, skipped, would-record, failed), and warnings on its inputs."""

    index: int
    program: str | None
    status: str | None
    action: str
    marker: str
    record: RecordOutcome | None = None  # what was (or would be) recorded; None when failed or skipped
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    exit_code: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form: the record's numbers in the item's own keys, where ``record`` is (a commit "" is None)."""
        items, r = list(self.__dict__.items()), self.record
        at = [key for key, _ in items].index("record")
        numbers = [(key, getattr(r, key) or default if r else default) for key, default in _UNSET.items()]
        return dict(items[:at] + numbers + items[at + 1 :])


#: The record's keys in an item's JSON, with the values an item without a record shows.
_UNSET: dict[str, Any] = dict(iteration=None, size=None, moved=0, archived_bytes=0, commit=None, attempts=0, changes={})


def item_marker(item: Mapping[str, Any], index: int, run_id: str | None, attempt: str | None) -> str:
    """What an item's entry carries so a re-run of the job skips it: the run and agent's attempt, else a digest."""
    if run_id and attempt:
        return f"run {run_id} attempt {attempt} item {index}"
    import hashlib  # here: OpenSSL is loaded only when an item has no run context

    digest = hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]
    return f"run {run_id} item {index} sha {digest}" if run_id else f"item {index} sha {digest}"


def _text(item: Mapping[str, Any], name: str, warnings: list[str]) -> str | None:
    value = text_value(item, name, warnings)
    # gh-aw escapes template delimiters ({{ → \{\{, ${ → \$\{) in string inputs; a state file is no template.
    return None if value is None else value.replace("\\{\\{", "{{").replace("\\$\\{", "${")


def _program(item: Mapping[str, Any]) -> str:
    program = text_value(item, "program")
    if program is None:
        raise InputError("program is missing; report the program you ran (autoloop.json's 'selected')")
    program = validate_program(program.strip("`"))
    if program == SHARED_PROGRAM:
        raise InputError(f"'{SHARED_PROGRAM}' is not a program")
    return program


def request_from_item(item: Mapping[str, Any], *, context: RunContext | None, run_url: str | None,
                      marker: str) -> tuple[str, RecordRequest, list[str]]:  # fmt: skip
    """One item's program, request and warnings: its values are data, bounded; authority is ``context``'s."""
    program = _program(item)
    warnings = [f"{k} not recorded: {why}" for k, why in REFUSED_INPUTS.items() if item.get(k) not in (None, "", [])]
    # An input the tool does not declare reaches the job as the agent wrote it: gh-aw sanitises declared inputs only.
    unknown = sorted(k for k in item if k != "type" and k not in INPUTS and k not in REFUSED_INPUTS)
    if unknown:
        listed = ", ".join(cut_bytes(clean_text(str(k)[:200]), 40) for k in unknown[:5])  # cut, then cleaned
        warnings.append(f"not an input of the tool, ignored: {listed}" + (" …" if len(unknown) > 5 else ""))
    (pr, pr_warning), (issue, issue_warning) = reference_value(item, "pr"), reference_value(item, "issue")
    warnings += [w for w in (pr_warning, issue_warning) if w]
    commit = _text(item, "commit", warnings)
    raw = text_value(item, "status")
    if raw is None:
        raise InputError("status is missing; report accepted, rejected, error or ci-fix-exhausted")
    # Only a text that *starts* with its status counts ("Accepted ✅", "✅"), so "not accepted" is no "accepted".
    words, known = (*UPSTREAM_STATUSES, *EXTRA_STATUSES), leading_status(raw)
    status = known or re.sub(r"^[^A-Za-z]+", "", raw).strip().lower().replace("_", "-").replace(" ", "-")
    if known is None and status not in words:
        close = difflib.get_close_matches(status, words, n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise InputError(f"status {cut_bytes(raw, 60)!r} is not one this job records; {hint}report one of "
                         f"{', '.join(words)}")  # fmt: skip
    trusted = context if context is not None and context.selected == program else RunContext()
    # The issue the scheduler knows for the program wins: the agent's may only fill in one nobody recorded.
    if trusted.issue is not None and issue is not None and issue != trusted.issue:
        warnings.append(f"issue #{issue} not recorded: the scheduler names #{trusted.issue} for this program")
    request = RecordRequest(
        status=status, new_status=status in EXTRA_STATUSES, metric=number_value(item, "metric"),
        change=_text(item, "change", warnings), notes=_text(item, "notes", warnings),
        commit=commit.strip("`") if commit else None, run_url=run_url, pr=pr,
        ci_fix_attempts=count_value(item, "ci_fix_attempts") or 0,
        lessons=tuple(lines_value(item, "lessons", warnings)),
        pause_reason=_text(item, "pause_reason", warnings), metric_direction=trusted.metric_direction,
        target_metric=trusted.target_metric, goal=trusted.goal,
        issue=trusted.issue if trusted.issue is not None else issue,
        foreclosed=tuple(lines_value(item, "foreclosed_avenues", warnings)),
        future_directions=tuple(lines_value(item, "future_directions", warnings)), marker=marker, source=AGENT_SOURCE,
    )  # fmt: skip
    return program, request, warnings


@dataclass(frozen=True)
class ApplyOutcome:
    """One outcome per item, and the items gh-aw dropped before the job."""

    items: tuple[ItemOutcome, ...]
    dropped: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """0 when every item landed or was already there, else the highest exit code among those that failed."""
        return max((o.exit_code for o in self.items if o.action == "failed"), default=0)


def apply(app: AppContext, agent_output: Path, *, item_type: str = ITEM_TYPE, context_path: Path | None = None,
          any_program: bool = False, run_id: str | None = None, run_url: str | None = None,
          dry_run: bool = False) -> ApplyOutcome:  # fmt: skip
    """``statefile apply``: the agent's items in order, each failure its own, for the run context's program only."""
    output = read_agent_output(agent_output)
    if context_path is not None and any_program:
        raise UsageError("--context and --any-program exclude each other: a run context names the one program")
    context = None
    if context_path is not None:  # the agent's artifact (around agent_output) may hold anything the agent wrote
        if context_path.resolve().is_relative_to(agent_output.parent.resolve()):
            fix = f"which the agent can write; pass the context downloaded from the '{CONTEXT_ARTIFACT}' artifact"
            raise UsageError(f"--context {context_path} is inside the agent's artifact, {fix}")
        if not context_path.exists():
            fix = f"download the '{CONTEXT_ARTIFACT}' artifact 'statefile prepare' wrote"
            raise NotFoundError(f"--context {context_path}: no such file; {fix}")
        context = RunContext.from_json(read_json_object(context_path), str(context_path))
    env = app.env
    if run_url is None and run_id and env.get("GITHUB_REPOSITORY"):
        server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
        run_url = f"{server}/{env['GITHUB_REPOSITORY']}/actions/runs/{run_id}"
    dropped = tuple(error for error in output.errors if tool_type(item_type) in error)
    items = output.of_type(item_type)
    if not items:
        return ApplyOutcome((), dropped)
    store = app.store()
    # What refuses the whole output, before any item is read: one line, not one per item.
    if len(items) > MAX_ITEMS:
        raise UsageError(f"the agent output has {len(items):,} {tool_type(item_type)} items; one run records at most "
                         f"{MAX_ITEMS_PER_RUN} — nothing was written; check what the agent reported")  # fmt: skip
    if context is None and not any_program:
        raise UsageError("no run context, so nothing was written: in a gh-aw job pass --context with the file "
                         f"'statefile prepare' wrote (the '{CONTEXT_ARTIFACT}' artifact); a maintainer applying an "
                         "output by hand passes --any-program")  # fmt: skip
    if context is not None and context.run_id and run_id and context.run_id != run_id:
        raise UsageError(f"the run context is from run {context.run_id}, this job is run {run_id}, so nothing was "
                         f"written; download this run's '{CONTEXT_ARTIFACT}' artifact")  # fmt: skip
    if context is not None and context.selected is None:
        raise UsageError("the scheduler selected no program for this run, so nothing was written")
    dry_run = dry_run or env.get(STAGED_VARIABLE, "").strip().lower() == "true"
    now = datetime.now(timezone.utc)
    policy = compaction_policy(app.config(), now=now)
    cap = MAX_ITEMS_PER_RUN if context is not None else MAX_ITEMS
    run_id, attempt = (run_id or context.run_id, context.run_attempt) if context is not None else (run_id, None)
    known: set[str] | None = None
    outcomes: list[ItemOutcome] = []
    for index, item in enumerate(items, 1):
        outcome = ItemOutcome(index, None, None, "failed", item_marker(item, index, run_id, attempt))
        outcomes.append(outcome)
        try:
            outcome.program = _program(item)
            if index > cap:
                who, why = ("a run records", "an agent calls record_iteration once per iteration") if context else (
                    "--any-program records at most", "apply the rest from another output")  # fmt: skip
                raise UsageError(f"{who} {plural(cap, 'report')} and this is report {index}; nothing was written for "
                                 f"it — {why}")  # fmt: skip
            program, request, outcome.warnings = request_from_item(item, context=context, run_url=run_url,
                                                                   marker=outcome.marker)  # fmt: skip
            outcome.status = request.status
            if context is not None and program != context.selected:
                raise UsageError(f"this run was selected for '{context.selected}', not '{program}'; nothing was "
                                 f"written for this item — a run records only its own program (program: "
                                 f"{context.selected})")  # fmt: skip
            if context is None:
                known = set(store.programs()) if known is None else known
                if program not in known:
                    raise missing_program(store, program, hint="nothing was written for this item")
            outcome.record = record = record_iteration(
                store, program, request, policy, now=now, create=context is not None, keep_issue=True,
                compactor=compactor_for(app, program), dry_run=dry_run,
            )  # fmt: skip
            # None: the item's entry is on the branch already (the job was re-run)
            outcome.action = "skipped" if record is None else "would-record" if dry_run else "recorded"
            outcome.warnings.extend(record.notes if record else ())
        except StatefileError as exc:
            outcome.error, outcome.exit_code = str(exc), exc.exit_code
        except Exception as exc:  # one item's bug must not stop the others: they are still tried
            outcome.exit_code = EXIT_INTERNAL
            outcome.error = f"internal error on this item ({type(exc).__name__}); nothing was written for it"
    return ApplyOutcome(tuple(outcomes), dropped)
