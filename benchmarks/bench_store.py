"""Per-update cost of statefile's git store against the naive flows, measured in the same run.

    python benchmarks/bench_store.py [--reps N] [--sizes 1,100,1000]

For P files on the memory branch (one realistic ~20 KB state file being updated, P-1 other state files), each
flow appends one line to ``perf.md`` and publishes it:

  remote flows (a bare repository on local disk as the remote):
    naive clone      gh-aw repo-memory today: clone the branch (depth 1), edit, git add, git commit, git push
    naive pull       a kept clone: git pull --ff-only, edit, git add, git commit, git push
    statefile        GitStore(remote="origin").update(): fetch, gitdb objects, push (no checkout)
  local flows (no remote):
    GitPython index  a checkout of the branch: edit, repo.index.add, repo.index.commit (no compare-and-swap)
    statefile        GitStore.update(): gitdb objects + one `git update-ref NEW OLD`
  sizes of all programs:
    blob.size        GitPython: tree.blobs → blob.size (one cat-file round trip per blob)
    statefile        GitStore.programs(): one `git ls-tree -l`

Prints the median milliseconds per operation and each naive flow's ratio to statefile's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import git as gitpython

from statefile.document import StateDocument, parse
from statefile.store import Store

BRANCH = "memory/autoloop"
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "real"


def sh(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def state_text(program: str, entries: int) -> str:
    """A state file in the upstream template's shape with ``entries`` iteration entries (~0.5 KB each)."""
    head = f"# Autoloop: {program}\n\n## ⚙️ Machine State\n\n| Field | Value |\n|-------|-------|\n"
    head += f"| Iteration Count | {entries} |\n\n## 📊 Iteration History\n\n"
    body = "".join(
        f"### Iteration {n} — 2025-01-{n % 28 + 1:02d} 12:00 UTC — [Run](https://example.com/{n})\n\n"
        f"- **Status**: ✅ Accepted\n- **Change**: tried variant {n} of the chunking strategy\n"
        f"- **Metric**: {n}.5 (previous best: {n}.0, delta: +0.5)\n- **Notes**: steady progress, keep going.\n\n"
        for n in range(entries, 0, -1)
    )
    return head + body


def perf_text() -> str:
    """The file the benchmark updates: a real ~20 KB state file when the corpus is present."""
    real = CORPUS / "githubnext__tsb__perf-comparison__b18c37b.md"
    return real.read_text("utf-8") if real.is_file() else state_text("perf", 40)


def make_remote(root: Path, files: int) -> Path:
    """A bare repository whose memory branch holds ``perf.md`` and ``files - 1`` other state files."""
    seed = root / "seed"
    seed.mkdir()
    sh(seed, "init", "-q", "-b", BRANCH)
    (seed / "perf.md").write_text(perf_text(), "utf-8")
    small = state_text("other", 6)
    for n in range(files - 1):
        (seed / f"program-{n:04d}.md").write_text(small.replace("other", f"program-{n:04d}"), "utf-8")
    sh(seed, "add", "-A")
    sh(seed, "commit", "-q", "-m", "seed")
    sh(seed, "branch", "main")  # the project's default branch, which clones check out
    bare = root / "remote.git"
    sh(root, "clone", "-q", "--bare", str(seed), str(bare))
    sh(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    return bare


def edit(doc: StateDocument | None, counter: list[int]) -> StateDocument:
    """The update every flow makes: parse perf.md, append one line, render."""
    counter[0] += 1
    assert doc is not None
    return parse(doc.render() + f"- benchmark line {counter[0]}\n")


def edit_file(path: Path, counter: list[int]) -> None:
    path.write_text(edit(parse(path.read_text("utf-8")), counter).render(), "utf-8")


def measure(flows: dict[str, tuple[Callable[[], object], int]]) -> dict[str, float]:
    """Median milliseconds of each flow, ``{name: (fn, runs)}``, after one warm-up run each.

    The flows take turns (one run of each per round) so that load from other processes on the machine falls on
    all of them alike rather than on whichever happened to run during a busy moment.
    """
    samples: dict[str, list[float]] = {name: [] for name in flows}
    for fn, _ in flows.values():
        fn()
    for round_ in range(max(runs for _, runs in flows.values())):
        for name, (fn, runs) in flows.items():
            if round_ < runs:
                start = time.perf_counter()
                fn()
                samples[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def bench(files: int, reps: int) -> list[tuple[str, str, float, float | None]]:
    """Rows of (group, flow, median ms, ratio to statefile or None) for ``files`` files on the branch."""
    root = Path(tempfile.mkdtemp(prefix=f"bench-store-{files}-"))
    counter = [0]
    try:
        remote = make_remote(root, files)
        message = "statefile: record iteration of perf"

        # -- remote flows ------------------------------------------------------------------------------------------
        def naive_clone() -> None:
            work = root / "naive-clone"
            sh(root, "clone", "-q", "--depth", "1", "--single-branch", "--branch", BRANCH, str(remote), str(work))
            edit_file(work / "perf.md", counter)
            sh(work, "add", "-A")
            sh(work, "commit", "-q", "-m", message)
            sh(work, "push", "-q", "origin", f"HEAD:{BRANCH}")
            shutil.rmtree(work)

        kept = root / "naive-pull"
        sh(root, "clone", "-q", "--single-branch", "--branch", BRANCH, str(remote), str(kept))

        def naive_pull() -> None:
            sh(kept, "pull", "-q", "--ff-only", "origin", BRANCH)
            edit_file(kept / "perf.md", counter)
            sh(kept, "add", "perf.md")
            sh(kept, "commit", "-q", "-m", message)
            sh(kept, "push", "-q", "origin", f"HEAD:{BRANCH}")

        runner = root / "runner"
        sh(root, "clone", "-q", str(remote), str(runner))  # on main, as a CI checkout is
        pushing = Store.open(runner, remote="origin")

        def statefile_remote() -> None:
            pushing.update("perf", lambda doc: edit(doc, counter), message)

        # -- local flows -------------------------------------------------------------------------------------------
        checkout = root / "checkout"
        sh(root, "clone", "-q", "--branch", BRANCH, str(remote), str(checkout))
        index_repo = gitpython.Repo(checkout)

        def gitpython_index() -> None:
            edit_file(checkout / "perf.md", counter)
            index_repo.index.add(["perf.md"])
            index_repo.index.commit(message)

        offline = root / "offline"
        sh(root, "clone", "-q", str(remote), str(offline))
        local = Store.open(offline)  # its own clone: local-only commits would diverge from the pushing runner

        def statefile_local() -> None:
            local.update("perf", lambda doc: edit(doc, counter), message)

        # -- sizes -------------------------------------------------------------------------------------------------
        def blob_sizes() -> dict[str, int]:
            tree = index_repo.commit(f"origin/{BRANCH}").tree
            return {blob.name[:-3]: blob.size for blob in tree.blobs if blob.name.endswith(".md")}

        def statefile_sizes() -> dict[str, int]:
            return local.programs()

        assert blob_sizes().keys() == statefile_sizes().keys()
        heavy = max(3, reps // 3) if files >= 1000 else reps  # a full clone of 1000 files is slow: fewer runs
        ms = measure(
            {
                "naive clone": (naive_clone, heavy),
                "naive pull": (naive_pull, reps),
                "statefile remote": (statefile_remote, reps),
                "gitpython index": (gitpython_index, reps),
                "statefile local": (statefile_local, reps),
                "blob.size": (blob_sizes, heavy),
                "programs": (statefile_sizes, reps),
            }
        )
        rows: list[tuple[str, str, float, float | None]] = [
            ("remote update", "naive clone/edit/commit/push", ms["naive clone"], ms["statefile remote"]),
            ("remote update", "naive pull/edit/commit/push", ms["naive pull"], ms["statefile remote"]),
            ("remote update", "statefile GitStore (fetch+push)", ms["statefile remote"], None),
            ("local update", "GitPython index add+commit", ms["gitpython index"], ms["statefile local"]),
            ("local update", "statefile GitStore (update-ref CAS)", ms["statefile local"], None),
            ("program sizes", "GitPython blob.size per file", ms["blob.size"], ms["programs"]),
            ("program sizes", "statefile programs() (ls-tree -l)", ms["programs"], None),
        ]
        pushing.close()
        local.close()
        index_repo.close()
        return [(group, flow, ms, None if base is None else ms / base) for group, flow, ms, base in rows]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=15, help="timed runs per flow (median reported)")
    parser.add_argument("--sizes", default="1,100,1000", help="comma-separated file counts P")
    args = parser.parse_args()
    for key, value in (("NAME", "statefile bench"), ("EMAIL", "bench@statefile.invalid")):
        os.environ.setdefault(f"GIT_AUTHOR_{key}", value)
        os.environ.setdefault(f"GIT_COMMITTER_{key}", value)
    print(f"statefile store benchmark: median of {args.reps} runs, ms per operation (python {sys.version.split()[0]})")
    print(f"{'P':>5}  {'operation':<14} {'flow':<38} {'median ms':>10} {'× statefile':>12}")
    for files in (int(p) for p in args.sizes.split(",")):
        for group, flow, ms, ratio in bench(files, args.reps):
            shown = f"{ratio:.1f}×" if ratio is not None else "1.0×"
            print(f"{files:>5}  {group:<14} {flow:<38} {ms:>10.1f} {shown:>12}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
