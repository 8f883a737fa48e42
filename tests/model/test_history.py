"""History entries (statefile.model.history): headings, fields, ranges, rendering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import entry_text, state_file_text
from gitutil import run_statefile

from statefile.model.document import parse
from statefile.model.history import Iteration, IterationRange, parse_entry


@pytest.mark.parametrize("heading", ["### Iteration 1e308 — float", "### Iteration 1.5 — half", "### Iters 3–1e5 — x"])
def test_a_number_that_goes_on_is_no_iteration_number(heading: str) -> None:
    """`Iteration 1e308` was read as iteration 1: the next record archived the real iteration 1 as its duplicate."""
    assert not isinstance(parse_entry(heading + "\n- text\n"), (Iteration, IterationRange))


@pytest.mark.parametrize(
    ("status", "word"),
    [
        ("✅ Accepted (reconciled from pending-ci)", "accepted"),
        ("⏳ Pending CI (publication requested)", "pending-ci"),
        ("⏳ pending CI · **Op**: exploitation", "pending-ci"),
        ("⚠️ CI fix exhausted", "ci-fix-exhausted"),
        ("⚠️ Local Only", "local-only"),
        ("⚠️ Error (push failure — pending-ci never came)", "error"),
        ("❌ Rejected", "rejected"),
    ],
)
def test_the_first_status_a_field_states_is_the_entrys(status: str, word: str) -> None:
    """As seen in issue 11: the first status a field states is the entrys."""
    text = state_file_text(f"### Iteration 3 — 2026-03-03 10:00 UTC\n\n- **Status**: {status}\n\n")
    found = parse(text).iterations[0]
    assert found.status == word


def test_statuses_outside_a_status_field_are_read_from_a_leading_glyph() -> None:
    """As seen in issue 11: statuses outside a status field are read from a leading glyph."""
    text = state_file_text(
        "### Iter 5 — 2026-10-02 — [Run](https://example.invalid/5)\n✅ +1 → 530: added x\n\n"
        "### Iteration 4 — 2026-10-01\n\n- ⏳ pending CI · island 2 · c004\n\n"
        "### Iteration 3 — 2026-09-30\n\nNotes say it was ✅ later, but the entry states nothing.\n\n"
    )
    assert [e.status for e in parse(text).iterations] == ["accepted", "pending-ci", None]


def test_iterations_joined_in_one_heading_all_count() -> None:
    """As seen in issue 11: iterations joined in one heading all count."""
    text = state_file_text(
        "### Iteration 126 — ✅ abs (81) · Iteration 125 — ✅ autocorr (80) · Iteration 124 — ✅ m\n\n"
        "### Iters 1–123 — ✅ (metrics 0→78): the rest\n\n"
    )
    doc = parse(text)
    assert doc.iterations[0].covers == (124, 125, 126)
    assert "history-gap" not in {w.code for w in doc.warnings}


def test_a_summary_that_mentions_an_iteration_never_claims_it(tmp_path: Path) -> None:
    """'· Iteration 7 approach restored' in entry 12's summary is prose, not a joined entry: 7 stays the real 7."""
    text = state_file_text(
        "### Iteration 12 — ✅ reverted the cache · Iteration 7 approach restored\n\n- **Notes**: twelve's text\n\n"
        + "".join(entry_text(n, metric=str(n)) for n in range(11, 7, -1))
        + "### Iteration 7 — ❌ cache\n\n- **Notes**: seven's own text\n\n"
        + "".join(entry_text(n, metric=str(n)) for n in range(6, 0, -1))
    )
    (tmp_path / "perf.md").write_text(text, encoding="utf-8")
    assert parse(text).iterations[0].covers == (12,)

    def run(*args: str) -> str:
        proc = run_statefile("--dir", str(tmp_path), *args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    shown = run("expand", "perf", "7")
    assert "seven's own text" in shown and "twelve's text" not in shown
    rows = json.loads(run("--json", "history", "perf"))["rows"]
    assert [(r["first"], r["last"]) for r in rows] == [(n, n) for n in range(1, 13)]
    assert next(r for r in rows if r["first"] == 7)["status"] == "rejected"
    assert "duplicate-iteration" not in run("--json", "check", "perf")
    run("compact", "perf", "--max-bytes", "1000000")
    assert "seven's own text" in (tmp_path / "perf.md").read_text(encoding="utf-8")


def test_a_marker_written_as_the_last_bullet_field_is_no_part_of_the_notes() -> None:
    """Older versions joined the item marker to a bullet entry's fields with " · "; such files still read clean."""
    text = state_file_text(
        "- Iteration 3 — 2026-01-01 10:00 UTC: **Status**: ✅ Accepted · **Notes**: faster"
        " · <!-- statefile-item: run 500 attempt 1 item 1 -->\n- Iter 2: ❌ CI failed\n- Iter 1: ✅ first\n"
    )
    newest = parse(text).iterations[0]
    assert newest.notes == "faster" and newest.fields == {"status": "✅ Accepted", "notes": "faster"}
