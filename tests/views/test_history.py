"""``statefile history``: every iteration a program's file and archive know, as rows — pure, then through the
console script on a real repository with a bare remote."""

from __future__ import annotations

from conftest import SAMPLES

from statefile.model.archive import archive_entries, make_chunk, part_header
from statefile.model.document import parse
from statefile.model.history import Iteration, IterationRange, render_iteration
from statefile.model.template import new_state_file
from statefile.views.history import history_rows
from statefile.views.summary import where_sentence


def entry(n: int, status: str = "accepted", metric: str | None = None, change: str | None = None) -> str:
    return render_iteration(
        number=n, when=f"2026-01-{n:02d} 10:00", status=status, metric=metric, change=change or f"change {n}"
    )


def state(entries: list[str], direction: str = "higher") -> str:
    base = new_state_file("perf", metric_direction=direction)
    return base.replace("*(No iterations yet.)*\n", "".join(entries))


def archive(*chunks: str) -> str:
    return part_header("perf", 1) + "".join(
        make_chunk(c, when="2026-02-01T00:00:00Z", what="compaction") for c in chunks
    )


# -- the archive read with the state file's entry parser ----------------------------------------------------------


def test_archive_entries_are_parsed_like_file_entries() -> None:
    text = archive(
        entry(2, metric="5") + "```\n### Iteration 99 — inside a fence\n```\n\n",
        "- Iter 3: ❌ failed\n- a removed lesson bullet\n\n"
        "### Iters 1–27 — ✅ 14 · archive/perf/\n\n- Iter 4: a note\n",
    )
    found = archive_entries(text)
    assert [type(f.entry).__name__ for f in found] == ["Iteration", "Iteration", "IterationRange"]
    first, bullet, rng = (f.entry for f in found)
    # As in the state file: a bullet entry above the chunk's first heading is an entry; below a heading, a bullet
    # is that entry's text, however it reads.
    assert rng.raw.endswith("- Iter 4: a note\n")
    assert isinstance(first, Iteration) and first.number == 2 and first.metric == "5"
    assert "Iteration 99" in first.raw  # the fenced heading is text inside entry 2, not an entry of its own
    assert isinstance(rng, IterationRange) and (rng.first, rng.last) == (1, 27)
    assert isinstance(bullet, Iteration) and bullet.number == 3
    assert bullet.raw == "- Iter 3: ❌ failed\n- a removed lesson bullet\n\n"
    lines = text.splitlines()
    assert all(lines[f.line - 1].startswith(("### Iter", "- Iter")) for f in found)
    assert {f.chunk for f in found} == {"compaction"} and found[0].archived == "2026-02-01T00:00:00Z"


# -- rows -----------------------------------------------------------------------------------------------------------


def test_rows_join_file_and_archive_once_per_iteration() -> None:
    doc = parse(state([entry(5, metric="9", change="Port module m3 to Go"), entry(4, "rejected", "3")]))
    old = archive(
        entry(1, metric="1") + entry(2, "error") + "### Iters 1–3 — ✅ 2 ⚠️ 1 · archive/perf/\n\n",
        "### Iters 1–4 — ✅ 2 ❌ 1 ⚠️ 1 · archive/perf/\n\n" + entry(3, metric="4") + entry(4, "rejected", "2"),
    )
    history = history_rows(doc, "perf", [("0001.md", old)])
    assert [(r.kind, r.first) for r in history.rows] == [("iteration", n) for n in range(1, 6)]
    by = {r.first: r for r in history.rows}
    # The file's copy of iteration 4 wins over the archived one; archived rows say where they live.
    assert by[4].metric == "3" and by[4].source == "perf.md"
    assert by[3].source == "archive/perf/0001.md" and old.splitlines()[by[3].line - 1].startswith("### Iteration 3")
    assert by[5].change == "Port module m3 to Go" and by[5].date == "2026-01-05 10:00"
    # Best so far counts accepted metrics only, in the Metric Direction.
    assert [r.best for r in history.rows] == [1.0, 1.0, 4.0, 4.0, 9.0]
    assert history.points() == [(1, 1.0), (3, 4.0), (4, 3.0), (5, 9.0)]


def test_a_range_without_detail_is_one_aggregated_row() -> None:
    doc = parse(
        state(
            [
                entry(7, metric="0.5"),
                entry(6, metric="0.6"),
                "### Iters 1–5 — ✅ 3 ❌ 2 · 2026-01-01…2026-01-05 · metric 0.9→0.7 · early work · archive/perf/\n\n",
            ],
            direction="lower",
        )
    )
    history = history_rows(doc, "perf")
    first = history.rows[0]
    assert (first.kind, first.first, first.last, first.label) == ("range", 1, 5, "1–5")
    assert first.counts == {"accepted": 3, "rejected": 2, "error": 0, "other": 0}
    assert first.metric == "0.9→0.7" and first.value == 0.7 and first.date == "2026-01-01…2026-01-05"
    assert first.change == "early work"
    assert history.iterations == 7 and history.direction == "lower"
    assert [r.best for r in history.rows] == [0.7, 0.6, 0.5]


def test_a_complete_entry_wins_over_a_partial_copy_and_overlapping_ranges_show_what_they_add() -> None:
    history = history_rows(parse((SAMPLES / "messy.md").read_text()), "messy")
    labels = [r.label for r in history.rows]
    assert labels == ["1–19", "20–32", "30-38".replace("-", "–"), "39", "40", "41"]
    row39 = history.rows[3]
    assert row39.date == "2026-06-01 20:40"  # not the (partial) copy written at 20:10


def test_no_document_and_no_archive_is_no_rows() -> None:
    assert history_rows(None, "perf").rows == ()


def test_history_counts_each_known_number_once() -> None:
    """A pair counts its two numbers (not the gap between them); a range and the entries it overlaps count once."""
    doc = parse(state([entry(5), "### Iteration 7 & 12 — ✅ a pair\n\n", "### Iters 1–4 — ✅ 4 · folded\n\n"]))
    history = history_rows(doc, "perf", [("0001.md", archive(entry(3) + entry(4)))])
    # Known: 1–4 (the range; 3 and 4 also archived in detail), 5 (file), 7 and 12 (the pair); 6 and 8–11 never ran.
    assert history.covered == ((1, 5), (7, 7), (12, 12))
    assert history.iterations == 7
    assert (history.in_file, history.archived, history.only_in_ranges) == (3, 2, 2)
    assert where_sentence(history) == "7 iterations: 3 in perf.md, 2 in the archive, 2 only in range lines"
