"""The whole run, hermetically: scheduler → pre-agent steps → read-only agent → safe-output job / repo-memory push.

Everything gh-aw and Autoloop do is a re-statement in ``tests/ghaw/`` (see its docstrings for the upstream files
and behaviours followed); statefile runs as the real command, from the shipped component's own ``run:`` scripts.

- **Lossless path** (``workflows/shared/statefile.md``): rounds of 2–4 overlapping runs — the same program
  selected by every run of a round, as real overlapping runs do — whose safe-output jobs race on the branch.
  When nothing is due (every program paused, completed or on a plateau), the round's runs are manual dispatches
  of one program (the workflow's ``program`` input), as a maintainer would start them: every round has 2–4 runs.
  0 updates lost; every archived byte on the branch; the scheduler reads the expected Machine State every round.
- **Drop-in path** (repo-memory kept, ``statefile --repo-memory``): sequential runs, a seeded 29 KB state file
  whose first compaction must spread over several pushes; every push within its limits, every archived byte on
  the branch.  And a test documenting that *overlapping* runs lose updates on this path: repo-memory's push is
  last-writer-wins, which is why the lossless path exists.

``STATEFILE_E2E_ROUNDS=40`` runs both long tests for 40 rounds (the figures the closing notes give); by default
they run 10 rounds of 2–4 overlapping runs (lossless) and 6 sequential runs (drop-in) to keep the suite's time.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from ghaw.component import bin_dir, documented_frontmatter
from ghaw.forkserver import ForkServer
from ghaw.push_job import PushResult, patch_size
from ghaw.workflow import BRANCH, DROP_IN_GUIDE, Run, World
from upstream import upstream_machine_state

from statefile.model.synthetic import synthetic_state

ROUNDS = int(os.environ.get("STATEFILE_E2E_ROUNDS", "0"))
#: How often the simulated agent reports a misspelt program (its job must fail alone, writing nothing), and how
#: often a round ends with one of its safe-output jobs re-run ("Re-run failed jobs": it must record nothing twice).
TYPO_RATE = 0.05
RERUN_RATE = 0.3

# No schedules: entries are stamped with the real time, so every program is due on every run and the scheduler
# picks the one that ran longest ago (overlapping runs of a round pick the same one, as real ones would).
PROGRAMS = {
    "perf": "---\ntarget-metric: 80\nmetric_direction: lower\n---\n\n# Perf\n\n## Goal\n\n"
    "Make the parser benchmark faster.\n\n## Evaluation\n\nRun the benchmark.\n",
    "coverage": "---\nmetric_direction: higher\n---\n\n# Coverage\n\n## Goal\n\nRaise line coverage.\n",
    "accuracy": "---\ntarget-metric: 1000\n---\n\n# Accuracy\n\n## Goal\n\nBetter answers.\n",
}
LOSSLESS_WORKFLOW = "---\non:\n  schedule: every 6h\nimports:\n  - shared/statefile.md\n---\n\n# Autoloop\n"
# The drop-in path's workflow: repo-memory exactly as workflows/README.md configures it.
DROP_IN_TOOLS = documented_frontmatter(DROP_IN_GUIDE)["tools"]
DROP_IN_WORKFLOW = f"---\n{yaml.safe_dump({'on': {'schedule': 'every 6h'}, 'tools': DROP_IN_TOOLS})}---\n\n# Autoloop\n"
LIMITS = DROP_IN_TOOLS["repo-memory"]
_MARKER = re.compile(r"<!-- statefile-item: (run \d+ attempt \d+ item \d+) -->")
_ARCHIVED = re.compile(r"compaction archived \d+ item\(s\), (\d+) bytes")


def _entries_by_marker(world: World) -> Counter[str]:
    """How many times each item marker is on the branch (state files and archives)."""
    found: Counter[str] = Counter()
    for text in world.branch_files().values():
        found.update(_MARKER.findall(text))
    return found


def _chunk_bytes(world: World) -> int:
    """The bytes of archived text on the branch: every chunk body of every archive part."""
    return _archived_in(world.branch_files())


def _archived_in(files: dict[str, str]) -> int:
    total = 0
    for path, text in files.items():
        if path.startswith("archive/") or path.startswith("_archive."):
            for body in re.split(r"\n## Archived [^\n]*\n\n", text)[1:]:
                total += len(body.encode("utf-8"))
    return total


#: A program an existing Autoloop user brings along: its state file, written the upstream way, is already on the
#: branch (29 KB, 88 iterations, never compacted), so its first recorded iteration compacts it.
def _push(run: Run) -> PushResult:
    """repo-memory's push job with the workflow's settings (the compiler joins a file-glob list with spaces)."""
    return run.push_repo_memory(file_glob=" ".join(LIMITS["file-glob"]), max_file_size=LIMITS["max-file-size"],
                                max_patch_size=LIMITS["max-patch-size"])  # fmt: skip


LEGACY = "---\nmetric_direction: higher\n---\n\n# Legacy\n\n## Goal\n\nA program with a long history.\n"
LEGACY_STATE = synthetic_state("legacy", 88, seed=1)
TARGETS = {"perf": (Decimal(80), "lower"), "coverage": (None, "higher"), "accuracy": (Decimal(1000), "higher"),
           "legacy": (None, "higher")}  # fmt: skip


def _expected_state(world: World, program: str, seeded: dict[str, Any]) -> dict[str, Any]:
    """What the scheduler must read for ``program``: the upstream rules, re-stated plainly, applied to the reports
    in the order their commits landed on the branch, from the state ``seeded`` on the branch before (or none)."""
    by_marker = {f"run {r.run} attempt 1 item 1": r.arguments for r in world.reports if r.program == program}
    reports = [by_marker[m] for m in _git_log(world, program)]
    target, direction = TARGETS[program]
    errors, paused, completed = seeded.get("consecutive_errors", 0), seeded.get("paused", False), False
    best = Decimal(seeded["best_metric"]) if seeded.get("best_metric") else None
    reason = seeded.get("pause_reason")
    for report in reports:
        status = report["status"]
        metric = Decimal(report["metric"]) if "metric" in report else None
        if status == "accepted":
            errors, paused, reason = 0, False, None
            if metric is not None and (best is None or (metric < best if direction == "lower" else metric > best)):
                best = metric
            if (
                metric is not None
                and target is not None
                and (metric <= target if direction == "lower" else metric >= target)
            ):
                completed = True
        elif status in ("error", "ci-fix-exhausted"):
            errors += 1
            if status == "ci-fix-exhausted":
                paused, reason = True, report["pause_reason"]
            elif errors >= 3:
                paused = True
    return {
        "iteration_count": seeded.get("iteration_count", 0) + len(reports),
        "recent_statuses": [*seeded.get("recent_statuses", []), *(r["status"] for r in reports)][-10:],
        "paused": paused,
        "completed": completed,
        "best_metric": best,
        "consecutive_errors": errors,
        "pause_reason": reason,
    }


def _git_log(world: World, program: str) -> list[str]:
    """Item markers of the commits that recorded ``program``, oldest first."""
    out = subprocess.run(["git", "log", "--reverse", "--format=%B%x00", BRANCH, "--", f"{program}.md"],
                         cwd=world.origin, capture_output=True, text=True, check=True).stdout  # fmt: skip
    markers = []
    for message in out.split("\x00"):
        if f" of {program} " in message:
            match = re.search(r"Statefile-Item: (.+)", message)
            if match:
                markers.append(match.group(1).strip())
    return markers


def _largest_commit(world: World) -> int:
    """The most bytes one commit on the branch adds, by repo-memory's patch measure."""
    commits = subprocess.run(["git", "rev-list", "--no-merges", BRANCH], cwd=world.origin, capture_output=True,
                             text=True, check=True).stdout.split()  # fmt: skip
    sizes = [patch_size(subprocess.run(["git", "show", "--format=", commit], cwd=world.origin, capture_output=True,
                                       text=True, check=True).stdout) for commit in commits]  # fmt: skip
    return max(sizes, default=0)


def _round(world: World, runs: list[Run]) -> list[Run]:
    """Pre-steps and agents one after the other (same branch state), then the safe-output jobs at once."""
    started = [run for run in runs if run.pre_steps()]
    for run in started:
        typo = world.rng.random() < TYPO_RATE
        run.agent(program=(run.selected or "")[:-1] if typo else None)
    threads = [threading.Thread(target=run.safe_output_job) for run in started]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return started


@pytest.fixture(scope="module")
def statefile_bin(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The ``statefile`` the scripts run: a fork server's shim (fast), or the console script with
    ``STATEFILE_E2E_PROCESSES=1``."""
    if os.environ.get("STATEFILE_E2E_PROCESSES"):
        yield bin_dir()
        return
    with ForkServer(tmp_path_factory.mktemp("forkserver")) as server:
        yield server.bin_dir


@pytest.mark.slow
def test_lossless_path_overlapping_runs_lose_nothing(tmp_path: Path, statefile_bin: Path) -> None:
    rounds = ROUNDS or 10
    world = World(tmp_path, "lossless", LOSSLESS_WORKFLOW, {**PROGRAMS, "legacy": LEGACY}, seed=7,
                  bin_dir=statefile_bin)  # fmt: skip
    world.seed_memory({"legacy.md": LEGACY_STATE})
    seeded = {"legacy": upstream_machine_state(LEGACY_STATE)}
    world.best["legacy"] = float(seeded["legacy"]["best_metric"])
    archived = 0
    landed = attempted = 0
    skipped_by: dict[str, str] = {}  # programs the next scheduler run must skip, and why
    skips_seen = 0
    overlaps: Counter[int] = Counter()
    dispatched = refused = reruns = 0
    for number in range(rounds):
        overlap = world.rng.choice((2, 3, 4))
        created = [world.new_run() for _ in range(overlap)]
        runs = _round(world, created)
        if not runs:
            # Nothing due: every program is paused, completed or on a plateau.  A maintainer dispatches the
            # workflow for one of them (the `program` input: the scheduler runs it whatever its state).
            program = world.rng.choice(sorted(PROGRAMS))
            created += [world.new_run(forced=program) for _ in range(overlap)]
            runs = _round(world, created[overlap:])
            dispatched += 1
        assert len(runs) == overlap, "every run of a round selects a program"
        overlaps[overlap] += 1
        for run in runs:  # the scheduler read the paused or completed state the last round left
            reasons = {s["name"]: s["reason"] for s in run.autoloop.get("skipped", [])}
            for program, why in skipped_by.items():
                assert reasons.get(program, "").startswith(why), (program, why, reasons)
                skips_seen += 1
        skipped_by = {}
        for run in runs:
            attempted += 1
            assert run.report
            if run.report.program != run.selected:  # a typo: one clear line, nothing written, the others land
                assert run.job_returncode == 3, f"{run.run_id}: {run.job_stdout}{run.job_stderr}"
                assert f"item 1 ({run.report.program}): unknown program" in run.job_stderr, run.job_stderr
                assert run.job_stderr.count("statefile: error:") == 1 and "Traceback" not in run.job_stderr
                assert world.branch_file(f"{run.report.program}.md") is None
                refused += 1
                continue
            assert run.job_returncode == 0, f"{run.run_id}: {run.job_stdout}{run.job_stderr}"
            assert "recorded iteration" in run.job_stdout, run.job_stdout
            landed += 1
            archived += sum(int(b) for b in _ARCHIVED.findall(run.job_stdout))
        if world.rng.random() < RERUN_RATE:  # a safe-output job re-run after the others wrote: nothing twice
            run = world.rng.choice(runs)
            before = world.branch_files()
            run.safe_output_job(attempt=2)
            if run.report and run.report.program == run.selected:
                assert run.job_returncode == 0 and "already on the branch" in run.job_stdout, run.job_stdout
                assert "recorded iteration" not in run.job_stdout
            else:
                assert run.job_returncode == 3
            assert world.branch_files() == before
            reruns += 1
        # The scheduler reads what was recorded, every round.
        for program in {run.selected for run in runs if run.selected}:
            state = upstream_machine_state(world.branch_file(f"{program}.md") or "")
            expected = _expected_state(world, program, seeded.get(program, {}))
            for key in ("iteration_count", "recent_statuses", "paused", "completed", "consecutive_errors"):
                assert state[key] == expected[key], (number, program, key, state[key], expected[key])
            assert (Decimal(state["best_metric"]) if state["best_metric"] else None) == expected["best_metric"]
            if expected["pause_reason"]:
                assert state["pause_reason"] == expected["pause_reason"]
            assert state["metric_direction"] == TARGETS[program][1]
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", state["last_run"])
            if state["paused"] or state["completed"]:
                skipped_by[program] = "paused" if state["paused"] else "completed"
        for run in created:
            run.cleanup()
    # 0 updates lost, none twice; every folded entry verbatim in the archive.
    markers = _entries_by_marker(world)
    assert len(world.reports) == attempted == landed + refused
    for report in world.reports:  # each good report exactly once, a misspelt one never
        assert markers[f"run {report.run} attempt 1 item 1"] == (report.program in world.programs), report
    assert archived > 0 and _chunk_bytes(world) == archived
    on_branch = "\n".join(world.branch_files().values())
    brought = _entries(LEGACY_STATE)
    assert len(brought) == 88 and all(e in on_branch for e in brought), "the user's own entries, verbatim"
    perf = upstream_machine_state(world.branch_file("perf.md") or "")
    assert perf["metric_direction"] == "lower" and perf["target_metric"] == "80"
    spread = ", ".join(f"{count}×{size}" for size, count in sorted(overlaps.items()))
    print(f"\nlossless: {rounds} rounds of overlapping runs ({spread}; {dispatched} dispatched by hand when nothing "
          f"was due), {landed}/{attempted - refused} updates landed ({refused} misspelt reports refused alone, "
          f"{reruns} safe-output jobs re-run: nothing recorded twice), {skips_seen} scheduler skips checked, "
          f"{archived} bytes archived, {_chunk_bytes(world)} archived bytes on the branch, largest commit adds "
          f"{_largest_commit(world)} bytes (repo-memory's measure; no push limit applies on this path)")  # fmt: skip


_ENTRY = re.compile(r"^### Iteration \d+ .*?(?=^### |^## |^---|\Z)", re.M | re.S)


def _entries(text: str) -> list[str]:
    return [m.group(0).rstrip("\n") for m in _ENTRY.finditer(text)]


@pytest.mark.slow
def test_drop_in_path_sequential_runs_stay_within_every_push_limit(tmp_path: Path, statefile_bin: Path) -> None:
    rounds = ROUNDS or 6
    world = World(tmp_path, "drop-in", DROP_IN_WORKFLOW, {**PROGRAMS, "legacy": LEGACY}, seed=11,
                  bin_dir=statefile_bin)  # fmt: skip
    legacy = LEGACY_STATE  # its first compaction is ~25 KB, over 2× max-patch-size
    world.seed_memory({"legacy.md": legacy})
    written = _entries(legacy)
    patches = []
    for _ in range(rounds):
        run = world.new_run()
        assert run.pre_steps()
        run.agent()
        run.post_steps()
        entries = _entries((run.gh_aw / "repo-memory" / "default" / f"{run.selected}.md").read_text())
        written.append(next(e for e in entries if f"run/{run.run_id} " in e or f"runs/{run.run_id})" in e))
        folder = run.gh_aw / "repo-memory" / "default"
        archived = _archived_in({p.name: p.read_text() for p in folder.glob("*.md")})
        result = _push(run)
        assert result.status == "pushed" and not result.skipped, (result, run.log)
        assert _chunk_bytes(world) == archived, "every byte statefile archived in the folder reached the branch"
        patches.append(result.patch_size)
        run.cleanup()
    assert max(patches) <= LIMITS["max-patch-size"], patches  # statefile keeps each push at or under the limit
    files = world.branch_files()
    assert all(len(text.encode()) <= LIMITS["max-file-size"] for text in files.values())
    on_branch = "\n".join(files.values())
    missing = [e.splitlines()[0] for e in written if e not in on_branch]
    assert not missing, missing  # every entry ever written: in a state file or verbatim in an archive part
    counts = Counter(r.program for r in world.reports)
    landed = 0
    for program, count in counts.items():
        state = upstream_machine_state(files[f"{program}.md"])
        assert state["iteration_count"] == count + (88 if program == "legacy" else 0)
        landed += state["iteration_count"] - (88 if program == "legacy" else 0)
    on_branch_bytes = _chunk_bytes(world)
    assert on_branch_bytes == archived > 0 and all(p.startswith("_archive.") for p in files if "rchive" in p)
    largest_file = max(len(text.encode()) for text in files.values())
    print(f"\ndrop-in: {rounds} sequential runs, {landed}/{len(world.reports)} updates landed, {archived} bytes "
          f"archived, {on_branch_bytes} archived bytes on the branch, largest patch {max(patches)} bytes against "
          f"max-patch-size {LIMITS['max-patch-size']} (push aborts above {int(LIMITS['max-patch-size'] * 1.2)}), "
          f"largest file {largest_file} bytes against max-file-size {LIMITS['max-file-size']}; "
          f"patches {patches}")  # fmt: skip


def test_drop_in_path_overlapping_runs_lose_updates(tmp_path: Path, statefile_bin: Path) -> None:
    """repo-memory's push copies each run's whole-file snapshot: of two overlapping runs, one update is lost.

    This is gh-aw's behaviour, not statefile's: it is why the lossless path (a safe-output job with
    compare-and-swap) exists.  statefile's folder mode cannot prevent it, and the docs say so.
    """
    world = World(tmp_path, "drop-in", DROP_IN_WORKFLOW, PROGRAMS, seed=9, bin_dir=statefile_bin)
    first, second = world.new_run(), world.new_run()
    assert first.pre_steps() and second.pre_steps()
    assert first.selected == second.selected
    for run in (first, second):
        run.agent({"status": "rejected", "metric": "1", "notes": f"run {run.run_id}"})
        run.post_steps()
    # gh-aw's concurrency group runs the two push jobs one after the other; both succeed.
    for run in (first, second):
        assert _push(run).status == "pushed"
    state = upstream_machine_state(world.branch_file(f"{first.selected}.md") or "")
    assert state["iteration_count"] == 1, "two runs recorded, the branch keeps one: the other update is lost"
    print(f"\ndrop-in, 2 overlapping runs: {state['iteration_count']}/2 updates on the branch (last writer wins)")
