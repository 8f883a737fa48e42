"""Files outside git (statefile.store.atomic): a full disk and a read-only repository or folder give clear one-line
errors with their own exit code (8); size and line limits refuse a file unread.

A real full or read-only file system needs a mount: each scenario runs in a private mount namespace
(``unshare --mount``, with ``--map-root-user`` when not root) on a small tmpfs that only that process sees, so
nothing leaks to the machine.  Where namespaces are not allowed the tests skip, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import only_error_line
from gitutil import STATEFILE, Repos, run_statefile
from gitutil import git as repo_git
from storeutil import git as object_git

from statefile.errors import EXIT_ENVIRONMENT, EXIT_USAGE


def _namespace() -> list[str] | None:
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None or shutil.which("mount") is None:
        return None
    prefix = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--mount", "--map-root-user"]
    with tempfile.TemporaryDirectory() as folder:
        probe = subprocess.run([*prefix, "sh", "-c", 'mount -t tmpfs -o size=64k tmpfs "$0"', folder],
                               capture_output=True, check=False)  # fmt: skip
    return prefix if probe.returncode == 0 else None


NAMESPACE = _namespace()
# Fault injection (a full or read-only disk), so slow; only these tests need the namespace: the rest always run.
fault = pytest.mark.skipif(
    NAMESPACE is None, reason="needs unshare and a tmpfs mount in a private mount namespace (to fill a disk)"
)

# Sourced by every scenario: `run NAME ARGS…` runs statefile and keeps its exit code and stderr; `fill` fills $M.
PRELUDE = r"""
set -u
run() { name=$1; shift; "$SF" "$@" >"$R/$name.out" 2>"$R/$name.err"; echo $? >"$R/$name.exit"; }
fill() { python3 -c 'import sys
f = open(sys.argv[1], "wb")
try:
    while True:
        f.write(b"x" * 65536); f.flush()
except OSError:
    pass' "$M/fill"; }
mount -t tmpfs -o size=1m tmpfs "$M"
"""


def scenario(tmp_path: Path, script: str) -> dict[str, tuple[int, str]]:
    """Run ``script`` (sh, after :data:`PRELUDE`) in its own mount namespace; name → (exit code, stderr)."""
    assert NAMESPACE is not None
    mount, results = tmp_path / "mnt", tmp_path / "results"
    mount.mkdir()
    results.mkdir()
    env = {**os.environ, "M": str(mount), "R": str(results), "SF": STATEFILE, "W": str(tmp_path)}
    proc = subprocess.run([*NAMESPACE, "sh", "-c", PRELUDE + script], env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {
        path.stem: (int(path.read_text()), (results / f"{path.stem}.err").read_text())
        for path in results.glob("*.exit")
    }


def environment_error(result: tuple[int, str], *words: str) -> None:
    code, err = result
    assert code == EXIT_ENVIRONMENT, err
    assert err.count("\n") == 1 and "Traceback" not in err and all(word in err for word in words), err


@pytest.mark.slow
@fault
def test_a_full_disk_under_the_repository(tmp_path: Path) -> None:
    out = scenario(tmp_path, r"""
cd "$M" && git init -q -b main repo && cd repo && git commit -q --allow-empty -m initial
run init init perf
git rev-parse refs/heads/memory/autoloop > "$R/before"
fill
run full record perf --status accepted --metric 1
git rev-parse refs/heads/memory/autoloop > "$R/after"
git fsck --full --strict > "$R/fsck" 2>&1; echo $? > "$R/fsck.code"
rm "$M/fill"
run freed record perf --status accepted --metric 1
""")  # fmt: skip
    assert out["init"][0] == 0
    environment_error(out["full"], "disk is full", "free space")
    assert "No space left on device" in out["full"][1] or "Out of diskspace" in out["full"][1]  # git's own words
    assert (tmp_path / "results" / "before").read_text() == (tmp_path / "results" / "after").read_text()
    assert (tmp_path / "results" / "fsck.code").read_text().strip() == "0"
    assert out["freed"][0] == 0, out["freed"][1]


@pytest.mark.slow
@fault
def test_a_read_only_repository(tmp_path: Path) -> None:
    out = scenario(tmp_path, r"""
cd "$M" && git init -q -b main repo && cd repo && git commit -q --allow-empty -m initial
run init init perf
mount -o remount,ro "$M"
run write record perf --status accepted --metric 1
run read list
""")  # fmt: skip
    assert out["init"][0] == 0
    environment_error(out["write"], "cannot be written", "Read-only file system")
    assert out["read"][0] == 0  # reading needs no write


@pytest.mark.slow
@fault
def test_a_full_disk_under_a_folder_store_leaves_no_temporary_file(tmp_path: Path) -> None:
    out = scenario(tmp_path, r"""
run init --dir "$M" init perf
cp "$M/perf.md" "$R/before.md"
fill
run full --dir "$M" record perf --status accepted --metric 1
ls -a "$M" > "$R/listing"
cp "$M/perf.md" "$R/after.md"
mount -o remount,ro "$M"
run readonly --dir "$M" record perf --status accepted --metric 1
""")  # fmt: skip
    assert out["init"][0] == 0
    environment_error(out["full"], "disk is full")
    environment_error(out["readonly"], "Read-only file system")
    results = tmp_path / "results"
    assert (results / "before.md").read_bytes() == (results / "after.md").read_bytes()
    assert not [name for name in (results / "listing").read_text().split() if name.endswith(".tmp")]


def remote_scenario(tmp_path: Path, where: str, damage: str, name: str) -> dict[str, tuple[int, str]]:
    """A remote (in ``$M``, the small disk, or ``$W``) with ``perf`` on it, then ``damage``, then a record through it
    (run as ``name``); the remote branch before and after go to results/."""
    remote = f'"{where}/remote.git"'
    out = scenario(tmp_path, rf"""
git init -q --bare -b main {remote}
git init -q -b main "$W/work" && cd "$W/work" && git commit -q --allow-empty -m initial
git remote add origin {remote} && git push -q origin main
run init --remote origin init perf
git -C {remote} rev-parse refs/heads/memory/autoloop > "$R/before"
{damage}
run {name} --remote origin record perf --status accepted --metric 1
git -C {remote} rev-parse refs/heads/memory/autoloop > "$R/after"
""")  # fmt: skip
    assert out["init"][0] == 0
    assert "branch protection" not in out[name][1]
    assert (tmp_path / "results" / "before").read_text() == (tmp_path / "results" / "after").read_text()
    return out


@pytest.mark.slow
@fault
def test_a_full_disk_on_the_remote_is_not_a_branch_protection_problem(tmp_path: Path) -> None:
    out = remote_scenario(tmp_path, "$M", "fill", "full")
    environment_error(out["full"], "remote's disk is full")


@pytest.mark.slow
@fault
def test_a_read_only_remote_says_why_and_is_not_a_branch_protection_problem(tmp_path: Path) -> None:
    """The remote cannot create objects (its objects folder is read-only): git's relayed reason is kept."""
    damage = 'mount --bind "$W/remote.git/objects" "$W/remote.git/objects"\n'
    damage += 'mount -o remount,bind,ro "$W/remote.git/objects"'
    out = remote_scenario(tmp_path, "$W", damage, "readonly")
    environment_error(out["readonly"], "remote repository cannot be written", "unable to create temporary object")


@pytest.mark.parametrize(
    "args",
    [
        ["record", "perf", "--status", "accepted", "--autoloop-json", "{input}"],
        ["prepare", "--autoloop-json", "{input}", "--out", "{out}"],
        ["apply", "--agent-output", "{input}"],
    ],
    ids=["record", "prepare", "apply"],
)
@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_inputs_that_never_end_are_refused_unread(
    initialized_repos: Repos, tmp_path: Path, args: list[str], kind: str
) -> None:
    """Found by the hostile run (issue 15): inputs that never end are refused unread."""
    source = tmp_path / "input.json"
    if kind == "fifo":
        os.mkfifo(source)
    else:
        source.symlink_to("/dev/zero")  # would be read until memory runs out
    filled = [a.format(input=source, out=tmp_path / "out") for a in args]
    proc = run_statefile(*filled, cwd=initialized_repos.work)
    assert proc.returncode != 0
    line = only_error_line(proc)
    assert str(source) in line and ("FIFO" in line or "character device" in line), line


def test_an_output_that_is_a_device_is_written_into_never_replaced(initialized_repos: Repos, tmp_path: Path) -> None:
    """`export --out` to a link to /dev/null: the data goes to the device; the link (and the device) stay."""
    link = tmp_path / "sink"
    link.symlink_to(os.devnull)
    for args in (["export", "--out", str(link)], ["summary", "--out", str(link)]):
        proc = run_statefile(*args, cwd=initialized_repos.work)
        assert proc.returncode == 0, proc.stderr
        assert link.is_symlink() and os.readlink(link) == os.devnull
    assert Path(os.devnull).is_char_device()


def test_an_output_through_a_link_to_a_file_replaces_the_file_and_keeps_the_link(
    initialized_repos: Repos, tmp_path: Path
) -> None:
    """Found by the hostile run (issue 15): an output through a link to a file replaces the file and keeps the link."""
    target = tmp_path / "real.json"
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert run_statefile("export", "--out", str(link), cwd=initialized_repos.work).returncode == 0
    assert link.is_symlink() and json.loads(target.read_text())["files"]["perf.md"]


def test_an_output_fifo_nobody_reads_is_an_error_not_a_hang(initialized_repos: Repos, tmp_path: Path) -> None:
    """Found by the hostile run (issue 15): an output fifo nobody reads is an error not a hang."""
    pipe = tmp_path / "summary.pipe"
    os.mkfifo(pipe)
    proc = run_statefile("summary", "--out", str(pipe), cwd=initialized_repos.work)
    assert proc.returncode == EXIT_USAGE and "FIFO nobody is reading" in only_error_line(proc)


def test_an_output_fifo_someone_reads_gets_the_output(initialized_repos: Repos, tmp_path: Path) -> None:
    """Found by the hostile run (issue 15): an output fifo someone reads gets the output."""
    pipe = tmp_path / "summary.pipe"
    os.mkfifo(pipe)
    reader = subprocess.Popen(["cat", str(pipe)], stdout=subprocess.PIPE, text=True)
    proc = run_statefile("summary", "--out", str(pipe), cwd=initialized_repos.work)
    out, _ = reader.communicate(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "perf" in out


# -- reading a state file by path: size and line limits --------------------------------------------------------


def _headings(count: int) -> str:
    """A state file whose history is ``count`` one-line iteration headings: small in bytes, huge in lines."""
    lines = "\n".join(f"### Iteration {n}" for n in range(count, 0, -1))
    table = f"| Field | Value |\n|---|---|\n| Iteration Count | {count} |"
    return f"# perf\n\n## ⚙️ Machine State\n\n{table}\n\n## 📊 Iteration History\n\n{lines}\n"


def test_a_file_of_more_lines_than_statefile_reads_is_refused_unparsed(tmp_path: Path) -> None:
    """280,000 iteration headings fit in 7 MB (under the byte limit) and took minutes to parse and fold."""
    from statefile.store.atomic import line_limit

    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "perf.md").write_text(_headings(line_limit(30720) + 10))
    before = (folder / "perf.md").read_bytes()
    for args in (["show", "perf"], ["record", "perf", "--status", "accepted"], ["compact", "perf"], ["check"]):
        proc = run_statefile("--dir", str(folder), *args, cwd=tmp_path)
        assert proc.returncode in (1, 7), (args, proc.stderr)
        assert "lines, more than statefile will read" in proc.stdout + proc.stderr, args
    assert (folder / "perf.md").read_bytes() == before


def test_a_file_within_its_budget_is_always_within_the_line_limit() -> None:
    """Found by the hostile run (issue 15): a file within its budget is always within the line limit."""
    from statefile.store.atomic import MIN_LINE_LIMIT, line_limit

    for budget in (200, 30720, 1 << 20):
        assert line_limit(budget) >= max(budget, MIN_LINE_LIMIT)  # one byte per line at most


def test_a_branch_file_of_too_many_lines_is_refused(initialized_repos: Repos) -> None:
    """Found by the hostile run (issue 15): a branch file of too many lines is refused."""
    from statefile.store.atomic import line_limit

    work = initialized_repos.work
    blob = object_git(work, "hash-object", "-w", "--stdin", input=_headings(line_limit(30720) + 1).encode()).strip()
    tree = object_git(work, "mktree", input=f"100644 blob {blob}\tperf.md\n".encode()).strip()
    commit = repo_git("commit-tree", tree, "-m", "huge", cwd=initialized_repos.work).strip()
    repo_git("update-ref", "refs/heads/memory/autoloop", commit, cwd=initialized_repos.work)
    proc = run_statefile("record", "perf", "--status", "accepted", cwd=initialized_repos.work)
    assert proc.returncode == 7 and "lines, more than statefile will read" in only_error_line(proc)
    assert repo_git("rev-parse", "memory/autoloop", cwd=initialized_repos.work).strip() == commit
