"""The transaction's cost in git processes, counted, not timed (benchmarks/bench_git.py measures the time)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from gitutil import git as repo_git
from gitutil import make_repos, run_statefile
from storeutil import BRANCH, clone, git, make_remote


def test_git_processes_per_command(tmp_path: Path) -> None:
    """A ``git`` first on PATH logs each process statefile starts, in a clone in step with the remote (a runner
    recording every iteration).  They were 9 (local record: for-each-ref twice), 21 (``--remote`` record: two
    fetches, three for-each-ref, two merge-base, an ls-remote) and 9 (``--remote`` render), then 7 / 9 / 4 (blobs,
    trees and commit by hash-object, mktree, commit-tree).  Local: rev-parse, for-each-ref, cat-file, fast-import
    (blobs and trees), commit-tree, update-ref; ``--remote`` adds ls-remote (which also refuses a symbolic ref there)
    and push, and the local refs follow in one update-ref; no fetch while the remote's tip is already here."""
    work = clone(make_remote(tmp_path), tmp_path / "work")
    log, bin_dir = tmp_path / "git.log", tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec {shutil.which("git")} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def processes(*args: str) -> list[str]:
        log.write_text("")
        proc = run_statefile(*args, cwd=work, env=env)
        assert proc.returncode == 0, proc.stderr
        return log.read_text().splitlines()

    record = ("record", "perf", "--status", "accepted", "--metric", "1")
    processes("--remote", "origin", "init", "perf")
    assert git(work, "rev-parse", BRANCH) == git(work, "rev-parse", f"origin/{BRANCH}")
    remote_record = processes("--remote", "origin", *record)
    assert len(remote_record) == 8, remote_record
    remote_render = processes("--remote", "origin", "render", "perf")
    assert len(remote_render) == 4, remote_render
    local_record = processes(*record)
    assert len(local_record) == 6, local_record


def test_commits_use_the_identity_from_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As seen in issue 11: commits use the identity from git config."""
    repos = make_repos(tmp_path)
    repo_git("config", "user.name", "Config Person", cwd=repos.work)
    repo_git("config", "user.email", "config@example.invalid", cwd=repos.work)
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key)
    assert run_statefile("init", "perf", cwd=repos.work).returncode == 0
    author = repo_git("log", "-1", "--format=%an <%ae>|%cn <%ce>", "memory/autoloop", cwd=repos.work).strip()
    assert author == "Config Person <config@example.invalid>|Config Person <config@example.invalid>"
