"""The upstream update rules, as one pure function: ``record(doc, request) -> new document``.

:func:`record` applies the rules the upstream prompt gives the agent in prose, deterministically, touching only
Machine State rows, one new entry on top of the history and new list bullets.  docs/recording.md states them and
the decisions where the prose is silent (Best Metric is a ratchet, accepted un-pauses, Last Run never goes back, …).
"""

from __future__ import annotations

import difflib
import math
import re
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from statefile.defaults import MAX_EXPONENT, MAX_GITHUB_NUMBER, MAX_ITERATION
from statefile.errors import ConflictError, InvalidDataError, UsageError
from statefile.model import machine_state
from statefile.model.document import StateDocument, count_row_problems, parse
from statefile.model.history import Iteration, render_iteration
from statefile.model.machine_state import next_iteration_problem, number_row_problem
from statefile.model.patterns import agent_bullet, leading_number, plausible, state_direction, statuses_in_cell
from statefile.model.template import new_state_file
from statefile.numbers import number_text

RECENT_STATUSES_KEPT = 10  # how many statuses Recent Statuses keeps (upstream: the last 10)
PAUSE_AFTER_ERRORS = 3  # consecutive errors that pause the program (upstream: "3 or more")
#: Pause Reason for ci-fix-exhausted without one (the ``ci-fix-exhausted:`` prefix a PR-health workflow looks for).
CI_FIX_EXHAUSTED_REASON = "ci-fix-exhausted: no failure signature reported"
_ERROR_COUNT_REASON = re.compile(r"^\d+ consecutive errors\b")
_REPO_FROM_RUN = re.compile(r"^(https?://[^/\s]+/[^/\s]+/[^/\s]+)/actions/runs/\d+")
AGENT_SOURCE = "agent"  # the ``source`` of a report an agent made through gh-aw's tool (``statefile apply``)
#: The status words the upstream prompt uses; any other must be asked for (``new_status``), so a typo is refused.
UPSTREAM_STATUSES = ("accepted", "rejected", "error", "ci-fix-exhausted")
_STATUS_RE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class RecordRequest:
    """One iteration's outcome, as ``statefile record`` receives it (invalid values raise UsageError): ``status`` is
    one of :data:`UPSTREAM_STATUSES` (or, with ``new_status``, another lower-case word); ``at`` is timezone-aware."""

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
        for what, value in (("metric", self.metric), ("target metric", self.target_metric)):
            advice = "; pass the measured value" if what == "metric" else ""
            if value is not None and (problem := _number_problem(value)):
                raise UsageError(f"{what} {value!r} {problem}{advice}")
        for name in ("change", "notes", "commit", "run_url", "pause_reason", "goal", "metric_name"):
            if (value := getattr(self, name)) is not None:  # one line of the file: a newline would start a bullet
                object.__setattr__(self, name, " ".join(str(value).split()) or None)
        for name in ("lessons", "foreclosed", "future_directions"):
            object.__setattr__(self, name, tuple(t for v in getattr(self, name) if (t := " ".join(str(v).split()))))
        if self.pause_reason is not None:  # a cell: "|" would cut the row for the scheduler's regex
            object.__setattr__(self, "pause_reason", self.pause_reason.replace("|", "/"))
            if status == "accepted":
                raise UsageError("an accepted iteration un-pauses the program; drop the pause reason")
        if self.metric_direction is not None:
            direction = str(self.metric_direction).strip().lower()
            if direction not in ("higher", "lower"):
                raise UsageError(f"metric direction {self.metric_direction!r} is not 'higher' or 'lower'")
            object.__setattr__(self, "metric_direction", direction)
        for what, number, most, low, whose in (
            ("iteration", self.iteration, MAX_ITERATION, "a positive number; iterations start at 1", "the iteration's"),
            ("issue number", self.issue, MAX_GITHUB_NUMBER, "positive", "the program issue's"),
            ("PR number", self.pr, MAX_GITHUB_NUMBER, "positive", "the pull request's"),
        ):
            if number is not None and not 1 <= number <= most:
                problem = f"is not {low}" if number < 1 else f"is beyond {most:,}"
                raise UsageError(f"{what} {number_text(number)} {problem}; pass {whose} number")
        if self.marker is not None and ("--" in self.marker or "\n" in self.marker):
            raise UsageError("the item marker may not contain '--' or a newline")
        if self.commit is not None and not re.fullmatch(r"[0-9A-Za-z._/-]{1,64}", self.commit):
            raise UsageError(f"commit {self.commit!r} is not a commit id; pass a sha such as a1b2c3d")
        if self.run_url is not None and re.search(r"[\s()<>\[\]]", self.run_url):
            raise UsageError(f"run URL {self.run_url!r} contains spaces or brackets; pass the run's URL as it is")
        if self.ci_fix_attempts < 0:
            raise UsageError(f"CI fix attempts {self.ci_fix_attempts} is negative; pass 0 or more")
        if self.at is not None and self.at.utcoffset() is None:
            raise UsageError("the iteration time has no timezone; pass an aware UTC time such as 2025-01-15T12:00:00Z")


def record(doc: StateDocument | None, req: RecordRequest, *, program: str, now: datetime) -> StateDocument:
    """The new document after one iteration under the upstream rules (``doc`` ``None``: a fresh file for
    ``program``); :class:`~statefile.errors.ConflictError` when ``req.iteration`` is already in the history."""
    if now.utcoffset() is None:
        raise UsageError("'now' has no timezone; pass an aware UTC time")
    target_given = _decimal(req.target_metric) if req.target_metric is not None else None
    target_cell = format_number(target_given) if target_given is not None else None
    if (base := doc) is None:
        created = {"metric_direction": req.metric_direction or "higher", "target_metric": target_cell}
        base = parse(new_state_file(program, goal=req.goal, metric=req.metric_name, **created))
    base.require_closed_blocks("record an iteration")  # the new entry would vanish into the open block
    state = base.machine_state
    for problem in count_row_problems(base):  # "abc" reads as 0: the count it stood for would be written over
        raise _unreadable_row(program, problem)
    old_count = machine_state.count_field(state, "iteration_count")
    if req.iteration is None:  # one past both the count and the history, whichever lags
        if problem := next_iteration_problem(old_count, base.highest_iteration):
            raise InvalidDataError(f"in '{program}', {problem}; correct it with 'statefile edit {program}'")
        number = max(old_count, base.highest_iteration) + 1
    elif taken := next((entry for entry in base.history if req.iteration in entry.covers), None):
        raise ConflictError(
            f"iteration {req.iteration} is already recorded ({taken.heading.strip()}); "
            "omit --iteration to take the next free number"
        )
    else:
        number = req.iteration
    # A day ahead of the clock is a typo, not skew between runners; checked before converting to UTC.
    if req.at is not None and (req.at - now > timedelta(days=1) or req.at.year < 1970):
        raise UsageError(f"--at {req.at.isoformat()} is not a time an iteration ran at (after 1970, not in the future)")
    at = (req.at or now).astimezone(timezone.utc)
    direction = req.metric_direction or state_direction(state)
    previous_best = _table_number(state, "best_metric", program)
    metric = _decimal(req.metric) if req.metric is not None else None

    last_run = at  # Last Run never goes back
    with suppress(ValueError, AttributeError):  # one that is no time is written over
        was = datetime.fromisoformat(state.get("last_run", "").strip().replace("Z", "+00:00"))
        if was.utcoffset() is not None and was > at:
            last_run = was.astimezone(timezone.utc)
    fields: dict[str, Any] = {"Last Run": f"{last_run:%Y-%m-%dT%H:%M:%SZ}", "Iteration Count": max(old_count, number)}
    given = {"Metric Direction": req.metric_direction, "Target Metric": target_cell}
    fields |= {label: value for label, value in given.items() if value is not None}
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
        # Reached: the target is no better than the metric (equal counts).
        if metric is not None and target is not None and not done and not improves(target, metric, direction):
            reached = f"target metric {format_number(target)} reached"
            reason = f"{reached} at iteration {number} (metric {format_number(metric)})"
            fields.update({"Completed": True, "Completed Reason": reason})
    elif req.status in ("error", "ci-fix-exhausted"):
        fields["Consecutive Errors"] = errors = errors + 1
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
    pr_link = None
    if req.status == "accepted":  # a link when the run URL names the repository, else "#n"
        found = re.search(r"#?(\d+)", state["pr"]) if req.pr is None and isinstance(state.get("pr"), str) else None
        pr = req.pr if req.pr is not None else int(found.group(1)) if found else None
        repo = _REPO_FROM_RUN.match(req.run_url or "")
        pr_link = None if pr is None else f"[#{pr}]({repo.group(1)}/pull/{pr})" if repo else f"#{pr}"
    best_text = format_number(previous_best) if previous_best is not None else "—"
    section = base.section("machine_state")
    current = {row.key: row.value for row in machine_state.table_rows(list(section.lines) if section else [])}
    # Only the rows whose text changes (an unchanged row keeps its exact bytes, padding included); a missing row
    # already reads as "none".  Even when none does, with_fields restores a drifted Machine State heading.
    new = base.with_fields(
        {
            label: value
            for label, value in fields.items()
            if (key := machine_state.field_key(label)) in current or value is not None
            if current.get(key) != machine_state.cell_text(value)
        }
    )
    as_given = ("status", "run_url", "change", "commit", "ci_fix_attempts", "notes")  # the request's words
    new = new.with_entry(
        render_iteration(
            **{name: getattr(req, name) for name in as_given},
            number=number,
            when=at.strftime("%Y-%m-%d %H:%M"),
            metric=format_number(metric) if metric is not None else None,
            previous_best=None if metric is None else best_text,
            delta=format_delta(metric - previous_best) if metric is not None and previous_best is not None else None,
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
    needle = marker_comment(marker)  # the common case, absent, is decided without splitting the text
    return needle in text and any(line.strip() == needle for line in text.splitlines())


def recorded_iteration(doc: StateDocument) -> int:
    """The number of the iteration :func:`record` just wrote into ``doc`` (its newest entry; 0 if there is none)."""
    newest = doc.history[0] if doc.history else None
    return newest.number if isinstance(newest, Iteration) else 0


def parse_metric(text: str, what: str) -> Decimal:
    """A number typed by a person or an agent (``--metric 0.93``), exactly (a Decimal), or a UsageError."""
    try:
        number = Decimal(text.strip().replace("_", ""))
    except InvalidOperation:
        raise UsageError(f"{what} {text!r} is not a number; pass a value such as 0.93") from None
    if problem := _number_problem(number):
        raise UsageError(f"{what} {text!r} {problem}; pass the measured value")
    return number


def _number_problem(value: float | Decimal) -> str | None:
    """What makes ``value`` no measurement (a bool, NaN, an infinity, beyond 1e±308), or ``None``."""
    if isinstance(value, bool) or not (value.is_finite() if isinstance(value, Decimal) else math.isfinite(value)):
        return "is not a finite number"
    return None if plausible(_decimal(value)) else f"is beyond 1e±{MAX_EXPONENT}"


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
    """A number as the files write it (``55``, ``1.5``); beyond 1e15 or below 1e-9 as ``1.5e+308``."""
    magnitude = abs(value)
    if magnitude and (magnitude >= Decimal("1e15") or magnitude < Decimal("1e-9")):
        mantissa, _, exponent = format(value, "e").partition("e")  # one nonzero digit before any point
        return f"{mantissa.rstrip('0').rstrip('.')}e{exponent}"
    if value == value.to_integral_value():
        return str(int(value))
    exact = Context(prec=max(28, len(value.as_tuple().digits)))
    return format(value.normalize(exact), "f")


def format_delta(value: Decimal) -> str:
    """A signed delta: ``+1.5``, ``-0.25``; a tie is ``0``."""
    return "0" if value == 0 else ("+" if value > 0 else "-") + format_number(abs(value))


def improves(metric: Decimal, best: Decimal, direction: str) -> bool:
    """Whether ``metric`` is strictly better than ``best`` in ``direction``."""
    return metric < best if direction == "lower" else metric > best
