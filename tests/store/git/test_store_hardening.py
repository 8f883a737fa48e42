"""Regression tests for the store's part of the adversarial run (issue 15), each built from the input it names.

Real repositories, a bare remote, real processes: a push whose connection drops after the remote took the commit,
a branch that is a symbolic ref, FIFOs where files should be, missing objects, entries that are not files, paths
other file systems read as ``.git``, branch names that shadow ``HEAD``, stale lock files, hooks with something to
say, temporary files a killed writer left, names that collide on Windows or macOS.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from gitutil import STATEFILE
from storeutil import BRANCH, LOCAL, TRACKING, appender, clone, fsck_clean, git, make_remote, make_repo, rev

from statefile.errors import (
    EXIT_CHECK_FAILED,
    EXIT_GIT,
    EXIT_INVALID_DATA,
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    GitError,
    InvalidDataError,
    UsageError,
)
from statefile.model.document import parse
from statefile.model.synthetic import synthetic_state
from statefile.store import Change, FolderStore, GitStore, Store
from statefile.store.exchange import check_path
from statefile.store.folder import STALE_TEMP_SECONDS
from statefile.store.git import store as git_store
from statefile.store.git.refs import Refs
from statefile.store.git.remote import Remote
from statefile.store.git.retry import Outcome
from statefile.store.git.runner import Result
from statefile.store.names import validate_branch, validate_path, validate_program


def sf(*args: str, cwd: Path, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    """The statefile command, killed (and the test failed) if it runs longer than ``timeout`` seconds."""
    return subprocess.run([STATEFILE, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def point_branch(repo: Path, lines: list[str]) -> str:
    """Point the memory branch at a commit whose root tree is ``lines`` (``mktree --missing`` input)."""
    tree = git(repo, "mktree", "--missing", input="".join(f"{line}\n" for line in lines).encode()).strip()
    commit = git(repo, "commit-tree", tree, "-m", "crafted").strip()
    git(repo, "update-ref", LOCAL, commit)
    return commit


def blob(repo: Path, data: bytes) -> str:
    return git(repo, "hash-object", "-w", "--stdin", input=data).strip()


def hook(bare: Path, name: str, body: str) -> None:
    path = bare / "hooks" / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


# -- 2. a push that landed is reported as landed ---------------------------------------------------------------------


def test_a_push_that_landed_before_the_connection_dropped_is_reported_as_landed(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    assert sf("--remote", "origin", "init", "perf", cwd=work).returncode == 0
    # receive-pack updates the ref, then its post-receive hook kills it: git push exits non-zero.
    hook(remote, "post-receive", "kill -9 $PPID")
    for n in (1, 2):
        proc = sf("--remote", "origin", "record", "perf", "--status", "accepted", "--metric", str(n), cwd=work)
        assert proc.returncode == 0, proc.stderr
    text = git(remote, "show", f"{BRANCH}:perf.md")
    assert text.count("### Iteration 1 ") == 1 and text.count("### Iteration 2 ") == 1
    assert rev(work, LOCAL) == rev(remote, LOCAL) == rev(work, TRACKING)


def test_a_push_that_did_not_land_is_still_an_error(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    store = Store.open(work, remote="origin")
    store.update("perf", appender("- one"), "statefile: one")
    hook(remote, "pre-receive", "kill -9 $PPID")  # dies before any ref moves
    with pytest.raises(GitError, match=r"push"):
        store.update("perf", appender("- two"), "statefile: two")
    assert "- two" not in git(remote, "show", f"{BRANCH}:perf.md")


# -- 3. writes never follow a symbolic ref -------------------------------------------------------------------------


def test_a_branch_that_is_a_symbolic_ref_is_never_written_through(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    main = rev(repo, "refs/heads/main")
    git(repo, "symbolic-ref", LOCAL, "refs/heads/main")
    proc = sf("record", "perf", "--status", "accepted", cwd=repo)
    assert proc.returncode == EXIT_INVALID_DATA and "symbolic ref to refs/heads/main" in one_error_line(proc)
    assert rev(repo, "refs/heads/main") == main and git(repo, "status", "--porcelain") == ""
    # Through a remote too, and when the ref it names does not exist (creating the branch would create that).
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    git(work, "symbolic-ref", LOCAL, "refs/heads/elsewhere")
    for store in (Store.open(work), Store.open(work, remote="origin")):
        with pytest.raises(InvalidDataError, match="symbolic ref to refs/heads/elsewhere"):
            store.update("perf", appender("- x"), "statefile: x")
    assert rev(work, "refs/heads/elsewhere") is None and rev(remote, LOCAL) is None


def test_a_remote_branch_that_is_a_symbolic_ref_is_never_pushed_through(tmp_path: Path) -> None:
    """On the remote, receive-pack follows a symbolic ref: a push to memory/autoloop would move main there."""
    remote = make_remote(tmp_path)
    first = clone(remote, tmp_path / "first")
    Store.open(first, remote="origin").update("perf", appender("- one"), "statefile: one")
    git(remote, "symbolic-ref", LOCAL, "refs/heads/main")
    main = rev(remote, "refs/heads/main")
    work = clone(remote, tmp_path / "work")
    proc = sf("--remote", "origin", "record", "perf", "--create", "--status", "accepted", cwd=work)
    assert proc.returncode == EXIT_INVALID_DATA, proc.stderr
    assert "symbolic ref to refs/heads/main" in one_error_line(proc)
    assert rev(remote, "refs/heads/main") == main


def test_a_remote_branch_that_is_a_symbolic_ref_is_refused_before_anything_is_fetched(tmp_path: Path) -> None:
    """The remote advertises a symbolic ref with its target's commit: fetched, main's code commit became the
    remote-tracking copy, record said "diverged", and sync moved the local memory branch onto main."""
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    assert sf("-q", "--remote", "origin", "init", "perf", cwd=work).returncode == 0
    git(remote, "symbolic-ref", LOCAL, "refs/heads/main")
    before = {ref: rev(work, ref) for ref in (LOCAL, TRACKING)}
    main = rev(remote, "refs/heads/main")
    for args in (["record", "perf", "--status", "accepted"], ["sync"], ["list"], ["show", "perf"], ["check"]):
        proc = sf("--remote", "origin", *args, cwd=work)
        assert proc.returncode == EXIT_INVALID_DATA, (args, proc.stderr)
        line = one_error_line(proc)
        assert "refs/heads/memory/autoloop on origin is a symbolic ref to refs/heads/main" in line, line
        assert {ref: rev(work, ref) for ref in before} == before and rev(remote, "refs/heads/main") == main, args
    assert git(work, "for-each-ref", "--format=%(refname)", "refs/statefile") == ""  # sync set nothing aside
    listed = sf("--json", "list", cwd=work)
    assert [row["program"] for row in json.loads(listed.stdout)] == ["perf"], listed.stdout
    store = GitStore(work, remote="origin")
    with store, pytest.raises(InvalidDataError, match="symbolic ref"):
        store.fetch()


# -- 3b. reads never follow a symbolic ref either ------------------------------------------------------------------


def test_reads_through_a_local_symbolic_ref_are_refused_as_writes_are(tmp_path: Path) -> None:
    """cat-file follows a symbolic ref silently: list showed main's code.py as a program, show read it."""
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("project\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "readme")
    git(repo, "symbolic-ref", LOCAL, "refs/heads/main")
    refused = sf("record", "perf", "--status", "accepted", cwd=repo)
    assert refused.returncode == EXIT_INVALID_DATA and "symbolic ref to refs/heads/main" in one_error_line(refused)
    for args in (["list"], ["check"], ["show", "README"], ["export"], ["search", "project"], ["log", "README"]):
        proc = sf(*args, cwd=repo)
        assert (proc.returncode, proc.stderr) == (EXIT_INVALID_DATA, refused.stderr), (args, proc.stderr)
    # The store itself, not only the command line: the first read asks, as every write does.
    with GitStore(repo) as store, pytest.raises(InvalidDataError, match="symbolic ref to refs/heads/main"):
        store.programs()
    assert git(repo, "symbolic-ref", LOCAL).strip() == "refs/heads/main"


# -- 5. FIFOs and devices in a folder store ------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["perf.md", "archive/perf/0001.md", "_shared.md"])
def test_a_fifo_in_a_folder_store_is_an_error_not_a_hang(tmp_path: Path, where: str) -> None:
    folder = tmp_path / "memory"
    (folder / "archive" / "perf").mkdir(parents=True)
    if where != "perf.md":
        (folder / "perf.md").write_text(synthetic_state("perf", 4, seed=2))
    os.mkfifo(folder / where)
    commands = [["show", "perf"], ["record", "perf", "--status", "accepted"], ["render", "perf"], ["search", "x"],
                ["export"], ["expand", "perf", "999"], ["status", "perf"]]  # fmt: skip
    # The commands that must open the FIFO: they fail with a clear error; the others simply never touch it.
    reads_it = {"perf.md": {a[0] for a in commands}, "archive/perf/0001.md": {"search", "export", "expand"},
                "_shared.md": {"render", "search", "export"}}[where]  # fmt: skip
    for args in commands:
        start = time.monotonic()
        proc = sf("--dir", str(folder), *args, cwd=tmp_path)
        assert time.monotonic() - start < 15
        if args[0] not in reads_it and proc.returncode in (0, EXIT_NOT_FOUND):
            assert "Traceback" not in proc.stderr, (args, proc.stderr)
            continue
        assert proc.returncode == EXIT_INVALID_DATA, (args, proc.stderr)
        assert "is a FIFO, not a regular file" in one_error_line(proc), (args, proc.stderr)
    assert (folder / where).exists() and not (folder / where).is_file()


def test_a_folder_named_like_a_state_file_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    (tmp_path / "perf.md").mkdir()
    with pytest.raises(InvalidDataError, match=r"perf\.md in .* is a folder, not a regular file"):
        FolderStore(tmp_path).read_text("perf")


# -- 6 and 7. missing objects and entries that are not files: errors in check, list, compact --all -----------------


def test_entries_that_cannot_be_read_are_errors_for_every_command_that_goes_over_all(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    head = rev(repo, "HEAD")
    missing = "1" * 40
    point_branch(
        repo,
        [
            f"100644 blob {blob(repo, synthetic_state('ok', 3, seed=1).encode())}\tok.md",
            f"100644 blob {missing}\tgone.md",  # ls-tree -l shows its size as BAD
            f"120000 blob {blob(repo, b'/etc/passwd')}\tlinked.md",
            f"160000 commit {head}\tsub.md",
            f"040000 tree {git(repo, 'mktree', input=b'').strip()}\tfolder.md",
        ],
    )
    reasons = {"gone": "missing from the repository", "linked": "symbolic link", "sub": "submodule",
               "folder": "folder"}  # fmt: skip
    with GitStore(repo) as store:
        assert store.programs() == {"ok": len(synthetic_state("ok", 3, seed=1).encode())}
        found = store.unreadable()
        assert sorted(found) == sorted(reasons) and all(reasons[n] in found[n] for n in reasons)
    checked = sf("--json", "check", cwd=repo)
    assert checked.returncode == EXIT_CHECK_FAILED
    outcomes = {o["name"]: o for o in json.loads(checked.stdout)}
    assert outcomes["ok"]["ok"] and all(not outcomes[n]["ok"] for n in reasons)
    listed = sf("--json", "list", cwd=repo)
    assert listed.returncode == 0
    statuses = {r["program"]: r["status"] for r in json.loads(listed.stdout)}
    assert sorted(statuses) == sorted([*reasons, "ok"]) and statuses["ok"] != "unreadable"
    assert all(statuses[name] == "unreadable" for name in reasons)
    compacted = sf("compact", "--all", cwd=repo)
    assert compacted.returncode == EXIT_INVALID_DATA
    assert all(f"error: {name}:" in compacted.stderr for name in reasons)
    reported = sf("report", "--all", cwd=repo)
    assert reported.returncode == 0 and set(json.loads(reported.stdout)["statefile"]["programs"]) >= set(reasons)
    for args in (["status"], ["show", "gone"], ["expand", "gone", "1"]):
        proc = sf(*args, cwd=repo)
        assert proc.returncode in (0, EXIT_INVALID_DATA), (args, proc.stderr)
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


def test_a_folder_store_reports_what_it_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text(synthetic_state("ok", 3, seed=1))
    (tmp_path / "dir.md").mkdir()
    (tmp_path / "link.md").symlink_to(tmp_path / "ok.md")
    os.mkfifo(tmp_path / "pipe.md")
    found = FolderStore(tmp_path).unreadable()
    assert sorted(found) == ["dir", "link", "pipe"]
    assert "folder" in found["dir"] and "symbolic link" in found["link"] and "FIFO" in found["pipe"]
    checked = sf("--dir", str(tmp_path), "check", cwd=tmp_path)
    assert checked.returncode == EXIT_CHECK_FAILED and checked.stdout.count("error:") == 3


@pytest.mark.parametrize("missing", ["archive", "archive/perf"])
def test_a_missing_archive_tree_is_invalid_data_naming_its_path(tmp_path: Path, missing: str) -> None:
    """Missing blobs were exit 7 naming the path; missing trees were exit 6 "git mktree failed" or "git ls-tree
    failed" (record, search, export), or a message without the path (history)."""
    repo = make_repo(tmp_path / "repo")
    assert sf("-q", "init", "perf", cwd=repo).returncode == 0
    state = git(repo, "rev-parse", f"{LOCAL}:perf.md").strip()
    gone = "1" * 40
    if missing == "archive":
        archive = gone
    else:
        archive = git(repo, "mktree", "--missing", input=f"040000 tree {gone}\tperf\n".encode()).strip()
    commit = point_branch(repo, [f"100644 blob {state}\tperf.md", f"040000 tree {archive}\tarchive"])
    commands = [["search", "x"], ["export"], ["history", "perf"]]
    if missing == "archive":  # the write carries the archive folder over by its id, which git checks
        commands.append(["record", "perf", "--status", "accepted"])
    for args in commands:
        proc = sf(*args, cwd=repo)
        assert proc.returncode == EXIT_INVALID_DATA, (args, proc.stderr)
        line = one_error_line(proc)
        assert f"{missing} (object {gone}) on branch {BRANCH} is missing from the repository" in line, (args, line)
    assert rev(repo, LOCAL) == commit


def test_a_missing_blob_a_write_carries_over_is_invalid_data_naming_its_path(tmp_path: Path) -> None:
    """git mktree refuses a tree naming a missing object: that was exit 6 "git mktree failed"."""
    repo = make_repo(tmp_path / "repo")
    assert sf("-q", "init", "perf", cwd=repo).returncode == 0
    state = git(repo, "rev-parse", f"{LOCAL}:perf.md").strip()
    commit = point_branch(repo, [f"100644 blob {state}\tperf.md", f"100644 blob {'2' * 40}\t_shared.md"])
    proc = sf("record", "perf", "--status", "accepted", cwd=repo)
    assert proc.returncode == EXIT_INVALID_DATA, proc.stderr
    assert f"_shared.md (object {'2' * 40}) on branch {BRANCH} is missing" in one_error_line(proc)
    assert rev(repo, LOCAL) == commit


# -- 9. paths other file systems read as .git ----------------------------------------------------------------------

ALIASES = ["GIT~1/config", "git~1/hooks/post-checkout", ".git./config", ".GIT/config", ".git\u200c/config",
           "\u200c.git/config", "GITMOD~1", "gi7eba~1", ".gitmodules", ".gitmodules ", ".Gitmodules",
           "x/.git/config", "x/GIT~1", "notes.md:stream", "archive/perf/0001.md.", "con.md", "archive/aux/x.md",
           "a/nul", "archive/perf/0001.md "]  # fmt: skip


@pytest.mark.parametrize("path", ALIASES)
def test_import_refuses_every_alias_of_dotgit(tmp_path: Path, path: str) -> None:
    with pytest.raises(UsageError):
        check_path(path)
    with pytest.raises(UsageError):
        validate_path(path)
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(UsageError):
        Store.open(repo).write_files({path: "x\n", "perf.md": "# perf\n"}, "statefile: import")
    with pytest.raises(UsageError):
        FolderStore(tmp_path).write_files({path: "x\n"}, "statefile: import")
    assert rev(repo, LOCAL) is None and not any(p.name.lower().startswith(("git", ".git")) for p in tmp_path.iterdir())


def test_gits_own_fsck_checks_what_an_import_writes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with GitStore(repo) as store:
        data = blob(repo, b"x\n")
        bad = git(repo, "mktree", input=f"100644 blob {data}\tGIT~1\n".encode()).strip()
        good = git(repo, "mktree", input=f"100644 blob {data}\tperf.md\n".encode()).strip()
        assert "hasDotgit" in store._writer.fsck([bad])  # type: ignore[attr-defined]  # the check git applies, whatever our own rules say
        assert store._writer.fsck([good, data]) == ""  # type: ignore[attr-defined]
        store.write_files({"perf.md": "# perf\n", "archive/perf/0001.md": "# Archive\n"}, "statefile: import")
    git(repo, "prune", "--expire=now")  # the crafted trees above are garbage; the branch is what must be clean
    fsck_clean(repo)


# -- 10. branch names git would refuse, or that make HEAD ambiguous ------------------------------------------------


@pytest.mark.parametrize("name", ["HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "AUTO_MERGE",
                                  "refs/heads/x", "refs/x"])  # fmt: skip
def test_branch_names_that_shadow_git_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="invalid branch name"):
        validate_branch(name)
    repo = make_repo(tmp_path / "repo")
    proc = sf("--branch", name, "init", "perf", cwd=repo) if not name.startswith("refs/heads/") else None
    if proc is not None:
        assert proc.returncode == EXIT_USAGE and "branch" in one_error_line(proc)
    with pytest.raises(UsageError):
        Store.open(repo, branch=name)
    assert git(repo, "for-each-ref", "refs/heads").count("\n") == 1  # main only
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stderr == ""


def test_git_judges_a_branch_name_before_the_branch_is_created(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = Store.open(repo, branch="memory/ok")
    # As if the pure rules had let a bad name by: git's own check-ref-format still stands in the way.
    with pytest.raises(UsageError, match="git refuses it"):
        Refs(store._git, store.repository, "bad..name", []).check_name()
    Refs(store._git, store.repository, "memory/ok", []).check_name()


# -- 12. messages that say what happened ---------------------------------------------------------------------------


def test_a_stale_lock_on_the_remote_is_named_as_such(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    store = Store.open(work, remote="origin", max_tries=3)
    store.update("perf", appender("- one"), "statefile: one")
    (remote / "refs" / "heads" / "memory" / "autoloop.lock").write_text("")
    with pytest.raises(GitError) as info:
        store.update("perf", appender("- two"), "statefile: two")
    message = str(info.value)
    assert "kept changing" not in message and "stale" in message and "autoloop.lock" in message
    assert "\n" not in message


def test_a_stale_lock_on_the_remote_is_given_up_on_without_the_whole_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default tries and budget (100 tries, 300 s), a lock that stays held while the remote's tip stays
    put is taken for a stale one after STALE_REMOTE_LOCK seconds, not retried for five minutes.  (Here the grace
    is 0 s, so the second locked push already gives up; the old loop pushed until its tries ran out.)"""
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    store = Store.open(work, remote="origin")
    store.update("perf", appender("- one"), "statefile: one")
    before = rev(remote, LOCAL)
    (remote / "refs" / "heads" / "memory" / "autoloop.lock").write_text("")
    monkeypatch.setattr(git_store, "STALE_REMOTE_LOCK", 0.0)
    pushes: list[str] = []
    push = Remote.push

    def counted(self: Remote, new: str) -> tuple[Outcome, Result]:
        pushes.append(new)
        return push(self, new)

    monkeypatch.setattr(Remote, "push", counted)
    with pytest.raises(GitError, match="stale"):
        store.update("perf", appender("- two"), "statefile: two")
    assert len(pushes) == 2
    assert rev(remote, LOCAL) == before


def test_a_pre_receive_hooks_own_message_is_kept(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    hook(remote, "pre-receive", "echo 'BLOCKED: the memory branch is frozen until Friday' >&2\n"
                                "echo 'ask #infra to unfreeze it' >&2\nexit 1")  # fmt: skip
    proc = sf("--remote", "origin", "init", "perf", cwd=work)
    assert proc.returncode == EXIT_GIT
    line = one_error_line(proc)
    assert "BLOCKED: the memory branch is frozen until Friday" in line and "ask #infra" in line
    assert "branch protection" not in line and rev(remote, LOCAL) is None


def test_a_very_long_hook_message_is_cut_to_one_line(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    hook(remote, "pre-receive", 'for i in $(seq 1 500); do echo "line $i of a very chatty hook" >&2; done; exit 1')
    proc = sf("--remote", "origin", "init", "perf", cwd=work)
    assert proc.returncode == EXIT_GIT and len(one_error_line(proc)) < 1000


def test_remote_reads_never_use_a_local_branch_a_stale_lock_keeps_behind(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    reader = clone(remote, tmp_path / "reader")
    writer = clone(remote, tmp_path / "writer")
    assert sf("--remote", "origin", "init", "perf", cwd=writer).returncode == 0
    assert sf("--remote", "origin", "list", cwd=reader).returncode == 0
    git(reader, "branch", BRANCH, TRACKING)  # a local branch, which a leftover lock will keep from moving
    lock = reader / ".git" / "refs" / "heads" / "memory" / "autoloop.lock"
    lock.write_text("")
    assert (
        sf("--remote", "origin", "record", "perf", "--status", "accepted", "--metric", "7", cwd=writer).returncode == 0
    )
    shown = sf("--remote", "origin", "--json", "list", cwd=reader)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)[0]["iteration_count"] == 1  # the fetched tip, not the stale local branch
    assert rev(reader, LOCAL) != rev(remote, LOCAL)  # the lock really did keep it behind


def test_long_names_are_not_echoed_in_full(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for flags in (["--branch", "b" * 100_000], ["--remote", "r" * 100_000]):
        proc = sf(*flags, "list", cwd=repo)
        assert proc.returncode == EXIT_USAGE and len(one_error_line(proc)) < 600


# -- 13. temporary files, names that collide elsewhere -------------------------------------------------------------


def test_the_folder_store_removes_temporary_files_a_killed_writer_left(tmp_path: Path) -> None:
    store = FolderStore(tmp_path, max_bytes=4000)
    store.update("perf", appender("- one"), "statefile: one")
    (tmp_path / "archive" / "perf").mkdir(parents=True)
    old = [tmp_path / ".perf.md.k3j9x_a1.tmp", tmp_path / "archive" / "perf" / ".0001.md.zz9_q2b7.tmp"]
    fresh = tmp_path / ".perf.md.n0w_n0w1.tmp"  # could be a live writer's, were there one without the lock
    unrelated = tmp_path / ".notes.tmp"
    for path in [*old, fresh, unrelated]:
        path.write_text("half a write")
    past = time.time() - STALE_TEMP_SECONDS - 5
    for path in old:
        os.utime(path, (past, past))
    store.update("perf", lambda doc: Change(parse("# Autoloop: perf\n\n- two\n"), archive="- one\n"), "statefile: two")
    assert not any(p.exists() for p in old) and fresh.exists() and unrelated.exists()


@pytest.mark.parametrize("name", ["con", "NUL", "aux", "com1", "LPT9", "prn", "con.x", "nul.notes"])
def test_windows_device_names_are_refused_as_programs(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="reserved device name on Windows"):
        validate_program(name)
    proc = sf("--dir", str(tmp_path), "init", name, cwd=tmp_path)
    assert proc.returncode == EXIT_USAGE and not list(tmp_path.glob("*.md"))


def test_a_program_differing_only_in_case_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    folder = tmp_path / "folder"
    folder.mkdir()
    for flags in ([], ["--dir", str(folder)]):
        assert sf(*flags, "init", "perf", cwd=repo).returncode == 0
        proc = sf(*flags, "init", "PERF", cwd=repo)
        assert proc.returncode == EXIT_USAGE and "differs only in case" in one_error_line(proc)
        assert sf(*flags, "record", "Perf", "--status", "accepted", cwd=repo).returncode == EXIT_USAGE
    assert git(repo, "ls-tree", "--name-only", LOCAL).split() == ["perf.md"]
    assert sorted(p.name for p in folder.glob("*.md")) == ["perf.md"]
