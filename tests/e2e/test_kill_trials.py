"""Fault injection: a writer SIGKILLed at random points, many times over, never damages the memory branch.

Each round records one iteration of ``perf`` (the update rules plus compaction with an archive, as ``statefile
record`` does) and kills the writer after a random delay drawn across the write's own measured duration.  After
every round, killed or not:

- the branch (local, and the remote's) points at a commit that exists, and ``git fsck --full --strict`` is clean;
- every file on the branch is valid UTF-8 and parses; archive parts are whole chunks;
- ``perf.md`` is exactly the old text or exactly the new one (computed independently from the old text), and a
  clone's local branch never runs ahead of the remote's;
- the next writer carries on from whatever landed.

Writers are forked from the test process (no interpreter start-up, so a kill can land anywhere in the write) and
killed with their whole process group (every git they run) or alone (their git processes run on, orphaned).  A
git killed while holding a ref lock leaves ``….lock`` behind, as plain git does; the writer's error names the file,
and it is removed as an operator would: those are counted, not hidden.  A few rounds kill the real ``statefile
record`` command instead.  ``ROUNDS`` says how many kills each mode gets; the slow test runs more.

Last, a guard on start-up: read-only commands (what a scheduler pre-step runs) import no heavy library.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
from conftest import SOAK
from gitutil import STATEFILE
from storeutil import LOCAL, clone, fsck_clean, git, make_remote, rev
from synthetic import synthetic_state

from statefile.app.context import AppContext
from statefile.app.writing import compaction_policy, record_iteration
from statefile.model.document import parse
from statefile.policy.compaction import CompactionPolicy, compact
from statefile.policy.rules import RecordRequest, record
from statefile.store import FolderStore, GitStore, Store

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
# A small budget, so most records also compact and append to the archive in the same commit.
POLICY = CompactionPolicy(max_bytes=6000, program="perf", today=date(2026, 6, 1))
SEED = synthetic_state("perf", 12, seed=7, lessons=4, foreclosed=2)
ROUNDS = {"local": 40, "remote": 28, "folder": 40, "cli": 5}  # SLOW_ROUNDS in the soak run
SLOW_ROUNDS = {"local": 300, "remote": 150, "folder": 300, "cli": 12}


def request(n: int) -> RecordRequest:
    """The iteration round ``n`` records (deterministic, so the new text can be computed independently)."""
    status = ("accepted", "rejected", "error", "accepted")[n % 4]
    return RecordRequest(status=status, metric=float(100 + n), change=f"change {n}", notes=f"round {n}.", at=NOW)


def expected(old: str, n: int, policy: CompactionPolicy = POLICY) -> str:
    """What ``perf.md`` must be if round ``n``'s write landed on ``old``."""
    return compact(record(parse(old), request(n), program="perf", now=NOW), policy).document.render()


@dataclass
class Tally:
    """What the rounds did: kills that landed mid-write, writes that finished first, stale locks cleared."""

    outcomes: Counter[str] = field(default_factory=Counter)

    def __str__(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))


# -- the writer and the kill ---------------------------------------------------------------------------------------


def fork_writer(write: Callable[[], object]) -> int:
    """Run ``write`` in a forked child leading its own process group; the child's pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.setpgid(0, 0)
            write()
            code = 0
        finally:
            os._exit(code)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # the parent sets it too, so a kill right away still reaches the group
    return pid


def kill_after(pid: int, delay: float, *, group: bool) -> str:
    """Wait ``delay`` seconds, then SIGKILL the writer (and its process group); how the round ended."""
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"the writer failed ({status})"
            return "finished"
        time.sleep(min(0.002, max(0.0, deadline - time.monotonic())))
    with contextlib.suppress(ProcessLookupError):
        if group:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not group:
        wait_for_group(pid)  # orphaned git processes finish (a push may still land) before anything is checked
    if os.WIFSIGNALED(status):
        return "killed (group)" if group else "killed (writer only)"
    assert os.WEXITSTATUS(status) == 0
    return "finished"


def wait_for_group(pgid: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_running(pgid):
            return
        time.sleep(0.005)
    raise AssertionError(f"processes of group {pgid} still running after {timeout} s")


def group_running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs.  Zombies do not count: orphans wait for init to reap them,
    and some container inits take a second or more to do it."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so split after the last ')'.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def clear_stale_locks(*git_dirs: Path) -> int:
    """Remove lock files a killed git left (what the writer's error message tells an operator to do)."""
    cleared = 0
    for git_dir in git_dirs:
        for lock in [*(git_dir / "refs").rglob("*.lock"), *git_dir.glob("*.lock")]:
            lock.unlink()
            cleared += 1
    return cleared


# -- what must hold after every round --------------------------------------------------------------------------------


def branch_text(where: Path) -> str:
    """``perf.md`` on the branch of ``where``, after checking the branch and every file on it."""
    tip = rev(where, LOCAL)
    assert tip is not None, f"no memory branch in {where}"
    assert git(where, "cat-file", "-t", tip).strip() == "commit"
    fsck_clean(where)
    store = Store.open(where)
    try:
        files = store.read_all()  # strict UTF-8: raises on a damaged file
    finally:
        store.close()
    return check_files(files)


def check_files(files: dict[str, str]) -> str:
    for path, text in files.items():
        doc = parse(text)
        assert doc.render() == text
        if path.startswith("archive/"):
            assert text.startswith("# Archive: perf"), f"{path} is not a whole archive part"
    doc = parse(files["perf.md"])
    assert isinstance(doc.machine_state.get("iteration_count"), int)
    return files["perf.md"]


def one_of(text: str, old: str, new: str, where: str) -> str:
    assert text in (old, new), f"{where}: perf.md is neither the old nor the new version"
    return "new" if text == new and new != old else "old"


# -- the rounds ----------------------------------------------------------------------------------------------------


class Pace:
    """How long one write takes on this machine now, for drawing kill delays against.

    One calibration write is not enough: under load (another test, a CI neighbour) that write can take twice as
    long as the rest, and then most kills land after the writes finished and the rounds test nothing.  So every
    eighth round is left to finish and timed, and the median of the latest of those is the duration.  (Timing the
    rounds that happen to finish before their kill would not do: those are the short ones, and the estimate would
    only ever shrink until every kill landed at start-up.)
    """

    EVERY = 8

    def __init__(self, first: float) -> None:
        self.recent = [first]

    @property
    def duration(self) -> float:
        return statistics.median(self.recent)

    def add(self, seconds: float) -> None:
        self.recent = [*self.recent, seconds][-5:]

    def round(self, n: int, fork: Callable[[], int], rng: random.Random, *, group: bool) -> str:
        """Round ``n``: start a writer with ``fork`` and kill it at a random point of its write, or, on a
        calibration round, let it finish and time it."""
        if n % self.EVERY:
            return kill_after(fork(), rng.uniform(0, self.duration * 1.1), group=group)
        start = time.perf_counter()
        outcome = kill_after(fork(), 60, group=group)
        self.add(time.perf_counter() - start)
        return outcome


@contextlib.contextmanager
def timed_write() -> Iterator[list[float]]:
    took: list[float] = []
    start = time.perf_counter()
    yield took
    took.append(time.perf_counter() - start)


def git_rounds(tmp: Path, rounds: int, *, remote: bool, seed: int) -> Tally:
    bare = make_remote(tmp)
    repo = clone(bare, tmp / "runner")
    store = GitStore(repo, remote="origin" if remote else None)
    store.write_files({"perf.md": SEED}, "seed")
    store.close()
    rng = random.Random(seed)
    tally = Tally()
    name = "origin" if remote else None

    def write(n: int) -> Callable[[], object]:
        def run() -> object:
            with GitStore(repo, remote=name, max_tries=3) as child_store:
                return record_iteration(child_store, "perf", request(n), POLICY, now=NOW)

        return run

    # One write left alone: it must land, and it says how long a write takes here.
    old = branch_text(repo)
    with timed_write() as took:
        assert kill_after(fork_writer(write(0)), 60, group=True) == "finished"
    assert branch_text(repo) == expected(old, 0)
    pace = Pace(took[0])
    current = branch_text(bare if remote else repo)
    versions = {current}  # every text the branch has had
    for n in range(1, rounds + 1):
        old, new = current, expected(current, n)
        group = rng.random() < 0.7
        tally.outcomes[pace.round(n, functools.partial(fork_writer, write(n)), rng, group=group)] += 1
        tally.outcomes["stale locks cleared"] += clear_stale_locks(repo / ".git", *([bare] if remote else []))
        current = branch_text(bare if remote else repo)
        tally.outcomes[f"landed {one_of(current, old, new, 'branch')}"] += 1
        versions.add(current)
        if remote:
            local, remote_tip = rev(repo, LOCAL), rev(bare, LOCAL)
            assert local is not None and remote_tip is not None
            # The clone may lag the remote (killed before following its own push), never lead or fork from it.
            assert subprocess.run(["git", "merge-base", "--is-ancestor", local, remote_tip], cwd=repo).returncode == 0
            assert branch_text(repo) in versions, "the clone's branch is a version the remote never had"
    # The next writer carries on from whatever the last round left.
    final = branch_text(bare if remote else repo)
    assert kill_after(fork_writer(write(rounds + 1)), 60, group=True) == "finished"
    assert branch_text(bare if remote else repo) == expected(final, rounds + 1)
    return tally


def folder_rounds(tmp: Path, rounds: int, *, seed: int) -> Tally:
    folder = tmp / "memory"
    folder.mkdir()
    (folder / "perf.md").write_text(SEED, "utf-8")
    rng = random.Random(seed)
    tally = Tally()

    def write(n: int) -> Callable[[], object]:
        return lambda: record_iteration(
            FolderStore(folder, max_bytes=POLICY.max_bytes), "perf", request(n), POLICY, now=NOW
        )

    def state() -> str:
        store = FolderStore(folder, max_bytes=POLICY.max_bytes)
        assert set(store.programs()) == {"perf"}  # temporary files never show up as programs
        return check_files(store.read_all())

    with timed_write() as took:
        assert kill_after(fork_writer(write(0)), 60, group=True) == "finished"
    pace = Pace(took[0])
    current = state()
    for n in range(1, rounds + 1):
        old, new = current, expected(current, n)
        tally.outcomes[pace.round(n, functools.partial(fork_writer, write(n)), rng, group=True)] += 1
        current = state()
        tally.outcomes[f"landed {one_of(current, old, new, 'folder')}"] += 1
    tally.outcomes["temporary files left"] = sum(1 for p in folder.rglob(".statefile-*"))
    return tally


def cli_rounds(tmp: Path, rounds: int, *, seed: int) -> Tally:
    """The real command, killed with every git it runs: ``statefile --remote origin record …``."""
    bare = make_remote(tmp)
    repo = clone(bare, tmp / "runner")
    with GitStore(repo, remote="origin") as store:
        store.write_files({"perf.md": SEED}, "seed")
    policy = compaction_policy(AppContext(repo=repo).config(), now=datetime.now(timezone.utc))  # what the command uses
    rng = random.Random(seed)
    tally = Tally()

    def command(n: int) -> list[str]:
        req = request(n)
        fields = ["--status", req.status, "--metric", str(req.metric), "--change", str(req.change)]
        return [
            STATEFILE,
            "--remote",
            "origin",
            "record",
            "perf",
            *fields,
            "--notes",
            str(req.notes),
            "--at",
            NOW.isoformat(),
        ]

    # A dry run first, untimed: on a fresh clone the first process also compiles every module it imports, and a
    # pace taken from that write put every kill after the writes had finished.
    subprocess.run([*command(0), "--dry-run"], cwd=repo, check=True, capture_output=True)
    start = time.perf_counter()
    old = branch_text(bare)
    subprocess.run(command(0), cwd=repo, check=True, capture_output=True)
    pace = Pace(time.perf_counter() - start)
    assert branch_text(bare) == expected(old, 0, policy)
    current = branch_text(bare)
    versions = {old, current}
    for n in range(1, rounds + 1):
        old, new = current, expected(current, n, policy)
        start = time.perf_counter()
        proc = subprocess.Popen(command(n), cwd=repo, start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
        if n % Pace.EVERY:
            # Start-up is a third of it: kill during the work.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=rng.uniform(pace.duration * 0.3, pace.duration * 1.1))
        else:
            proc.wait(timeout=60)
            pace.add(time.perf_counter() - start)
        killed = proc.poll() is None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        tally.outcomes["killed (group)" if killed else "finished"] += 1
        tally.outcomes["stale locks cleared"] += clear_stale_locks(repo / ".git", bare)
        current = branch_text(bare)
        tally.outcomes[f"landed {one_of(current, old, new, 'remote')}"] += 1
        versions.add(current)
        assert branch_text(repo) in versions, "the clone's branch is a version the remote never had"
    return tally


def report(mode: str, tally: Tally) -> None:
    # Printed for the record (pytest -s, or -rA): how many kills each mode survived.
    print(f"\n[faults] {mode}: {tally}", file=sys.stderr)


def check_tally(tally: Tally, rounds: int) -> None:
    killed = sum(v for k, v in tally.outcomes.items() if k.startswith("killed"))
    assert killed + tally.outcomes["finished"] == rounds
    assert killed >= rounds // 3, f"too few kills landed mid-write to mean anything: {tally}"
    assert tally.outcomes["landed old"] + tally.outcomes["landed new"] == rounds


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["local", "remote", "folder", "cli"])
def test_a_writer_killed_at_random_points_leaves_old_or_new(tmp_path: Path, mode: str) -> None:
    run_mode(tmp_path, mode, ROUNDS[mode])


@pytest.mark.slow
@pytest.mark.skipif(not SOAK, reason="a soak run (STATEFILE_SOAK=1): about 650 more kills, minutes of CPU")
@pytest.mark.parametrize("mode", ["local", "remote", "folder", "cli"])
def test_many_more_kills(tmp_path: Path, mode: str) -> None:
    run_mode(tmp_path, mode, SLOW_ROUNDS[mode] - ROUNDS[mode], seed=99)


def run_mode(tmp_path: Path, mode: str, rounds: int, seed: int = 7) -> None:
    if mode == "folder":
        tally = folder_rounds(tmp_path, rounds, seed=seed)
    elif mode == "cli":
        tally = cli_rounds(tmp_path, rounds, seed=seed)
    else:
        tally = git_rounds(tmp_path, rounds, remote=mode == "remote", seed=seed)
    report(mode, tally)
    check_tally(tally, rounds)


# -- start-up: a scheduler pre-step must not pay for what it does not use ------------------------------------------

_IMPORTS = """
import contextlib, io, json, sys
from statefile.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
heavy = ("git", "gitdb", "markdown_it", "frontmatter", "yaml", "hashlib")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
# The MCP SDK (~0.7 s) and what it pulls in are for `statefile mcp` only.
sdk = ("mcp", "mcp_types", "pydantic", "anyio", "starlette", "uvicorn", "httpx2", "jsonschema")
print(json.dumps(sorted(m for m in sdk if m in sys.modules)))
"""


@pytest.mark.parametrize("args", [["--version"], ["report", "--all"], ["list"]], ids=lambda a: a[0])
def test_read_only_commands_import_no_heavy_library(tmp_path: Path, args: list[str]) -> None:
    """GitPython (70-90 ms), markdown-it (20-40 ms) and OpenSSL (10 ms) are for writes and full parses only."""
    bare = make_remote(tmp_path)
    repo = clone(bare, tmp_path / "runner")
    with GitStore(repo) as store:
        store.write_files({"perf.md": SEED}, "seed")
    proc = subprocess.run([sys.executable, "-c", _IMPORTS, *args], cwd=repo, capture_output=True, text=True, check=True)
    assert proc.stdout.strip().splitlines()[-2:] == ["[]", "[]"], proc.stdout


_EVERY_COMMAND = """
import contextlib, io, json, sys
from statefile.cli import main
for args in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(args)
        except SystemExit:
            pass
sdk = ("mcp", "mcp_types", "pydantic", "anyio", "starlette", "uvicorn", "httpx2", "jsonschema")
print(json.dumps(sorted(m for m in sdk if m in sys.modules)))
"""


def test_only_the_mcp_command_loads_the_mcp_sdk(tmp_path: Path) -> None:
    """Every other command, reads and writes alike, starts without the SDK's ~0.7 s of imports (one process runs
    them all: whatever one of them imported would still be loaded at the end)."""
    bare = make_remote(tmp_path)
    repo = clone(bare, tmp_path / "runner")
    with GitStore(repo) as store:
        store.write_files({"perf.md": SEED}, "seed")
    commands = [["history", "perf"], ["summary"], ["search", "radix"], ["status", "perf"], ["render", "perf"],
                ["log", "perf", "-p"], ["repair", "perf", "--dry-run"], ["lesson", "list", "perf"], ["check"],
                ["show", "perf"], ["expand", "perf", "3"], ["config"], ["record", "perf", "--status", "accepted"],
                ["compact", "perf", "--dry-run"], ["repair", "perf"], ["export"], ["--help"]]  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", _EVERY_COMMAND, json.dumps(commands)], cwd=repo,
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout


# -- Ctrl-C (issue 22): once a write may have landed, an interrupt says so, never "aborted" --------------------------


def _interrupt_repos(tmp_path: Path) -> tuple[Path, Path]:
    """A bare remote and a clone whose memory branch (on the remote) holds ``perf``."""
    from gitutil import make_repos, run_statefile

    repos = make_repos(tmp_path)
    created = run_statefile("--remote", "origin", "record", "perf", "--create", "--status", "accepted",
                            cwd=repos.work)  # fmt: skip
    assert created.returncode == 0, created.stderr
    return repos.work, repos.remote


@pytest.mark.slow  # a kill trial: eleven processes signalled across the command's duration
def test_ctrl_c_at_any_point_of_a_record_through_the_remote_tells_the_truth(tmp_path: Path) -> None:
    """As seen: SIGINT 0.22 s into `--remote origin record` printed `statefile: aborted` (exit 130) though the
    iteration was pushed, and a retry recorded it twice; SIGINT during start-up printed a traceback.

    Real processes, a sweep of delays across the command's own duration: whenever the branch shows the new
    commit, the output must not say "aborted"; "landed" only when it did; never a traceback.  The sweep's first
    delay is 0 (the signal beats Python's own handler) and the others start after the interpreter's own start-up
    (site, .pth files), which runs before any statefile code can act on a signal.
    """
    work, remote = _interrupt_repos(tmp_path)
    command = [STATEFILE, "--remote", "origin", "record", "perf", "--status", "rejected"]
    started = time.monotonic()
    assert subprocess.run(command, cwd=work, capture_output=True, check=False).returncode == 0
    duration = time.monotonic() - started
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    interpreter = time.monotonic() - started
    first = min(2 * interpreter, duration / 2)
    # ... and one well after it: a run that finished, so that the sweep surely sees both outcomes.
    delays = [0.0] + [first + (duration - first) * i / 8 for i in range(9)] + [3 * duration]
    seen: Counter[str] = Counter()
    for delay in delays:
        before = rev(remote, "refs/heads/memory/autoloop")
        # SIGINT's default action in the child: a suite started in the background (`pytest &` in a script) has it
        # ignored, the child would inherit that, and no interrupt would ever arrive.
        proc = subprocess.Popen(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        landed = rev(remote, "refs/heads/memory/autoloop") != before
        said = f"delay {delay:.3f}s, exit {proc.returncode}, landed {landed}: {out!r} {err!r}"
        if err.startswith("Fatal Python error: init_import_site") and f"{os.sep}statefile{os.sep}" not in err:
            # The signal came while the interpreter itself was still starting (site, .pth files such as the editable
            # install's finder; slower under load): no statefile code had run, so nothing could be written and
            # nothing of ours could answer.
            assert not landed and not out, said
            seen["interpreter start-up"] += 1
            continue
        assert "Traceback" not in err, said
        if landed:
            assert "aborted" not in err and "nothing was read or written" not in err, said
            # Said on stdout (the command had finished: a signal while Python shuts down ends it with -2, after
            # its output), or by the interrupt's line.
            assert out.startswith("recorded iteration") or "landed" in err, said
        if "interrupted after the write landed" in err:
            assert landed, said
        if proc.returncode == 130:
            assert len(err.strip().splitlines()) == 1, said
        seen["landed" if landed else "not landed"] += 1
    assert seen["not landed"] >= 1 and seen["landed"] >= 1, seen


@pytest.mark.parametrize("when", ["during the push", "after the push", "after the command's write"])
def test_an_interrupt_once_the_write_may_have_landed_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], when: str
) -> None:
    """The same, deterministic: KeyboardInterrupt at each point after the push started, in-process."""
    from statefile.cli import cli
    from statefile.cli.run import invoke
    from statefile.store.git import remote as remote_module

    work, remote = _interrupt_repos(tmp_path)
    monkeypatch.chdir(work)
    before = rev(remote, "refs/heads/memory/autoloop")
    real_push = remote_module.Remote.push

    def push(self: remote_module.Remote, new: str) -> object:
        if when == "during the push":
            raise KeyboardInterrupt  # the push process was killed: whether it landed is not known
        outcome = real_push(self, new)
        if when == "after the push":
            raise KeyboardInterrupt
        return outcome

    monkeypatch.setattr(remote_module.Remote, "push", push)
    if when == "after the command's write":
        import statefile.cli.write as write_module

        def interrupted(*args: object, **kwargs: object) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(write_module, "say", interrupted)  # what the command prints once its write is done
    code = invoke(cli, ["--remote", "origin", "record", "perf", "--status", "rejected"])
    _, err = capfd.readouterr()
    landed = rev(remote, "refs/heads/memory/autoloop") != before
    assert code == 130 and len(err.strip().splitlines()) == 1 and "aborted" not in err, err
    assert "statefile --remote origin log perf" in err
    if when == "during the push":
        assert not landed and "may have landed" in err
    elif when == "after the push":
        assert landed and "may have landed" in err
    else:
        assert landed and "interrupted after the write landed: perf on origin" in err and "do not run" in err


def test_a_command_closes_the_git_readers_it_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As seen in a fresh-clone CI run: the stores a command opened were left to the garbage collector, so their
    `git cat-file` readers were stopped at interpreter exit, where a Ctrl-C landing in that wait printed Python's
    "Exception ignored … Traceback" under the command's true answer.  Every store is closed when the command ends."""
    import gc

    from statefile.cli import cli
    from statefile.cli.run import invoke
    from statefile.store.git.objects import Objects

    left: list[str] = []  # readers the garbage collector found still running: nobody closed their store

    def collected(self: Objects) -> None:
        if self._proc is not None:
            left.append("a git cat-file reader")
            self.close()

    work, _ = _interrupt_repos(tmp_path)
    monkeypatch.chdir(work)
    monkeypatch.setattr(Objects, "__del__", collected)
    assert invoke(cli, ["--remote", "origin", "record", "perf", "--status", "rejected"]) == 0
    assert invoke(cli, ["--remote", "origin", "list"]) == 0
    gc.collect()
    assert not left
