"""SHA-256 repositories: every object statefile writes is written by git, so they work as SHA-1 ones do.

Each test drives the real ``statefile`` command against repositories made with ``git init --object-format=sha256``
(and a bare SHA-256 remote), then checks the branch with ``git fsck --full --strict``.  Where git cannot work —
between a SHA-1 clone and a SHA-256 remote — the command fails with a clear error before anything is written.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import only_error_line
from gitutil import Repos, run_statefile
from gitutil import git as repo_git
from storeutil import BRANCH, LOCAL, blob, fsck_clean, git, make_repo, rev

from statefile.errors import EXIT_GIT, EXIT_INVALID_DATA, InvalidDataError
from statefile.store import GitStore, Repository, discover

SHA256 = re.compile(r"[0-9a-f]{64}")


def _supports_sha256() -> bool:
    probe = subprocess.run(["git", "init", "-q", "--object-format=sha256", "--bare", "/dev/null/x"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    return "unknown option" not in probe.stderr and "object-format" not in probe.stderr


pytestmark = pytest.mark.skipif(not _supports_sha256(), reason="this git cannot make SHA-256 repositories")


def init256(path: Path, *, bare: bool = False) -> Path:
    """A SHA-256 repository (with one commit on main unless bare)."""
    git(path.parent, "init", "-q", "--object-format=sha256", "-b", "main", *(["--bare"] if bare else []), str(path))
    if not bare:
        (path / "code.py").write_text("print('hello')\n")
        git(path, "add", "code.py")
        git(path, "commit", "-q", "-m", "initial")
    return path


def record(cwd: Path, n: int, *flags: str) -> None:
    proc = run_statefile(
        *flags, "--max-bytes", "2000", "record", "perf", "--status", "accepted", "--metric", str(n),
        "--change", f"change {n}, described at some length so that the file fills its budget quickly",
        "--notes", f"notes for iteration {n}: what was tried, what was measured, what to try next.",
        cwd=cwd,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def check_branch(repo: Path, flags: tuple[str, ...] = ()) -> None:
    """The branch holds SHA-256 ids, an archive, every iteration recorded, and reads back through statefile."""
    tip = rev(repo, LOCAL)
    assert tip is not None and SHA256.fullmatch(tip)
    files = git(repo, "ls-tree", "-r", "--name-only", LOCAL).split()
    assert "perf.md" in files and any(f.startswith("archive/perf/") for f in files), files
    for n in (1, 2, 12):  # archived iterations and recent ones come back whole
        shown = run_statefile(*flags, "expand", "perf", str(n), cwd=repo)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith(f"### Iteration {n} ") and f"change {n}," in shown.stdout
    with GitStore(repo) as store:
        doc = store.read("perf")
        assert doc is not None and doc.machine_state["iteration_count"] == 12
        assert all(SHA256.fullmatch(entry.commit) for entry in store.log("perf", limit=3))
        assert set(store.read_all()) == set(files)
    fsck_clean(repo)


def test_record_compact_and_read_back_in_a_sha256_repository(tmp_path: Path) -> None:
    repo = init256(tmp_path / "work")
    assert discover(repo).object_format == "sha256"
    assert run_statefile("init", "perf", cwd=repo).returncode == 0
    for n in range(1, 13):
        record(repo, n)
    compacted = run_statefile("--max-bytes", "2000", "compact", "perf", "--aggressive", cwd=repo)
    assert compacted.returncode == 0, compacted.stderr
    check_branch(repo)
    assert git(repo, "status", "--porcelain") == ""  # the work tree and index were never touched


def test_through_a_bare_sha256_remote(tmp_path: Path) -> None:
    remote = init256(tmp_path / "remote.git", bare=True)
    repo = init256(tmp_path / "work")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    assert run_statefile("--remote", "origin", "init", "perf", cwd=repo).returncode == 0
    for n in range(1, 13):
        record(repo, n, "--remote", "origin")
    check_branch(repo, ("--remote", "origin"))
    assert rev(remote, LOCAL) == rev(repo, LOCAL)
    fsck_clean(remote)
    # A second clone reads (and writes) through the remote-tracking copy, as a CI runner does.
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    assert rev(other, LOCAL) is None
    record(other, 13, "--remote", "origin")
    assert "change 13," in git(remote, "show", f"{BRANCH}:perf.md")
    fsck_clean(remote)


def test_a_sha1_clone_of_a_sha256_remote_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    remote = init256(tmp_path / "remote.git", bare=True)
    seed = init256(tmp_path / "seed")
    git(seed, "remote", "add", "origin", str(remote))
    git(seed, "push", "-q", "origin", "main")
    assert run_statefile("--remote", "origin", "init", "perf", cwd=seed).returncode == 0
    before = rev(remote, LOCAL)

    sha1 = tmp_path / "sha1"
    git(tmp_path, "init", "-q", "-b", "main", str(sha1))
    git(sha1, "commit", "-q", "--allow-empty", "-m", "initial")
    git(sha1, "remote", "add", "origin", str(remote))
    objects = git(sha1, "count-objects", "-v")
    proc = run_statefile("--remote", "origin", "record", "perf", "--status", "accepted", "--metric", "1", cwd=sha1)
    assert proc.returncode == EXIT_GIT
    assert "different object formats" in proc.stderr and "nothing was written" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert rev(remote, LOCAL) == before and rev(sha1, LOCAL) is None
    assert git(sha1, "count-objects", "-v") == objects  # not one object written
    fsck_clean(sha1)


def test_an_object_format_statefile_does_not_know_is_refused(tmp_path: Path) -> None:
    repo = init256(tmp_path / "work")
    found = discover(repo)
    unknown = Repository(found.git_dir, found.common_dir, found.work_tree, "sha3-512")
    assert isinstance(unknown, Repository)
    with pytest.raises(InvalidDataError, match=r"'sha3-512' format, which statefile does not know"):
        GitStore(unknown)


def test_a_write_over_a_missing_object_is_invalid_data_not_exit_70(initialized_repos: Repos) -> None:
    # The branch's tree names a blob the repository does not have (a damaged or partial clone): the same error, with
    # its path, as every read of a missing object (it was git's "mktree failed", exit 6).
    """Found by the hostile run (issue 15): a write over a missing object is invalid data not exit 70."""
    listing = f"100644 blob {'2' * 40}\tperf.md\n"
    made = subprocess.run(
        ["git", "mktree", "--missing"], cwd=initialized_repos.work, input=listing, capture_output=True, text=True
    )
    commit = repo_git("commit-tree", made.stdout.strip(), "-m", "damaged", cwd=initialized_repos.work).strip()
    repo_git("update-ref", "refs/heads/memory/autoloop", commit, cwd=initialized_repos.work)
    proc = run_statefile("init", "newprog", cwd=initialized_repos.work)
    assert proc.returncode == EXIT_INVALID_DATA, proc.stderr
    assert "perf.md (object 2222" in only_error_line(proc) and "missing from the repository" in proc.stderr
    assert repo_git("rev-parse", "refs/heads/memory/autoloop", cwd=initialized_repos.work).strip() == commit


def test_a_write_keeps_names_differing_only_in_case_apart_under_core_ignorecase(tmp_path: Path) -> None:
    """Found with the fast-import writer: under ``core.ignoreCase`` (macOS and Windows clones) fast-import took
    ``a.md`` for ``A.md``, writing one twin's text into the other."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "core.ignoreCase", "true")
    upper, lower = blob(repo, b"upper\n"), blob(repo, b"lower\n")
    tree = git(repo, "mktree", input=f"100644 blob {upper}\tA.md\n100644 blob {lower}\ta.md\n".encode()).strip()
    git(repo, "update-ref", LOCAL, git(repo, "commit-tree", tree, "-m", "twins").strip())
    with GitStore(repo) as store:
        store.write_files({"a.md": "new\n"}, "statefile: write a.md")
    assert git(repo, "show", f"{LOCAL}:A.md") == "upper\n" and git(repo, "show", f"{LOCAL}:a.md") == "new\n"
    fsck_clean(repo)
