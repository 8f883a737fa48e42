"""The upstream update rules, as one pure function: ``record(doc, request) -> new document``.

The upstream prompt tells the agent in prose how to update its state file after each run; :func:`record` applies
those rules deterministically, touching only Machine State rows, the history's insertion point (one new entry) and
the list sections (new bullets).  docs/recording.md states them; where the prose is silent, the decisions are:
Best Metric is a ratchet (only an accepted improvement moves it); completion is checked on accepted iterations
only; rejected and new status words (``new_status``) leave Consecutive Errors alone; accepted un-pauses (the
caller reports the cleared reason); Last Run never goes backwards; the new entry goes on top; Metric Direction and
Target Metric from the program definition win; ci-fix-exhausted pauses at once and counts as an error; a pause
reason pauses now and a program paused for a reason of its own keeps it; accepted entries link the PR; a legacy
Steering Issue row is copied into an empty Issue; cells are never empty and never hold ``|``; a drifted Machine
State heading is made exact.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from statefile.defaults import MAX_EXPONENT, MAX_GITHUB_NUMBER, MAX_ITERATION
from statefile.errors import ConflictError, InvalidDataError, UsageError
from statefile.model import machine_state
from statefile.model.anomalies import count_row_problems, next_iteration_problem, number_row_problem, plausible
from statefile.model.document import StateDocument, parse
from statefile.model.history import Iteration, render_iteration
from statefile.model.patterns import agent_bullet, leading_number, state_direction, statuses_in_cell
from statefile.model.template import new_state_file
from statefile.numbers import number_text

#: How many statuses Recent Statuses keeps (the upstream prompt says the last 10).
RECENT_STATUSES_KEPT = 10
#: Consecutive errors at which the program is paused (upstream: "3 or more").
PAUSE_AFTER_ERRORS = 3
#: Statuses that count as errors.
ERROR_STATUSES = frozenset({"error", "ci-fix-exhausted"})
#: Pause Reason for ci-fix-exhausted without one (the ``ci-fix-exhausted:`` prefix a PR-health workflow looks for).
CI_FIX_EXHAUSTED_REASON = "ci-fix-exhausted: no failure signature reported"
DIRECTIONS = ("higher", "lower")
_ERROR_COUNT_REASON = re.compile(r"^\d+ consecutive errors\b")
_REPO_FROM_RUN = re.compile(r"^(https?://[^/\s]+/[^/\s]+/[^/\s]+)/actions/runs/\d+")
#: The ``source`` of a report an agent made through gh-aw's tool (``statefile apply``).
AGENT_SOURCE = "agent"
#: The status words the upstream prompt uses; any other must be asked for (``new_status``), so a typo is refused.
UPSTREAM_STATUSES = ("accepted", "rejected", "error", "ci-fix-exhausted")

_STATUS_RE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
# An --at this far ahead of the clock is a typo, not skew between runners.
_CLOCK_SKEW = timedelta(days=1)


@dataclass(frozen=True)
class RecordRequest:
    """One iteration's outcome, as ``statefile record`` receives it; invalid values raise
    :class:`~statefile.errors.UsageError`.

    ``status`` is one of :data:`UPSTREAM_STATUSES` (or, with ``new_status``, another lower-case word); ``at`` is
    timezone-aware (``None``: :func:`record`'s ``now``); an explicit ``iteration`` the history covers conflicts.
    """

    status: str
    metric: float | Decimal | None = None
    change: str | None = None
    notes: str | None = None
    commit: str | None = None
    run_url: str | None = None
    pr: int | None = None
    ci_fix_attempts: int = 0
    lesson: str | None = None
    at: datetime | None = None
    iteration: int | None = None
    pause_reason: str | None = None
    #: The program definition's (autoloop.json's ``selected_*``): used and written to the rows.
    metric_direction: str | None = None
    target_metric: float | Decimal | None = None
    #: For a file created by this record (Program Info).
    goal: str | None = None
    metric_name: str | None = None
    issue: int | None = None
    lessons: tuple[str, ...] = ()
    foreclosed: tuple[str, ...] = ()
    future_directions: tuple[str, ...] = ()
    #: An identity written invisibly into the entry, so a re-run can see it already landed.
    marker: str | None = None
    new_status: bool = False
    #: Who reported the new bullets (:data:`AGENT_SOURCE`: each marked ``*(agent, iteration 42)* …``; ``None``: not).
    source: str | None = None

    def __post_init__(self) -> None:
        status = self.status.strip().lower() if isinstance(self.status, str) else ""
        if not _STATUS_RE.match(status):
            raise UsageError(
                f"status {self.status!r} is not a status word; use accepted, rejected, error, ci-fix-exhausted "
                "(or a new lower-case word such as pending-ci with --new-status)"
            )
        if status not in UPSTREAM_STATUSES and not self.new_status:
            close = difflib.get_close_matches(status, UPSTREAM_STATUSES, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise UsageError(
                f"status '{status}' is not one of the upstream words ({', '.join(UPSTREAM_STATUSES)}); {hint}"
                "pass --new-status to record it as a new word"
            )
        object.__setattr__(self, "status", status)
        for what, value, advice in (("metric", self.metric, "; pass the measured value"),
                                    ("target metric", self.target_metric, "")):  # fmt: skip
            if value is not None and (isinstance(value, bool) or not math.isfinite(value)):
                raise UsageError(f"{what} {value!r} is not a finite number{advice}")
            if value is not None and not plausible(_decimal(value)):
                raise UsageError(f"{what} {value!r} is beyond 1e±{MAX_EXPONENT}{advice}")
        if self.iteration is not None and self.iteration > MAX_ITERATION:
            raise UsageError(f"iteration {self.iteration} is beyond {MAX_ITERATION:,}; pass the iteration's number")
        for name in ("change", "notes", "commit", "run_url", "pause_reason", "goal", "metric_name"):
            value = getattr(self, name)
            if value is not None:  # one line of the file: a newline would start a bullet
                object.__setattr__(self, name, " ".join(str(value).split()) or None)
        for name in ("lessons", "foreclosed", "future_directions"):
            texts = tuple(" ".join(str(v).split()) for v in getattr(self, name))
            object.__setattr__(self, name, tuple(t for t in texts if t))
        if self.pause_reason is not None:  # a cell: "|" would cut the row for the scheduler's regex
            object.__setattr__(self, "pause_reason", self.pause_reason.replace("|", "/"))
            if status == "accepted":
                raise UsageError("an accepted iteration un-pauses the program; drop the pause reason")
        if self.metric_direction is not None:
            direction = str(self.metric_direction).strip().lower()
            if direction not in DIRECTIONS:
                raise UsageError(f"metric direction {self.metric_direction!r} is not 'higher' or 'lower'")
            object.__setattr__(self, "metric_direction", direction)
        numbers = (("issue", self.issue, "the program issue's"), ("PR", self.pr, "the pull request's"))
        for what, number, whose in numbers:
            if number is not None and not 1 <= number <= MAX_GITHUB_NUMBER:
                raise UsageError(f"{what} number {_reference(number)}; pass {whose} number")
        if self.marker is not None and ("--" in self.marker or "\n" in self.marker):
            raise UsageError("the item marker may not contain '--' or a newline")
        if self.commit is not None and not re.fullmatch(r"[0-9A-Za-z._/-]{1,64}", self.commit):
            raise UsageError(f"commit {self.commit!r} is not a commit id; pass a sha such as a1b2c3d")
        if self.run_url is not None and re.search(r"[\s()<>\[\]]", self.run_url):
            raise UsageError(f"run URL {self.run_url!r} contains spaces or brackets; pass the run's URL as it is")
        if self.iteration is not None and self.iteration < 1:
            raise UsageError(f"iteration {self.iteration} is not a positive number; iterations start at 1")
        if self.ci_fix_attempts < 0:
            raise UsageError(f"CI fix attempts {self.ci_fix_attempts} is negative; pass 0 or more")
        if self.at is not None and self.at.utcoffset() is None:
            raise UsageError("the iteration time has no timezone; pass an aware UTC time such as 2025-01-15T12:00:00Z")


def _reference(number: int) -> str:
    """What is wrong with an issue or PR number outside 1…:data:`~statefile.defaults.MAX_GITHUB_NUMBER`."""
    if number < 1:
        return f"{number} is not positive"
    return f"{number_text(number)} is beyond {MAX_GITHUB_NUMBER:,}, the largest GitHub issues and pull requests reach"


def record(doc: StateDocument | None, req: RecordRequest, *, program: str, now: datetime) -> StateDocument:
    """The new document after one iteration under the upstream rules (``doc`` ``None``: a fresh file for
    ``program``); :class:`~statefile.errors.ConflictError` when ``req.iteration`` is already in the history."""
    if now.utcoffset() is None:
        raise UsageError("'now' has no timezone; pass an aware UTC time")
    target_given = _decimal(req.target_metric) if req.target_metric is not None else None
    base = doc
    if base is None:
        cell = format_number(target_given) if target_given is not None else None
        created = {"metric_direction": req.metric_direction or "higher", "target_metric": cell}
        base = parse(new_state_file(program, goal=req.goal, metric=req.metric_name, **created))
    base.require_closed_blocks("record an iteration")  # the new entry would vanish into the open block
    state = base.machine_state
    for problem in count_row_problems(base):  # "abc" reads as 0: the count it stood for would be written over
        raise _unreadable_row(program, problem)
    old_count = machine_state.count_field(state, "iteration_count")
    number = _iteration_number(base, req, old_count, program)
    if req.at is not None and (req.at - now > _CLOCK_SKEW or req.at.year < 1970):  # before converting to UTC
        raise UsageError(f"--at {req.at.isoformat()} is not a time an iteration ran at (after 1970, not in the future)")
    at = (req.at or now).astimezone(timezone.utc)
    direction = req.metric_direction or state_direction(state)
    previous_best = _table_number(state, "best_metric", program)
    metric = _decimal(req.metric) if req.metric is not None else None

    fields: dict[str, Any] = {
        "Last Run": _later_run(state.get("last_run"), at),
        "Iteration Count": max(old_count, number),
    }
    if req.metric_direction is not None:
        fields["Metric Direction"] = req.metric_direction
    if target_given is not None:
        fields["Target Metric"] = format_number(target_given)
    # A cell of glyphs only ("✅✅❌", no commas) is one item to the scheduler; it stands for those statuses.
    previous = [word for item in state.get("recent_statuses", []) for word in statuses_in_cell(item) or [item]]
    fields["Recent Statuses"] = [*previous, req.status][-RECENT_STATUSES_KEPT:]
    errors = machine_state.count_field(state, "consecutive_errors")
    if req.status == "accepted":
        fields.update({"Consecutive Errors": 0, "Paused": False, "Pause Reason": None})
        if metric is not None and (previous_best is None or improves(metric, previous_best, direction)):
            fields["Best Metric"] = format_number(metric)
        target = target_given if target_given is not None else _table_number(state, "target_metric", program)
        done = state.get("completed")
        if metric is not None and target is not None and not done and reaches(metric, target, direction):
            reached = f"target metric {format_number(target)} reached"
            reason = f"{reached} at iteration {number} (metric {format_number(metric)})"
            fields.update({"Completed": True, "Completed Reason": reason})
    elif req.status in ERROR_STATUSES:
        errors += 1
        fields["Consecutive Errors"] = errors
        if req.status == "ci-fix-exhausted":
            fields.update({"Paused": True, "Pause Reason": req.pause_reason or CI_FIX_EXHAUSTED_REASON})
        elif errors >= PAUSE_AFTER_ERRORS:
            fields["Paused"] = True
            kept = state.get("pause_reason") if state.get("paused") else None
            if req.pause_reason or not isinstance(kept, str) or _ERROR_COUNT_REASON.match(kept):
                fields["Pause Reason"] = req.pause_reason or (
                    f"{errors} consecutive errors (last: iteration {number}, {req.status}); "
                    "fix the cause, then set Paused to false"
                )
    if req.pause_reason and "Paused" not in fields:
        fields.update({"Paused": True, "Pause Reason": req.pause_reason})
    if req.pr is not None:
        fields["PR"] = f"#{req.pr}"
    if req.issue is not None:
        fields["Issue"] = f"#{req.issue}"
    elif state.get("issue") is None and isinstance(state.get("steering_issue"), str):
        fields["Issue"] = state["steering_issue"].replace("|", "/")
    pr_link = _pr_link(req.pr, state.get("pr"), req.run_url) if req.status == "accepted" else None

    # Even when no row changes: with_fields also restores a drifted Machine State heading.
    new = base.with_fields(_changed_fields(base, fields))
    new = new.with_entry(
        render_iteration(
            number=number,
            when=at.strftime("%Y-%m-%d %H:%M"),
            status=req.status,
            run_url=req.run_url,
            change=req.change,
            metric=format_number(metric) if metric is not None else None,
            previous_best=(format_number(previous_best) if previous_best is not None else "—")
            if metric is not None
            else None,
            delta=format_delta(metric - previous_best) if metric is not None and previous_best is not None else None,
            commit=req.commit,
            ci_fix_attempts=req.ci_fix_attempts,
            notes=req.notes,
            pr=pr_link,
            trailer=marker_comment(req.marker) if req.marker else None,
            newline=new.newline,
        )
    )
    # Each list in one pass (one by one re-read the section each time: quadratic in an agent's many lines).
    lessons = [t for t in (req.lesson, *req.lessons) if t is not None]  # an empty --lesson is refused, as lesson add
    for kind, texts in (("lessons", lessons), ("foreclosed", req.foreclosed), ("future", req.future_directions)):
        if req.source is not None:
            texts = [agent_bullet(t, req.source, number) for t in texts]
        new = new.with_items(kind, texts)
    return new


def marker_comment(marker: str) -> str:
    """The invisible line that carries an item's identity in its entry: ``<!-- statefile-item: … -->``."""
    return f"<!-- statefile-item: {marker} -->"


#: The commit trailer that carries an item's identity (``git interpret-trailers`` reads it).
ITEM_TRAILER = "Statefile-Item"


def has_marker(text: str, marker: str) -> bool:
    """Whether ``text`` (a state file or an archive part) holds the entry that carries ``marker``: a line that is
    the marker comment alone, which an agent's one-line, comment-free fields can never forge."""
    needle = marker_comment(marker)
    if needle not in text:  # the common case, decided without splitting the text
        return False
    return any(line.strip() == needle for line in text.splitlines())


def _pr_link(number: int | None, cell: Any, run_url: str | None) -> str | None:
    """The PR line of an accepted entry: a link when the run URL names the repository, else ``#n``."""
    found = re.search(r"#?(\d+)", cell) if number is None and isinstance(cell, str) else None
    pr = number if number is not None else int(found.group(1)) if found else None
    if pr is None:
        return None
    match = _REPO_FROM_RUN.match(run_url or "")
    return f"[#{pr}]({match.group(1)}/pull/{pr})" if match else f"#{pr}"


def recorded_iteration(doc: StateDocument) -> int:
    """The number of the iteration :func:`record` just wrote into ``doc`` (its newest entry; 0 if there is none)."""
    newest = doc.history[0] if doc.history else None
    return newest.number if isinstance(newest, Iteration) else 0


def _iteration_number(doc: StateDocument, req: RecordRequest, count: int, program: str) -> int:
    if req.iteration is None:  # one past both the count and the history, whichever lags
        if problem := next_iteration_problem(count, doc.highest_iteration):
            raise InvalidDataError(f"in '{program}', {problem}; correct it with 'statefile edit {program}'")
        return max(count, doc.highest_iteration) + 1
    for entry in doc.history:
        if req.iteration in entry.covers:
            raise ConflictError(
                f"iteration {req.iteration} is already recorded ({entry.heading.strip()}); "
                "omit --iteration to take the next free number"
            )
    return req.iteration


def _later_run(current: Any, at: datetime) -> str:
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(current, str):
        try:
            previous = datetime.fromisoformat(current.strip().replace("Z", "+00:00"))
        except ValueError:
            return stamp
        if previous.utcoffset() is not None and previous > at:  # kept, in the one shape the scheduler parses
            return previous.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return stamp


def _changed_fields(doc: StateDocument, fields: dict[str, Any]) -> dict[str, Any]:
    """Only the rows whose text would change, so an unchanged row keeps its exact bytes (padding included)."""
    section = doc.section("machine_state")
    rows = machine_state.table_rows(list(section.lines)) if section is not None else []
    current = {row.key: row.value for row in rows}
    # A missing row already reads as "none": do not add rows that say nothing.
    return {
        label: value
        for label, value in fields.items()
        if (key := machine_state.field_key(label)) in current or value is not None
        if current.get(key) != machine_state.cell_text(value)
    }


def parse_metric(text: str, what: str) -> Decimal:
    """A number typed by a person or an agent (``--metric 0.93``), exactly (a Decimal), or a UsageError."""
    try:
        number = Decimal(text.strip().replace("_", ""))
    except InvalidOperation:
        raise UsageError(f"{what} {text!r} is not a number; pass a value such as 0.93") from None
    if not number.is_finite():
        raise UsageError(f"{what} {text!r} is not a finite number")
    if not plausible(number):
        raise UsageError(f"{what} {text!r} is beyond 1e±{MAX_EXPONENT}; pass the measured value")
    return number


def _table_number(state: dict[str, Any], key: str, program: str) -> Decimal | None:
    """A number the rules compare against; one no measurement could be is an error in the file."""
    if problem := number_row_problem(state, key):
        raise _unreadable_row(program, problem)
    return leading_number(state.get(key))


def _unreadable_row(program: str, problem: str) -> InvalidDataError:
    return InvalidDataError(f"in '{program}', {problem}; fix it with 'statefile edit {program}', then record again")


def _decimal(value: float | Decimal) -> Decimal:
    """A float by its shortest round-tripping text (0.93, not 0.9300000000000000488…), so differences are exact."""
    return value if isinstance(value, Decimal) else Decimal(repr(float(value)))


def format_number(value: Decimal) -> str:
    """A number as the files write it: ``55``, ``0.00000649``, ``1.5``; beyond 1e15 or below 1e-9 in magnitude
    ``1.5e+308``, so a cell never grows to hundreds of digits."""
    magnitude = abs(value)
    if magnitude and (magnitude >= Decimal("1e15") or magnitude < Decimal("1e-9")):
        mantissa, _, exponent = format(value, "e").partition("e")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{exponent}"
    if value == value.to_integral_value():
        return str(int(value))
    exact = Context(prec=max(28, len(value.as_tuple().digits)))
    return format(value.normalize(exact), "f")


def format_delta(value: Decimal) -> str:
    """A signed delta: ``+1.5``, ``-0.25``; a tie is ``0``."""
    if value == 0:
        return "0"
    return ("+" if value > 0 else "-") + format_number(abs(value))


def improves(metric: Decimal, best: Decimal, direction: str) -> bool:
    """Whether ``metric`` is strictly better than ``best`` in ``direction``."""
    return metric < best if direction == "lower" else metric > best


def reaches(metric: Decimal, target: Decimal, direction: str) -> bool:
    """Whether ``metric`` has reached ``target`` in ``direction`` (equal counts)."""
    return metric <= target if direction == "lower" else metric >= target
