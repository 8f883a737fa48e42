"""Contention: W writer processes record K iterations each on one program through a bare remote.

    python benchmarks/bench_contention.py [--quick] [--writers 2,4,8] [--records 5]

Each writer is its own process with its own clone (as CI runners are), all started together, all recording
iterations of the same program ``perf`` (the worst case).  Two kinds of writer, measured the same way:

  statefile     ``record_iteration`` through ``GitStore(remote="origin")``: fetch, apply the update rules to the
                tip, commit, push; a rejected push fetches and re-applies (never overwrites)
  repo-memory   what gh-aw's repo-memory does today: the run reads ``perf.md`` from the fetched tip at its start,
                the agent rewrites the whole file, and at the end the full file is copied over a fresh checkout of
                the fetched tip, committed and pushed; a rejected push runs ``git pull --no-rebase -X ours`` (our
                copy wins every conflict) and pushes again, 3 retries

A full run adds the heavy case, 32 writers × 10 records: statefile's writers retry with jittered exponential
backoff (bounded in tries and in time, see statefile/store/git/refs.py) until every record has landed.

Reported: wall time until every writer has finished, records landed of those attempted (statefile: records that
did not give up; repo-memory: pushes that went through), retries (re-applied attempts / pull-and-push rounds), lost
updates — records whose unique note is on neither the final branch file nor (statefile) its archive — and the
median and slowest latency of one record, from its start to its landing or giving up.  statefile must land and keep
every record; repo-memory is expected to lose some.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _fixtures import synthetic_state
from _timing import Row, pin_identity, sh

from statefile.store import Store

BENCH = "contention"
BRANCH = "memory/autoloop"

# argv: clone path, writer name, records.  Prints "retries failed seconds,seconds,…" (each record's latency): a
# record that gives up (a StatefileError, e.g. exit 5 after its tries and time ran out) counts as failed, and the
# writer goes on.
STATEFILE_WRITER = """
import sys, time
from datetime import datetime, timezone
from pathlib import Path
from statefile.app.context import AppContext
from statefile.app.writing import compaction_policy, record_iteration
from statefile.errors import StatefileError
from statefile.policy.rules import RecordRequest
from statefile.store import Store

path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = Store.open(path, remote="origin")
policy = compaction_policy(AppContext(repo=Path(path)).config(), now=datetime.now(timezone.utc))
retries = failed = 0
latencies = []
for k in range(count):
    request = RecordRequest(status="accepted", metric=float(k), change=f"change by {name}", notes=f"marker {name}-{k}.")
    start = time.perf_counter()
    try:
        retries += record_iteration(store, "perf", request, policy, now=datetime.now(timezone.utc)).attempts - 1
    except StatefileError as exc:
        failed += 1
        print(f"{name}-{k}: {exc}", file=sys.stderr)
    latencies.append(time.perf_counter() - start)
print(retries, failed, ",".join(f"{s:.3f}" for s in latencies))
"""

REPO_MEMORY_WRITER = """
import subprocess, sys, time
from datetime import datetime, timezone
from pathlib import Path
from statefile.model.document import parse
from statefile.policy.rules import RecordRequest, record

path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
branch = "memory/autoloop"

def git(*args, check=True):
    return subprocess.run(["git", *args], cwd=path, capture_output=True, text=True, check=check)

retries = failed = 0
latencies = []
for k in range(count):
    start = time.perf_counter()
    # The run starts: the memory branch is fetched and the agent reads its file.
    git("fetch", "-q", "origin", branch)
    snapshot = git("show", f"origin/{branch}:perf.md").stdout
    request = RecordRequest(status="accepted", metric=float(k), change=f"change by {name}", notes=f"marker {name}-{k}.")
    text = record(parse(snapshot), request, program="perf", now=datetime.now(timezone.utc)).render()
    # The run ends: the whole file is copied over a checkout of the fetched tip, committed and pushed.
    git("fetch", "-q", "origin", branch)
    git("checkout", "-q", "-B", branch, f"origin/{branch}")
    Path(path, "perf.md").write_text(text, encoding="utf-8")
    git("add", "perf.md")
    git("commit", "-q", "-m", f"update memory ({name}, run {k})")
    for attempt in range(4):
        if git("push", "-q", "origin", f"HEAD:{branch}", check=False).returncode == 0:
            break
        if attempt == 3:
            failed += 1
            break
        retries += 1
        git("pull", "-q", "--no-rebase", "--no-edit", "-X", "ours", "origin", branch, check=False)
    latencies.append(time.perf_counter() - start)
print(retries, failed, ",".join(f"{s:.3f}" for s in latencies))
"""

WRITERS = {"statefile": STATEFILE_WRITER, "repo-memory (copy file, pull -X ours, 3 retries)": REPO_MEMORY_WRITER}


def make_remote(root: Path) -> Path:
    """A bare remote with main and a memory branch holding one program, ``perf``, at iteration 20."""
    bare = root / "remote.git"
    sh(root, "init", "-q", "--bare", "-b", "main", str(bare))
    seed = root / "seed"
    sh(root, "init", "-q", "-b", "main", str(seed))
    (seed / "README.md").write_text("project\n")
    sh(seed, "add", "README.md")
    sh(seed, "commit", "-q", "-m", "project")
    sh(seed, "remote", "add", "origin", str(bare))
    sh(seed, "push", "-q", "origin", "main")
    store = Store.open(seed)
    store.write_files({"perf.md": synthetic_state("perf", 20, seed=1)}, "seed perf")
    store.close()
    sh(seed, "push", "-q", "origin", BRANCH)
    return bare


def lost_updates(bare: Path, writers: int, records: int) -> tuple[int, int]:
    """(lost records, Iteration Count on the branch): markers found nowhere on the branch count as lost."""
    store = Store.open(bare)
    try:
        everything = "\n".join(store.read_all().values())
        doc = store.read("perf")
    finally:
        store.close()
    assert doc is not None
    found = sum(1 for w in range(writers) for k in range(records) if f"marker w{w}-{k}." in everything)
    count = doc.machine_state.get("iteration_count") or 0
    return writers * records - found, int(count) - 20


def run_once(kind: str, writers: int, records: int) -> tuple[float, int, int, int, int, float, float]:
    """One contention run for ``kind``: (seconds, retries, failed writes, lost records, iterations counted, median
    and slowest latency of a single record in seconds)."""
    root = Path(tempfile.mkdtemp(prefix="bench-contention-"))
    try:
        bare = make_remote(root)
        clones = []
        for w in range(writers):
            path = root / f"runner{w}"
            sh(root, "clone", "-q", str(bare), str(path))
            clones.append(path)
        start = time.perf_counter()
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITERS[kind], str(path), f"w{w}", str(records)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for w, path in enumerate(clones)
        ]
        retries = failed = 0
        latencies: list[float] = []
        for proc in procs:
            out, err = proc.communicate(timeout=1800)
            if proc.returncode:
                raise RuntimeError(f"{kind} writer failed: {err}")
            r, f, each = out.split()
            retries += int(r)
            failed += int(f)
            latencies += [float(s) for s in each.split(",")]
        seconds = time.perf_counter() - start
        lost, counted = lost_updates(bare, writers, records)
        return seconds, retries, failed, lost, counted, statistics.median(latencies), max(latencies)
    finally:
        shutil.rmtree(root, ignore_errors=True)


#: The heavy case: 32 writers, 10 records each, all on one program (full runs only).
HEAVY = (32, 10)


def rows(quick: bool = False, writers: tuple[int, ...] = (2, 4, 8), records: int | None = None) -> list[Row]:
    """Every row of this benchmark (one run per writer kind and W, kinds alternating; quick: K=3, no 32×10)."""
    k = records if records is not None else 3 if quick else 5
    runs = [(w, k) for w in writers]
    if not quick and records is None:
        runs.append(HEAVY)
    out: list[Row] = []
    for w, k in runs:
        results = {kind: run_once(kind, w, k) for kind in WRITERS}
        base = "repo-memory (copy file, pull -X ours, 3 retries)"
        for kind, (seconds, retries, failed, lost, counted, median, slowest) in results.items():
            is_statefile = kind == "statefile"
            attempted = w * k
            if is_statefile:
                note = f"landed {attempted - failed} of {attempted}"
                note += f" ({failed} gave up)" if failed else ""
                note += f", retries {retries}, lost updates {lost}, Iteration Count +{counted}"
            else:
                note = f"pushes landed {attempted - failed} of {attempted}, retries {retries}, lost updates {lost}"
            note += f", record latency median {median:.1f} s, max {slowest:.1f} s"
            out.append(
                Row(
                    BENCH,
                    f"W={w}, K={k}",
                    kind,
                    seconds * 1000,
                    versus="" if kind == base else base,
                    ratio=None if kind == base else seconds / results[base][0],
                    goal="all land, 0 lost" if is_statefile else "",
                    met=(failed == 0 and lost == 0 and counted == attempted) if is_statefile else None,
                    note=note,
                )
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="K=3 records per writer")
    parser.add_argument("--writers", default="2,4,8", help="comma-separated writer counts W")
    parser.add_argument("--records", type=int, help="records per writer K (default 5, quick 3)")
    args = parser.parse_args()
    pin_identity()
    for row in rows(args.quick, tuple(int(w) for w in args.writers.split(",")), args.records):
        ratio = f"{row.ratio:.2f}×" if row.ratio is not None else ""
        print(f"{row.size:<10} {row.flow:<50} {row.ms / 1000:>7.1f} s  {ratio:>6}  {row.note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
