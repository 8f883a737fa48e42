"""The Machine State table (statefile.model.machine_state): read as the upstream scheduler reads it, one row edited
without touching the others (through the document, as every caller edits it)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from conftest import changed_lines, corpus_params, read_raw
from upstream import meaningful, upstream_machine_state

from statefile.model.document import parse
from statefile.model.machine_state import (
    CANONICAL_ROWS,
    count_field,
    field_key,
    label_for,
    next_iteration_problem,
    number_row_problem,
    read_state,
    state_changes,
    unreadable_count,
)


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_machine_state_agrees_with_upstream(path: Path) -> None:
    text = read_raw(path)
    upstream = meaningful(upstream_machine_state(text))
    ours = parse(text).machine_state
    assert upstream, "every corpus file has the exact heading"
    assert ours == upstream


def test_machine_state_conventions() -> None:
    text = (
        "## ⚙️ Machine State\n\n| Field | Value |\n|-------|-------|\n"
        "| Iteration Count | seven |\n| Paused | True |\n| Completed | no |\n| PR | — |\n| Issue | - |\n"
        "| Pause Reason |  |\n| Recent Statuses | Accepted,rejected , ERROR |\n| Branch | `autoloop/x` |\n"
        "| Iteration Count | 9 |\n"
    )
    state = parse(text).machine_state
    assert state["iteration_count"] == 9  # a later duplicate row wins
    assert state["paused"] is True and state["completed"] is False
    assert state["pr"] is None and state["issue"] is None and state["pause_reason"] is None
    assert state["recent_statuses"] == ["accepted", "rejected", "error"]
    assert state["branch"] == "`autoloop/x`"


@pytest.mark.parametrize("path", corpus_params())
def test_set_field_changes_one_row(path: Path) -> None:
    text = read_raw(path)
    doc = parse(text)
    doc = doc.with_field("Iteration Count", 999)
    diff = changed_lines(text, doc.render())
    assert len(diff) == 2, diff
    assert "| 999" in diff[1] or "|999" in diff[1]
    assert doc.machine_state["iteration_count"] == 999
    assert meaningful(upstream_machine_state(doc.render()))["iteration_count"] == 999


def test_missing_row_is_added_in_canonical_order_with_table_style() -> None:
    text = "## ⚙️ Machine State\n\n|Field|Value|\n|---|---|\n|Last Run|—|\n|Branch|x|\n|Custom|keep|\n\n## Next\n"
    doc = parse(text)
    doc = doc.with_fields({"metric_direction": "lower", "Paused": True})
    out = doc.render()
    assert out == (
        "## ⚙️ Machine State\n\n|Field|Value|\n|---|---|\n|Last Run|—|\n|Metric Direction|lower|\n|Branch|x|\n"
        "|Paused|true|\n|Custom|keep|\n\n## Next\n"
    )


def test_set_field_keeps_crlf_and_missing_final_newline() -> None:
    text = "## ⚙️ Machine State\r\n\r\n| Field | Value |\r\n|---|---|\r\n| Iteration Count | 1 |"
    doc = parse(text)
    doc = doc.with_field("iteration_count", 2)
    doc = doc.with_field("Paused", False)
    assert doc.render() == (
        "## ⚙️ Machine State\r\n\r\n| Field | Value |\r\n|---|---|\r\n| Iteration Count | 2 |\r\n| Paused | false |"
    )


# The helpers the document, ``record`` and the CLI build on, tested directly: what each promises its callers.


@pytest.mark.parametrize("cell", ["0", "7", "-3", "+4", " 12 ", None, "", "   ", "—", "-"])
def test_unreadable_count_accepts_whole_numbers_and_null_cells(cell: str | None) -> None:
    """What the scheduler's ``int()`` reads, and the cells it reads as no value at all, are no problem."""
    assert unreadable_count(cell) is False


@pytest.mark.parametrize("cell", ["abc", "1.5", "1,000", "1e3", "none", "n/a", "— (reset)", "0x10"])
def test_unreadable_count_flags_text_the_scheduler_reads_as_zero(cell: str) -> None:
    """Thousands separators, decimals, exponents and words: ``int()`` refuses them, so the scheduler counts 0 (even
    ``none``: only ``—``, ``-`` and an empty cell are null to it), and a count the cell stood for would be lost."""
    assert unreadable_count(cell) is True
    assert read_state([f"| Consecutive Errors | {cell} |"])["consecutive_errors"] == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, 5),
        (0, 0),
        (-2, -2),  # kept: the next-iteration rule takes the larger of count and history
        (10**40, 10**40),
        (None, 0),
        ("5", 0),
        (5.0, 0),
        (True, 0),  # a bool is an int to Python, but no count
        (False, 0),
    ],
)
def test_count_field_is_the_integer_or_zero(value: object, expected: int) -> None:
    assert count_field({"iteration_count": value}, "iteration_count") == expected


def test_count_field_reads_the_key_asked_for_and_zero_when_missing() -> None:
    state = {"iteration_count": 3, "consecutive_errors": 7}
    assert count_field(state, "consecutive_errors") == 7
    assert count_field(state, "iteration_count") == 3
    assert count_field({}, "consecutive_errors") == 0


@pytest.mark.parametrize("label", CANONICAL_ROWS)
def test_label_for_maps_each_canonical_key_back_to_its_label(label: str) -> None:
    """``show`` prints the scheduler's keys with these labels; ``with_fields`` adds rows under them."""
    assert label_for(field_key(label)) == label
    assert label_for(label) == label


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("pr", "PR"),  # the canonical spelling, not "Pr"
        ("best_metric", "Best Metric"),
        ("BEST_METRIC", "BEST_METRIC"),  # a capitalised name is a label, kept as written
        ("Iteration count", "Iteration count"),
        ("my notes", "my notes"),  # so is a name with a space
        ("custom_thing", "Custom Thing"),  # unknown keys title-cased
        ("x", "X"),
        ("", ""),
    ],
)
def test_label_for_keeps_labels_and_title_cases_unknown_keys(name: str, expected: str) -> None:
    assert label_for(name) == expected


def test_state_changes_of_nothing() -> None:
    assert state_changes({}, {}) == {
        "best_metric": {"before": None, "after": None, "new_best": False},
        "paused": False,
        "paused_now": False,
        "pause_reason": None,
        "unpaused": False,
        "previous_pause_reason": None,
        "completed": False,
        "completed_now": False,
        "completed_reason": None,
        "was_paused": False,
        "was_completed": False,
        "consecutive_errors": None,
    }


def test_state_changes_pausing_and_staying_paused() -> None:
    paused = {"paused": True, "pause_reason": "3 errors", "consecutive_errors": 3}
    changes = state_changes({"paused": False, "consecutive_errors": 2}, paused)
    assert changes["paused"] and changes["paused_now"] and not changes["unpaused"] and not changes["was_paused"]
    assert changes["pause_reason"] == "3 errors" and changes["previous_pause_reason"] is None
    assert changes["consecutive_errors"] == 3  # the count after the record
    again = state_changes(paused, {**paused, "pause_reason": "4 errors"})
    assert again["paused"] and not again["paused_now"] and not again["unpaused"] and again["was_paused"]
    assert again["pause_reason"] == "4 errors" and again["previous_pause_reason"] == "3 errors"


def test_state_changes_unpausing_reports_the_cleared_reason() -> None:
    """The reason an unpause cleared is the one before; a stale reason on an unpaused program is none."""
    changes = state_changes({"paused": True, "pause_reason": "flaky CI"}, {"paused": False, "pause_reason": None})
    assert changes["unpaused"] and changes["was_paused"] and not changes["paused"] and not changes["paused_now"]
    assert changes["previous_pause_reason"] == "flaky CI" and changes["pause_reason"] is None
    stale = state_changes({"paused": False, "pause_reason": "old"}, {"paused": False})
    assert not stale["unpaused"] and stale["previous_pause_reason"] is None


def test_state_changes_completion() -> None:
    done = {"completed": True, "completed_reason": "target reached"}
    changes = state_changes({"completed": False}, done)
    assert changes["completed"] and changes["completed_now"] and not changes["was_completed"]
    assert changes["completed_reason"] == "target reached"
    still = state_changes(done, done)
    assert still["completed"] and not still["completed_now"] and still["was_completed"]
    undone = state_changes(done, {"completed": False})
    assert not undone["completed"] and not undone["completed_now"] and undone["was_completed"]
    assert undone["completed_reason"] is None


@pytest.mark.parametrize(
    ("before", "after", "new_best"),
    [("0.5", "0.7", True), ("0.5", "0.5", False), (None, "0.5", True), ("0.5", None, True), (None, None, False)],
)
def test_state_changes_best_metric(before: str | None, after: str | None, new_best: bool) -> None:
    """A new best is any change of the cell, a first one and a cleared one included (history shows "cleared")."""
    changes = state_changes({"best_metric": before}, {"best_metric": after})
    assert changes["best_metric"] == {"before": before, "after": after, "new_best": new_best}


@pytest.mark.parametrize(
    "cell",
    [
        "0.5", "-0.25", "−5", "0", "1,234.5", "606 (canonical)", "~55%", "**0.91**", "`0.9`", "-5 (worse)",
        "1e308", "-1e308", "1e-308", "9.99e308", "0e99999",  # within 1e±308, and zero at any exponent
        "—", "-", "", "   ", "none", "N/A", "TBD", "unknown", "— (CI failed)", None, 0,
    ],
)  # fmt: skip
def test_number_row_problem_accepts_numbers_and_cells_saying_none(cell: object) -> None:
    assert number_row_problem({"best_metric": cell}, "best_metric") == ""
    assert number_row_problem({"target_metric": cell}, "target_metric") == ""


def test_number_row_problem_missing_row_is_none() -> None:
    assert number_row_problem({}, "best_metric") == ""
    assert number_row_problem({"best_metric": "lots"}, "target_metric") == ""  # only the row asked about


@pytest.mark.parametrize("cell", ["lots", "NaN", "inf", "1,23", "—x", "abc 5"])
def test_number_row_problem_not_a_number(cell: str) -> None:
    """Text that neither starts with a number nor says there is none is a typo the rules cannot compare against."""
    assert number_row_problem({"target_metric": cell}, "target_metric") == (
        f"the Machine State row 'Target Metric' holds {cell!r}, not a number (write the number, or — for none)"
    )


@pytest.mark.parametrize("cell", ["1e9999999", "1e309", "-1e309", "1e-309", "1.0e+400 (huge)", Decimal("1E+400")])
def test_number_row_problem_implausible_number(cell: object) -> None:
    """A number no measurement could be (beyond 1e±308) is refused, whatever its sign or the sign of its exponent."""
    assert number_row_problem({"best_metric": cell}, "best_metric") == (
        f"the Machine State row 'Best Metric' holds {str(cell)!r}, not a plausible number (beyond 1e±308)"
    )


def test_number_row_problem_clips_a_long_cell() -> None:
    problem = number_row_problem({"best_metric": "x" * 100}, "best_metric")
    assert (
        problem
        == f"the Machine State row 'Best Metric' holds '{'x' * 39}…', not a number (write the number, or — for none)"
    )


@pytest.mark.parametrize(
    ("count", "highest"), [(0, 0), (9_999_999, 0), (0, 9_999_999), (9_999_999, 9_999_999), (-5, -5), (-5, 3)]
)
def test_next_iteration_problem_none_up_to_the_limit(count: int, highest: int) -> None:
    """The next iteration may be MAX_ITERATION itself (10,000,000), one past the larger of count and history."""
    assert next_iteration_problem(count, highest) == ""


@pytest.mark.parametrize(
    ("count", "highest", "where"),
    [
        (10_000_000, 0, "the 'Iteration Count' row says 10,000,000"),
        (10_000_000, 10_000_000, "the 'Iteration Count' row says 10,000,000"),  # a tie blames the row
        (0, 10_000_000, "the history goes up to iteration 10,000,000"),
        (9_999_999, 10_000_000, "the history goes up to iteration 10,000,000"),
    ],
)
def test_next_iteration_problem_names_what_is_too_high(count: int, highest: int, where: str) -> None:
    assert (
        next_iteration_problem(count, highest) == f"the next iteration would be 10,000,001, beyond 10,000,000: {where}"
    )


def test_next_iteration_problem_with_a_huge_count() -> None:
    """A count of thousands of digits is named, not printed (and its + 1 is no float: it stays exact)."""
    assert next_iteration_problem(10**4000, 7) == (
        "the next iteration would be a number of more than 30 digits, beyond 10,000,000: "
        "the 'Iteration Count' row says a number of more than 30 digits"
    )
    assert next_iteration_problem(10**29, 0) == (
        "the next iteration would be 100,000,000,000,000,000,000,000,000,001, beyond 10,000,000: "
        "the 'Iteration Count' row says 100,000,000,000,000,000,000,000,000,000"
    )
