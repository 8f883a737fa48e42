"""Per-update cost of statefile's git store against the naive flows, measured in the same run.

    python benchmarks/bench_store.py [--reps N] [--sizes 1,100,1000]

For P files on the memory branch (one realistic ~20 KB state file being updated, P-1 other state files), each
flow appends one line to ``perf.md`` and publishes it:

  remote flows (a bare repository on local disk as the remote):
    naive clone      gh-aw repo-memory today: clone the branch (depth 1), edit, git add, git commit, git push
    naive pull       a kept clone: git pull --ff-only, edit, git add, git commit, git push
    statefile        GitStore(remote="origin").update(): fetch, objects by git's plumbing, push (no checkout)
  local flows (no remote):
    GitPython index  a checkout of the branch: edit, repo.index.add, repo.index.commit (no compare-and-swap)
    pygit2 floor     libgit2 in-process: read blob, edit, blob + tree + commit, ref.set_target (compare-and-swap);
                     the floor for a read-modify-commit from Python (skipped when pygit2 is not installed)
    statefile        GitStore.update(): hash-object, mktree, commit-tree + one `git update-ref NEW OLD`
  sizes of all programs:
    blob.size        GitPython: tree.blobs → blob.size (one cat-file round trip per blob)

GitPython is not a dependency of statefile; the GitPython rows need it installed (``pip install -e '.[bench]'``) and
are left out without it.
    statefile        GitStore.programs(): one `git ls-tree -l`

Prints the median milliseconds per operation and each flow's ratio to statefile's.  benchmarks/run.py runs this
with the others and writes benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from _timing import Row, measure, pin_identity, sh

from statefile.model.document import StateDocument, parse
from statefile.store import Store

gitpython: ModuleType | None
try:
    import git as gitpython  # type: ignore[no-redef, unused-ignore]  # optional: not installed, it has no module
except ImportError:  # the alternative measured against; the extra 'bench' installs it
    gitpython = None

pygit2: ModuleType | None
try:
    import pygit2  # type: ignore[import-not-found, no-redef, unused-ignore]  # optional: no stubs when absent
except ImportError:  # the floor row is optional: pip install pygit2 to measure it
    pygit2 = None

BRANCH = "memory/autoloop"
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "real"


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


def naive_pull(kept: Path, path: str, counter: list[int], message: str) -> None:
    """The naive flow in a kept clone of the branch: pull, edit ``path``, add, commit, push."""
    sh(kept, "pull", "-q", "--ff-only", "origin", BRANCH)
    edit_file(kept / path, counter)
    sh(kept, "add", path)
    sh(kept, "commit", "-q", "-m", message)
    sh(kept, "push", "-q", "origin", f"HEAD:{BRANCH}")


def pygit2_floor(repo_path: Path, counter: list[int], message: str) -> Callable[[], None]:
    """The in-process floor: libgit2 reads perf.md, the same edit, then blob, tree, commit and a CAS ref update.

    Returns the function making one update; ``repo_path`` must have the branch as a local branch.
    """
    assert pygit2 is not None
    repo = pygit2.Repository(str(repo_path))
    sig = pygit2.Signature("statefile bench", "bench@statefile.invalid")
    blob_mode = pygit2.GIT_FILEMODE_BLOB

    def update() -> None:
        ref = repo.references[f"refs/heads/{BRANCH}"]
        commit = repo[ref.target]
        text = repo[commit.tree["perf.md"].id].data.decode("utf-8")
        new = edit(parse(text), counter).render().encode("utf-8")
        builder = repo.TreeBuilder(commit.tree)
        builder.insert("perf.md", repo.create_blob(new), blob_mode)
        new_commit = repo.create_commit(None, sig, sig, message, builder.write(), [commit.id])
        # libgit2 moves the ref only if it still points where it did when read: a compare-and-swap.
        ref.set_target(new_commit, "statefile bench")

    return update


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

        def naive_pull_flow() -> None:
            naive_pull(kept, "perf.md", counter, message)

        runner = root / "runner"
        sh(root, "clone", "-q", str(remote), str(runner))  # on main, as a CI checkout is
        pushing = Store.open(runner, remote="origin")

        def statefile_remote() -> None:
            pushing.update("perf", lambda doc: edit(doc, counter), message)

        # -- local flows -------------------------------------------------------------------------------------------
        checkout = root / "checkout"
        sh(root, "clone", "-q", "--branch", BRANCH, str(remote), str(checkout))
        index_repo = gitpython.Repo(checkout) if gitpython is not None else None

        def gitpython_index() -> None:
            assert index_repo is not None
            edit_file(checkout / "perf.md", counter)
            index_repo.index.add(["perf.md"])
            index_repo.index.commit(message)

        offline = root / "offline"
        sh(root, "clone", "-q", str(remote), str(offline))
        local = Store.open(offline)  # its own clone: local-only commits would diverge from the pushing runner

        def statefile_local() -> None:
            local.update("perf", lambda doc: edit(doc, counter), message)

        floor = None
        if pygit2 is not None:
            floor_repo = root / "floor"
            sh(root, "clone", "-q", "--branch", BRANCH, str(remote), str(floor_repo))
            sh(floor_repo, "checkout", "-q", "--detach")  # the branch is then not checked out: no work tree to sync
            floor = pygit2_floor(floor_repo, counter, message)

        # -- sizes -------------------------------------------------------------------------------------------------
        def blob_sizes() -> dict[str, int]:
            assert index_repo is not None
            tree = index_repo.commit(f"origin/{BRANCH}").tree
            return {blob.name[:-3]: blob.size for blob in tree.blobs if blob.name.endswith(".md")}

        def statefile_sizes() -> dict[str, int]:
            return local.programs()

        if index_repo is not None:
            assert blob_sizes().keys() == statefile_sizes().keys()
        heavy = max(3, reps // 3) if files >= 1000 else reps  # a full clone of 1000 files is slow: fewer runs
        flows = {
            "naive clone": (naive_clone, heavy),
            "naive pull": (naive_pull_flow, reps),
            "statefile remote": (statefile_remote, reps),
            "gitpython index": (gitpython_index, reps),
            "statefile local": (statefile_local, reps),
            "blob.size": (blob_sizes, heavy),
            "programs": (statefile_sizes, reps),
        }
        if index_repo is None:
            del flows["gitpython index"], flows["blob.size"]
        if floor is not None:
            flows["pygit2 floor"] = (floor, reps)
        ms = measure(flows)
        rows: list[tuple[str, str, float, float | None]] = [
            ("remote update", "naive clone/edit/commit/push", ms["naive clone"], ms["statefile remote"]),
            ("remote update", "naive pull/edit/commit/push", ms["naive pull"], ms["statefile remote"]),
            ("remote update", "statefile GitStore (fetch+push)", ms["statefile remote"], None),
            *(
                [("local update", "GitPython index add+commit", ms["gitpython index"], ms["statefile local"])]
                if "gitpython index" in ms
                else []
            ),
            *(
                [("local update", "pygit2 floor (libgit2 in-process, CAS)", ms["pygit2 floor"], ms["statefile local"])]
                if "pygit2 floor" in ms
                else []
            ),
            ("local update", "statefile GitStore (update-ref CAS)", ms["statefile local"], None),
            *(
                [("program sizes", "GitPython blob.size per file", ms["blob.size"], ms["programs"])]
                if "blob.size" in ms
                else []
            ),
            ("program sizes", "statefile programs() (ls-tree -l)", ms["programs"], None),
        ]
        pushing.close()
        local.close()
        if index_repo is not None:
            index_repo.close()
        return [(group, flow, ms, None if base is None else ms / base) for group, flow, ms, base in rows]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def rows(quick: bool = False, sizes: tuple[int, ...] = (1, 100, 1000)) -> list[Row]:
    """The in-process update rows for benchmarks/run.py: each flow as a ratio *to statefile* (> 1 = slower)."""
    out: list[Row] = []
    for files in sizes:
        for group, flow, ms, ratio in bench(files, 5 if quick else 15):
            versus = "" if ratio is None else "statefile"
            out.append(Row(f"in-process {group}", f"P={files}", flow, ms, versus, ratio))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=15, help="timed runs per flow (median reported)")
    parser.add_argument("--sizes", default="1,100,1000", help="comma-separated file counts P")
    args = parser.parse_args()
    pin_identity()
    print(f"statefile store benchmark: median of {args.reps} runs, ms per operation (python {sys.version.split()[0]})")
    print(f"{'P':>5}  {'operation':<14} {'flow':<38} {'median ms':>10} {'× statefile':>12}")
    for files in (int(p) for p in args.sizes.split(",")):
        for group, flow, ms, ratio in bench(files, args.reps):
            shown = f"{ratio:.1f}×" if ratio is not None else "1.0×"
            print(f"{files:>5}  {group:<14} {flow:<38} {ms:>10.1f} {shown:>12}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
