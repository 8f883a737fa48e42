"""The transaction's cost in git processes, counted, not timed (benchmarks/bench_git.py measures the time)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from gitutil import git as repo_git
from gitutil import make_repos, run_statefile
from storeutil import BRANCH, clone, git, make_remote

from statefile.store import GitStore


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


def _retree(repo: Path, entries: list[tuple[str, str, str]], message: str) -> None:
    """Point the memory branch at a commit whose top tree is ``entries`` (mode, name, blob id) written as given:
    raw modes git's porcelain would never write, as other tools can."""
    raw = b"".join(f"{mode} {name}\0".encode() + bytes.fromhex(oid) for mode, name, oid in entries)
    tree = git(repo, "hash-object", "-w", "-t", "tree", "--literally", "--stdin", input=raw).strip()
    commit = git(repo, "commit-tree", tree, "-p", BRANCH, "-m", message).strip()
    git(repo, "update-ref", f"refs/heads/{BRANCH}", commit)


def test_a_file_of_a_non_canonical_mode_is_read_and_written_as_a_file(tmp_path: Path) -> None:
    """Cold review: a state file stored as 100600 (a tool's chmod) was "not a regular file" for render, show and
    record (exit 7) while list and check called it ok, and a write beside it made fast-import fail ("Corrupt
    mode").  Git reads every 100xxx mode as a regular file and writes it as 100644 or 100755."""
    work = make_repos(tmp_path).work
    assert run_statefile("record", "perf", "--create", "--status", "accepted", cwd=work).returncode == 0
    blob_id = git(work, "rev-parse", f"{BRANCH}:perf.md").strip()
    notes = git(work, "hash-object", "-w", "--stdin", input=b"notes\n").strip()
    _retree(work, [("100664", "notes.txt", notes), ("100600", "perf.md", blob_id)], "chmod by a tool")
    for args in (("list",), ("check",), ("render", "perf"), ("show", "perf")):
        ran = run_statefile(*args, cwd=work)
        assert ran.returncode == 0, (args, ran.stdout, ran.stderr)
    assert run_statefile("record", "perf", "--status", "accepted", cwd=work).returncode == 0
    listing = git(work, "ls-tree", BRANCH)
    assert "100644 blob" in listing and "100600" not in listing and "\tnotes.txt" in listing
    assert "Iteration Count | 2" in git(work, "show", f"{BRANCH}:perf.md")


def test_rewriting_identical_bytes_beside_an_old_mode_makes_no_commit(tmp_path: Path) -> None:
    """Cold review: writing a file's own bytes again landed a commit that only changed a sibling's 100664 mode to
    100644; a write that changes no file's bytes is no change."""
    work = make_repos(tmp_path).work
    assert run_statefile("record", "perf", "--create", "--status", "accepted", cwd=work).returncode == 0
    text = git(work, "show", f"{BRANCH}:perf.md")
    blob_id = git(work, "rev-parse", f"{BRANCH}:perf.md").strip()
    old = git(work, "hash-object", "-w", "--stdin", input=b"old\n").strip()
    _retree(work, [("100664", "old.txt", old), ("100644", "perf.md", blob_id)], "an old tool's mode")
    tip = git(work, "rev-parse", BRANCH).strip()
    with GitStore(work, BRANCH) as store:
        result = store.write_files({"perf.md": text}, "same bytes again")
    assert git(work, "rev-parse", BRANCH).strip() == tip, result
