"""Ref names and push outcomes in the git store, each built from what a cold tester ran into.

Real repositories and a bare remote: branch names that clash with an existing ref by git's directory/file rule
(``memory/autoloop`` against ``memory/autoloop/sub``), and branches whose names merely start with the memory branch's.

The one retry loop around moving a ref is pure logic, tested with a fake clock and a recording sleep.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
from gitutil import run_statefile
from storeutil import (
    BRANCH,
    LOCAL,
    TRACKING,
    appender,
    clone,
    git,
    make_remote,
    make_repo,
    one_error_line,
    rev,
)

from statefile.errors import (
    EXIT_INVALID_DATA,
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    InvalidDataError,
    UsageError,
)
from statefile.store import GitStore, Store
from statefile.store.git.refs import Backoff, Outcome, Refs, retry


def sf(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """The statefile command, in-process; the test fails if it runs longer than ``timeout`` seconds."""
    return run_statefile(*args, cwd=cwd, timeout=timeout)


def assert_refused_as_a_clash(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    """A usage error naming what is in the way, at once (``sf``'s timeout guards the old 26 s wait), never a lock."""
    line = one_error_line(proc)
    assert proc.returncode == EXIT_USAGE, line
    assert all(needle in line for needle in needles) and "lock" not in line, line


# -- branch names that clash by git's directory/file rule ---------------------------------------------------------


@pytest.mark.parametrize(
    ("existing", "wanted"),
    [
        ("memory/autoloop", "memory/autoloop/sub"),  # the memory branch would be a folder of the new one
        ("memory/autoloop", "memory"),  # the new one would be a folder of the memory branch
        ("memory/autoloop/x", "memory/autoloop"),
    ],
)
def test_a_branch_that_clashes_with_an_existing_one_is_a_usage_error_at_once(
    tmp_path: Path, existing: str, wanted: str
) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", existing)
    before = git(repo, "for-each-ref")
    proc = sf("--branch", wanted, "init", "perf", cwd=repo, timeout=10)
    assert_refused_as_a_clash(proc, f"refs/heads/{existing}", "--branch")
    assert git(repo, "for-each-ref") == before


@pytest.mark.parametrize(
    ("existing", "wanted"), [("memory/autoloop", "memory/autoloop/sub"), ("memory/autoloop/x", "memory/autoloop")]
)
def test_a_branch_that_clashes_on_the_remote_is_a_usage_error_at_once(
    tmp_path: Path, existing: str, wanted: str
) -> None:
    remote = make_remote(tmp_path)
    pusher = clone(remote, tmp_path / "pusher")
    git(pusher, "push", "-q", "origin", f"HEAD:refs/heads/{existing}")
    work = clone(remote, tmp_path / "work")  # the clash is only on the remote: no such local branch here
    before = git(remote, "for-each-ref")
    proc = sf("--remote", "origin", "--branch", wanted, "init", "perf", cwd=work, timeout=10)
    assert_refused_as_a_clash(proc, f"refs/heads/{existing}", "origin")
    assert git(remote, "for-each-ref") == before


# -- ref lookups match whole names ---------------------------------------------------------------------------------


@pytest.mark.parametrize("branch", [BRANCH, "memory"])
def test_a_branch_whose_name_starts_with_the_memory_branchs_is_not_a_copy_of_it(tmp_path: Path, branch: str) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", "memory/autoloop/x")
    store = Store.open(repo, branch=branch)
    state = store.branch_state()
    assert (state.local, state.tracking, state.exists) == (None, None, False)
    assert store.tip() is None and store.programs() == {}
    proc = sf("--branch", branch, "list", cwd=repo)
    assert proc.returncode == EXIT_NOT_FOUND and "no memory branch" in one_error_line(proc), proc.stderr


def test_a_stale_remote_tracking_ref_in_the_way_of_the_fetch_is_named_not_taken_for_a_lock(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    # A copy of memory/autoloop fetched before it was deleted on the remote, which now has memory/autoloop/sub.
    git(work, "update-ref", TRACKING, "HEAD")
    pusher = clone(remote, tmp_path / "pusher")
    assert sf("--remote", "origin", "--branch", f"{BRANCH}/sub", "init", "perf", cwd=pusher).returncode == 0
    proc = sf("--remote", "origin", "--branch", f"{BRANCH}/sub", "list", cwd=work, timeout=10)
    assert_refused_as_a_clash(proc, TRACKING, "git fetch --prune origin")


def test_a_branch_that_is_a_symbolic_ref_is_never_written_through(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): a branch that is a symbolic ref is never written through."""
    repo = make_repo(tmp_path / "repo")
    main = rev(repo, "refs/heads/main")
    git(repo, "symbolic-ref", LOCAL, "refs/heads/main")
    proc = run_statefile("record", "perf", "--status", "accepted", cwd=repo)
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


def test_reads_through_a_local_symbolic_ref_are_refused_as_writes_are(tmp_path: Path) -> None:
    """cat-file follows a symbolic ref silently: list showed main's code.py as a program, show read it."""
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("project\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "readme")
    git(repo, "symbolic-ref", LOCAL, "refs/heads/main")
    refused = run_statefile("record", "perf", "--status", "accepted", cwd=repo)
    assert refused.returncode == EXIT_INVALID_DATA and "symbolic ref to refs/heads/main" in one_error_line(refused)
    for args in (["list"], ["check"], ["show", "README"], ["export"], ["search", "project"], ["log", "README"]):
        proc = run_statefile(*args, cwd=repo)
        assert (proc.returncode, proc.stderr) == (EXIT_INVALID_DATA, refused.stderr), (args, proc.stderr)
    # The store itself, not only the command line: the first read asks, as every write does.
    with GitStore(repo) as store, pytest.raises(InvalidDataError, match="symbolic ref to refs/heads/main"):
        store.programs()
    assert git(repo, "symbolic-ref", LOCAL).strip() == "refs/heads/main"


def test_git_judges_a_branch_name_before_the_branch_is_created(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): git judges a branch name before the branch is created."""
    repo = make_repo(tmp_path / "repo")
    store = Store.open(repo, branch="memory/ok")
    # As if the pure rules had let a bad name by: git's own check-ref-format still stands in the way.
    with pytest.raises(UsageError, match="git refuses it"):
        Refs(store._git, store.repository, "bad..name", "").check_name()
    Refs(store._git, store.repository, "memory/ok", "").check_name()


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def test_it_stops_at_the_first_done_and_counts_attempts() -> None:
    clock = FakeTime()
    outcomes = iter([Outcome.MOVED, Outcome.REJECTED, Outcome.DONE, Outcome.MOVED])
    tried = retry(lambda n: (next(outcomes), n), Backoff(10, 0.1, 4.0, 60.0), sleep=clock.sleep, clock=clock.clock)
    assert tried == (Outcome.DONE, 2, 3)
    assert len(clock.waits) == 2 and all(w >= 0 for w in clock.waits)


def test_it_gives_up_after_the_tries() -> None:
    clock = FakeTime()
    tried = retry(lambda n: (Outcome.LOCKED, n), Backoff(5, 0.01, 0.1, 60.0), sleep=clock.sleep, clock=clock.clock)
    assert (tried[0], tried[2]) == (Outcome.LOCKED, 5)


def test_it_gives_up_when_the_time_is_spent_and_never_sleeps_past_it() -> None:
    clock = FakeTime()

    def attempt(n: int) -> tuple[Outcome, int]:
        clock.now += 1.0  # each attempt takes a second
        return Outcome.REJECTED, n

    tried = retry(attempt, Backoff(1000, 0.5, 4.0, 20.0), rng=random.Random(3), sleep=clock.sleep, clock=clock.clock)
    outcome, _, attempts = tried
    assert outcome is Outcome.REJECTED and attempts < 1000
    assert clock.now <= 20.0 + 1.0  # no wait starts that would end past the budget; the last attempt may run on


def test_waits_are_full_jitter_under_an_exponential_cap() -> None:
    backoff = Backoff(100, 0.1, 4.0, 600.0)
    rng = random.Random(7)
    assert backoff.delay(0, rng) == 0.0
    for attempt in range(1, 40):
        cap = min(4.0, 0.1 * 2 ** (attempt - 1))
        samples = [backoff.delay(attempt, rng) for _ in range(200)]
        assert all(0.0 <= s <= cap for s in samples)
        assert max(samples) > cap * 0.8 and min(samples) < cap * 0.2  # spread over the whole range
