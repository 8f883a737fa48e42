"""``statefile sync``: what each local-only commit was is read from its trailers, never from its subject."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitutil import git, invoke_statefile, make_repos

from statefile.store import Store


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
