"""autoloop.json reporting (statefile.integrations.autoloop): program entries, merging into the scheduler's JSON,
safe writes."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from conftest import GuardRepo, corpus_params, guard_run, only_error_line, read_raw
from gitutil import Repos, run_statefile

from statefile import __version__
from statefile.errors import EXIT_USAGE, UsageError
from statefile.integrations.autoloop import merge_report, program_report, read_json_object, write_text_atomic
from statefile.model.document import parse
from statefile.model.template import new_state_file

# What the upstream scheduler writes when it selects a program (githubnext/autoloop autoloop_scheduler.py).
UPSTREAM: dict[str, Any] = {
    "selected": "perf",
    "selected_file": ".autoloop/programs/perf.md",
    "selected_issue": None,
    "selected_target_metric": None,
    "selected_metric_direction": "higher",
    "state_file_size_bytes": 12000,
    "state_file_max_bytes": 30720,
    "issue_programs": {},
    "deferred": ["docs"],
    "skipped": [{"name": "old", "reason": "paused: 3 consecutive errors"}],
    "unconfigured": [],
    "no_programs": False,
    "head_branch": "autoloop/perf",
    "existing_pr": 12,
}


def entry(size: int, max_bytes: int = 30720, **state: Any) -> dict[str, Any]:
    doc = parse(new_state_file("p", **state)) if state else None
    return program_report("p", size, max_bytes, doc.machine_state if doc else {})


# -- program_report -------------------------------------------------------------------------------------------------


def test_program_report_reads_the_machine_state() -> None:
    doc = parse(
        new_state_file("perf", iteration_count=42, last_run="2025-01-15T12:00:00Z", paused=True, completed=False)
    )
    assert program_report("perf", 1000, 30720, doc.machine_state) == {
        "file": "perf.md",
        "size": 1000,
        "max": 30720,
        "headroom": 29720,
        "over_budget": False,
        "needs_compaction": False,
        "iteration_count": 42,
        "last_run": "2025-01-15T12:00:00Z",
        "paused": True,
        "completed": False,
    }


def test_a_missing_file_is_a_new_program() -> None:
    report = program_report("new", 0, 30720, {})
    assert report["iteration_count"] == 0
    assert report["last_run"] is None
    assert report["paused"] is False
    assert report["completed"] is False
    assert report["headroom"] == 30720


@pytest.mark.parametrize(
    ("size", "needs", "over", "headroom"),
    [(8000, False, False, 2000), (8001, True, False, 1999), (10000, True, False, 0), (10001, True, True, -1)],
)
def test_compaction_and_budget_thresholds(size: int, needs: bool, over: bool, headroom: int) -> None:
    report = program_report("p", size, 10000, {})
    assert (report["needs_compaction"], report["over_budget"], report["headroom"]) == (needs, over, headroom)


def test_aggressive_at_moves_the_threshold() -> None:
    assert program_report("p", 6000, 10000, {}, aggressive_at=0.5)["needs_compaction"] is True
    assert program_report("p", 6000, 10000, {}, aggressive_at=0.7)["needs_compaction"] is False


def test_a_garbled_count_reads_as_zero() -> None:
    assert entry(10, iteration_count="many")["iteration_count"] == 0


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_reports_agree_with_the_scheduler_view(path: Path) -> None:
    text = read_raw(path)
    doc = parse(text)
    report = program_report(path.stem, doc.size, 30720, doc.machine_state)
    state = doc.machine_state
    assert report["size"] == len(path.read_bytes())
    assert report["iteration_count"] == state["iteration_count"]
    assert report["last_run"] == state["last_run"]
    assert report["paused"] is bool(state.get("paused"))
    assert report["completed"] is bool(state.get("completed"))
    json.dumps(report)  # JSON-ready


# -- merge_report ---------------------------------------------------------------------------------------------------


def test_merge_keeps_every_upstream_key_and_corrects_the_sizes() -> None:
    programs = {"perf": entry(21000, 25000), "docs": entry(500, 25000)}
    merged = merge_report(UPSTREAM, programs, None)
    assert set(merged) == set(UPSTREAM) | {"statefile"}
    assert {
        k: v for k, v in merged.items() if k not in ("state_file_size_bytes", "state_file_max_bytes", "statefile")
    } == {k: v for k, v in UPSTREAM.items() if k not in ("state_file_size_bytes", "state_file_max_bytes")}
    assert merged["state_file_size_bytes"] == 21000
    assert merged["state_file_max_bytes"] == 25000
    assert merged["statefile"] == {
        "programs": {"docs": programs["docs"], "perf": programs["perf"]},
        "generated_by": f"statefile {__version__}",
    }
    assert list(merged["statefile"]["programs"]) == ["docs", "perf"]


def test_an_explicit_selection_wins_over_the_schedulers() -> None:
    merged = merge_report(UPSTREAM, {"perf": entry(21000), "docs": entry(500)}, "docs")
    assert merged["state_file_size_bytes"] == 500
    assert merged["selected"] == "perf"  # the scheduler's own keys are never rewritten


def test_a_selected_program_without_a_file_has_size_zero() -> None:
    merged = merge_report({"selected": "brand-new"}, {"perf": entry(21000, 20000)}, None)
    assert merged["state_file_size_bytes"] == 0
    assert merged["state_file_max_bytes"] == 20000


def test_nothing_selected_reports_zero_like_upstream() -> None:
    merged = merge_report({"selected": None, "no_programs": False}, {"perf": entry(100, 9000)}, None)
    assert (merged["state_file_size_bytes"], merged["state_file_max_bytes"]) == (0, 9000)


def test_the_budget_falls_back_to_what_was_there_then_the_default() -> None:
    assert merge_report({"state_file_max_bytes": 12345}, {}, None)["state_file_max_bytes"] == 12345
    assert merge_report({"state_file_max_bytes": True}, {}, None)["state_file_max_bytes"] == 30720
    assert merge_report({}, {}, "x")["state_file_max_bytes"] == 30720


def test_merge_is_pure() -> None:
    existing = copy.deepcopy(UPSTREAM) | {"statefile": {"programs": {"gone": {}}, "generated_by": "statefile 0.0"}}
    programs = {"perf": entry(1)}
    snapshot = copy.deepcopy((existing, programs))
    merged = merge_report(existing, programs, None)
    assert (existing, programs) == snapshot
    merged["statefile"]["programs"]["perf"]["size"] = 99
    assert programs["perf"]["size"] == 1
    assert "gone" not in merged["statefile"]["programs"]  # a fresh report replaces the previous one


# -- files ----------------------------------------------------------------------------------------------------------


def test_write_creates_folders_and_ends_with_a_newline(tmp_path: Path) -> None:
    target = tmp_path / "gh-aw" / "deep" / "autoloop.json"
    write_text_atomic(target, json.dumps({"a": 1, "pause_reason": "naïve — ok"}, indent=2) + "\n")
    text = target.read_text(encoding="utf-8")
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert json.loads(text) == {"a": 1, "pause_reason": "naïve — ok"}
    assert os.listdir(target.parent) == ["autoloop.json"]


def test_write_replaces_the_file_and_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "autoloop.json"
    target.write_text("{}\n")
    target.chmod(0o640)
    inode = target.stat().st_ino
    write_text_atomic(target, json.dumps({"b": 2}, indent=2) + "\n")
    assert read_json_object(target) == {"b": 2}
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode  # a new file renamed into place, never rewritten in place
    assert sorted(os.listdir(tmp_path)) == ["autoloop.json"]


def test_a_new_file_gets_the_usual_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "a.json", json.dumps({}, indent=2) + "\n")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "autoloop.json").mkdir()
    with pytest.raises(UsageError, match="is a folder; name a file to write"):
        write_text_atomic(tmp_path / "autoloop.json", json.dumps({"a": 1}, indent=2) + "\n")
    assert os.listdir(tmp_path) == ["autoloop.json"]
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="cannot write"):
        write_text_atomic(tmp_path / "file" / "below.json", json.dumps({"a": 1}, indent=2) + "\n")


def test_read_missing_is_empty(tmp_path: Path) -> None:
    assert read_json_object(tmp_path / "nope.json") == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is not valid JSON"),
        (b"{", "is not valid JSON"),
        (b"[1, 2]", "holds a JSON array, not an object"),
        (b'"text"', "holds a JSON string, not an object"),
        (b"null", "holds a JSON null, not an object"),
        (b'{"a": "\xff"}', "is not valid JSON"),
    ],
)
def test_read_rejects_what_is_not_an_object(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "autoloop.json"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=message) as info:
        read_json_object(path)
    assert "\n" not in str(info.value)


def test_read_a_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a folder, not a regular file"):
        read_json_object(tmp_path)


def test_round_trip_of_the_schedulers_file(tmp_path: Path) -> None:
    path = tmp_path / "autoloop.json"
    path.write_text(json.dumps(UPSTREAM, indent=2))
    doc = parse(new_state_file("perf", iteration_count=3))
    merged = merge_report(
        read_json_object(path), {"perf": program_report("perf", doc.size, 30720, doc.machine_state)}, None
    )
    write_text_atomic(path, json.dumps(merged, indent=2) + "\n")
    again = read_json_object(path)
    assert again == merged
    assert again["state_file_size_bytes"] == doc.size
    assert again["statefile"]["programs"]["perf"]["iteration_count"] == 3


@pytest.mark.parametrize("out", ["/dev/null", "fifo"])
def test_report_into_something_that_is_no_file_says_so(unreadable_folder: Path, out: str) -> None:
    """`report --out /dev/null` said "no such file" (exit 3) of a path that exists."""
    (unreadable_folder / "linked.md").unlink()
    path = Path(out) if out.startswith("/") else unreadable_folder.parent / out
    if out == "fifo":
        os.mkfifo(path)
    proc = run_statefile("--dir", str(unreadable_folder), "report", "--out", str(path), cwd=unreadable_folder.parent)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr and proc.stderr.count("\n") == 1


def test_report_out_to_a_mistyped_path_creates_nothing(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Guard rail (issue 13): report out to a mistyped path creates nothing; the memory is left exactly as it was."""
    wrong = tmp_path / "gh-aw" / "autolop.json"
    result = guard_run(capsys, "--remote", "origin", "report", "--out", str(wrong))
    assert result.code == 3 and "no such file" in result.error_line
    assert not wrong.exists() and not wrong.parent.exists()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"selected": "perf", "state_file_max_bytes": ' + "9" * 5000 + "}", "5,000 digits"),
        ('{"selected": "perf", "x": 1e999}', "out of range"),
    ],
    ids=["5000-digit-number", "infinite-float"],
)
def test_numbers_json_cannot_hold_are_a_usage_error(
    initialized_repos: Repos, tmp_path: Path, text: str, needle: str
) -> None:
    """Found by the hostile run (issue 15): numbers json cannot hold are a usage error."""
    source = tmp_path / "autoloop.json"
    source.write_text(text)
    for args in (
        ["prepare", "--autoloop-json", str(source), "--out", str(tmp_path / "out")],
        ["report", "--out", str(source)],
    ):
        proc = run_statefile(*args, cwd=initialized_repos.work)
        assert proc.returncode == EXIT_USAGE and needle in only_error_line(proc), proc.stderr
    assert source.read_text() == text
