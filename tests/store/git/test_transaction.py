"""The git store's write transaction on real repositories: conflicts re-applied, pushes rejected and retried,
locks held, pushes whose outcome cannot be read at once, writers killed at random, and its cost in git processes
(counted, not timed: benchmarks/bench_git.py measures the time)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from gitutil import run_statefile
from storeutil import (
    BRANCH,
    LOCAL,
    TRACKING,
    WORKER,
    appender,
    clone,
    commit_count,
    fsck_clean,
    git,
    lines_of,
    make_remote,
    make_repo,
    rev,
    spawn,
)

from statefile.errors import EXIT_GIT, ConflictError, GitError, UsageError
from statefile.model.document import StateDocument, parse
from statefile.store import Store
from statefile.store.git import transaction
from statefile.store.git.refs import Backoff, Outcome
from statefile.store.git.remote import Remote
from statefile.store.git.runner import Result


def test_a_concurrent_change_is_reapplied_never_overwritten(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = Store.open(repo)
    other = Store.open(repo)
    store.update("perf", appender("- base"), "statefile: base")
    calls: list[str] = []

    def fn(doc: StateDocument | None) -> StateDocument:
        calls.append(doc.render() if doc else "")
        if len(calls) == 1:  # another writer lands between our read and our compare-and-swap
            other.update("perf", appender("- theirs"), "statefile: theirs")
        return appender("- ours")(doc)

    result = store.update("perf", fn, "statefile: ours")
    commit = result.commit
    assert len(calls) == 2 and "- theirs" in calls[1] and result.attempts == 2
    assert store.read_text("perf") == "# Autoloop: perf\n\n- base\n- theirs\n- ours\n"
    assert commit_count(repo, LOCAL) == 3 and rev(repo, LOCAL) == commit


def test_conflicts_that_never_stop_end_in_a_clear_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = Store.open(repo, max_tries=3)
    other = Store.open(repo)
    store.update("perf", appender("- base"), "statefile: base")

    def fn(doc: StateDocument | None) -> StateDocument:
        other.update("perf", appender("- theirs"), "statefile: theirs")
        return appender("- ours")(doc)

    with pytest.raises(ConflictError, match="gave up after 3 tries"):
        store.update("perf", fn, "statefile: ours")
    text = store.read_text("perf") or ""
    assert "- ours" not in text and text.count("- theirs") == 3


def test_a_stale_ref_lock_is_reported_with_what_to_do(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = Store.open(repo, max_tries=2)
    tip = store.update("perf", appender("- one"), "statefile: one").commit
    lock = repo / ".git" / "refs" / "heads" / "memory" / "autoloop.lock"
    lock.write_text("")  # what a git process killed while holding the lock leaves behind
    with pytest.raises(GitError, match=r"cannot lock refs/heads/memory/autoloop.*delete that file"):
        store.update("perf", appender("- two"), "statefile: two")
    assert rev(repo, LOCAL) == tip
    lock.unlink()
    store.update("perf", appender("- two"), "statefile: two")
    assert store.read_text("perf") == "# Autoloop: perf\n\n- one\n- two\n"


def test_messages_are_cleaned_and_empty_ones_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = Store.open(repo)
    commit = store.update("perf", appender("- one"), "  statefile: one   \n\n  detail  \n\n").commit
    assert git(repo, "cat-file", "commit", commit).endswith("\n\nstatefile: one\n\n  detail\n")
    with pytest.raises(UsageError, match="empty commit message"):
        store.update("perf", appender("- two"), "  \n ")


def test_a_rejected_push_fetches_reapplies_and_pushes_again(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    a = Store.open(clone(remote, tmp_path / "a"), remote="origin")
    b = Store.open(clone(remote, tmp_path / "b"), remote="origin")
    a.update("perf", appender("- base"), "statefile: base")
    calls = 0

    def fn(doc: StateDocument | None) -> StateDocument:
        nonlocal calls
        calls += 1
        if calls == 1:
            b.update("perf", appender("- b"), "statefile: b")
        return appender("- a")(doc)

    result = a.update("perf", fn, "statefile: a")
    commit = result.commit
    assert calls == 2 and result.attempts == 2
    assert git(remote, "show", f"{BRANCH}:perf.md") == "# Autoloop: perf\n\n- base\n- b\n- a\n"
    assert rev(remote, LOCAL) == commit and commit_count(remote, LOCAL) == 3


def test_when_tries_run_out_the_remote_is_left_as_it_was(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    a = Store.open(clone(remote, tmp_path / "a"), remote="origin", max_tries=2)
    b = Store.open(clone(remote, tmp_path / "b"), remote="origin")
    b.update("perf", appender("- base"), "statefile: base")

    def fn(doc: StateDocument | None) -> StateDocument:
        b.update("perf", appender("- b"), "statefile: b")  # b wins every race
        return appender("- a")(doc)

    with pytest.raises(ConflictError, match=r"gave up after 2 tries: origin/memory/autoloop kept changing"):
        a.update("perf", fn, "statefile: a")
    assert rev(remote, LOCAL) == b.tip()
    assert "- a" not in git(remote, "show", f"{BRANCH}:perf.md")


def hook(bare: Path, name: str, body: str) -> None:
    path = bare / "hooks" / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def vanish_after_receiving(bare: Path, seconds: float | None) -> None:
    """A post-receive hook that takes the remote away (moves it aside), then kills receive-pack: the ref has
    moved, git push exits non-zero without a verdict, and fetching from the remote fails — for ``seconds``, or
    until the test puts it back (``None``)."""
    back = "" if seconds is None else f'(sleep {seconds}; mv "$D.away" "$D") </dev/null >/dev/null 2>&1 &'
    # The sleeper's descriptors go to /dev/null: holding git's stderr open would make the push wait for it.
    hook(bare, "post-receive", f'D=$(cd "$GIT_DIR" && pwd -P)\ncd /\nmv "$D" "$D.away"\n{back}\nkill -9 $PPID')


def wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never came back"
        time.sleep(0.05)


# -- a push whose outcome cannot be read straight away --------------------------------------------------------------


def test_a_push_that_landed_is_verified_once_the_remote_answers_again(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    assert run_statefile("--remote", "origin", "init", "perf", cwd=work).returncode == 0
    vanish_after_receiving(remote, 2)
    proc = run_statefile("--remote", "origin", "record", "perf", "--status", "accepted", "--metric", "7", cwd=work)
    wait_for(remote)
    assert proc.returncode == 0, proc.stderr
    assert git(remote, "show", f"{BRANCH}:perf.md").count("### Iteration 1 ") == 1
    assert rev(work, LOCAL) == rev(remote, LOCAL) == rev(work, TRACKING)


def test_a_push_that_cannot_be_verified_says_so_and_never_that_it_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    store = Store.open(work, remote="origin")
    store.update("perf", appender("- one"), "statefile: one")
    before = rev(work, LOCAL)
    # The check is bounded by time: a shorter bound keeps this test short (the remote stays away throughout).
    monkeypatch.setattr(transaction, "_VERIFY_BACKOFF", Backoff(tries=20, first=0.05, cap=0.2, budget=1.0))
    vanish_after_receiving(remote, None)
    with pytest.raises(GitError) as info:
        store.update("perf", appender("- two"), "statefile: two")
    message = str(info.value)
    assert info.value.exit_code == EXIT_GIT and "\n" not in message
    assert "may have landed" in message and "could not be verified" in message
    assert "`statefile --remote origin log perf`" in message and "before recording again" in message
    assert "failed" not in message.replace(str(tmp_path), "").lower()
    (tmp_path / "remote.git.away").rename(remote)
    assert "- two" in git(remote, "show", f"{BRANCH}:perf.md")  # it had landed: hence "may have"
    assert rev(work, LOCAL) == before  # nothing here claims it did


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
    monkeypatch.setattr(transaction, "STALE_REMOTE_LOCK", 0.0)
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


# A writer that never stops (until killed): alternates plain updates and compactions with archive text.
LOOPER = """
import sys
from statefile.model.document import StateDocument, parse
from statefile.store import Store, Change

store = Store.open(sys.argv[1], remote=None if sys.argv[2] == "-" else sys.argv[2], max_bytes=4000)
i = 0
while True:
    i += 1
    def fn(doc, i=i):
        text = doc.render() if doc is not None else "# Autoloop: perf\\n\\n"
        lines = text.splitlines(keepends=True)
        if len(lines) > 40:  # fold the oldest half into the archive, in the same commit
            head, old, rest = lines[:2], lines[2:22], lines[22:]
            kept = parse("".join(head + rest) + f"- line {i}\\n")
            return Change(kept, archive="".join(old), archive_label=f"fold {i}")
        return parse(text + f"- line {i}\\n")
    store.update("perf", fn, f"statefile: step {i}")
"""


def _assert_sound(repo: Path) -> None:
    """The branch points at a complete commit and its state file parses; archives are whole chunks."""
    fsck_clean(repo)
    store = Store.open(repo)
    try:
        text = store.read_text("perf")
        if text is None:
            return
        doc = parse(text)
        assert doc.render() == text and text.startswith("# Autoloop: perf\n\n")
        assert all(line.startswith("- line ") for line in text.splitlines()[2:])
        for part in store.archive_parts("perf"):
            assert store.read_archive("perf", part).startswith("# Archive: perf")
    finally:
        store.close()


def recovered(round_: int) -> Callable[[StateDocument | None], StateDocument]:
    def fn(doc: StateDocument | None) -> StateDocument:
        return parse((doc.render() if doc else "# Autoloop: perf\n\n") + f"- line recovered {round_}\n")

    return fn


@pytest.mark.slow
def test_processes_sharing_one_repository_serialize_through_the_ref(tmp_path: Path) -> None:
    """Real processes writing one branch at once, nothing mocked: processes sharing one repository serialize through the
    ref."""
    repo = make_repo(tmp_path / "repo")
    procs = [spawn(WORKER, str(repo), "-", f"p{n}", "15", "200") for n in range(4)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    text = Store.open(repo).read_text("perf") or ""
    assert sorted(lines_of(text)) == sorted(f"- p{n}-{i}" for n in range(4) for i in range(15))
    assert commit_count(repo, LOCAL) == 60
    fsck_clean(repo)


@pytest.mark.slow
@pytest.mark.parametrize("with_remote", [False, True], ids=["local", "remote"])
def test_a_writer_killed_at_random_moments_never_breaks_the_branch(tmp_path: Path, with_remote: bool) -> None:
    """Real processes writing one branch at once, nothing mocked: a writer killed at random moments never breaks the
    branch."""
    remote = make_remote(tmp_path)
    repo = clone(remote, tmp_path / "work")
    rng = random.Random(1234)
    for round_ in range(8):
        proc = spawn(LOOPER, str(repo), "origin" if with_remote else "-")
        time.sleep(rng.uniform(0.4, 1.2))
        os.killpg(proc.pid, signal.SIGKILL)  # the writer and every git it runs, as when a CI job is cancelled
        proc.communicate()
        # A git killed while holding a ref lock leaves the .lock file (plain git does too): that blocks writers,
        # which then say so, but it is not damage.  Clear them as an operator would.
        for git_dir in (repo / ".git", remote):
            for lock in [*(git_dir / "refs").rglob("*.lock"), *git_dir.glob("packed-refs.lock")]:
                lock.unlink()
        _assert_sound(repo)
        if with_remote:
            fsck_clean(remote)
        # The branch is usable straight away: the next writer picks up wherever the killed one stopped.
        store = Store.open(repo, remote="origin" if with_remote else None)
        store.update("perf", recovered(round_), "statefile: after a kill")
        store.close()
        _assert_sound(repo)
    assert rev(repo, LOCAL) is not None
    if with_remote:
        assert commit_count(remote, LOCAL) > 10
        assert rev(remote, LOCAL) == rev(repo, LOCAL)
    else:
        assert commit_count(repo, LOCAL) > 20


@pytest.mark.slow
def test_eight_processes_in_eight_clones_all_forty_updates_land(tmp_path: Path) -> None:
    # The store's default limits, no more: every writer keeps trying (with backoff) until its updates land.
    """Real processes writing one branch at once, nothing mocked: eight processes in eight clones all forty updates
    land."""
    remote = make_remote(tmp_path)
    clones = [clone(remote, tmp_path / f"runner{n}") for n in range(8)]
    procs = [spawn(WORKER, str(path), "origin", f"w{n}", "5", "0") for n, path in enumerate(clones)]
    retries = 0
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()
        retries += int(out.decode().strip())
    text = git(remote, "show", f"{BRANCH}:perf.md")
    expected = {f"- w{n}-{i}" for n in range(8) for i in range(5)}
    assert sorted(lines_of(text)) == sorted(expected)  # each once: none lost, none applied twice
    for n in range(8):  # every writer's own updates are in its order
        mine = [line for line in lines_of(text) if line.startswith(f"- w{n}-")]
        assert mine == [f"- w{n}-{i}" for i in range(5)]
    assert commit_count(remote, LOCAL) == 40
    assert retries > 0  # the writers really did race
    assert git(remote, "rev-list", "--merges", "--count", LOCAL).strip() == "0"  # linear history
    fsck_clean(remote)
