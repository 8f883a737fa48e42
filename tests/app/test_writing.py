"""The write use cases: one record pipeline, its commit metadata in trailers, dry runs that match real runs, and
``sync``, which reads what each local-only commit was from its trailers, never from its subject."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import GuardRepo, guard_run
from gitutil import git, invoke_statefile, make_repos
from synthetic import synthetic_state
from upstream import upstream_machine_state

from statefile.app.context import AppContext
from statefile.app.writing import autoloop_context, compact_program, edit_program, record_iteration
from statefile.errors import ConflictError
from statefile.policy.compaction import CompactionPolicy
from statefile.policy.rules import RecordRequest
from statefile.store import Store
from statefile.store.folder import FolderStore

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


def test_a_record_commit_names_program_and_iteration_in_trailers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23: commit metadata is in git trailers, read back with git's own parser; the subject is for people."""
    repos = make_repos(tmp_path)
    done = invoke_statefile(capsys, "--remote", "origin", "record", "perf", "--create", "--status", "accepted",
                            "--metric", "0.9", cwd=repos.work)  # fmt: skip
    assert done.code == 0, done.err
    message = git("log", "-1", "--format=%B", "memory/autoloop", cwd=repos.remote)
    assert message.splitlines()[0] == "statefile: record iteration 1 of perf (✅ accepted)"
    for key, value in (("Statefile-Program", "perf"), ("Statefile-Iteration", "1")):
        read = git("log", "-1", f"--format=%(trailers:key={key},valueonly)", "memory/autoloop", cwd=repos.remote)
        assert read.strip() == value


def test_a_dry_run_is_the_real_run_without_the_write(tmp_path: Path) -> None:
    """record and compact --dry-run run the same update function as the write, on what is stored now."""
    (tmp_path / "perf.md").write_text(synthetic_state("perf", 60, seed=3), encoding="utf-8")
    store = FolderStore(tmp_path)
    policy = CompactionPolicy(max_bytes=6000)
    request = RecordRequest(status="accepted", metric=1.5, change="Try radix")
    would = record_iteration(store, "perf", request, policy, now=NOW, dry_run=True)
    planned = compact_program(store, "perf", policy, dry_run=True)
    assert would is not None and would.dry_run and would.commit == "" and planned.dry_run and planned.report.changed
    before = (tmp_path / "perf.md").read_text(encoding="utf-8")
    assert record_iteration(store, "perf", request, policy, now=NOW, dry_run=True) == would
    assert (tmp_path / "perf.md").read_text(encoding="utf-8") == before  # nothing was written
    done = record_iteration(store, "perf", request, policy, now=NOW)
    assert done is not None
    assert (done.iteration, done.size, done.compaction) == (would.iteration, would.size, would.compaction)


DRIFTED = "## Machine State\n"


def _drift(program: str) -> None:
    with Store.open(".", remote="origin") as store:
        text = store.read_text(program) or ""
        store.write_files({f"{program}.md": text.replace("## ⚙️ Machine State\n", DRIFTED, 1)}, "drift")


@pytest.mark.parametrize(
    "args",
    [
        ["compact", "perf"],
        ["lesson", "add", "perf", "A brand new lesson"],
        ["lesson", "pin", "perf", "1"],
        ["record", "perf", "--status", "rejected"],
    ],
)
def test_every_write_restores_a_drifted_machine_state_heading(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """Guard rail (issue 13): under any other heading the scheduler sees a brand-new program; every write restores
    the exact heading."""
    _drift("perf")
    assert upstream_machine_state(guard_repo.remote_file("perf.md")) == {}  # the scheduler sees a brand-new program
    result = guard_run(capsys, "--remote", "origin", *args)
    assert result.code == 0, result.err
    text = guard_repo.remote_file("perf.md")
    assert "## ⚙️ Machine State\n" in text and DRIFTED not in text
    assert upstream_machine_state(text)["iteration_count"] >= 12


def test_edit_restores_a_heading_the_edit_drifted(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guard rail (issue 13): an edit that changed the Machine State heading is saved with the heading restored."""
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "t = p.read_text(encoding='utf-8')\n"
        "p.write_text(t.replace('## ⚙️ Machine State', '## Machine State').replace('Goal', 'The goal'), "
        "encoding='utf-8')\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    result = guard_run(capsys, "--remote", "origin", "edit", "pipeline")
    assert result.code == 0, result.err
    assert "restored the ⚙️ Machine State heading" in result.out
    text = guard_repo.remote_file("pipeline.md")
    assert "The goal" in text and "## ⚙️ Machine State\n" in text


def test_a_compact_commit_subject_names_the_folded_iterations(tmp_path: Path) -> None:
    """Issue 23 review: `git log --oneline` of a compaction says which iterations went to the archive, as before
    the rewrite (``statefile: compact perf — iterations 1–N to archive``), the full summary in the body."""
    repos = make_repos(tmp_path)
    with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
        store.write_files({"perf.md": synthetic_state("perf", 60, seed=3)}, "seed")
        done = compact_program(store, "perf", CompactionPolicy(max_bytes=6000), dry_run=False)
    assert done.commit and done.folded
    subject, _, body = git("log", "-1", "--format=%B", "memory/autoloop", cwd=repos.remote).partition("\n\n")
    assert subject == f"statefile: compact perf — iterations {done.folded[0]}–{done.folded[-1]} to archive"
    assert done.report.summary() in body


def test_a_non_positive_selected_issue_in_autoloop_json_is_no_issue(tmp_path: Path) -> None:
    """Issue 23 review: GitHub numbers start at 1, so a selected_issue of 0 or below is ignored, never written."""
    path = tmp_path / "autoloop.json"
    for issue, expected in ((0, None), (-4, None), (True, None), (12, 12)):
        path.write_text(json.dumps({"selected": "perf", "selected_issue": issue}), encoding="utf-8")
        assert autoloop_context(path, env={}).issue == expected, issue


def test_a_failed_edit_says_where_the_text_is_even_when_quiet(tmp_path: Path) -> None:
    """Issue 23 review: the note that says where the user's edited text was saved is never silenced (--quiet
    silences it on the app's notify channel, so ``edit_program`` says it through its own ``tell``)."""
    (tmp_path / "perf.md").write_text(synthetic_state("perf", 3, seed=1), encoding="utf-8")
    app = AppContext(folder=tmp_path, quiet=True)
    told: list[str] = []

    def editor(text: str, limit: int) -> str:
        (tmp_path / "perf.md").write_text(text + "\n- changed meanwhile\n", encoding="utf-8")  # a concurrent write
        return text.replace("perf", "perf (edited)", 1)

    saved = tmp_path / "kept.md"
    with pytest.raises(ConflictError):
        edit_program(app, "perf", editor, lambda text: saved, told.append)
    assert told == [f"your edited text is saved in {saved}"]


def test_a_record_that_creates_the_program_has_no_lesson_note(tmp_path: Path) -> None:
    """Issue 23 review: the count of lessons not added is never negative (a new file's placeholder is no lesson)."""
    policy = CompactionPolicy(max_bytes=30_000)
    done = record_iteration(FolderStore(tmp_path), "perf", RecordRequest(status="rejected"), policy, now=NOW,
                            create=True)  # fmt: skip
    assert done is not None and done.created and done.notes == ()
    again = record_iteration(FolderStore(tmp_path), "perf", RecordRequest(status="rejected", lessons=("a", "A")),
                             policy, now=NOW)  # fmt: skip
    assert again is not None and again.notes == ("1 lesson not added: repeats a lesson already there",)


def test_a_record_is_replayed_from_its_trailers_and_a_look_alike_subject_is_a_file_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression (issue 23): sync read "record iteration N of P" back from commit subjects with a regular
    expression, so a commit whose subject only looked like a record was replayed as one."""
    repos = make_repos(tmp_path)
    assert invoke_statefile(capsys, "--remote", "origin", "init", "perf", cwd=repos.work).code == 0
    local = invoke_statefile(capsys, "record", "perf", "--status", "rejected", "--change", "offline", cwd=repos.work)
    assert local.code == 0, local.err  # no --remote: a local-only commit
    trailers = git("log", "-1", "--format=%(trailers:only,unfold)", "memory/autoloop", cwd=repos.work)
    assert trailers.split("\n")[:2] == ["Statefile-Program: perf", "Statefile-Iteration: 1"]
    with Store.open(repos.work) as store:
        text = store.read_text("perf")
        assert text is not None
        store.write_files({"perf.md": text + "\nhand edit\n"}, "statefile: record iteration 7 of perf (✅ accepted)")
    other = repos.clone("other")  # meanwhile a scheduled run records through origin
    assert invoke_statefile(capsys, "--remote", "origin", "record", "perf", "--status", "accepted", cwd=other).code == 0
    git("fetch", "--quiet", "origin", cwd=repos.work)
    synced = invoke_statefile(capsys, "--remote", "origin", "sync", cwd=repos.work)
    assert synced.code == 0, synced.err
    lines = synced.out.splitlines()
    assert lines[0] == "replayed 2 local-only commits to origin"
    assert lines[1].startswith("  recorded local iteration 1 of perf again as iteration 2 (")
    assert lines[2].startswith("  perf.md: kept the remote's version; the local one is in archive/perf/ (")
    replayed = git("log", "-1", "--format=%B", "origin/memory/autoloop~1", cwd=repos.work)
    assert replayed.startswith("statefile: record iteration 2 of perf (❌ rejected)\n\nreplayed local iteration 1 (")
    assert "offline" in (repos.remote_file("perf.md") or "")
