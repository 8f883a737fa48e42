"""The upstream Autoloop rules the scheduler depends on (githubnext/autoloop ``workflows/autoloop.md``), as record
applies them: direction and target from the program definition, ci-fix-exhausted pauses at once, pause reasons,
PR links, Steering Issue → Issue, never an empty cell, always a Z timestamp."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from gitutil import make_repos, run_statefile
from upstream import meaningful, upstream_machine_state

from statefile.errors import UsageError
from statefile.model.document import parse
from statefile.model.template import new_state_file
from statefile.policy.rules import CI_FIX_EXHAUSTED_REASON, RecordRequest, record

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)


def _record(text: str | None, **fields: object) -> str:
    doc = parse(text) if text is not None else None
    return record(doc, RecordRequest(**fields), program="perf", now=NOW).render()  # type: ignore[arg-type]


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
    later = (NOW + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    text = text.replace("| Last Run | 2026-05-01T12:00:00Z |", f"| Last Run | {later} |")
    text = _record(text, status="error")  # the later Last Run is kept, rewritten with Z
    state = meaningful(upstream_machine_state(text))
    assert state["last_run"] == (NOW + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
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
