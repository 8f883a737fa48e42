"""One recorded iteration, whole process: ``statefile record`` against the naive flow and the in-process floor.

    python benchmarks/bench_record.py [--quick] [--sizes 1,100,1000]

For P files on the memory branch (a real ~20 KB state file ``perf.md``, a copy of it as ``naive.md``, and P-2
small state files; benchmarks/bench_store.py builds it), in the same run:

  statefile record, remote   ``statefile --remote origin record perf --status accepted --metric … --change …``
                             in a runner clone on main: fetch, the upstream update rules, compaction by policy,
                             one commit, push — the whole process, start-up included
  naive pull flow            what an agent does in an existing clone of the branch: ``git pull``, edit ``naive.md``
                             (parse, add a line, write), ``git add``, ``git commit``, ``git push`` (5 processes)
  statefile record, local    the same command without a remote (one commit, compare-and-swap on the local ref)
  pygit2 floor               libgit2 in-process read-modify-commit with compare-and-swap, no process started:
                             the least any Python tool could spend on one local update (skipped without pygit2)

The in-process costs at P = 1, 100, 1000 (GitStore.update against GitPython's index and pygit2) are
benchmarks/bench_store.py's rows.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from _timing import STATEFILE, Row, compare, measure, run, sh, sized_main
from bench_store import BRANCH, make_remote, naive_pull, perf_text, pygit2, pygit2_floor

BENCH = "record one iteration"


def add_naive_file(root: Path, remote: Path) -> None:
    """Put ``naive.md`` (a copy of perf.md) on the branch, so the naive flow edits a file of the same size."""
    seed = root / "add-naive"
    sh(root, "clone", "-q", "--branch", BRANCH, str(remote), str(seed))
    (seed / "naive.md").write_text(perf_text(), "utf-8")
    sh(seed, "add", "naive.md")
    sh(seed, "commit", "-q", "-m", "naive.md for the benchmark")
    sh(seed, "push", "-q", "origin", f"HEAD:{BRANCH}")
    shutil.rmtree(seed)


def bench(files: int, reps: int) -> list[Row]:
    """Rows for ``files`` files on the branch."""
    root = Path(tempfile.mkdtemp(prefix=f"bench-record-{files}-"))
    counter = [0]
    try:
        remote = make_remote(root, max(files - 1, 1))
        add_naive_file(root, remote)
        runner = root / "runner"
        sh(root, "clone", "-q", str(remote), str(runner))  # on main, as a CI checkout is
        offline = root / "offline"
        sh(root, "clone", "-q", str(remote), str(offline))
        sh(offline, "branch", BRANCH, f"origin/{BRANCH}")  # local writes go to a local branch (never made implicitly)
        kept = root / "kept"
        sh(root, "clone", "-q", "--single-branch", "--branch", BRANCH, str(remote), str(kept))
        message = "record one iteration"

        def record(cwd: Path, *remote_args: str) -> None:
            counter[0] += 1
            n = counter[0]
            run(
                [STATEFILE, *remote_args, "record", "perf", "--status", "accepted", "--metric", f"{100 + n}",
                 "--change", f"benchmark change {n}", "--notes", "Measured by benchmarks/bench_record.py."],
                cwd,
            )  # fmt: skip

        flows = {
            "statefile record, remote (whole process)": (lambda: record(runner, "--remote", "origin"), reps),
            "naive pull/edit/add/commit/push (5 git processes)": (
                lambda: naive_pull(kept, "naive.md", counter, message),
                reps,
            ),
            "statefile record, local (whole process)": (lambda: record(offline), reps),
        }
        if pygit2 is not None:
            floor_repo = root / "floor"
            sh(root, "clone", "-q", "--branch", BRANCH, str(remote), str(floor_repo))
            sh(floor_repo, "checkout", "-q", "--detach")
            flows["pygit2 floor (in-process, local)"] = (pygit2_floor(floor_repo, counter, message), reps)
        ms = measure(flows)
        size = f"P={files}"
        naive = "naive pull/edit/add/commit/push (5 git processes)"
        local = "statefile record, local (whole process)"
        out = [
            Row(BENCH, size, naive, ms[naive]),
            compare(BENCH, size, ms, "statefile record, remote (whole process)", naive),
        ]
        if "pygit2 floor (in-process, local)" in ms:
            out.append(Row(BENCH, size, "pygit2 floor (in-process, local)", ms["pygit2 floor (in-process, local)"]))
            out.append(compare(BENCH, size, ms, local, "pygit2 floor (in-process, local)"))
        else:
            out.append(Row(BENCH, size, local, ms[local], note="pygit2 not installed: no floor row"))
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def rows(quick: bool = False, sizes: tuple[int, ...] = (1, 100, 1000)) -> list[Row]:
    """Every row of this benchmark."""
    return [row for files in sizes for row in bench(files, 5 if quick else 15)]


def main() -> int:
    return sized_main(__doc__ or "", rows, "1,100,1000", "file counts P")


if __name__ == "__main__":
    raise SystemExit(main())
