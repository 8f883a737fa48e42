"""The benchmarks' own claims: the token replay counts what the agent would read and write, and the record floor
starts the git processes ``statefile record`` starts.

The numbers themselves live in benchmarks/RESULTS.md (benchmarks/run.py); these keep the measurements honest.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_tokens  # noqa: E402
from bench_git import counting_git  # noqa: E402
from gitutil import git, make_repos, run_statefile  # noqa: E402

from statefile.model.text import utf8_size  # noqa: E402
from statefile.views.render import CORE_BUDGET  # noqa: E402


@pytest.mark.slow  # a benchmark replay
def test_a_short_replay_counts_each_way(tmp_path: Path) -> None:
    steps = bench_tokens.synthetic_history(20)
    assert len(steps) == 20 and all(step.change for step in steps)
    result = bench_tokens.replay("short", steps, tmp_path)
    assert len(result.sf_read) == len(result.up_read) == 20
    # statefile reads memory.md within its budget (plus the tool calls it needed and the one-line reply), writes
    # one record_iteration call.
    assert all(view <= CORE_BUDGET * 4 + 300 for view in result.view_read)
    reply = utf8_size(bench_tokens.RECORD_REPLY)
    parts = zip(result.sf_read, result.view_read, result.call_bytes, strict=True)
    assert all(read == view + calls + reply for read, view, calls in parts)
    assert all((calls > 0) == bool(n) for calls, n in zip(result.call_bytes, result.calls, strict=True))
    assert sum(result.calls) > 0, "the synthetic history retries ideas: some iteration needs the tools"
    first = json.loads(bench_tokens.tool_call("perf", steps[0]))
    assert result.sf_write[0] == utf8_size(bench_tokens.tool_call("perf", steps[0]))
    assert first["program"] == "perf" and first["status"] == steps[0].status and first["change"] == steps[0].change
    assert shlex.split(bench_tokens.command_line("perf", steps[0]))[:3] == ["statefile", "record", "perf"]
    # The upstream way reads the file as it was and writes it as it became: each write is the next read.
    assert result.up_read[1:] == result.up_write[:-1]
    assert all(edit < whole for edit, whole in zip(result.edit_write, result.up_write, strict=True))
    # Every earlier iteration stays reachable by number; the whole file keeps only what compaction left in it.
    assert result.asked == 20 and result.reach["expand"] == 20 and result.reach["memory.md+search+expand"] == 20
    assert result.reach["search"] >= 19  # recall at 5 on the iteration's own Change text
    assert result.reach["the file as statefile keeps it"] <= 20 and result.archive_parts >= 1
    rows = bench_tokens._rows("synthetic", result)
    assert rows[0].flow.startswith("statefile") and rows[1].ratio is not None and rows[1].ratio > 1
    assert bench_tokens.table(rows)[2].startswith("| history | flow | tokens per iteration")


def test_the_record_floor_starts_the_git_processes_record_starts(tmp_path: Path) -> None:
    """benchmarks/record_floor.py is the least any tool on statefile's stack pays for a local record only while it
    starts the same git processes in the same order, and really records: its line lands on the branch."""
    repos = make_repos(tmp_path)
    assert run_statefile("init", "perf", cwd=repos.work).returncode == 0
    counter = counting_git(tmp_path / "bin")
    log = counter / "log"
    env = {"PATH": f"{counter}{os.pathsep}{os.environ['PATH']}", "GIT_COUNT_LOG": str(log)}

    def started(argv: list[str]) -> list[str]:
        log.write_text("", "utf-8")
        subprocess.run(argv, cwd=repos.work, env={**os.environ, **env}, check=True, capture_output=True, timeout=60)
        words = [line.split() for line in log.read_text("utf-8").splitlines()]
        return [next(w for w in line if not w.startswith("-") and "=" not in w) for line in words]

    statefile = Path(sys.executable).with_name("statefile")
    before = git("rev-parse", "memory/autoloop", cwd=repos.work).strip()
    recorded = started([str(statefile), "record", "perf", "--status", "accepted", "--change", "a"])
    tip = git("rev-parse", "memory/autoloop", cwd=repos.work).strip()
    floor = started([sys.executable, str(BENCHMARKS / "record_floor.py")])
    assert floor == recorded == ["rev-parse", "for-each-ref", "cat-file", "fast-import", "commit-tree", "update-ref"]
    assert git("rev-parse", "memory/autoloop^", cwd=repos.work).strip() == tip != before
    assert "- floor line " in git("show", "memory/autoloop:perf.md", cwd=repos.work)
