"""Numbers in headings cannot hang or exhaust statefile (issue 15 #1).

A range line stands for every number between its ends and nothing but the heading bounds them: before, one typo
(``### Iters 2–1000000000000``) made ``record``/``show`` spin and ``render`` die with MemoryError, and a date typed
as a range made the next iteration 20260116.  Covered numbers are now kept as intervals everywhere, and a number
beyond any plausible history makes its heading an opaque entry with a warning.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import entry_text, state_file_text
from gitutil import STATEFILE
from hypothesis import given
from hypothesis import strategies as st
from synthetic import synthetic_state

from statefile.defaults import MAX_ITERATION
from statefile.errors import EXIT_INVALID_DATA
from statefile.model import history as spans
from statefile.model.document import parse
from statefile.model.history import Iteration, IterationRange, OpaqueEntry
from statefile.policy import ranges

TYPO = "### Iters 2–1000000000000 — typo"
DATES = "### Iterations 20260101–20260115 — two weeks"
WIDE = "### Iters 30–9999999 — ✅ 3 (metrics 1→2): a plausible number, a very wide range"


def _with_history_lines(*lines: str) -> str:
    text = synthetic_state("perf", 5)
    head, marker, rest = text.partition("### Iteration 5 ")
    assert marker, "the synthetic file has iteration 5 at the top of its history"
    return head + "".join(line + "\n\n" for line in lines) + marker + rest


# -- the interval helpers, against a set of numbers as the oracle ------------------------------------------------------

small_spans = st.lists(st.tuples(st.integers(1, 60), st.integers(0, 8)).map(lambda t: (t[0], t[0] + t[1])), max_size=8)


def _numbers(found: list[spans.Span]) -> set[int]:
    return {n for a, b in found for n in range(a, b + 1)}


@given(small_spans, small_spans, st.integers(0, 80))
def test_spans_agree_with_sets(a: list[spans.Span], b: list[spans.Span], upto: int) -> None:
    merged = spans.merge(a)
    assert _numbers(merged) == _numbers(a)
    assert all(x[1] + 1 < y[0] for x, y in itertools.pairwise(merged)), "sorted, disjoint, not adjacent"
    assert spans.size(merged) == len(_numbers(a))
    assert spans.highest(a) == max(_numbers(a), default=0)
    assert _numbers(spans.missing(a, upto)) == set(range(1, upto + 1)) - _numbers(a)
    assert spans.holds(a, b) == (_numbers(b) <= _numbers(a))
    assert spans.of_numbers(_numbers(a)) == merged


def test_spans_text() -> None:
    assert spans.spans_text([(9, 10), (1, 3), (7, 7)], mark="#") == "#1–3, #7, #9–10"
    assert spans.spans_text([(n, n) for n in range(1, 40, 2)], limit=2) == "1, 3, …"


# -- the model -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("line", "number"), [(TYPO, 1_000_000_000_000), (DATES, 20_260_115)])
def test_an_implausible_heading_is_kept_as_text_with_a_warning(line: str, number: int) -> None:
    doc = parse(_with_history_lines(line))
    entry = next(e for e in doc.history if e.heading.startswith("### Iter") and "–" in e.heading)
    assert isinstance(entry, OpaqueEntry) and entry.implausible == number
    assert doc.highest_iteration == 5
    warning = next(str(w) for w in doc.warnings if w.code == "implausible-number")
    assert f"{number:,}" in warning and f"{MAX_ITERATION:,}" in warning
    assert doc.render() == _with_history_lines(line)


def test_a_wide_plausible_range_is_reasoned_about_as_an_interval() -> None:
    doc = parse(_with_history_lines(WIDE, "### Iters 35–40 — overlapping"))
    wide = next(e for e in doc.history if isinstance(e, IterationRange) and e.last == 9_999_999)
    assert wide.spans == [(30, 9_999_999)] and 5_000_000 in wide.covers
    assert doc.highest_iteration == 9_999_999
    warnings = "\n".join(map(str, doc.warnings))
    assert "ranges 30–9999999 and 35–40 overlap" in warnings
    assert "no entry or range covers iterations 6–29" in warnings
    assert "Iteration Count is 5 but the history goes up to iteration 9999999" in warnings


# -- every command, through the console script, with 1 GiB of address space ------------------------------------------


def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


COMMANDS = [
    ["check"],
    ["show", "perf"],
    ["render", "perf"],
    ["render", "perf", "--budget", "400"],
    ["render", "perf", "--level", "index"],
    ["status", "perf"],
    ["history", "perf"],
    ["list"],
    ["search", "typo"],
    ["expand", "perf", "4000000"],
    ["summary"],
    ["compact", "perf", "--dry-run"],
    ["repair", "perf", "--dry-run"],
    ["record", "perf", "--status", "accepted", "--metric", "3", "--change", "after the typos"],
]


@pytest.mark.slow  # processes under memory limits
@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_AS is POSIX")
def test_no_command_hangs_or_exhausts_memory_on_huge_numbers(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    text = _with_history_lines(TYPO, DATES, WIDE)
    (folder / "perf.md").write_text(text, encoding="utf-8")
    env = {**os.environ, "NO_COLOR": "1"}
    for args in COMMANDS:
        proc = subprocess.run(
            [STATEFILE, "--dir", str(folder), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,  # far above the half second each takes: only a hang reaches it
            preexec_fn=_limited,
            check=False,
        )
        assert proc.returncode in (0, 3), (args, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, (args, proc.stderr)
    after = (folder / "perf.md").read_text(encoding="utf-8")
    # Nothing lost: every typed line is still there, and the record numbered on from the plausible history.
    for line in (TYPO, DATES, WIDE):
        assert line in after
    assert "### Iteration 10000000 " in after
    assert "### Iteration 20260116" not in after


# -- a next number beyond any history (review finding: exit 70 after the read-back) ----------------------------------


def _folder_with(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "perf.md").write_text(text, encoding="utf-8")
    return folder


def _record(folder: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STATEFILE, "--dir", str(folder), "record", "perf", "--status", "rejected", *more],
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_count_beyond_any_history_is_an_error_naming_the_row(tmp_path: Path) -> None:
    text = synthetic_state("perf", 5).replace("| Iteration Count | 5 |", "| Iteration Count | 123456789 |")
    folder = _folder_with(tmp_path, text)
    proc = _record(folder)
    assert proc.returncode == EXIT_INVALID_DATA, proc.stderr
    assert proc.stderr.count("\n") == 1 and "'Iteration Count' row says 123,456,789" in proc.stderr
    assert "statefile edit perf" in proc.stderr
    assert (folder / "perf.md").read_text(encoding="utf-8") == text


def test_recording_up_to_the_limit_then_past_it(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path, synthetic_state("perf", 5))
    assert _record(folder, "--iteration", str(MAX_ITERATION - 1)).returncode == 0
    assert _record(folder).returncode == 0  # MAX_ITERATION itself
    before = (folder / "perf.md").read_text(encoding="utf-8")
    assert f"### Iteration {MAX_ITERATION} " in before
    proc = _record(folder)
    assert proc.returncode == EXIT_INVALID_DATA and "would be 10,000,001, beyond 10,000,000" in proc.stderr
    assert "internal error" not in proc.stderr
    assert (folder / "perf.md").read_text(encoding="utf-8") == before


def parse_entry_text(text: str) -> Iteration:
    found = parse(state_file_text(text)).history[0]
    assert isinstance(found, Iteration)
    return found


def test_metric_bands_compare_numbers_exactly() -> None:
    """As floats, 10000000000000001 and 10000000000000000 are equal: the band kept the old best."""
    entries = [
        parse_entry_text(entry_text(2, metric="10000000000000001")),
        parse_entry_text(entry_text(1, metric="10000000000000000")),
    ]
    band = ranges.band_from_entries(entries, "higher", "")
    assert (band.metric_from, band.metric_to) == ("10000000000000000", "10000000000000001")


def test_a_three_point_band_reads_first_to_last() -> None:
    """As seen in issue 11: a three point band reads first to last."""
    text = state_file_text("### Iters 1–9 — 2026-04-12 23:12–00:31 UTC — ✅ (metrics 112→127→130): steady\n\n")
    found = parse(text).ranges[0]
    assert (found.first, found.last, found.metric_from, found.metric_to) == (1, 9, "112", "130")
