"""The one retry loop: pure logic, tested with a fake clock and a recording sleep."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from storeutil import (
    BRANCH,
    LOCAL,
    WORKER,
    appender,
    clone,
    commit_count,
    fsck_clean,
    git,
    lines_of,
    make_remote,
    rev,
    spawn,
)

from statefile.errors import GitError
from statefile.store import Store
from statefile.store.git import transaction
from statefile.store.git.remote import Remote
from statefile.store.git.retry import Backoff, Outcome, retry
from statefile.store.git.runner import Result


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
    assert (tried.outcome, tried.value, tried.attempts) == (Outcome.DONE, 2, 3)
    assert len(clock.waits) == 2 and all(w >= 0 for w in clock.waits)


def test_it_gives_up_after_the_tries() -> None:
    clock = FakeTime()
    tried = retry(lambda n: (Outcome.LOCKED, n), Backoff(5, 0.01, 0.1, 60.0), sleep=clock.sleep, clock=clock.clock)
    assert (tried.outcome, tried.attempts) == (Outcome.LOCKED, 5)


def test_it_gives_up_when_the_time_is_spent_and_never_sleeps_past_it() -> None:
    clock = FakeTime()

    def attempt(n: int) -> tuple[Outcome, int]:
        clock.now += 1.0  # each attempt takes a second
        return Outcome.REJECTED, n

    tried = retry(attempt, Backoff(1000, 0.5, 4.0, 20.0), rng=random.Random(3), sleep=clock.sleep, clock=clock.clock)
    assert tried.outcome is Outcome.REJECTED and tried.attempts < 1000
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
