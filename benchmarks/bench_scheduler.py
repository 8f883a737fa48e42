"""The scheduler's view of P programs from a remote memory branch: ``statefile report --all`` against upstream.

    python benchmarks/bench_scheduler.py [--quick] [--sizes 10,300,1000]

A bare remote (reached through a ``file://`` URL, so git sends packs as over a network) holds ``main`` and the
memory branch with P programs and 100 later commits (benchmarks/_fixtures.py).  All flows are whole processes:

  upstream pre-step      ``git clone --depth 1 --branch memory/autoloop`` + os.stat + regex parse of every file
                         (benchmarks/upstream_prestep.py), what gh-aw and the autoloop scheduler do today
  fetched                a runner clone that already has the branch: ``statefile --remote origin report --all``
                         (one fetch that finds nothing new, then every program read from the local objects)
  fetched, no fetch      the same without ``--remote``: reads the branch as it was last fetched
  from scratch           a fresh checkout of main only (depth 1, as actions/checkout makes it), untimed; then
                         ``statefile --remote origin report --all`` fetches the whole branch and reads it

Goals: fetched ≤ 0.3× upstream; from scratch ≤ 1.0× upstream.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from _fixtures import main_only_clone, make_memory_remote, runner_clone, url
from _timing import STATEFILE, Row, compare, measure, run, sized_main

BENCH = "scheduler view"
PRESTEP = str(Path(__file__).resolve().with_name("upstream_prestep.py"))
GOAL_FETCHED = 0.3
GOAL_SCRATCH = 1.0


def reps_for(programs: int, quick: bool) -> int:
    """Timed runs per flow: fewer for the big branches, whose runs take longest."""
    if quick:
        return 3 if programs >= 300 else 5
    return 7 if programs >= 1000 else 9 if programs >= 300 else 15


def bench(programs: int, reps: int) -> list[Row]:
    """Rows for ``programs`` programs on the branch."""
    root = Path(tempfile.mkdtemp(prefix=f"bench-scheduler-{programs}-"))
    try:
        bare = make_memory_remote(root, programs)
        runner = runner_clone(bare, root / "runner")
        upstream_dest = root / "upstream"
        fresh = root / "fresh"

        def clear_upstream() -> None:
            shutil.rmtree(upstream_dest, ignore_errors=True)

        def upstream() -> None:
            run([sys.executable, PRESTEP, url(bare), str(upstream_dest)], root)

        def fetched() -> None:
            run([STATEFILE, "--remote", "origin", "report", "--all"], runner)

        def no_fetch() -> None:
            run([STATEFILE, "report", "--all"], runner)

        def new_checkout() -> None:
            shutil.rmtree(fresh, ignore_errors=True)
            main_only_clone(bare, fresh)

        def scratch() -> None:
            run([STATEFILE, "--remote", "origin", "report", "--all"], fresh)

        # The flows must agree on what they report before their times mean anything.
        clear_upstream()
        upstream()
        assert len(list(upstream_dest.glob("*.md"))) == programs
        ms = measure(
            {
                "upstream pre-step (clone --depth 1 + stat + regex)": (upstream, reps, clear_upstream),
                "statefile --remote origin report --all, fetched": (fetched, reps),
                "statefile report --all, fetched, no fetch": (no_fetch, reps),
                "statefile --remote origin report --all, main-only clone": (scratch, reps, new_checkout),
            }
        )
        base = "upstream pre-step (clone --depth 1 + stat + regex)"
        size = f"P={programs}"
        return [
            Row(BENCH, size, base, ms[base]),
            compare(BENCH, size, ms, "statefile --remote origin report --all, fetched", base, limit=GOAL_FETCHED),
            compare(BENCH, size, ms, "statefile report --all, fetched, no fetch", base, limit=GOAL_FETCHED),
            compare(
                BENCH, size, ms, "statefile --remote origin report --all, main-only clone", base, limit=GOAL_SCRATCH
            ),
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def rows(quick: bool = False, sizes: tuple[int, ...] = (10, 300, 1000)) -> list[Row]:
    """Every row of this benchmark."""
    return [row for programs in sizes for row in bench(programs, reps_for(programs, quick))]


def main() -> int:
    return sized_main(__doc__ or "", rows, "10,300,1000", "program counts P")


if __name__ == "__main__":
    raise SystemExit(main())
