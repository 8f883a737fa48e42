"""The token benchmark's bookkeeping on a short replay: what it counts is what the agent would read and write.

The numbers themselves live in benchmarks/RESULTS.md (benchmarks/run.py --only tokens); this keeps the replay honest.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_tokens  # noqa: E402

from statefile.model.text import utf8_size  # noqa: E402


def test_a_short_replay_counts_each_way(tmp_path: Path) -> None:
    steps = bench_tokens.synthetic_history(20)
    assert len(steps) == 20 and all(step.change for step in steps)
    result = bench_tokens.replay("short", steps, tmp_path)
    assert len(result.sf_read) == len(result.up_read) == 20
    # statefile reads a view within its budget (plus the one-line reply), writes one command line.
    assert all(read <= bench_tokens.RENDER_BUDGET * 4 + 200 for read in result.sf_read)
    first = bench_tokens.command_line("perf", steps[0])
    assert result.sf_write[0] == utf8_size(first) and shlex.split(first)[:4] == [
        "statefile",
        "record",
        "perf",
        "--status",
    ]
    # The upstream way reads the file as it was and writes it as it became: each write is the next read.
    assert result.up_read[1:] == result.up_write[:-1]
    assert all(edit < whole for edit, whole in zip(result.edit_write, result.up_write, strict=True))
    # Every earlier iteration stays reachable by number; the whole file keeps only what compaction left in it.
    assert result.asked == 20 and result.reach["expand"] == 20 and result.reach["render+search+expand"] == 20
    assert result.reach["the file as statefile keeps it"] <= 20 and result.archive_parts >= 1
    rows = bench_tokens._rows("synthetic", result)
    assert rows[0].flow.startswith("statefile") and rows[1].ratio is not None and rows[1].ratio > 1
    assert bench_tokens.table(rows)[2].startswith("| history | flow | tokens per iteration")
