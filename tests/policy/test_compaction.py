"""Compaction, case by case: range lines, folding, merging, lessons, foreclosed avenues, modes, budget, hooks."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter, defaultdict
from datetime import date, datetime, timezone
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    FIXED_NOW,
    SAMPLES,
    SECTION_PREFIXES,
    SECTION_SUFFIXES,
    corpus_params,
    covered_numbers,
    entry_text,
    examples,
    fixture_text,
    read_raw,
    real_file,
    state_file_text,
)
from gitutil import run_statefile
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic import synthetic_state
from upstream import upstream_machine_state

import statefile
from statefile.errors import BudgetError, UsageError
from statefile.model.document import StateDocument, parse
from statefile.model.history import Iteration, IterationRange, parse_entry, render_iteration
from statefile.model.patterns import agent_bullet, is_placeholder
from statefile.model.template import MAINTAINER_OWNED, SECTION_KINDS, new_state_file
from statefile.policy.compaction import (
    CompactionBudgetError,
    CompactionPolicy,
    CompactionReport,
    CompactionResult,
    MovedItem,
    compact,
    is_pinned,
    plan_list,
    program_name,
)
from statefile.policy.ranges import (
    Band,
    band_from_entries,
    band_from_range,
    entries_summary,
    join_parts,
    merge_bands,
    parse_canonical,
    render_band,
)
from statefile.policy.rules import RecordRequest
from statefile.policy.rules import record as rules_record


def entry(n: int, status: str = "accepted", metric: str | None = None, change: str | None = None) -> str:
    """A detailed entry in the upstream shape (metric n + 100 by default, previous best one less)."""
    value = metric if metric is not None else str(100 + n)
    return render_iteration(
        number=n,
        when=f"2026-03-{n % 28 + 1:02d} 12:00",
        status=status,
        run_url=f"https://example.invalid/runs/{n}",
        change=change or f"Change number {n}",
        metric=value,
        previous_best=str(int(float(value)) - 1) if value.replace(".", "").isdigit() else None,
        delta="+1",
        commit="abc1234" if status == "accepted" else None,
        notes=f"Notes for {n}.",
    )


def make_doc(
    history: list[str],
    *,
    lessons: list[str] | None = None,
    foreclosed: list[str] | None = None,
    direction: str = "higher",
    priorities: str | None = None,
    program: str = "demo",
) -> StateDocument:
    text = new_state_file(program, metric_direction=direction, iteration_count=len(history))
    if lessons:
        text = text.replace("iterations.\n\n- *(none yet)*", "iterations.\n\n" + "\n".join(lessons), 1)
    if foreclosed:
        text = text.replace("reasons.\n\n- *(none yet)*", "reasons.\n\n" + "\n".join(foreclosed), 1)
    if priorities:
        text = text.replace("*(No specific priorities set — agent is exploring freely.)*", priorities, 1)
    return parse(text.replace("*(No iterations yet.)*\n", "".join(history), 1))


def history_of(n: int, **kwargs: Any) -> list[str]:
    return [entry(i, **kwargs) for i in range(n, 0, -1)]


# -- the policy ----------------------------------------------------------------------------------------------------


def test_policy_defaults_match_upstream() -> None:
    policy = CompactionPolicy()
    assert (policy.max_bytes, policy.keep_recent, policy.keep_recent_aggressive, policy.max_ranges) == (30720, 10, 5, 5)
    assert policy.aggressive_bytes == 24576
    assert policy.low_water_bytes < policy.aggressive_bytes
    assert policy.today is None and policy.summarizer is None and policy.summary_cap == 160


@pytest.mark.parametrize(
    "settings",
    [
        {"max_bytes": 0},
        {"keep_recent": -1},
        {"max_ranges_aggressive": 0},
        {"low_water": 0.9, "aggressive_at": 0.8},
        {"lesson_similarity": 0},
        {"summary_cap": 0},
    ],
)
def test_policy_rejects_nonsense(settings: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="invalid compaction policy"):
        CompactionPolicy(**settings)


def test_public_names() -> None:
    assert statefile.compact is compact
    assert statefile.CompactionPolicy is CompactionPolicy
    assert issubclass(CompactionBudgetError, statefile.BudgetError)


# -- canonical range lines -----------------------------------------------------------------------------------------


def test_canonical_line_parses_back_as_a_range_with_its_band() -> None:
    band = Band(7, 19, (9, 3, 1, 0), "2026-01-02", "2026-02-10", "20", "55.5", ("Added the thing (30→31)",))
    line = render_band(band, program="perf", text_cap=320)
    # The upstream prompt's shape first ("### Iters 50–100 — ✅ (metrics 20→55): summary"), then our fields.
    assert line.startswith("### Iters 7–19 — ✅ 9 ❌ 3 ⚠️ 1 (metrics 20→55.5): Added the thing (30→31) · ")
    assert line.endswith(" · 2026-01-02…2026-02-10 · archive/perf/\n")
    parsed = parse_entry(line)
    assert isinstance(parsed, IterationRange)
    assert (parsed.first, parsed.last, parsed.metric_from, parsed.metric_to) == (7, 19, "20", "55.5")
    assert parse_canonical(line) == band
    assert render_band(parse_canonical(line) or band, program="perf", text_cap=320) == line


def test_canonical_line_without_metric_does_not_leak_a_band_from_its_summary() -> None:
    band = Band(3, 3, parts=("fillna (32→33)",))
    line = render_band(band, program=None, text_cap=100)
    assert line == "### Iters 3 — fillna (32 to 33) · archive/\n"  # one iteration: never "3–3"
    parsed = parse_entry(line)
    assert isinstance(parsed, IterationRange) and parsed.metric_from is None
    assert (parsed.first, parsed.last) == (3, 3)
    assert parse_canonical(line) == Band(3, 3, parts=("fillna (32 to 33)",))


@pytest.mark.parametrize(
    ("line", "band"),
    [
        (
            "### Iters 7–19 — ✅ 9 ❌ 3 ⚠️ 1 · 2026-01-02…2026-02-10 · metric 20→55.5 · Added the thing · archive/perf/",
            Band(7, 19, (9, 3, 1, 0), "2026-01-02", "2026-02-10", "20", "55.5", ("Added the thing",)),
        ),
        (
            "### Iters 1–142 — ✅ 4 ⚠️ 17 (+121 uncounted) · 2026-01-02 · metric 8→53 · work · archive/perf/",
            Band(1, 142, (4, 0, 17, 0), "2026-01-02", "2026-01-02", "8", "53", ("work",)),
        ),
        ("### Iters 3–3 — fillna (32 to 33) · archive/", Band(3, 3, parts=("fillna (32 to 33)",))),
        ("### Iters 1–5 — ✅ 5 · archive/demo/", Band(1, 5, (5, 0, 0, 0))),
    ],
)
def test_range_lines_statefile_wrote_before_are_still_understood(line: str, band: Band) -> None:
    """The earlier canonical shape (fields separated by ·, metric as "metric a→b") parses to the same band, and
    compaction rewrites it in the upstream shape only when it merges it with something else."""
    assert parse_canonical(line) == band
    parsed = parse_entry(line + "\n")
    assert isinstance(parsed, IterationRange) and (parsed.first, parsed.last) == (band.first, band.last)
    assert (parsed.metric_from, parsed.metric_to) == (band.metric_from, band.metric_to)
    rewritten = render_band(band, program="perf", text_cap=320)
    assert parse_canonical(rewritten) == band


def test_agent_range_shapes_are_understood() -> None:
    shapes = {
        "### Iters 84-93 -- 2026-05-16 -- ✅ (metrics 551->578%): Batch": (84, 93, "551", "578", "2026-05-16"),
        "### Iters 1–426: (0→191) core": (1, 426, "0", "191", None),
        "### Iterations 53–165 — Various features (condensed)": (53, 165, None, None, None),
        "### Iters 163–251 — ✅/⚠️ mix | metrics 508→534. PR merged": (163, 251, "508", "534", None),
        "- Iters 168-170: safeoutputs MCP tools not registered": (168, 170, None, None, None),
    }
    for heading, (first, last, low, high, day) in shapes.items():
        parsed = parse_entry(heading + "\n")
        assert isinstance(parsed, IterationRange), heading
        band = band_from_range(parsed)
        assert (band.first, band.last, band.metric_from, band.metric_to, band.date_from) == (
            first,
            last,
            low,
            high,
            day,
        )
        # The agent's words are kept; its header's fragments (dates, glyphs, the band) are fields of their own.
        assert band.parts and set(band.parts[0].replace(".", " ").split()) <= set(heading.replace(".", " ").split())
        assert "2026" not in band.parts[0] and "→" not in band.parts[0] and "->" not in band.parts[0]


def test_counts_of_a_band_with_agent_ranges_mark_the_uncounted_part() -> None:
    """Regression: a merged band over agent ranges (no statuses) showed counts that read as complete."""
    band = Band(1, 142, (4, 0, 17, 0), "2026-01-02", "2026-02-10", "8", "53", ("work",))
    line = render_band(band, program="perf", text_cap=320)
    assert line.startswith(
        "### Iters 1–142 — ✅ 4 ⚠️ 17 (+121 uncounted) (metrics 8→53): work · 2026-01-02…2026-02-10 ·"
    )
    parsed = parse_entry(line)
    assert isinstance(parsed, IterationRange)
    assert (parsed.first, parsed.last, parsed.metric_from, parsed.metric_to) == (1, 142, "8", "53")
    assert parse_canonical(line) == band
    assert render_band(band, program="perf", text_cap=320) == line
    # Complete counts, and no counts at all, carry no marker.
    assert "uncounted" not in render_band(Band(1, 21, (4, 0, 17, 0)), program=None, text_cap=0)
    assert render_band(Band(1, 142, parts=("agent text",)), program=None, text_cap=99).startswith(
        "### Iters 1–142 — agent text ·"
    )


def test_merged_range_over_agent_ranges_says_how_many_are_uncounted() -> None:
    agent = "### Iters 1–121 — ✅ (metrics 8→53): Foundation through categorical ops\n\n"
    doc = make_doc([*history_of_range(122, 152), agent])
    policy = CompactionPolicy(max_ranges=1)
    result = compact(doc, policy)
    (rng,) = result.document.ranges
    assert (rng.first, rng.last) == (1, 142)
    assert rng.heading.startswith("### Iters 1–142 — ✅ 21 (+121 uncounted) (metrics 8→242): ")
    assert (rng.metric_from, rng.metric_to) == ("8", "242")
    assert "Foundation through categorical ops" in rng.heading
    check_invariants(doc, result, policy)


def test_band_from_entries_counts_and_respects_direction() -> None:
    texts = [
        entry(1, "accepted", "10"),
        entry(2, "rejected", "12"),
        entry(3, "error", "N/A"),
        entry(4, "accepted", "8"),
        entry(5, "pending-ci", "7"),
    ]
    entries = [e for e in (parse_entry(t) for t in texts) if isinstance(e, Iteration)]
    higher = band_from_entries(entries, "higher", "s")
    assert higher.counts == (2, 1, 1, 1)
    assert (higher.metric_from, higher.metric_to) == ("9", "10")  # 8 is worse; 12 and 7 were not accepted
    lower = band_from_entries(entries, "lower", "s")
    assert (lower.metric_from, lower.metric_to) == ("9", "8")
    assert (higher.date_from, higher.date_to) == ("2026-03-02", "2026-03-06")


def test_merge_bands_adds_counts_widens_dates_and_keeps_texts_in_order() -> None:
    old = Band(1, 10, (3, 1, 0, 0), "2026-01-01", "2026-01-05", "5", "9", ("old text",))
    new = Band(11, 20, (1, 0, 2, 1), "2026-01-06", "2026-01-09", "9", "8", ("new text",))
    merged = merge_bands([new, old], "higher")
    assert (merged.first, merged.last, merged.counts) == (1, 20, (4, 1, 2, 1))
    assert (merged.date_from, merged.date_to, merged.metric_from, merged.metric_to) == (
        "2026-01-01",
        "2026-01-09",
        "5",
        "9",
    )
    assert merged.parts == ("old text", "new text")
    assert merge_bands([new, old], "lower").metric_to == "8"


def test_join_parts_shares_the_cap() -> None:
    parts = ["a" * 100, "b" * 100, "c" * 100]
    joined = join_parts(parts, 120)
    assert len(joined) <= 120 and "a" in joined and "b" in joined and "c" in joined
    many = [f"part {i} " + "x" * 30 for i in range(30)]
    assert join_parts(many, 120).startswith("… / ")
    assert "part 29" in join_parts(many, 120)
    assert join_parts(["short"], 0) == ""


def test_entries_summary_lists_accepted_changes_and_counts_the_rest() -> None:
    texts = [entry(i, "accepted", change=f"Add module_{i} — with many details here") for i in range(1, 30)]
    entries = [e for e in (parse_entry(t) for t in texts) if isinstance(e, Iteration)]
    summary = entries_summary(entries, 160)
    assert summary.startswith("Add module_1, Add module_2")
    assert len(summary) <= 160 and summary.endswith("more)")
    rejected = [e for e in (parse_entry(entry(1, "rejected", change="Try X")),) if isinstance(e, Iteration)]
    assert entries_summary(rejected, 160) == "tried: Try X"


# -- folding ---------------------------------------------------------------------------------------------------------


def test_entries_beyond_keep_recent_fold_into_one_range_line() -> None:
    doc = make_doc(history_of(15))
    result = compact(doc)
    after = result.document
    assert [e.number for e in after.iterations] == list(range(15, 5, -1))
    (rng,) = after.ranges
    assert (rng.first, rng.last) == (1, 5)
    assert rng.heading.startswith("### Iters 1–5 — ✅ 5 (metrics 100→105): Change number 1")
    assert rng.heading.endswith(" · 2026-03-02…2026-03-06 · archive/demo/")
    for n in range(1, 6):
        assert core(doc.history[15 - n].raw) in result.archive
    for old, new in zip(doc.history[:10], after.history[:10], strict=True):
        assert old.raw == new.raw  # the newest entries are untouched
    assert result.report.count("iteration") == 5 and not result.report.aggressive
    check_invariants(doc, result, CompactionPolicy())


def test_nothing_to_do_returns_the_same_document_and_no_archive() -> None:
    doc = make_doc(history_of(10))
    result = compact(doc)
    assert result.document is doc
    assert result.archive == ""
    assert not result.report.changed
    assert result.report.summary().startswith("nothing to compact")


def test_empty_and_odd_files_compact_without_error() -> None:
    for text in ("", "# just a title\n", new_state_file("x"), "no headings at all\n"):
        result = compact(parse(text))
        assert result.document.render() == text and result.archive == ""


def test_compact_does_not_modify_its_input() -> None:
    doc = make_doc(history_of(30))
    text = doc.render()
    compact(doc, CompactionPolicy(max_bytes=4000))
    assert doc.render() == text


def test_young_range_lines_grow_instead_of_piling_up() -> None:
    """Record-then-compact, iteration after iteration: range lines stay few and older ones are broader."""
    policy = CompactionPolicy()
    doc = make_doc(history_of(10))
    for n in range(11, 140):
        doc = doc.with_entry(entry(n, "accepted" if n % 3 else "rejected"))
        result = compact(doc, policy)
        check_invariants(doc, result, policy) if n % 16 == 0 else None
        doc = result.document
        assert len(doc.iterations) == 10
        assert len(doc.ranges) <= policy.max_ranges
    spans = [r.last - r.first + 1 for r in doc.ranges]  # newest first
    assert spans[-1] >= spans[0]
    assert all(span >= 2 for span in spans[1:])
    covered = sorted(n for a, b in intervals(doc) for n in range(a, b + 1))
    assert covered == list(range(1, 140))


def test_too_many_ranges_merge_into_broader_older_bands() -> None:
    ranges_text = [f"### Iters {a}–{a + 9} — ✅ (metrics {a}→{a + 9}): batch {a}\n\n" for a in range(1, 80, 10)]
    doc = make_doc(history_of_range(81, 90) + ranges_text[::-1])
    result = compact(doc)
    after = result.document
    assert len(after.ranges) == 5
    assert [(r.first, r.last) for r in after.ranges][-1][0] == 1
    assert after.ranges[0].raw == doc.ranges[0].raw  # the newest agent range was left alone
    merged = [r for r in after.ranges if "archive/demo/" in r.heading]
    assert merged and all(" / " in r.heading for r in merged)  # merged lines keep both agents' texts
    assert "batch 1" in after.ranges[-1].heading
    check_invariants(doc, result, CompactionPolicy())


def test_first_fold_of_a_long_file_makes_bands_broader_going_back() -> None:
    """Regression: the first compaction of samples/long-running.md made one `### Iters 1–230` band."""
    doc = parse(read_raw(SAMPLES / "long-running.md"))
    policy = CompactionPolicy()
    result = compact(doc, policy)
    spans = [(r.first, r.last) for r in result.document.ranges]  # newest first
    assert spans == [(221, 230), (201, 220), (161, 200), (81, 160), (1, 80)]
    assert all(r.heading.endswith("archive/long-running/") for r in result.document.ranges)
    assert compact(parse(read_raw(SAMPLES / "long-running.md")), policy).document.render() == (result.document.render())
    check_invariants(doc, result, policy)  # includes: compacting again changes nothing


@pytest.mark.parametrize("iterations", [25, 31, 100, 1000])
def test_fresh_folds_never_put_newer_history_in_broader_bands(iterations: int) -> None:
    doc = make_doc(history_of(iterations))
    policy = CompactionPolicy(max_bytes=10**7)
    result = compact(doc, policy)
    widths = [r.last - r.first + 1 for r in result.document.ranges]  # newest first
    assert 1 <= len(widths) <= policy.max_ranges and sum(widths) == iterations - policy.keep_recent
    assert widths == sorted(widths)
    assert len(widths) > 1 or iterations - policy.keep_recent < 2 * policy.band_span
    check_invariants(doc, result, policy)


def test_bands_keep_widening_going_back_as_iterations_are_recorded() -> None:
    """After the first fold, one new entry per iteration: at most max_ranges bands, never broader when newer."""
    policy = CompactionPolicy()
    doc = compact(parse(read_raw(SAMPLES / "long-running.md")), policy).document
    for n in range(241, 361):
        doc = doc.with_entry(entry(n, "accepted" if n % 3 else "error"))
        result = compact(doc, policy)
        if n % 30 == 0:
            check_invariants(doc, result, policy)
        doc = result.document
        widths = [r.last - r.first + 1 for r in doc.ranges]  # newest first
        assert len(widths) <= policy.max_ranges and widths == sorted(widths), (n, widths)
        assert len(doc.iterations) == policy.keep_recent
    assert [(r.first, r.last) for r in doc.ranges][-1] == (1, 80)  # the oldest band grows last


def test_interleaved_pair_entries_are_never_cut_apart() -> None:
    """``Iteration 5 & 48`` reaches across where a band would be cut: the cut must not split what it spans."""
    pair = "### Iteration 5 & 48 — ✅ two at once\n\n"
    history = [e for e in history_of(60) if not e.startswith("### Iteration 5 ")]
    doc = make_doc([pair if e.startswith("### Iteration 48 ") else e for e in history])
    policy = CompactionPolicy(keep_recent=2, max_bytes=10**7)
    result = compact(doc, policy)
    assert [(r.first, r.last) for r in result.document.ranges] == [(49, 58), (5, 48), (1, 4)]
    check_invariants(doc, result, policy)


def history_of_range(low: int, high: int) -> list[str]:
    return [entry(i) for i in range(high, low - 1, -1)]


def test_overlapping_agent_ranges_merge_keeping_both_texts() -> None:
    doc = make_doc(
        [
            *history_of_range(166, 169),
            "### Iterations 53–165 — Various features (condensed)\n\n",
            "### Iters 155–164 — ✅ Various features, some local-only commits\n\n",
            "### Iters 53–154 — ✅ (metrics 8→53): Foundation through categorical ops\n\n",
            "### Iterations 1–52 — ✅ Earlier work on diverged branches\n\n",
        ]
    )
    result = compact(doc)
    ranges_out = result.document.ranges
    assert [(r.first, r.last) for r in ranges_out] == [(53, 165), (1, 52)]
    heading = ranges_out[0].heading
    assert "Foundation through categorical ops" in heading and "Various features" in heading
    assert (ranges_out[0].metric_from, ranges_out[0].metric_to) == ("8", "53")
    assert ranges_out[1].raw == doc.ranges[-1].raw
    for old in doc.ranges[:3]:
        assert core(old.raw) in result.archive
    check_invariants(doc, result, CompactionPolicy())


def test_detailed_entry_inside_a_range_folds_into_it() -> None:
    doc = make_doc(
        [entry(94), entry(93), "### Iters 84-93 -- 2026-05-16 -- ✅ (metrics 551->578%): Batch-registered files\n\n"]
    )
    result = compact(doc)
    assert [e.number for e in result.document.iterations] == [94]
    (rng,) = result.document.ranges
    assert (rng.first, rng.last) == (84, 93)
    assert "Batch-registered files" in rng.heading and "✅ 1" in rng.heading
    assert core(doc.history[1].raw) in result.archive
    check_invariants(doc, result, CompactionPolicy())


def test_partial_duplicate_goes_to_the_archive() -> None:
    partial = entry(261).replace("### Iteration 261 —", "### Iteration 261 (partial) —")
    doc = make_doc([entry(262), entry(261), partial, entry(260)])
    result = compact(doc)
    assert [e.number for e in result.document.iterations] == [262, 261, 260]
    assert not any(e.partial for e in result.document.iterations)
    assert core(partial) in result.archive
    assert [m.kind for m in result.report.moved] == ["iteration"]


def test_opaque_entries_stay_after_their_predecessor() -> None:
    opaque = "### Notes from the maintainer\n\nKeep this here.\n\n"
    history = history_of_range(3, 14)
    history.insert(3, opaque)  # after iteration 12
    history.append(opaque.replace("maintainer", "agent"))  # after the oldest entry, which folds
    doc = make_doc(history)
    result = compact(doc)
    after = result.document.history
    headings = [e.heading for e in after]
    assert headings.index("### Notes from the maintainer") == 3
    assert headings[-1] == "### Notes from the agent"
    assert after[-2].kind == "range"
    check_invariants(doc, result, CompactionPolicy())


def test_section_rule_after_the_history_stays_in_the_file() -> None:
    text = make_doc(history_of(13)).render() + "\n---\n\n## Appendix\n\nMaintainer notes.\n"
    doc = parse(text)
    result = compact(doc)
    out = result.document.render()
    assert out.endswith("\n\n---\n\n## Appendix\n\nMaintainer notes.\n")
    assert "---" not in result.archive
    assert result.document.sections[-1].text == doc.sections[-1].text


def test_crlf_files_get_crlf_range_lines() -> None:
    doc = parse(make_doc(history_of(12)).render().replace("\n", "\r\n"))
    result = compact(doc)
    out = result.document.render()
    assert "\n" not in out.replace("\r\n", "")
    assert result.document.ranges[0].raw.endswith("\r\n")
    assert compact(result.document).document.render() == out


def test_program_name_comes_from_title_then_argument() -> None:
    doc = make_doc(history_of(12), program="perf-comparison")
    assert program_name(doc) == "perf-comparison"
    assert "archive/perf-comparison/" in compact(doc).document.ranges[0].heading
    assert "archive/other/" in compact(doc, program="other").document.ranges[0].heading
    assert "archive/pol/" in compact(doc, CompactionPolicy(program="pol")).document.ranges[0].heading


def test_misplaced_history_is_compacted_in_place() -> None:
    text = make_doc(history_of(14)).render().replace("## 📊 Iteration History\n", "")
    doc = parse(text)
    assert doc.history_misplaced
    result = compact(doc)
    assert result.document.history_misplaced
    assert len(result.document.iterations) == 10
    check_invariants(doc, result, CompactionPolicy())


# -- aggressive mode, last resort and the budget -------------------------------------------------------------------


def test_aggressive_mode_lands_under_low_water() -> None:
    long_notes = [entry(i, change=f"Change {i} " + "detail " * 400) for i in range(40, 0, -1)]
    doc = make_doc(long_notes)
    policy = CompactionPolicy(max_bytes=30720)
    result = compact(doc, policy)
    assert result.report.aggressive and not result.report.last_resort
    assert len(result.document.iterations) == policy.keep_recent_aggressive
    assert result.document.size <= policy.low_water_bytes
    assert "(aggressive)" in result.report.summary()
    check_invariants(doc, result, policy)


def test_last_resort_folds_recent_entries_when_needed() -> None:
    huge = [entry(i, change="x " * 1500) for i in range(6, 0, -1)]
    doc = make_doc(huge)
    policy = CompactionPolicy(max_bytes=8192)
    result = compact(doc, policy)
    assert result.report.last_resort
    assert result.document.size <= 8192
    assert len(result.document.iterations) < policy.keep_recent_aggressive
    check_invariants(doc, result, policy)


def record(
    doc: StateDocument, change: str = "Cache the parsed frames", notes: str = "Faster."
) -> tuple[StateDocument, str]:
    """``doc`` with a new detailed entry after the highest iteration, as `statefile record` does, and its text."""
    n = doc.highest_iteration + 1
    text = render_iteration(
        number=n,
        when="2026-06-01 12:00",
        status="accepted",
        change=change,
        metric="600",
        previous_best="590",
        delta="+10",
        commit="abc1234",
        notes=notes,
    )
    new = doc.with_entry(text)
    return new, new.history[0].raw  # as written: a bullet-form history gets a bullet-form entry


def unpinned(doc: StateDocument, kind: str) -> list[str]:
    return [i.text for i in doc.list_items(kind) if not is_pinned(i.text) and not is_placeholder(i.text)]


def check_last_resort_keeps_the_entry_just_recorded(text: str) -> None:
    doc, newest = record(parse(text))
    policy = CompactionPolicy(max_bytes=3000)
    result = compact(doc, policy)
    assert result.report.last_resort
    assert [core(e.raw) for e in result.document.iterations] == [core(newest)]
    assert result.report.count("lesson") > 0  # lessons went before the newest entry did
    check_invariants(doc, result, policy)


def test_last_resort_keeps_the_entry_just_recorded() -> None:
    """Regression: under a tight budget the last resort folded the newest entry while lessons could still go."""
    check_last_resort_keeps_the_entry_just_recorded(fixture_text("headless-entry-time-span-ranges.md"))


def test_last_resort_keeps_the_entry_just_recorded_real() -> None:
    check_last_resort_keeps_the_entry_just_recorded(read_raw(real_file("b18c37b")))


@pytest.mark.parametrize("path", corpus_params())
def test_newest_entry_folds_only_when_nothing_else_can_move(path: Path) -> None:
    doc = parse(read_raw(path))
    doc, newest = record(doc)
    policy = CompactionPolicy(max_bytes=3000)
    try:
        result = compact(doc, policy)
    except BudgetError:
        return
    after = result.document
    if core(newest) in {core(e.raw) for e in after.iterations}:
        return
    # Folded: then every other entry, range text, unpinned lesson and avenue must already be gone.
    assert not after.iterations
    assert len(after.ranges) <= 1
    assert not unpinned(after, "lessons") and not unpinned(after, "foreclosed")
    check_invariants(doc, result, policy)


def test_last_resort_order_lessons_before_the_newest_entry_then_the_entry() -> None:
    lessons = ["- 📌 Never force-push the branch.", *[f"- Lesson {i} about subsystem {i}." for i in range(8)]]
    fits = make_doc(history_of(30), lessons=lessons)
    fits, newest = record(fits, change="Big change " + "word " * 150)
    policy = CompactionPolicy(max_bytes=2600)
    result = compact(fits, policy)
    assert [core(e.raw) for e in result.document.iterations] == [core(newest)]
    assert len(result.document.ranges) == 1
    assert result.report.count("lesson") > 0  # lessons went, the entry just recorded stayed
    check_invariants(fits, result, policy)
    # When even that is not enough, the newest entry folds as the very last step (its text is in the archive)...
    huge = make_doc(history_of(3), lessons=lessons)
    huge, newest = record(huge, change="Huge change " + "word " * 600)
    result = compact(huge, CompactionPolicy(max_bytes=3000))
    assert not result.document.iterations and result.report.last_resort
    assert core(newest) in result.archive
    # ... and what went before it comes back where it fits again: here every lesson.
    assert len(result.document.list_items("lessons")) == len(lessons) and result.report.count("lesson") == 0
    check_invariants(huge, result, CompactionPolicy(max_bytes=3000))
    tight = CompactionPolicy(max_bytes=1750)
    result = compact(huge, tight)
    kept = [i.text.rstrip("\n") for i in result.document.list_items("lessons")]
    assert not result.document.iterations and kept[0] == lessons[0] and 1 < len(kept) < len(lessons)
    assert kept[1:] == lessons[len(lessons) - len(kept) + 1 :]  # the oldest unpinned went, only as far as needed
    check_invariants(huge, result, tight)


def test_budget_error_names_the_sections_and_what_to_do() -> None:
    doc = make_doc(history_of(20), priorities="Steer: " + "please focus on speed. " * 600)
    with pytest.raises(BudgetError) as caught:
        compact(doc, CompactionPolicy(max_bytes=8192))
    error = caught.value
    assert isinstance(error, CompactionBudgetError)
    message = str(error)
    assert "\n" not in message
    assert "over max_bytes 8,192" in message and "🎯 Current Priorities" in message
    assert "[maintainer-owned]" in message and "⚙️ Machine State" in message
    assert "raise max_bytes" in message
    sizes = dict((label, size) for label, size, _ in error.sections)
    assert sizes["🎯 Current Priorities"] > 8192
    assert error.size > error.max_bytes == 8192


def test_budget_error_names_an_overlong_machine_state_value_not_the_maintainer_text() -> None:
    """A 40 KB pause reason (a pasted log): the advice named '🎯 Current Priorities' (203 bytes) instead."""
    doc = make_doc(history_of(5)).with_fields({"pause_reason": "log-line-" * 4000})
    with pytest.raises(CompactionBudgetError) as caught:
        compact(doc, CompactionPolicy(max_bytes=8192), program="perf")
    message = str(caught.value)
    assert "'Pause Reason' value alone 36,000 bytes" in message and "statefile edit perf" in message
    assert "shorten maintainer-owned text" not in message and "\n" not in message
    # An ordinary table in a budget too small for the maintainer's text: that text is what to shorten.
    with pytest.raises(CompactionBudgetError) as small:
        compact(parse(new_state_file("perf")), CompactionPolicy(max_bytes=1300), program="perf")
    assert "shorten maintainer-owned text such as" in str(small.value) and "value alone" not in str(small.value)


def test_maintainer_sections_are_never_touched_even_when_large() -> None:
    doc = make_doc(history_of(60), priorities="Focus: " + "speed. " * 400)
    policy = CompactionPolicy(max_bytes=8192)
    result = compact(doc, policy)
    assert result.document.section("priorities") == doc.section("priorities")
    check_invariants(doc, result, policy)


# -- lessons ----------------------------------------------------------------------------------------------------------


def lessons_after(result: Any) -> list[str]:
    return [item.text.rstrip("\n") for item in result.document.list_items("lessons")]


def test_duplicate_lessons_collapse_to_the_newest_wording() -> None:
    lessons = [
        "- Use typed arrays for the hot loop of the CSV parser.",
        "- Benchmarks vary by 5%; run them twice.",
        "- **Use typed arrays for the hot loop of the CSV parser!**",
        "- Use typed arrays for the hot loop in the CSV parser.",
    ]
    doc = make_doc(history_of(1), lessons=lessons)  # one entry: nothing older to fold before the lessons
    assert lessons_after(compact(doc)) == lessons  # it fits: every lesson stays, duplicates too
    assert lessons_after(compact(doc, CompactionPolicy(max_bytes=doc.size))) == lessons  # above 80%: still all
    policy = CompactionPolicy(max_bytes=doc.size - 60)  # over budget: the duplicates go before anything else
    result = compact(doc, policy)
    assert lessons_after(result) == [lessons[1], lessons[3]]
    assert f"*(duplicate of a newer lesson)*\n{lessons[0]}\n" in result.archive
    assert f"*(duplicate of a newer lesson)*\n{lessons[2]}\n" in result.archive
    check_invariants(doc, result, policy)


def test_pinned_lessons_are_never_removed() -> None:
    lessons = [
        "- 📌 Never force-push the branch.",
        "- Never force-push the branch.",
        "- <!-- pin --> Keep CI green before merging.",
        *[f"- Lesson number {i} about topic {i}." for i in range(30)],
    ]
    doc = make_doc(history_of(3), lessons=lessons)
    policy = CompactionPolicy(max_lessons=5)
    result = compact(doc, policy)
    kept = lessons_after(result)
    assert kept[:2] == ["- 📌 Never force-push the branch.", "- <!-- pin --> Keep CI green before merging."]
    assert len(kept) == 5 and kept[-1] == "- Lesson number 29 about topic 29."
    assert "*(duplicate of a pinned lesson)*\n- Never force-push the branch.\n" in result.archive
    assert "*(beyond the newest 5 lessons)*\n- Lesson number 0 about topic 0.\n" in result.archive
    check_invariants(doc, result, policy)


def test_lessons_stay_while_the_file_is_under_budget() -> None:
    """Regression: lessons were capped at 20 whatever the size; upstream prunes them to keep the file under budget."""
    lessons = [f"- Lesson number {i} about topic {i}." for i in range(40)]
    doc = make_doc(history_of(15), lessons=lessons)
    result = compact(doc)
    assert result.report.count("iteration") == 5  # the history still folds
    assert lessons_after(result) == lessons
    assert result.report.count("lesson") == 0


TOPICS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "chi",
    "psi",
    "omega",
    "radix",
    "merge",
    "heap",
    "trie",
    "bloom",
    "skiplist",
    "treap",
]


def test_under_pressure_the_oldest_lessons_go_first_and_important_ones_last() -> None:
    lessons = [
        "- **IMPORTANT**: never benchmark on a cold cache (lesson 0).",
        "- **CRITICAL**: the CI runner has 2 cores (lesson 1).",
        *[f"- Lesson {i}: {TOPICS[i]} behaves differently from what {TOPICS[i - 1]} suggested." for i in range(2, 30)],
        "- 📌 Keep the CSV fixture small (lesson 30).",
    ]
    doc = make_doc(history_of(1), lessons=lessons)  # one entry: nothing older to fold before the lessons
    kept_all = compact(doc).document.size
    above = compact(doc, CompactionPolicy(max_bytes=int(kept_all / 0.8) - 150))
    assert above.report.aggressive and lessons_after(above) == lessons  # above the threshold, but it fits: all stay
    policy = CompactionPolicy(max_bytes=kept_all - 150)  # over budget: a few lessons must go
    result = compact(doc, policy)
    kept = lessons_after(result)
    gone = [text for text in lessons if text not in kept]
    assert gone and len(gone) <= 3  # only as many as the budget needs
    assert lessons[0] in kept and lessons[1] in kept and lessons[-1] in kept  # important and pinned stay
    assert gone == lessons[2 : 2 + len(gone)]  # the oldest unmarked ones, in order
    for text in gone:
        assert text in result.archive
    assert "(the file was over its byte budget)" in result.archive
    check_invariants(doc, result, policy)
    # Important lessons do go once every unmarked one has: they are last, not exempt.
    squeezed = CompactionPolicy(max_bytes=kept_all - 1500)
    tighter = lessons_after(compact(doc, squeezed))
    unmarked = [t for t in lessons[2:-1] if t in tighter]
    assert lessons[-1] in tighter
    assert unmarked == lessons[-1 - len(unmarked) : -1]  # the newest unmarked ones are the ones left
    assert not unmarked or (lessons[0] in tighter and lessons[1] in tighter)


def _record_one(doc: StateDocument) -> StateDocument:
    from statefile.policy.rules import RecordRequest, record

    return record(
        doc,
        RecordRequest("accepted", metric=1, change="one more"),
        program="p",
        now=datetime(2026, 11, 23, tzinfo=timezone.utc),
    )


@pytest.mark.parametrize("path", corpus_params())
def test_a_record_keeps_every_lesson_when_the_result_is_under_budget(path: Path) -> None:
    """Done-when of issue 13: a record on each real file (and each fixture) keeps every lesson under budget."""
    doc = parse(read_raw(path))
    try:
        recorded = _record_one(doc)
        result = compact(recorded, CompactionPolicy(program="p"))
    except (BudgetError, statefile.InvalidDataError):
        pytest.skip("this file cannot take a record (unclosed block, or over budget even compacted)")
    if result.document.size > result.report.max_bytes:
        pytest.skip("over budget")
    before = [i.text for i in recorded.list_items("lessons") if not is_placeholder(i.text)]
    after = [i.text for i in result.document.list_items("lessons") if not is_placeholder(i.text)]
    assert after == before
    avenues = [i.text for i in recorded.list_items("foreclosed") if not is_placeholder(i.text)]
    if not result.report.aggressive:  # above the aggressive threshold a long avenue list consolidates, by design
        assert [i.text for i in result.document.list_items("foreclosed") if not is_placeholder(i.text)] == avenues


def test_newest_first_lesson_lists_lose_their_bottom() -> None:
    lessons = [f"- **Iteration {n}**: found fact {n} about module {n}." for n in range(40, 10, -1)]
    doc = make_doc(history_of(3), lessons=lessons)
    result = compact(doc, CompactionPolicy(max_lessons=20))
    kept = lessons_after(result)
    assert kept[0].startswith("- **Iteration 40**") and kept[-1].startswith("- **Iteration 21**")


def test_lessons_expire_with_the_reason_in_the_archive() -> None:
    lessons = [
        "- Retry flaky tests once (expires 2026-01-31).",
        "- 📌 Keep the cache warm (expires 2026-01-01).",
        "- Use the new API (expires 2026-12-31).",
    ]
    doc = make_doc(history_of(3), lessons=lessons)
    assert compact(doc).archive == ""  # no today: nothing expires
    result = compact(doc, CompactionPolicy(today=date(2026, 2, 1)))
    assert lessons_after(result) == lessons[1:]
    assert "*(expired 2026-01-31)*\n- Retry flaky tests once (expires 2026-01-31).\n" in result.archive
    assert result.report.moved[0].reason == "expired 2026-01-31"
    check_invariants(doc, result, CompactionPolicy(today=date(2026, 2, 1)))


def test_today_may_be_a_datetime() -> None:
    policy = CompactionPolicy(today=datetime(2026, 2, 1, 12, 0, tzinfo=timezone.utc))
    assert policy.today == date(2026, 2, 1)
    doc = make_doc(history_of(3), lessons=["- Retry flaky tests once (expires 2026-01-31)."])
    assert compact(doc, policy).report.moved[0].reason == "expired 2026-01-31"


def test_all_lessons_gone_leaves_the_placeholder() -> None:
    doc = make_doc(history_of(3), lessons=["- Old fact (expires 2020-01-01)."])
    result = compact(doc, CompactionPolicy(today=date(2026, 1, 1)))
    assert lessons_after(result) == ["- *(none yet)*"]


# -- foreclosed avenues -----------------------------------------------------------------------------------------------


def test_foreclosed_avenues_consolidate_beyond_a_page() -> None:
    avenues = [
        f"- Caching module {i} globally: invalidation bugs in concurrent runs, measured in run {i}." for i in range(40)
    ]
    avenues.append("- Rewriting the parser in WebAssembly: build complexity outweighed a 3% gain.")
    doc = make_doc(history_of(3), foreclosed=avenues)
    assert compact(doc).archive == ""  # under budget, a long list stays as it is
    result = compact(doc, CompactionPolicy(max_bytes=doc.size))
    kept = [item.text.rstrip("\n") for item in result.document.list_items("foreclosed")]
    assert len(kept) == 2
    assert kept[0].endswith("run 39. *(+39 similar in archive)*")
    assert kept[1] == avenues[-1]
    assert avenues[0] in result.archive
    again = compact(result.document, CompactionPolicy(max_bytes=doc.size))
    assert again.document.render() == result.document.render()


def test_pinned_foreclosed_avenues_survive_consolidation() -> None:
    avenues = [
        f"- Caching module {i} globally: invalidation bugs in concurrent runs, measured in run {i}." for i in range(40)
    ]
    avenues[0] = "- 📌 " + avenues[0][2:]
    doc = make_doc(history_of(3), foreclosed=avenues)
    result = compact(doc, CompactionPolicy(max_bytes=doc.size))
    kept = [item.text.rstrip("\n") for item in result.document.list_items("foreclosed")]
    assert kept == [avenues[0]]
    assert "*(duplicate of a pinned avenue)*" in result.archive


def test_short_foreclosed_lists_are_left_alone() -> None:
    avenues = ["- Caching X globally: bugs.", "- Caching Y globally: bugs."]
    doc = make_doc(history_of(3), foreclosed=avenues)
    assert compact(doc).archive == ""


# -- which bullets leave (plan_list) ---------------------------------------------------------------------------------

MAINTAINER = "- Rewriting the parser in assembly was slower: the branch predictor could not keep up\n"
AGENT = (
    "- " + agent_bullet("Rewriting the parser in assembly was faster: the branch predictor kept up", "agent", 12) + "\n"
)


def test_a_near_duplicate_agent_bullet_never_replaces_the_maintainers() -> None:
    """Found by a cold review: the newest of a similar group was kept, and an agent's report is always the newest,
    so a report that echoed a maintainer's avenue sent the maintainer's words to the archive."""
    plan = plan_list([MAINTAINER, AGENT], "avenue", collapse=True, similarity=0.5, limit=None, newest_last=True)
    assert set(plan.remove) == {1} and "maintainer's" in plan.remove[1]
    assert set(plan.rewrite) == {0}  # the maintainer's bullet stands for the group
    lessons = plan_list([MAINTAINER, AGENT], "lesson", collapse=True, similarity=0.5, limit=None, newest_last=True)
    assert set(lessons.remove) == {1}


def test_agent_bullets_go_first_when_a_list_is_cut() -> None:
    texts = [f"- Maintainer lesson {n}: keep the cache warm for table {n}\n" for n in range(4)]
    texts += ["- " + agent_bullet(f"agent idea {n} about vectors", "agent", 20 + n) + "\n" for n in range(3)]
    plan = plan_list(texts, "lesson", collapse=True, similarity=0.99, limit=4, newest_last=True)
    assert set(plan.remove) == {4, 5, 6}
    plan = plan_list(texts, "lesson", collapse=True, similarity=0.99, limit=2, newest_last=True)
    assert set(plan.remove) == {0, 1, 4, 5, 6}  # then the oldest maintainer bullets, as before


# -- the summarizer hook -------------------------------------------------------------------------------------


def test_summarizer_gets_plain_dicts_and_a_short_answer_is_used() -> None:
    calls: list[list[dict[str, Any]]] = []

    def summarizer(entries: list[dict[str, Any]]) -> str:
        calls.append(entries)
        return "five good changes"

    doc = make_doc(history_of(15))
    result = compact(doc, CompactionPolicy(summarizer=summarizer))
    assert len(calls) == 1
    assert [d["number"] for d in calls[0]] == [1, 2, 3, 4, 5]
    assert set(calls[0][0]) == {"number", "when", "status", "metric", "change", "notes"}
    assert calls[0][0]["change"] == "Change number 1" and calls[0][0]["status"] == "accepted"
    assert "(metrics 100→105): five good changes ·" in result.document.ranges[0].heading
    assert compact(result.document, CompactionPolicy(summarizer=summarizer)).archive == ""
    assert len(calls) == 1  # no new range line, no call


@pytest.mark.parametrize(
    "answer",
    [None, "", "   ", "two\nlines", "x" * 200, "z" * 83],  # 83: as long as the deterministic summary
)
def test_unusable_summaries_fall_back_to_the_deterministic_one(answer: str | None) -> None:
    doc = make_doc(history_of(15))
    expected = compact(doc).document.render()
    assert compact(doc, CompactionPolicy(summarizer=lambda _: answer)).document.render() == expected


def test_a_failing_summarizer_falls_back() -> None:
    def broken(_: list[dict[str, Any]]) -> str:
        raise RuntimeError("model timed out")

    doc = make_doc(history_of(15))
    assert compact(doc, CompactionPolicy(summarizer=broken)).document.render() == compact(doc).document.render()


# -- the corpus and the report -------------------------------------------------------------------------------


def check_agent_ranges_compact(apm: str, newest: int, band: tuple[str, str], messy: str) -> None:
    """A range line written over a detailed entry folds it in; overlapping ranges and entries get resolved."""
    result = compact(parse(apm))
    assert [e.number for e in result.document.iterations] == [newest]
    assert result.document.ranges[0].heading.startswith(band[0])
    assert result.document.ranges[0].heading.endswith(band[1])
    assert not [w for w in result.document.warnings if w.code == "range-overlaps-entry"]
    before = parse(messy)
    assert {w.code for w in before.warnings} >= {"overlapping-ranges", "range-overlaps-entry"}
    cleaned = compact(before).document
    assert not {w.code for w in cleaned.warnings} & {
        "overlapping-ranges",
        "range-overlaps-entry",
        "duplicate-iteration",
    }


def test_corpus_shapes_compact_as_expected() -> None:
    check_agent_ranges_compact(
        fixture_text("ascii-dashes-range-overlap.md"),
        71,
        (
            "### Iters 61–70 — ✅ 1 (+9 uncounted) (metrics 318→339.87): ",
            " · 2026-08-03 · archive/java-to-kotlin-migration/",
        ),
        fixture_text("paused-overlapping-ranges.md"),
    )


def test_corpus_shapes_compact_as_expected_real() -> None:
    check_agent_ranges_compact(
        read_raw(real_file("idx55619624306")),
        94,
        (
            "### Iters 84–93 — ✅ 1 (+9 uncounted) (metrics 551→578.77): ",
            " · 2026-05-16 · archive/python-to-go-migration/",
        ),
        read_raw(real_file("f1d81ce")),
    )


def test_report_as_dict_and_summary() -> None:
    result = compact(make_doc(history_of(15)))
    data = result.report.as_dict()
    assert data["bytes_before"] > data["bytes_after"] and data["aggressive"] is False and data["changed"] is True
    assert len(data["moved"]) == 5 and data["moved"][0]["kind"] == "iteration"
    assert data["ranges_written"][0].startswith("### Iters 1–5")
    assert "moved 5 iterations" in result.report.summary()


def test_synthetic_state_is_deterministic_and_well_formed() -> None:
    text = synthetic_state("demo", 25, seed=4, direction="lower", agent_ranges=3)
    assert text == synthetic_state("demo", 25, seed=4, direction="lower", agent_ranges=3)
    assert text != synthetic_state("demo", 25, seed=5, direction="lower", agent_ranges=3)
    doc = parse(text)
    assert doc.machine_state["iteration_count"] == 25 and doc.machine_state["metric_direction"] == "lower"
    assert len(doc.iterations) == 12 and len(doc.ranges) == 3
    assert sorted(n for a, b in intervals(doc) for n in range(a, b + 1)) == list(range(1, 26))
    assert not doc.warnings
    with pytest.raises(UsageError):
        synthetic_state("demo", -1)


def test_merged_range_lines_are_canonical_without_old_header_fragments() -> None:
    """As seen (issue 22): a merged line kept its parts' old headers, ``… (condensed) / 2026-05-20/31 -- ✅ (metrics
    0.80->0.866): …``.  Merged, it is statefile's shape: the metric band and date span in their own fields, and the
    summary only the agents' words."""
    doc = make_doc(
        [
            *history_of_range(40, 43),
            "### Iters 31–39 -- 2026-05-20/31 -- ✅ (metrics 0.80->0.866): Tune the row cache\n\n",
            "### Iterations 20–35 — Various features (condensed)\n\n",
            "### Iters 1–19 — 2026-05-01 — ✅ (metrics 0.5→0.8): Baseline harness\n\n",
        ]
    )
    result = compact(doc)
    [merged, *_] = [r for r in result.document.ranges if r.first <= 31 <= r.last]
    heading = merged.heading
    band = parse_canonical(heading)
    assert band is not None, heading  # statefile's own line, read back exactly
    assert "Tune the row cache" in heading and "Various features" in heading
    for fragment in ("(condensed)", "2026-05-20/31", "--", "->", "✅ (metrics"):
        assert fragment not in heading, (fragment, heading)
    assert (band.metric_to, band.date_to) == ("0.866", "2026-05-31"), heading
    assert all("2026" not in part and "✅" not in part for part in band.parts[0].split(" / "))
    # A line already merged that way by an earlier version is cleaned when it merges again.
    old = (
        "### Iters 20–39 — (metrics 0.80→0.866): Various features (condensed) / 2026-05-20/31 -- ✅ (metrics "
        "0.80->0.866): Tune the row cache · archive/perf/\n\n"
    )
    again = compact(make_doc([*history_of_range(40, 43), old, "### Iters 15–25 — ✅ overlap\n\n"]))
    [line] = [r.heading for r in again.document.ranges if r.first <= 20 <= r.last]
    assert "Various features / Tune the row cache" in line and "2026-05-20/31" not in line, line
    assert "(condensed)" not in line and "->" not in line, line


def test_a_section_holding_a_copy_of_the_entries_is_left_alone() -> None:
    """The false oracle: a `</details>` line opens an HTML block that swallows a history heading, so Current
    Priorities holds a verbatim copy of the entries; compaction must leave that copy (maintainer text) alone."""
    entries = "".join(entry_text(n, metric=str(n)) for n in range(30, 0, -1))
    text = state_file_text(entries)
    text = text.replace("*(No specific priorities set — agent is exploring freely.)*\n",
                        "</details>\n## 📊 Iteration History\n\n" + entries)  # fmt: skip
    before = parse(text)
    priorities = before.section("priorities")
    assert priorities is not None and priorities.text.endswith(entries + "\n---\n\n")
    result = check(text, CompactionPolicy(max_bytes=8192))
    assert result is not None and result.report.changed
    after = result.document.section("priorities")
    assert after is not None and after.text == priorities.text


def test_a_file_with_decorated_headings_compacts_under_budget() -> None:
    """As seen in issue 11: a file with decorated headings compacts under budget."""
    text = state_file_text("".join(entry_text(n, metric=str(n)) for n in range(60, 0, -1)))
    lessons_ = "\n".join(f"- Lesson {n}: use typed arrays for kernel {n} (iteration {n})." for n in range(40))
    text = text.replace("- *(none yet)*", lessons_, 1)
    text = text.replace("## 📚 Lessons Learned", "## [agent] 4. 🧠 Key Lessons (pruned)")
    text = text.replace("## 📊 Iteration History", "## 5) 📜 Recent Iterations — newest first")
    doc = parse(text)
    assert doc.section("lessons") is not None and len(doc.history) == 60
    result = check(text, CompactionPolicy(max_bytes=8192))
    assert result is not None and result.document.size <= 8192
    assert covered_numbers(result.document.render()) == set(range(1, 61))


def test_minimize_moves_best_metric_and_the_range_line_together() -> None:
    """As seen in issue 11: minimize moves best metric and the range line together."""
    doc = parse(new_state_file("perf", metric_direction="minimize"))
    for n, metric in enumerate([99, 90, 85, 88, 95, 91, 87, 86, 93, 89, 92, 94, 96], start=1):
        status = "accepted" if n <= 3 else "rejected"
        doc = rules_record(doc, RecordRequest(status, metric=metric, change=f"try {n}"), program="perf", now=FIXED_NOW)
    assert doc.machine_state["best_metric"] == "85"
    folded = compact(doc, CompactionPolicy(keep_recent=2)).document
    line = next(r.heading for r in folded.ranges if r.first == 1)
    assert "(metrics 99→85)" in line, line


def test_compaction_keeps_a_missing_final_newline() -> None:
    """As seen in issue 11: compaction keeps a missing final newline."""
    text = (
        state_file_text("".join(entry_text(n, metric=str(n)) for n in range(14, 0, -1))).replace("\n", "\r\n").rstrip()
    )
    result = compact(parse(text), CompactionPolicy(keep_recent=3))
    assert result.report.changed
    assert not result.document.render().endswith(("\n", "\r")) and "\r\n" in result.document.render()
    assert not compact(result.document, CompactionPolicy(keep_recent=3)).report.changed


def test_a_budget_error_names_the_opaque_entries_that_keep_the_file_over(tmp_path: Path) -> None:
    """An entry compaction cannot fold (here a typo'd range) is what stands in the way: the error names it and says
    how to fix it, not some unrelated maintainer text."""
    body = "".join(f"- line {i}: " + "x" * 80 + "\n" for i in range(60))
    text = state_file_text(
        "".join(entry_text(n, metric=str(n)) for n in range(6, 0, -1)) + "### Iters 2–1000000000000 — typo\n\n" + body
    )
    (tmp_path / "perf.md").write_text(text, encoding="utf-8")
    proc = run_statefile("--dir", str(tmp_path), "compact", "perf", "--max-bytes", "4000", cwd=tmp_path)
    assert proc.returncode == 4 and "Traceback" not in proc.stderr, proc.stderr
    assert "'### Iters 2–1000000000000 — typo' (" in proc.stderr and "`statefile edit perf`" in proc.stderr
    assert "maintainer-owned text such as" not in proc.stderr
    assert (tmp_path / "perf.md").read_text(encoding="utf-8") == text


# -- the guarantees, as properties --------------------------------------------------------------------------------
#
# Compaction's guarantees, checked on every corpus file, on synthetic files of 15 to 10,000 iterations and on
# hypothesis-made messy histories (overlapping ranges, entries inside ranges, duplicates, opaque entries).
#
# The guarantees (see statefile.policy.compaction): output within budget or a clean BudgetError; every iteration
# number the input covers is covered exactly once by the output; everything removed is in the archive verbatim;
# Machine State reads back identically through the upstream scheduler's logic; compaction is idempotent;
# maintainer-owned sections are byte-identical; the newest ``keep_recent`` entries are untouched when not aggressive.


BUDGETS = (30720, 8192)
_TRAILER = re.compile(r"(?:(?:\r\n|\r|\n)(?:[ \t]*|\s{0,3}-{3,}\s*))*\Z")
_MARKER = re.compile(r"\s*\*\(\+\d+ similar in archive\)\*")


def core(raw: str) -> str:
    """An entry's text without trailing blank lines and section rules (those belong to the section, not it)."""
    return _TRAILER.sub("", raw)


class Verbatim:
    """Finds whether a text occurs in the archive starting at a line start, in linear total time."""

    def __init__(self, archive: str) -> None:
        self.archive = archive
        self.starts: dict[str, list[int]] = defaultdict(list)
        offset = 0
        for line in archive.splitlines(keepends=True):
            self.starts[line.rstrip("\r\n")].append(offset)
            offset += len(line)

    def __contains__(self, text: str) -> bool:
        first = text.splitlines()[0] if text else ""
        return any(self.archive.startswith(text, at) for at in self.starts.get(first, ()))


def intervals(doc: StateDocument) -> list[tuple[int, int]]:
    """Every iteration number a document's history covers, as one interval per entry number/range."""
    spans: list[tuple[int, int]] = []
    for entry in doc.history:
        if isinstance(entry, IterationRange):
            spans.append((entry.first, entry.last))
        elif isinstance(entry, Iteration):
            spans.extend((n, n) for n in entry.covers)
    return spans


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _maintainer_texts(doc: StateDocument) -> list[tuple[str, str]]:
    """The text of every maintainer-owned section, without the history entries the parser placed in it.

    Entries sit under a maintainer-owned section only when the history heading is missing; they are cut off at
    the line where the parser says they start (``doc.history_start``), never by matching text: a section may
    hold a verbatim copy of the entries that is its own text (a heading swallowed by an HTML block, a pasted
    copy), and compaction must leave that copy alone.
    """
    start = doc.history_start
    out = []
    for index, section in enumerate(doc.sections):
        if section.kind in MAINTAINER_OWNED:
            held = start is not None and start[0] == index
            text = "".join(section.lines[: start[1]]) if start is not None and held else section.text
            out.append((section.kind, text))
    return out


def protected_entries(doc: StateDocument, keep: int) -> list[str]:
    """The newest ``keep`` detailed entries outside every range, not sharing a number with another entry.

    Entries sharing numbers take one slot together (compaction keeps one of them) and are not checked; an entry
    that touches a range, or one widened by an entry it absorbed, is not free.
    """
    slots: list[tuple[set[int], list[Iteration]]] = []
    slot_of: dict[int, int] = {}
    for entry in sorted(doc.iterations, key=lambda e: -max(e.covers)):
        index = next((slot_of[n] for n in entry.covers if n in slot_of), None)
        if index is None:
            index = len(slots)
            slots.append((set(), []))
        slots[index][0].update(entry.covers)
        slots[index][1].append(entry)
        slot_of.update(dict.fromkeys(entry.covers, index))
    spans = [(e.first, e.last) for e in doc.ranges]
    for numbers, members in slots:
        if not any(set(m.covers) >= numbers for m in members):
            spans.append((min(numbers), max(numbers)))  # duplicates no single entry resolves fold into a range
    free = [s for s in slots if any(set(m.covers) >= s[0] for m in s[1])]
    changed = True
    while changed:
        merged = _union(spans)
        starts = [a for a, _ in merged]
        inside = [s for s in free if any((k := bisect_right(starts, n) - 1) >= 0 and n <= merged[k][1] for n in s[0])]
        spans.extend((min(s[0]), max(s[0])) for s in inside)
        free = [s for s in free if s not in inside]
        changed = bool(inside)
    return [core(members[0].raw) for _, members in free[:keep] if len(members) == 1]


def check_invariants(before: StateDocument, result: CompactionResult, policy: CompactionPolicy) -> None:
    """Assert every compaction guarantee for one input and its result."""
    after = result.document
    archive = Verbatim(result.archive)
    assert after.size <= policy.max_bytes
    assert result.report.bytes_after == after.size
    # Every number the input covers is covered exactly once; the output covers nothing twice.
    out_spans = sorted(intervals(after))
    for (_, b1), (a2, _) in pairwise(out_spans):
        assert a2 > b1, f"output covers {a2} twice"
    union = _union(out_spans)
    for a, b in intervals(before):
        assert any(u <= a and b <= v for u, v in union), f"iterations {a}–{b} lost"
    # Everything removed is in the archive verbatim.
    kept = Counter(core(e.raw) for e in after.history)
    for entry in before.history:
        text = core(entry.raw)
        if kept[text]:
            kept[text] -= 1
        else:
            assert text in archive, f"removed entry not archived: {text[:80]!r}"
    for kind in ("lessons", "foreclosed"):
        remaining = {item.text.rstrip("\r\n") for item in after.list_items(kind)}
        unmarked = {_MARKER.sub("", t) for t in remaining}
        for item in before.list_items(kind):
            text = item.text.rstrip("\r\n")
            if text in remaining or _MARKER.sub("", text) in unmarked:
                continue
            assert text in archive, f"removed {kind} bullet not archived: {text[:80]!r}"
            assert not is_pinned(text), "a pinned bullet was removed"
    if not result.report.changed:
        assert result.archive == ""
    # Machine State reads back identically; maintainer-owned text is byte-identical.
    assert upstream_machine_state(after.render()) == upstream_machine_state(before.render())
    assert after.machine_state == before.machine_state
    assert _maintainer_texts(after) == _maintainer_texts(before)
    # The newest keep_recent entries are untouched unless aggressive mode ran.
    if not result.report.aggressive and not result.report.last_resort:
        out_cores = {core(e.raw) for e in after.history}
        for text in protected_entries(before, policy.keep_recent):
            assert text in out_cores, f"a recent entry changed: {text[:80]!r}"
    # Idempotent: a second compaction changes nothing and archives nothing.
    again = compact(after, policy)
    assert again.document.render() == after.render()
    assert again.archive == ""
    assert not again.report.moved


def check(text: str, policy: CompactionPolicy) -> CompactionResult | None:
    """Compact ``text`` and check the invariants; a BudgetError is fine when it is clean and one line."""
    before = parse(text)
    try:
        result = compact(before, policy)
    except BudgetError as error:
        message = str(error)
        assert "\n" not in message and "max_bytes" in message and "Machine State" in message
        return None
    assert before.render() == text, "compact() modified its input"
    check_invariants(before, result, policy)
    return result


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("path", corpus_params())
def test_corpus_files_compact_correctly(path: Path, budget: int) -> None:
    check(read_raw(path), CompactionPolicy(max_bytes=budget))


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("iterations", [15, 16, 40, 250])
@pytest.mark.parametrize("agent_ranges", [0, 4])
def test_synthetic_files_compact_correctly(iterations: int, agent_ranges: int, budget: int) -> None:
    text = synthetic_state("perf", iterations, seed=iterations, agent_ranges=agent_ranges, lessons=25)
    result = check(text, CompactionPolicy(max_bytes=budget))
    assert result is not None


@pytest.mark.slow
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("iterations", [1000, 10_000])
def test_large_synthetic_files_compact_correctly(iterations: int, budget: int) -> None:
    text = synthetic_state("perf", iterations, direction="lower", lessons=40, foreclosed=30)
    result = check(text, CompactionPolicy(max_bytes=budget))
    assert result is not None
    assert result.report.count("iteration") >= iterations - 10


@pytest.mark.slow
@settings(max_examples=examples(80))
@given(
    iterations=st.integers(min_value=0, max_value=300),
    seed=st.integers(min_value=0, max_value=10_000),
    lessons=st.integers(min_value=0, max_value=40),
    direction=st.sampled_from(["higher", "lower"]),
    agent_ranges=st.integers(min_value=0, max_value=8),
    budget=st.sampled_from(BUDGETS),
)
def test_synthetic_property(
    iterations: int, seed: int, lessons: int, direction: str, agent_ranges: int, budget: int
) -> None:
    text = synthetic_state(
        "prop", iterations, seed=seed, lessons=lessons, direction=direction, agent_ranges=agent_ranges
    )
    check(text, CompactionPolicy(max_bytes=budget))


# -- messy histories: what agents actually write ------------------------------------------------------------------

_RANGE_SHAPES = (
    "### Iters {a}–{b} — ✅ (metrics {x}→{y}): work {a}",
    "### Iters {a}-{b} -- 2026-05-16 -- ✅ (metrics {x}->{y}): batch {a}",
    "### Iterations {a}–{b} — Various features (condensed)\n- Metrics {x}→{y} across features.",
    "- Iters {a}-{b}: tools not registered",
    "### Iters {a}–{b} (except {a}) — ⚠️ Error: blocked.",
)


@st.composite
def messy_history(draw: st.DrawFn) -> str:
    """A state file whose history mixes entries, overlapping ranges, duplicates and opaque headings."""
    parts: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=30))):
        kind = draw(st.sampled_from(["entry", "entry", "entry", "partial", "pair", "range", "opaque"]))
        n = draw(st.integers(min_value=1, max_value=60))
        if kind in ("entry", "partial"):
            status = draw(st.sampled_from(["✅ Accepted", "❌ Rejected", "⚠️ Error", "⏳ pending CI"]))
            metric = draw(st.integers(min_value=0, max_value=500))
            suffix = " (partial)" if kind == "partial" else ""
            parts.append(
                f"### Iteration {n}{suffix} — 2026-04-{n % 28 + 1:02d} 10:00 UTC — [Run](https://x.invalid/{n})\n\n"
                f"- **Status**: {status}\n- **Change**: change {n}\n"
                f"- **Metric**: {metric} (previous best: {metric - 1}, delta: +1)\n- **Notes**: note {n}.\n\n"
            )
        elif kind == "pair":
            parts.append(f"### Iteration {n} & {n + 1} — ✅ two at once\n\n")
        elif kind == "range":
            b = n + draw(st.integers(min_value=0, max_value=25))
            shape = draw(st.sampled_from(_RANGE_SHAPES))
            parts.append(shape.format(a=n, b=b, x=n * 2, y=b * 2) + "\n\n")
        else:
            parts.append(f"### Notes from run {n}\n\nSomething the agent wrote.\n\n")
    text = new_state_file("messy", iteration_count=60, metric_direction=draw(st.sampled_from(["higher", "lower"])))
    lesson_pool = ["Use typed arrays.", "📌 Never force-push.", "Use typed arrays!", "Old tip (expires 2026-01-01)."]
    lessons = draw(st.lists(st.sampled_from(lesson_pool), max_size=30))
    if lessons:
        text = text.replace(
            "across iterations.\n\n- *(none yet)*", "across iterations.\n\n" + "\n".join(f"- {x}" for x in lessons), 1
        )
    avenues = draw(st.integers(min_value=0, max_value=60))
    if avenues:
        bullets = [
            f"- {'📌 ' if i % 17 == 0 else ''}Caching module {i % 7} globally: invalidation bugs seen in run {i}."
            for i in range(avenues)
        ]
        text = text.replace("with reasons.\n\n- *(none yet)*", "with reasons.\n\n" + "\n".join(bullets), 1)
    return text.replace("*(No iterations yet.)*\n", "".join(parts), 1)


@pytest.mark.slow
@settings(max_examples=examples(300))
@given(text=messy_history(), budget=st.sampled_from((30720, 8192, 3000, 2000)))
def test_messy_history_property(text: str, budget: int) -> None:
    check(text, CompactionPolicy(max_bytes=budget, today=date(2026, 6, 1)))


@pytest.mark.slow
@settings(max_examples=examples(60))
@given(text=messy_history())
def test_messy_history_with_small_keep(text: str) -> None:
    check(text, CompactionPolicy(keep_recent=2, keep_recent_aggressive=1, max_ranges=2, max_ranges_aggressive=1))


@st.composite
def decorated_file(draw: st.DrawFn) -> str:
    count = draw(st.integers(min_value=1, max_value=70))
    parts = []
    for n in range(count, 0, -1):
        mention = draw(st.sampled_from(["", "- Iteration {a} and {b} both had wrong branch; fixed in iter {n}.",
                                        "- Iter {a}: retried here", "- **Iters {b}-{a}**: same cause"]))  # fmt: skip
        notes = mention.format(n=n, a=max(1, n - 1), b=max(1, n - 2))
        text = entry_text(n, status=draw(st.sampled_from(["accepted", "rejected", "error"])), metric=str(n))
        parts.append(text.rstrip("\n") + ("\n" + notes if notes else "") + "\n\n")
    text = state_file_text("".join(parts), metric_direction=draw(st.sampled_from(["higher", "minimize"])))
    lessons_ = draw(st.integers(min_value=0, max_value=30))
    if lessons_:
        text = text.replace("- *(none yet)*", "\n".join(f"- Iter {k}: lesson {k}" for k in range(lessons_)), 1)
    for kind in ("lessons", "history", "future"):
        canonical = SECTION_KINDS[kind][0]
        decorated = draw(st.sampled_from(SECTION_PREFIXES)) + draw(
            st.sampled_from(SECTION_KINDS[kind][1]).map(str.title)
        )
        text = text.replace(canonical, "## " + decorated + draw(st.sampled_from(SECTION_SUFFIXES)), 1)
    return text


@pytest.mark.slow
@settings(max_examples=examples(60))
@given(text=decorated_file(), budget=st.sampled_from([30720, 8192, 4000]))
def test_decorated_files_with_prose_mentions_keep_every_number_covered(text: str, budget: int) -> None:
    """As seen in issue 11: decorated files with prose mentions keep every number covered."""
    numbers = covered_numbers(text)
    assert numbers == set(range(1, max(numbers) + 1))  # the prose never adds or hides an entry
    result = check(text, CompactionPolicy(max_bytes=budget))
    if result is not None:
        assert covered_numbers(result.document.render()) >= numbers


def test_a_dry_run_summary_counts_the_runs_it_does_not_show() -> None:
    """Issue 23 review (a dry run's details): past four runs of folded iterations the line says how many more."""
    folded = (1, 2, 4, 6, 8, 10, 12)
    moved = tuple(MovedItem("iteration", f"Iteration {n}", "folded into Iters 1–12") for n in folded)
    report = CompactionReport(9000, 5000, 6000, True, moved=moved, ranges_written=("### Iters 1–12 — x",))
    (line,) = report.details(folded)
    assert "(#1–2, #4, #6, #8, … (2 more runs))" in line, line
