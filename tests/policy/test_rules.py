"""The upstream update rules (statefile.policy.rules.record): every rule, both directions, and the real corpus."""

from __future__ import annotations

import json
import random
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXED_NOW, corpus_params, read_raw, state_file_text
from gitutil import make_repos, run_statefile
from upstream import meaningful, upstream_machine_state

from statefile.errors import ConflictError, UsageError
from statefile.model.document import StateDocument, parse
from statefile.model.history import Iteration
from statefile.model.patterns import leading_number
from statefile.model.template import new_state_file
from statefile.policy.rules import (
    CI_FIX_EXHAUSTED_REASON,
    UPSTREAM_STATUSES,
    RecordRequest,
    format_delta,
    format_number,
    record,
)
from statefile.policy.rules import record as rules_record

NOW = datetime(2025, 1, 15, 12, 0, tzinfo=timezone.utc)


def upstream_read(text: str) -> dict[str, Any]:
    """The table as the upstream scheduler reads it (tests/upstream.py), without its separator-row quirk."""
    return meaningful(upstream_machine_state(text))


def run(
    doc: StateDocument | None, status: str, program: str = "demo", now: datetime = NOW, **kwargs: Any
) -> StateDocument:
    # Words other than the upstream four are asked for explicitly, as `record --new-status` does.
    kwargs.setdefault("new_status", status.strip().lower() not in UPSTREAM_STATUSES)
    return record(doc, RecordRequest(status, **kwargs), program=program, now=now)


def fresh(**fields: Any) -> StateDocument:
    return parse(new_state_file("demo", **fields))


# -- accepted -------------------------------------------------------------------------------------------------------


def test_first_accepted_on_a_missing_file_starts_from_the_template() -> None:
    doc = run(None, "accepted", metric=0.93, change="Try X", notes="Worked.", commit="abc1234", run_url="https://r/1")
    state = doc.machine_state
    assert state["iteration_count"] == 1
    assert state["best_metric"] == "0.93"
    assert state["last_run"] == "2025-01-15T12:00:00Z"
    assert state["recent_statuses"] == ["accepted"]
    assert state["consecutive_errors"] == 0
    assert state["paused"] is False
    entry = doc.history[0]
    assert isinstance(entry, Iteration)
    assert entry.number == 1
    assert entry.heading == "### Iteration 1 — 2025-01-15 12:00 UTC — [Run](https://r/1)"
    assert entry.status == "accepted"
    assert entry.metric == "0.93"
    assert entry.previous_best == "—"
    assert entry.delta is None  # first metric: nothing to compare with
    assert entry.commit == "abc1234"
    assert "✅ Accepted" in entry.raw
    assert "*(No iterations yet.)*" not in doc.render()
    assert doc.render().startswith("# Autoloop: demo\n")


@pytest.mark.parametrize(
    ("direction", "best", "metric", "new_best", "delta"),
    [
        ("higher", "55", 56.5, "56.5", "+1.5"),
        ("higher", "55", 54.75, "55", "-0.25"),  # accepted but worse: the ratchet keeps the best
        ("higher", "55", 55.0, "55", "0"),
        ("lower", "21.841", 21.5, "21.5", "-0.341"),
        ("lower", "21.841", 22.0, "21.841", "+0.159"),
        ("lower", "0.00000649", 0.0000064, "0.0000064", "-0.00000009"),
    ],
)
def test_accepted_best_metric_is_a_ratchet_in_the_metric_direction(
    direction: str, best: str, metric: float, new_best: str, delta: str
) -> None:
    doc = fresh(metric_direction=direction, best_metric=best, iteration_count=7)
    after = run(doc, "accepted", metric=metric)
    assert after.machine_state["best_metric"] == new_best
    entry = after.history[0]
    assert isinstance(entry, Iteration)
    assert entry.previous_best == best
    assert entry.delta == delta
    assert f"- **Metric**: {format_number(Decimal(repr(metric)))} (previous best: {best}, delta: {delta})" in entry.raw


def test_accepted_resets_errors_unpauses_and_clears_the_pause_reason() -> None:
    doc = fresh(consecutive_errors=4, paused=True, pause_reason="4 consecutive errors", iteration_count=9)
    after = run(doc, "accepted", metric=3)
    state = upstream_read(after.render())
    assert state["consecutive_errors"] == 0
    assert state["paused"] is False
    assert state["pause_reason"] is None
    assert state["iteration_count"] == 10


def test_accepted_without_metric_keeps_best_and_writes_no_metric_line() -> None:
    after = run(fresh(best_metric=40), "accepted", change="refactor")
    assert after.machine_state["best_metric"] == "40"
    assert "**Metric**" not in after.history[0].raw


def test_ci_fix_attempts_and_pr_are_recorded() -> None:
    after = run(fresh(), "accepted", metric=1, ci_fix_attempts=2, pr=81)
    assert "- **CI fix attempts**: 2" in after.history[0].raw
    assert after.machine_state["pr"] == "#81"
    none = run(fresh(), "accepted", metric=1)
    assert "CI fix attempts" not in none.history[0].raw


@pytest.mark.parametrize(
    ("direction", "target", "metric", "completed"),
    [
        ("higher", "0.95", 0.95, True),
        ("higher", "0.95", 0.96, True),
        ("higher", "0.95", 0.94, False),
        ("lower", "10", 9.5, True),
        ("lower", "10", 10.5, False),
    ],
)
def test_completion_when_the_target_is_reached(direction: str, target: str, metric: float, completed: bool) -> None:
    doc = fresh(metric_direction=direction, target_metric=target, best_metric=0 if direction == "higher" else 99)
    after = run(doc, "accepted", metric=metric)
    state = upstream_read(after.render())
    assert state["completed"] is completed
    if completed:
        assert state["completed_reason"] == f"target metric {target} reached at iteration 1 (metric {metric:g})"
    else:
        assert state["completed_reason"] is None


def test_only_accepted_iterations_complete_a_program() -> None:
    doc = fresh(target_metric=5, best_metric=1)
    assert upstream_read(run(doc, "rejected", metric=9).render())["completed"] is False
    assert upstream_read(run(doc, "pending-ci", metric=9).render())["completed"] is False


def test_no_target_means_never_completed() -> None:
    assert run(fresh(), "accepted", metric=10**9).machine_state["completed"] is False


# -- rejected, errors, other words ------------------------------------------------------------------------------------


def test_rejected_counts_and_keeps_best_and_errors() -> None:
    doc = fresh(best_metric=50, consecutive_errors=2, iteration_count=3)
    after = run(doc, "rejected", metric=60, change="Try Y", notes="Slower.")
    state = after.machine_state
    assert state["iteration_count"] == 4
    assert state["best_metric"] == "50"  # a better metric that was rejected is not the best
    assert state["consecutive_errors"] == 2
    assert state["recent_statuses"] == ["rejected"]
    entry = after.history[0]
    assert isinstance(entry, Iteration)
    assert entry.number == 4
    assert entry.status == "rejected"
    assert "❌ Rejected" in entry.raw
    assert entry.delta == "+10"


@pytest.mark.parametrize("status", ["error"])  # ci-fix-exhausted pauses at once: below, with the upstream rules
def test_three_consecutive_errors_pause_the_program(status: str) -> None:
    doc = fresh()
    for expected in (1, 2):
        doc = run(doc, status)
        assert doc.machine_state["consecutive_errors"] == expected
        assert doc.machine_state["paused"] is False
    doc = run(doc, status)
    state = upstream_read(doc.render())
    assert state["consecutive_errors"] == 3
    assert state["paused"] is True
    assert (
        state["pause_reason"]
        == f"3 consecutive errors (last: iteration 3, {status}); fix the cause, then set Paused to false"
    )
    assert "⚠️" in doc.history[0].raw
    doc = run(doc, status)
    assert doc.machine_state["pause_reason"].startswith("4 consecutive errors (last: iteration 4")


def test_ci_fix_exhausted_entry_says_so() -> None:
    entry = run(fresh(), "ci-fix-exhausted", ci_fix_attempts=3).history[0]
    assert isinstance(entry, Iteration)
    assert entry.status == "ci-fix-exhausted"
    assert "- **Status**: ⚠️ CI fix exhausted" in entry.raw


@pytest.mark.parametrize(("status", "glyph"), [("pending-ci", "⏳"), ("pending", "⏳"), ("local-only", "•")])
def test_other_words_count_and_leave_errors_alone(status: str, glyph: str) -> None:
    doc = fresh(consecutive_errors=2, best_metric=5, iteration_count=1)
    after = run(doc, status, metric=9)
    state = after.machine_state
    assert state["iteration_count"] == 2
    assert state["consecutive_errors"] == 2
    assert state["paused"] is False
    assert state["best_metric"] == "5"
    assert state["recent_statuses"] == [status]
    assert f"- **Status**: {glyph} " in after.history[0].raw


@pytest.mark.parametrize("status", ["pending-ci", "local-only"])
def test_other_words_read_back_from_the_entry(status: str) -> None:
    assert run(fresh(), status).iterations[0].status == status


def test_status_is_normalized_and_validated() -> None:
    assert RecordRequest("  Accepted ").status == "accepted"
    for bad in ("", "accepted, rejected", "two words", "-x", "ok!"):
        with pytest.raises(UsageError, match="not a status word"):
            RecordRequest(bad)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"metric": float("nan")}, "not a finite number"),
        ({"metric": float("inf")}, "not a finite number"),
        ({"iteration": 0}, "not a positive number"),
        ({"ci_fix_attempts": -1}, "negative"),
        ({"pr": 0}, "not positive"),
        ({"at": datetime(2025, 1, 1, 12, 0)}, "no timezone"),
    ],
)
def test_request_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        RecordRequest("accepted", **kwargs)


def test_naive_now_is_refused() -> None:
    with pytest.raises(UsageError, match="no timezone"):
        record(None, RecordRequest("accepted"), program="demo", now=datetime(2025, 1, 1))


# -- numbering -------------------------------------------------------------------------------------------------------


def history_doc(count: int, entries: list[str]) -> StateDocument:
    doc = fresh(iteration_count=count)
    text = doc.render().replace("*(No iterations yet.)*\n", "".join(entries))
    return parse(text)


RANGE = "### Iters 1–10 — ✅ (metrics 1→5): early work\n\n"
ENTRY_12 = "### Iteration 12 — 2025-01-01 10:00 UTC\n\n- **Status**: ✅ Accepted\n\n"


def test_number_is_one_past_count_and_history() -> None:
    # The count lags the history (an agent forgot to bump it): the history decides.
    assert run(history_doc(3, [ENTRY_12, RANGE]), "rejected").history[0].covers == (13,)
    assert run(history_doc(3, [ENTRY_12, RANGE]), "rejected").machine_state["iteration_count"] == 13
    # The history lags the count (entries were lost): the count decides.
    assert run(history_doc(40, [ENTRY_12, RANGE]), "rejected").history[0].covers == (41,)


@pytest.mark.parametrize("taken", [12, 1, 5, 10])
def test_an_explicit_number_already_recorded_is_a_conflict(taken: int) -> None:
    doc = history_doc(12, [ENTRY_12, RANGE])
    before = doc.render()
    with pytest.raises(ConflictError, match=f"iteration {taken} is already recorded"):
        run(doc, "accepted", metric=1, iteration=taken)
    assert doc.render() == before


def test_an_explicit_free_number_is_used_and_the_count_never_goes_down() -> None:
    doc = history_doc(12, [ENTRY_12, RANGE])
    gap = run(doc, "accepted", iteration=11)
    assert gap.history[0].covers == (11,)
    assert gap.machine_state["iteration_count"] == 12
    ahead = run(doc, "accepted", iteration=20)
    assert ahead.machine_state["iteration_count"] == 20
    assert run(ahead, "rejected").history[0].covers == (21,)


# -- table details ----------------------------------------------------------------------------------------------------


def test_recent_statuses_keep_the_last_ten() -> None:
    eleven = ", ".join(["accepted"] * 5 + ["error"] * 6)
    after = run(fresh(recent_statuses=eleven), "rejected")
    assert after.machine_state["recent_statuses"] == ["accepted"] * 3 + ["error"] * 6 + ["rejected"]


def test_last_run_uses_at_and_never_goes_backwards() -> None:
    at = datetime(2025, 1, 10, 8, 30, 15, tzinfo=timezone(timedelta(hours=2)))
    after = run(fresh(), "accepted", at=at)
    assert after.machine_state["last_run"] == "2025-01-10T06:30:15Z"
    assert after.history[0].heading.startswith("### Iteration 1 — 2025-01-10 06:30 UTC")
    older = run(after, "rejected", at=datetime(2025, 1, 1, tzinfo=timezone.utc))
    assert older.machine_state["last_run"] == "2025-01-10T06:30:15Z"
    assert older.history[0].heading.startswith("### Iteration 2 — 2025-01-01 00:00 UTC")


def test_an_at_in_the_future_or_before_1970_is_refused() -> None:
    with pytest.raises(UsageError, match="not a time an iteration ran at"):
        run(fresh(), "accepted", at=NOW + timedelta(days=2))
    with pytest.raises(UsageError, match="not a time an iteration ran at"):
        run(fresh(), "accepted", at=datetime(1969, 12, 31, tzinfo=timezone.utc))
    assert run(fresh(), "accepted", at=NOW + timedelta(hours=20)).machine_state["iteration_count"] == 1


def test_garbled_last_run_is_replaced() -> None:
    assert run(fresh(last_run="yesterday"), "rejected").machine_state["last_run"] == "2025-01-15T12:00:00Z"


@pytest.mark.parametrize(
    ("cell", "previous", "best_after", "delta"),
    [
        ("— (CI failed)", "—", "7", None),
        ("— (pending CI)", "—", "7", None),
        ("606 (canonical)", "606", "606 (canonical)", "-599"),
        ("~5%", "5", "7", "+2"),
        ("1,234.5", "1234.5", "1,234.5", "-1227.5"),
    ],
)
def test_best_metric_cells_are_read_leniently(cell: str, previous: str, best_after: str, delta: str | None) -> None:
    after = run(fresh(best_metric=cell), "accepted", metric=7)
    entry = after.history[0]
    assert isinstance(entry, Iteration)
    assert entry.previous_best == previous
    assert entry.delta == delta
    assert after.machine_state["best_metric"] == best_after


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (55.0, "55"),
        (0.93, "0.93"),
        (0.00000649, "0.00000649"),
        (1e-7, "0.0000001"),
        (1e15 - 1, "999999999999999"),
        (1e20, "1e+20"),
        (1e308, "1e+308"),
        (1.5e-10, "1.5e-10"),
        (-2.5, "-2.5"),
        (-0.0, "0"),
    ],
)
def test_numbers_are_written_without_noise(value: float, text: str) -> None:
    assert format_number(Decimal(repr(value))) == text
    assert run(fresh(), "accepted", metric=value).machine_state["best_metric"] == text


def test_deltas_are_exact_decimal_differences() -> None:
    doc = run(fresh(best_metric="0.9"), "accepted", metric=0.93)
    assert doc.history[0].raw.count("delta: +0.03)") == 1  # not +0.030000000000000027
    assert format_delta(Decimal("-0.25")) == "-0.25"
    assert format_delta(Decimal("0.0")) == "0"


@pytest.mark.parametrize(
    ("cell", "number"),
    [
        ("837", "837"),
        ("580.77", "580.77"),
        ("-3", "-3"),
        ("−3", "-3"),
        ("1e3", "1E+3"),
        ("`42`", "42"),
        ("— (CI failed)", None),
        ("—", None),
        ("n/a", None),
        (None, None),
        ("12abc", "12"),
        ("1,23", None),
    ],
)
def test_parse_number(cell: str | None, number: str | None) -> None:
    parsed = leading_number(cell)
    assert (str(parsed) if parsed is not None else None) == number


def test_unchanged_rows_keep_their_bytes() -> None:
    text = new_state_file("demo", best_metric="55", iteration_count=3).replace(
        "| Best Metric | 55 |", "| Best Metric |   55|"
    )
    after = run(parse(text), "rejected", metric=50)
    assert "| Best Metric |   55|\n" in after.render()


def test_lesson_replaces_the_placeholder_then_appends() -> None:
    doc = run(fresh(), "accepted", metric=1, lesson="Caching  helps\nmost.")
    doc = run(doc, "rejected", lesson="Inlining does not.")
    lessons = [item.text for item in doc.list_items("lessons")]
    assert lessons == ["- Caching helps most.\n", "- Inlining does not.\n"]
    assert "*(none yet)*" not in doc.section("lessons").text  # type: ignore[union-attr]
    with pytest.raises(UsageError, match="empty lesson"):  # the rule of `statefile lesson add` too
        run(doc, "rejected", lesson="   ")
    assert run(doc, "rejected", lesson="caching  HELPS most.").list_items("lessons") == doc.list_items("lessons")


def test_the_input_document_is_not_changed() -> None:
    doc = fresh()
    before = doc.render()
    run(doc, "accepted", metric=3, lesson="x")
    assert doc.render() == before


def test_a_drifted_machine_state_heading_is_made_exact() -> None:
    text = new_state_file("demo", iteration_count=4).replace("## ⚙️ Machine State", "## Machine State")
    assert upstream_read(text) == {}
    after = run(parse(text), "rejected")
    state = upstream_read(after.render())
    assert state["iteration_count"] == 5
    assert after.render().replace("## ⚙️ Machine State", "## Machine State").count("Machine State") == 1


def test_the_heading_is_restored_even_when_no_row_changes() -> None:
    statuses = ", ".join(["accepted"] * 10)
    text = new_state_file("demo", iteration_count=12, last_run="2025-06-01T00:00:00Z", recent_statuses=statuses)
    text = text.replace("## ⚙️ Machine State", "## Machine State")
    # A backfilled iteration, recorded with an old time: count, Last Run and Recent Statuses all stay as they are.
    after = run(parse(text), "accepted", iteration=3, at=datetime(2025, 1, 1, tzinfo=timezone.utc))
    assert upstream_read(after.render())["iteration_count"] == 12


def test_crlf_files_stay_crlf() -> None:
    text = new_state_file("demo").replace("\n", "\r\n")
    after = run(parse(text), "accepted", metric=2, notes="n", lesson="l")
    rendered = after.render()
    assert "\n" not in rendered.replace("\r\n", "")
    assert upstream_read(rendered)["iteration_count"] == 1


def test_a_file_without_a_table_gets_one() -> None:
    doc = parse("# Autoloop: demo\n\nSome notes a maintainer wrote.\n")
    after = run(doc, "accepted", metric=4)
    state = upstream_read(after.render())
    assert state["iteration_count"] == 1
    assert state["best_metric"] == "4"
    assert "Some notes a maintainer wrote.\n" in after.render()


# -- a long mixed sequence, checked against an independent model ------------------------------------------------------


@dataclass
class Model:
    """The rules, restated as plainly as possible, to predict what the table must say."""

    direction: str
    target: Decimal | None
    count: int = 0
    best: Decimal | None = None
    errors: int = 0
    paused: bool = False
    completed: bool = False
    statuses: list[str] = field(default_factory=list)

    def apply(self, status: str, metric: Decimal | None) -> None:
        self.count += 1
        self.statuses = [*self.statuses, status][-10:]
        if status == "accepted":
            self.errors = 0
            self.paused = False
            if metric is not None:
                better = self.best is None or (metric < self.best if self.direction == "lower" else metric > self.best)
                if better:
                    self.best = metric
                if self.target is not None and (
                    metric <= self.target if self.direction == "lower" else metric >= self.target
                ):
                    self.completed = True
        elif status in ("error", "ci-fix-exhausted"):
            self.errors += 1
            # ci-fix-exhausted pauses at once (upstream Step 5b); errors pause at the third in a row.
            if self.errors >= 3 or status == "ci-fix-exhausted":
                self.paused = True


@pytest.mark.parametrize("direction", ["higher", "lower"])
def test_forty_mixed_iterations_read_back_exactly(direction: str) -> None:
    rng = random.Random(f"forty-{direction}")
    words = ["accepted", "rejected", "error", "ci-fix-exhausted", "pending-ci", "local-only"]
    plan = [rng.choice(words) for _ in range(40)]
    plan[10:14] = ["error", "ci-fix-exhausted", "error", "error"]  # a pause that the next accepted lifts
    plan[14] = "accepted"
    plan[37] = "accepted"  # late enough that the metric has reached the target
    target = Decimal("70") if direction == "higher" else Decimal("30")
    model = Model(direction, target)
    paused_at: list[int] = []
    doc = fresh(metric_direction=direction, target_metric=str(target))
    when = NOW
    for step, status in enumerate(plan, start=1):
        when += timedelta(hours=6)
        drift = rng.randint(-4, 12)
        trend = step * 4 + drift if direction == "higher" else 200 - step * 4 - drift
        metric = None if status in ("error", "ci-fix-exhausted") else Decimal(trend) / 2
        doc = record(
            doc,
            RecordRequest(
                status,
                metric=float(metric) if metric is not None else None,
                change=f"step {step}",
                new_status=status not in UPSTREAM_STATUSES,
            ),
            program="demo",
            now=when,
        )
        model.apply(status, metric)
        if model.paused:
            paused_at.append(step)
        for state in (upstream_read(doc.render()), doc.machine_state):
            assert state["iteration_count"] == model.count
            assert state["last_run"] == when.strftime("%Y-%m-%dT%H:%M:%SZ")
            assert state["best_metric"] == (format_number(model.best) if model.best is not None else None)
            assert state["consecutive_errors"] == model.errors
            assert state["paused"] is model.paused
            assert state["completed"] is model.completed
            assert state["recent_statuses"] == model.statuses
            assert state["metric_direction"] == direction
    assert {12, 13} <= set(paused_at) and 15 not in paused_at  # paused (ci-fix-exhausted), lifted by accepted
    assert model.completed
    assert [e.covers for e in doc.history] == [(n,) for n in range(40, 0, -1)]
    core = {"accepted", "rejected", "error", "ci-fix-exhausted"}
    assert [e.status for e in doc.iterations if e.status in core] == [w for w in reversed(plan) if w in core]
    assert not [w for w in doc.warnings if w.code in ("iteration-count-mismatch", "duplicate-iteration")]


# -- the real corpus --------------------------------------------------------------------------------------------------


def _outside(doc: StateDocument) -> str:
    """The file without its first Machine State and first Lessons section (the parts record may edit in place)."""
    skip = {
        next((i for i, s in enumerate(doc.sections) if s.kind == kind), -1) for kind in ("machine_state", "lessons")
    }
    return "".join(section.text for index, section in enumerate(doc.sections) if index not in skip)


@pytest.mark.parametrize("path", corpus_params())
@pytest.mark.parametrize("status", ["accepted", "error"])
def test_corpus_files_accept_a_record_touching_only_its_three_places(path: Path, status: str) -> None:
    before = parse(read_raw(path))
    expected_number = max(before.machine_state.get("iteration_count") or 0, before.highest_iteration) + 1
    now = datetime(2027, 1, 1, tzinfo=timezone.utc)  # later than every file's Last Run
    after = run(before, status, path.stem, now, metric=1000.5, change="c", notes="n", lesson="A new lesson.")
    new_entry = after.history[0]
    assert new_entry.covers == (expected_number,)

    # 1. Outside Machine State and Lessons, the only change is the entry at the history's insertion point.
    old_rest, new_rest = _outside(before), _outside(after)
    inserted = new_entry.raw
    if before.history_misplaced:
        inserted = "## 📊 Iteration History" + before.newline + before.newline + inserted
    point = old_rest.index(before.history[0].raw)
    assert new_rest == old_rest[:point] + inserted + old_rest[point:]

    # 2. Inside Machine State only table rows change.
    def prose(doc: StateDocument) -> list[str]:
        section = doc.section("machine_state")
        assert section is not None
        return [line for line in section.lines if not line.lstrip().startswith("|")]

    assert prose(after) == prose(before)

    # 3. Lessons gain one bullet; every other line stays, in order.
    old_lessons = before.section("lessons")
    new_lessons = after.section("lessons")
    assert old_lessons is not None and new_lessons is not None
    added = list(new_lessons.lines)
    added.remove("- A new lesson." + before.newline)
    assert added == [line for line in old_lessons.lines if "*(none yet)*" not in line]

    # 4. The scheduler reads the intended values.
    state = upstream_read(after.render())
    assert state["iteration_count"] == expected_number
    assert state["recent_statuses"][-1] == status
    assert len(state["recent_statuses"]) <= 10
    assert state["last_run"] == "2027-01-01T00:00:00Z"
    old_errors = before.machine_state.get("consecutive_errors") or 0
    assert state["consecutive_errors"] == (0 if status == "accepted" else old_errors + 1)
    if status == "accepted":
        assert state["paused"] is False
    mine = after.machine_state
    for key in ("iteration_count", "last_run", "recent_statuses", "consecutive_errors", "paused", "best_metric"):
        assert state.get(key) == mine.get(key)


def test_exact_decimal_metrics_and_one_line_fields() -> None:
    big = Decimal("99999999999999999999999999999999")
    after = record(fresh(), RecordRequest("accepted", metric=big, commit="abc", notes="two\n## lines"),
                   program="p", now=NOW)  # fmt: skip
    assert after.machine_state["best_metric"] == "9.9999999999999999999999999999999e+31"
    assert "## lines" not in [line[:8] for line in after.render().splitlines()]
    assert after.history[0].raw.count("\n- **Notes**: two ## lines\n") == 1


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"commit": "abc\n## x"}, "commit"), ({"run_url": "http://x) [y](z"}, "run URL"), ({"commit": "a b"}, "commit")],
)
def test_fields_that_would_break_the_file_are_refused(kwargs: dict[str, str], needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        RecordRequest("accepted", **kwargs)  # type: ignore[arg-type]


def test_completed_reason_is_kept_once_completed() -> None:
    doc = fresh(target_metric=10, best_metric=5, iteration_count=1)
    done = record(doc, RecordRequest("accepted", metric=11), program="p", now=NOW)
    reason = done.machine_state["completed_reason"]
    assert done.machine_state["completed"] is True and "iteration 2" in reason
    again = record(done, RecordRequest("accepted", metric=12), program="p", now=NOW)
    assert again.machine_state["completed_reason"] == reason


@pytest.mark.parametrize("word", ["accepted", "rejected", "error", "ci-fix-exhausted", "  Error "])
def test_the_upstream_status_words_are_accepted_as_they_are(word: str) -> None:
    assert RecordRequest(word).status == word.strip().lower()


@pytest.mark.parametrize(("typo", "meant"), [("acepted", "accepted"), ("rejectd", "rejected"), ("eror", "error")])
def test_a_mistyped_status_is_refused_with_the_word_it_resembles(typo: str, meant: str) -> None:
    with pytest.raises(UsageError, match=f"did you mean '{meant}'.*--new-status"):
        RecordRequest(typo)


def test_a_new_status_word_needs_to_be_asked_for() -> None:
    with pytest.raises(UsageError, match="not one of the upstream words"):
        RecordRequest("pending-ci")
    assert RecordRequest("pending-ci", new_status=True).status == "pending-ci"


def test_genuine_bullet_entries_are_read_and_recorded_into() -> None:
    """As seen in issue 11: genuine bullet entries are read and recorded into."""
    text = state_file_text("- Iter 2: ✅ fine · commit abc1234\n- Iter 1: ❌ CI failed · commit 24bbe85\n")
    doc = parse(text)
    assert [(e.kind, e.covers, getattr(e, "status", None)) for e in doc.history] == [
        ("iteration", (2,), "accepted"),
        ("iteration", (1,), "rejected"),
    ]
    recorded = rules_record(doc, RecordRequest("accepted", metric=3, change="more"), program="perf", now=FIXED_NOW)
    assert [e.covers for e in recorded.history] == [(3,), (2,), (1,)]
    newest = recorded.history[0]
    assert isinstance(newest, Iteration) and newest.status == "accepted" and newest.metric == "3"


def test_glyph_only_recent_statuses_become_words_on_record() -> None:
    """As seen in issue 11: glyph only recent statuses become words on record."""
    doc = parse(new_state_file("perf", recent_statuses="✅✅❌"))
    assert doc.machine_state["recent_statuses"] == ["✅✅❌"]  # as the upstream scheduler reads the cell
    after = rules_record(doc, RecordRequest("accepted"), program="perf", now=FIXED_NOW)
    assert after.machine_state["recent_statuses"] == ["accepted", "accepted", "rejected", "accepted"]


# -- The upstream Autoloop rules the scheduler depends on, as record applies them


UPSTREAM_NOW = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)


def _record(text: str | None, **fields: object) -> str:
    doc = parse(text) if text is not None else None
    return record(doc, RecordRequest(**fields), program="perf", now=UPSTREAM_NOW).render()  # type: ignore[arg-type]


def test_direction_and_target_from_the_program_definition_start_a_new_file() -> None:
    text = _record(None, status="accepted", metric=50, metric_direction="lower", target_metric=Decimal("20"),
                   goal="Faster parsing")  # fmt: skip
    state = upstream_machine_state(text)
    assert state["metric_direction"] == "lower" and state["target_metric"] == "20"
    assert "**Goal**: Faster parsing" in text and "(lower is better)" in text
    # A lower-is-better program improves when the metric goes down, and completes at the target.
    text = _record(text, status="accepted", metric=40, metric_direction="lower", target_metric=Decimal("20"))
    assert upstream_machine_state(text)["best_metric"] == "40"
    text = _record(text, status="accepted", metric=19, metric_direction="lower", target_metric=Decimal("20"))
    state = upstream_machine_state(text)
    assert state["best_metric"] == "19" and state["completed"] is True


def test_the_definition_corrects_a_file_that_got_the_wrong_direction() -> None:
    wrong = new_state_file("perf")  # created earlier with the default "higher" and no target
    text = _record(wrong, status="accepted", metric=5, metric_direction="lower", target_metric=Decimal("3"))
    state = upstream_machine_state(text)
    assert state["metric_direction"] == "lower" and state["target_metric"] == "3"


@pytest.mark.parametrize(
    ("reason", "expected"),
    [(None, CI_FIX_EXHAUSTED_REASON), ("stuck in CI fix loop: TS2339:x:y.ts", "stuck in CI fix loop: TS2339:x:y.ts"),
     ("ci-timeout", "ci-timeout")],
)  # fmt: skip
def test_ci_fix_exhausted_pauses_at_once(reason: str | None, expected: str) -> None:
    text = _record(None, status="ci-fix-exhausted", pause_reason=reason)
    state = upstream_machine_state(text)
    assert state["paused"] is True and state["pause_reason"] == expected
    assert state["recent_statuses"] == ["ci-fix-exhausted"]


def test_a_pause_reason_pauses_now_and_names_the_third_error() -> None:
    text = _record(None, status="rejected", pause_reason="manual: maintainer asked to stop | now")
    state = upstream_machine_state(text)
    assert state["paused"] is True and state["pause_reason"] == "manual: maintainer asked to stop / now"
    text = _record(None, status="error")
    text = _record(text, status="error")
    assert upstream_machine_state(text)["paused"] is False
    text = _record(text, status="error", pause_reason="consecutive errors: build broken")
    assert upstream_machine_state(text)["pause_reason"] == "consecutive errors: build broken"
    with pytest.raises(UsageError, match="un-pauses"):
        RecordRequest(status="accepted", pause_reason="x")


def test_accepted_entries_link_the_pr() -> None:
    text = _record(None, status="accepted", metric=1, pr=12,
                   run_url="https://github.com/o/r/actions/runs/99")  # fmt: skip
    assert "- **PR**: [#12](https://github.com/o/r/pull/12)" in text
    text = _record(text, status="accepted", metric=2)  # the Machine State's PR, no run URL
    assert text.count("- **PR**: #12") == 1
    text = _record(text, status="rejected", metric=0)
    assert text.count("- **PR**:") == 2, "only accepted entries carry the PR line"


def test_steering_issue_is_carried_to_issue() -> None:
    legacy = new_state_file("perf").replace("| Issue | — |", "| Issue | — |\n| Steering Issue | #41 |")
    text = _record(legacy, status="rejected")
    state = upstream_machine_state(text)
    assert state["issue"] == "#41" and state["steering_issue"] == "#41"
    text = _record(text, status="rejected", issue=50)
    assert upstream_machine_state(text)["issue"] == "#50"


def test_no_empty_cells_and_z_timestamps_through_the_scheduler_reader() -> None:
    text = _record(None, status="rejected")
    later = (UPSTREAM_NOW + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    text = text.replace("| Last Run | 2026-05-01T12:00:00Z |", f"| Last Run | {later} |")
    text = _record(text, status="error")  # the later Last Run is kept, rewritten with Z
    state = meaningful(upstream_machine_state(text))
    assert state["last_run"] == (UPSTREAM_NOW + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for line in text.splitlines():
        if line.startswith("| ") and line.count("|") == 3:
            assert line.split("|")[2].strip(), f"empty cell: {line!r}"
    assert set(state) >= {"iteration_count", "paused", "completed", "recent_statuses", "pause_reason"}


def test_record_reads_autoloop_json_and_pause_reason(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    workspace = tmp_path / "programs"
    (workspace / ".autoloop" / "programs" / "perf").mkdir(parents=True)
    (workspace / ".autoloop" / "programs" / "perf" / "program.md").write_text(
        "---\nmetric_direction: lower\n---\n# Perf\n\n## Goal\n\nParse | faster.\n\n## Target\n\nx\n"
    )
    autoloop = tmp_path / "autoloop.json"
    autoloop.write_text(
        json.dumps(
            {
                "selected": "perf",
                "selected_metric_direction": "lower",
                "selected_target_metric": 2.5,
                "selected_file": str(workspace / ".autoloop/programs/perf/program.md"),
            }
        )
    )
    done = run_statefile("record", "perf", "--status", "ci-fix-exhausted", "--pause-reason", "ci-timeout",
                         "--autoloop-json", str(autoloop), cwd=repos.work)  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = _branch_file(repos.work, "perf.md")
    state = upstream_machine_state(text)
    assert state["paused"] is True and state["pause_reason"] == "ci-timeout"
    assert state["metric_direction"] == "lower" and state["target_metric"] == "2.5"
    assert "**Goal**: Parse / faster." in text


def _branch_file(work: Path, path: str) -> str:
    return subprocess.run(["git", "show", f"memory/autoloop:{path}"], cwd=work, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def test_a_specific_pause_reason_survives_later_errors() -> None:
    text = _record(None, status="ci-fix-exhausted", pause_reason="ci-fix-exhausted: TS2339:a:b.ts")
    for _ in range(3):
        text = _record(text, status="error")
    state = upstream_machine_state(text)
    assert state["paused"] is True and state["pause_reason"] == "ci-fix-exhausted: TS2339:a:b.ts"
    assert state["consecutive_errors"] == 4


def test_a_signalling_nan_metric_is_refused_as_usage() -> None:
    """Decimal('sNaN') made the finite check raise ValueError (it cannot become a float) instead of a UsageError."""
    with pytest.raises(UsageError, match="not a finite number"):
        RecordRequest("accepted", metric=Decimal("sNaN"))
