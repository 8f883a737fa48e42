"""Git processes per command, and ``statefile record``'s whole-process time against the naive git flow.

    python benchmarks/bench_git.py [--quick]

Counted in a clone in step with its remote (a runner recording every iteration): a ``git`` first on PATH logs
each process statefile starts, then runs the real git (processes git starts itself, such as ``upload-pack`` under
a fetch, are not statefile's to choose and are not counted).  Timed: the median whole process, start-up included,
of ``statefile record`` local and ``--remote origin`` against the naive flow in the same run: ``git pull``, edit
the file, ``git add``, ``git commit``, ``git push`` in a kept clone (benchmarks/bench_record.py's flow), and the
floor of the stack in the same run (benchmarks/record_floor.py: the interpreter, click, markdown-it-py, one parse and
the same six git processes, nothing of statefile's own): the best ratio any tool on this stack could reach.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from _timing import STATEFILE, Row, measure, pin_identity, run, sh
from bench_record import add_naive_file
from bench_store import BRANCH, make_remote, naive_pull

BENCH = "git processes"
#: The most git processes each command may start (the goals of issue 23).
GOALS = {"record (local)": 6, "record --remote origin": 9, "render --remote origin": 5}
TIME_GOAL = 2.0


def counting_git(folder: Path) -> Path:
    """A folder holding a ``git`` that logs its arguments to ``$GIT_COUNT_LOG``, then runs the real git."""
    real = shutil.which("git")
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "git"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "$GIT_COUNT_LOG"\nexec {real} "$@"\n', "utf-8")
    script.chmod(0o755)
    return folder


def git_processes(argv: list[str], cwd: Path, counter: Path) -> int:
    """How many git processes ``statefile argv`` starts in ``cwd`` (see the module docstring)."""
    log = counter / "log"
    log.write_text("", "utf-8")
    run([STATEFILE, *argv], cwd, env={"PATH": f"{counter}{os.pathsep}{os.environ['PATH']}", "GIT_COUNT_LOG": str(log)})
    return len(log.read_text("utf-8").splitlines())


def rows(quick: bool = False) -> list[Row]:
    """Every row of this benchmark."""
    root = Path(tempfile.mkdtemp(prefix="bench-git-"))
    counter = [0]
    try:
        remote = make_remote(root, 1)
        add_naive_file(root, remote)
        work = root / "work"
        sh(root, "clone", "-q", str(remote), str(work))
        sh(work, "branch", BRANCH, f"origin/{BRANCH}")
        kept = root / "kept"
        sh(root, "clone", "-q", "--single-branch", "--branch", BRANCH, str(remote), str(kept))
        bin_dir = counting_git(root / "bin")

        def record(*remote_args: str) -> list[str]:
            counter[0] += 1
            return [*remote_args, "record", "perf", "--status", "accepted", "--metric", f"{100 + counter[0]}",
                    "--change", f"benchmark change {counter[0]}"]  # fmt: skip

        run([STATEFILE, *record("--remote", "origin")], work)  # in step with the remote from here on
        counts = {
            "record --remote origin": git_processes(record("--remote", "origin"), work, bin_dir),
            "render --remote origin": git_processes(["--remote", "origin", "render", "perf"], work, bin_dir),
            "record (local)": git_processes(record(), work, bin_dir),
        }
        out = [
            Row(BENCH, "processes", f"statefile {name}", count, goal=f"≤ {limit}", met=count <= limit, note="processes")
            for name, count in counts.items()
            if (limit := GOALS[name])
        ]
        sh(work, "fetch", "-q", "origin")
        sh(work, "update-ref", f"refs/heads/{BRANCH}", f"refs/remotes/origin/{BRANCH}")  # local writes start level
        naive = "naive pull/edit/add/commit/push (5 git processes)"
        reps = 5 if quick else 15
        remote_flow, local_flow = "statefile record, remote (whole process)", "statefile record, local (whole process)"
        flows = {
            remote_flow: (lambda: run([STATEFILE, *record("--remote", "origin")], work), reps),
            naive: (lambda: naive_pull(kept, "naive.md", counter, "record one iteration"), reps),
        }
        ms = measure(flows)
        local_root = root / "local"
        sh(root, "clone", "-q", str(remote), str(local_root))
        sh(local_root, "branch", BRANCH, f"origin/{BRANCH}")
        floor_root = root / "floor"
        sh(root, "clone", "-q", str(remote), str(floor_root))
        sh(floor_root, "branch", BRANCH, f"origin/{BRANCH}")
        floor = "floor: python + click + markdown-it + the same 6 git processes"
        local_flows = {
            local_flow: (lambda: run([STATEFILE, *record()], local_root), reps),
            floor: (lambda: run([sys.executable, str(Path(__file__).with_name("record_floor.py"))], floor_root), reps),
            naive: flows[naive],
        }
        local_ms = measure(local_flows)
        for flow, times in ((remote_flow, ms), (local_flow, local_ms)):
            ratio = times[flow] / times[naive]
            out.append(Row(BENCH, "P=1", naive, times[naive], note=f"in the same run as {flow}"))
            out.append(Row(BENCH, "P=1", flow, times[flow], naive, ratio, f"≤ {TIME_GOAL:g}×", ratio <= TIME_GOAL))
        ratio = local_ms[floor] / local_ms[naive]
        out.append(Row(BENCH, "P=1", floor, local_ms[floor], naive, ratio, "the least any tool on this stack pays"))
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def table(rows: list[Row]) -> list[str]:
    """The RESULTS.md table: a count is a count, not milliseconds."""
    lines = ["| flow | measured | vs | ratio | goal | met |", "|---|---:|---|---:|---|---|"]
    for r in rows:
        value = f"{r.ms:.0f} git processes" if r.note == "processes" else f"{r.ms:.0f} ms"
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}×"
        met = "" if r.met is None else "yes" if r.met else "**no**"
        lines.append(f"| {r.flow} | {value} | {r.versus} | {ratio} | {r.goal} | {met} |")
    return lines


def main() -> int:
    pin_identity()
    for row in rows("--quick" in sys.argv):
        ratio = f"{row.ratio:.2f}× {row.versus}" if row.ratio is not None else ""
        value = f"{row.ms:.0f} {row.note}" if row.note == "processes" else f"{row.ms:.1f} ms"
        print(f"{row.size:>9}  {row.flow:<58} {value:>12}  {ratio}  {row.goal}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
