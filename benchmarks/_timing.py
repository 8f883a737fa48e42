"""Timing helpers shared by the benchmarks: interleaved medians, whole-process runs, result rows, the machine.

Every benchmark compares a statefile flow with its alternative *in the same run*: the flows take turns (one run of
each per round), so load from other processes on a shared machine falls on all of them alike, and the median of
each is reported.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: The benchmarks' git identity (CI machines and fresh containers have none).
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "statefile bench",
    "GIT_AUTHOR_EMAIL": "bench@statefile.invalid",
    "GIT_COMMITTER_NAME": "statefile bench",
    "GIT_COMMITTER_EMAIL": "bench@statefile.invalid",
}
BIN = Path(sys.executable).parent
STATEFILE = str(BIN / "statefile")


def pin_identity() -> None:
    """Give git (and statefile) an author in this process and every child, unless one is already set."""
    for key, value in GIT_IDENTITY.items():
        os.environ.setdefault(key, value)


def sh(cwd: Path, *args: str) -> str:
    """Run ``git args`` in ``cwd``; its stdout (raises on failure, with git's message)."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode("utf-8", "replace")


Flow = tuple[Callable[[], object], int] | tuple[Callable[[], object], int, Callable[[], object]]


def measure(flows: Mapping[str, Flow], *, warmup: bool = True) -> dict[str, float]:
    """Median milliseconds of each flow, ``{name: (fn, runs[, setup])}``, after one untimed warm-up run each.

    The flows take turns (one run of each per round) so that load from other processes on the machine falls on
    all of them alike rather than on whichever happened to run during a busy moment.  ``setup``, when given, runs
    untimed before each run of its flow (e.g. a fresh clone to start from).
    """
    return {name: statistics.median(values) for name, values in samples(flows, warmup=warmup).items()}


def samples(flows: Mapping[str, Flow], *, warmup: bool = True) -> dict[str, list[float]]:
    """Every timed run of each flow in milliseconds (see :func:`measure`)."""
    times: dict[str, list[float]] = {name: [] for name in flows}

    def once(flow: Flow) -> float:
        if len(flow) == 3:
            flow[2]()
        start = time.perf_counter()
        flow[0]()
        return (time.perf_counter() - start) * 1000

    if warmup:
        for flow in flows.values():
            once(flow)
    for round_ in range(max((flow[1] for flow in flows.values()), default=0)):
        for name, flow in flows.items():
            if round_ < flow[1]:
                times[name].append(once(flow))
    return times


def median_ms(action: Callable[[], object], reps: int, setup: Callable[[], object] | None = None) -> float:
    """Median wall time of ``action`` over ``reps`` runs, ``setup`` (untimed) before each."""
    times = []
    for _ in range(reps):
        if setup is not None:
            setup()
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run(argv: Sequence[str], cwd: Path, *, env: Mapping[str, str | None] | None = None, ok: bool = True) -> str:
    """Run a whole process (the thing timed by whole-process flows); its stdout.  Raises when it fails.

    ``env`` changes the inherited environment: a ``None`` value removes that variable.
    """
    full = None
    if env is not None:
        full = {**os.environ, **{k: v for k, v in env.items() if v is not None}}
        for key in (k for k, v in env.items() if v is None):
            full.pop(key, None)
    proc = subprocess.run(list(argv), cwd=cwd, capture_output=True, env=full, check=False)
    if ok and proc.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode("utf-8", "replace")


@dataclass
class Row:
    """One line of the results table.

    ``ms`` is the median of ``flow``; ``versus``/``ratio`` name the alternative measured in the same run and
    ``ms / its ms`` (``None`` for a baseline row).  ``goal`` is the target ratio (``"≤ 0.3×"``), ``met`` whether
    this run meets it.  ``note`` carries what a time cannot say (retries, lost updates, RSS).
    """

    bench: str
    size: str
    flow: str
    ms: float
    versus: str = ""
    ratio: float | None = None
    goal: str = ""
    met: bool | None = None
    note: str = ""


def compare(
    bench: str,
    size: str,
    ms: Mapping[str, float],
    flow: str,
    versus: str,
    *,
    limit: float | None = None,
    note: str = "",
) -> Row:
    """A row for ``flow`` measured against ``versus`` (both keys of ``ms``); ``limit`` is the goal ratio."""
    ratio = ms[flow] / ms[versus]
    return Row(
        bench,
        size,
        flow,
        ms[flow],
        versus,
        ratio,
        goal="" if limit is None else f"≤ {limit:g}×",
        met=None if limit is None else ratio <= limit,
        note=note,
    )


def machine() -> str:
    """One line describing where the numbers were taken: CPU, cores, memory, OS, Python, git, load."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f"{pages / 2**30:.0f} GiB RAM"
    except (ValueError, OSError):
        memory = "RAM unknown"
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{cpu}, {os.cpu_count()} cores, {memory}; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; {git_version}; load average at start {load}"
    )


def sized_main(doc: str, rows: Callable[[bool, tuple[int, ...]], list[Row]], default_sizes: str, noun: str) -> int:
    """The command line of a benchmark whose rows come per size: ``--quick``, ``--sizes``; prints the rows."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--sizes", default=default_sizes, help=f"comma-separated {noun}")
    args = parser.parse_args()
    pin_identity()
    for row in rows(args.quick, tuple(int(p) for p in args.sizes.split(","))):
        ratio = f"{row.ratio:.2f}× {row.versus}" if row.ratio is not None else ""
        print(f"{row.size:>7}  {row.flow:<58} {row.ms:>9.1f} ms  {ratio}  {row.goal}")
    return 0
