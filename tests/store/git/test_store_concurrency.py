"""Many real processes writing one branch at once, and processes killed mid-write (SIGKILL).

Each writer is a separate Python process (``python -c WORKER``) with its own clone of a bare remote, as CI runners
are.  Nothing is mocked: the races are real, which is why these tests assert outcomes (every update landed, the
repository is sound) rather than interleavings.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from storeutil import BRANCH, LOCAL, clone, commit_count, fsck_clean, git, make_remote, make_repo, rev

from statefile.model.document import StateDocument, parse
from statefile.store import Store

# A writer: open the store at argv[1] (through argv[2] as remote unless "-"), make argv[4] updates to "perf", each
# adding the line "- {name}-{i}".  Exits non-zero on any error; prints the retries it needed.
WORKER = """
import sys
from statefile.model.document import StateDocument, parse
from statefile.store import Store, Change

path, remote, name, count, tries = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
limits = {"max_tries": tries} if tries else {}  # 0: the store's own limits (tries and time)
store = Store.open(path, remote=None if remote == "-" else remote, **limits)
retries = 0
for i in range(count):
    line = f"- {name}-{i}"
    def fn(doc, line=line):
        text = doc.render() if doc is not None else "# Autoloop: perf\\n\\n"
        return parse(text + line + "\\n")
    retries += store.update("perf", fn, f"statefile: {name} update {i}").attempts - 1
print(retries)
"""

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


def spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


@pytest.mark.slow
def test_eight_processes_in_eight_clones_all_forty_updates_land(tmp_path: Path) -> None:
    # The store's default limits, no more: every writer keeps trying (with backoff) until its updates land.
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


@pytest.mark.slow
def test_processes_sharing_one_repository_serialize_through_the_ref(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    procs = [spawn(WORKER, str(repo), "-", f"p{n}", "15", "200") for n in range(4)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    text = Store.open(repo).read_text("perf") or ""
    assert sorted(lines_of(text)) == sorted(f"- p{n}-{i}" for n in range(4) for i in range(15))
    assert commit_count(repo, LOCAL) == 60
    fsck_clean(repo)


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
@pytest.mark.parametrize("with_remote", [False, True], ids=["local", "remote"])
def test_a_writer_killed_at_random_moments_never_breaks_the_branch(tmp_path: Path, with_remote: bool) -> None:
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
