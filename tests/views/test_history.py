"""``statefile history``: every iteration a program's file and archive know, as rows — pure, then through the
console script on a real repository with a bare remote; and the charts: the sparkline, and the Mermaid
``xychart-beta`` checked twice — by a validator written from Mermaid's documented grammar (always), and by Mermaid's
own parser under node (when tests/mermaid has its packages: ``npm ci --prefix tests/mermaid``); and pressure(): size
against budget, per-section token estimates, counts, and the aggressive-compaction forecast."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SAMPLES, corpus_params, entry_text, read_raw, state_file_text
from ghaw.component import bin_dir, load_component, run_steps
from gitutil import make_repos, run_statefile
from mermaid_xychart import validate
from synthetic import synthetic_state

from statefile.model.archive import archive_entries, make_chunk, part_header, plan_append
from statefile.model.document import parse
from statefile.model.history import Iteration, IterationRange, render_iteration
from statefile.model.template import new_state_file
from statefile.model.text import utf8_size
from statefile.store import Store
from statefile.views.history import (
    TYPICAL_ENTRY_BYTES,
    ProgramHistory,
    estimate_tokens,
    history_rows,
    mermaid_xychart,
    nice_bounds,
    number_text,
    pressure,
    pressure_lines,
    sparkline,
    step_summary,
    thin,
    typical_entry_bytes,
    where_sentence,
)

MERMAID_DIR = Path(__file__).resolve().parents[1] / "mermaid"


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
    assert [(r.last, r.value) for r in history.rows if r.value is not None] == [(1, 1.0), (3, 4.0), (4, 3.0), (5, 9.0)]
    assert history.metric_ends() == (1.0, 9.0, 9.0)


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


# -- charts ----------------------------------------------------------------------------------------------------


def test_sparkline_levels_flat_empty_and_width() -> None:
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert sparkline([8, 1]) == "█▁"
    assert sparkline([3, 3, 3]) == "▄▄▄"
    assert sparkline([]) == ""
    line = sparkline([float(n) for n in range(1000)], width=10)
    assert len(line) == 10 and line[0] == "▁" and line[-1] == "█"
    assert list(line) == sorted(line)


def test_numbers_in_mermaid_form_and_thinning() -> None:
    assert [number_text(v) for v in (1e-7, 1.5e12, -0.0, 266.91, -3.25)] == [
        "0.0000001", "1500000000000", "0", "266.91", "-3.25",
    ]  # fmt: skip
    points = [(n, float(n)) for n in range(1, 241)]
    kept = thin(points, 60)
    assert len(kept) == 60 and kept[0] == points[0] and kept[-1] == points[-1]
    assert thin(points[:5], 60) == points[:5]


def history_of(
    metrics: list[str | None], direction: str = "higher", statuses: list[str] | None = None
) -> ProgramHistory:
    entries = [
        render_iteration(
            number=n, when="2026-01-01 00:00", status=(statuses or [])[n - 1] if statuses else "accepted", metric=m
        )
        for n, m in enumerate(metrics, 1)
    ]
    text = new_state_file("perf", metric_direction=direction).replace(
        "*(No iterations yet.)*\n", "".join(reversed(entries))
    )
    return history_rows(parse(text), "perf")


def charts() -> dict[str, str]:
    """Diagrams for the shapes a run can take."""
    long_run = parse(synthetic_state("long", 400, seed=2, direction="lower"))
    out = {
        "rising": mermaid_xychart(history_of(["1", "2.5", None, "3"])),
        "lower, negative": mermaid_xychart(history_of(["-1.5", "-3", "-2"], "lower")),
        "one point": mermaid_xychart(history_of(["0.93"])),
        "flat": mermaid_xychart(history_of(["5", "5", "5"])),
        "rejected first": mermaid_xychart(history_of(["9", "7", "8"], statuses=["rejected", "rejected", "accepted"])),
        "huge and tiny": mermaid_xychart(history_of(["1e9", "0.000001"])),
        "400 iterations": mermaid_xychart(history_rows(long_run, "long")),
    }
    assert all(text is not None for text in out.values())
    return {k: v for k, v in out.items() if v is not None}


def test_charts_are_valid_xycharts() -> None:
    for name, text in charts().items():
        assert validate(text) == [], (name, text)
    long = charts()["400 iterations"]
    assert long.count("\n    line [") == 2
    categories = re.search(r"x-axis \"iteration\" \[(.*)\]", long)
    assert categories is not None and len(categories.group(1).split(", ")) == 60


def test_no_metric_no_chart() -> None:
    assert mermaid_xychart(history_of([None, None])) is None


# Diagrams the grammar rejects, and one it accepts but that would draw wrong (more values than categories).
BROKEN = {
    "trailing comma": "xychart-beta\n    line [1, 2, ]\n",
    "unclosed list": "xychart-beta\n    x-axis [1, 2\n    line [1, 2]\n",
    "word in data": "xychart-beta\n    line [1, a]\n",
    "unclosed title": 'xychart-beta\n    title "perf\n    line [1]\n',
    "unknown statement": "xychart-beta\n    curve [1, 2]\n",
    "wrong header": "xychart\n    line [1, 2]\n".replace("xychart", "xy-chart"),
    "empty data": "xychart-beta\n    line []\n",
}
DRAWS_WRONG = 'xychart-beta\n    x-axis "i" [1, 2]\n    line [1, 2, 3]\n'


def test_the_validator_rejects_broken_diagrams() -> None:
    for name, text in {**BROKEN, "mismatch": DRAWS_WRONG}.items():
        assert validate(text), name


def node_parse(diagrams: list[str]) -> list[dict[str, object]]:
    proc = subprocess.run(
        ["node", str(MERMAID_DIR / "parse.mjs")],
        input=json.dumps(diagrams),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: list[dict[str, object]] = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def mermaid_parser() -> Path:
    """tests/mermaid with Mermaid installed: by ``npm ci`` (the pinned versions) when npm is there and it is not yet;
    the test is skipped, saying why, when node or npm is missing or the install fails (no registry)."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: Mermaid's own parser cannot run (the grammar validator still checks)")
    if not (MERMAID_DIR / "node_modules" / "mermaid").is_dir():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip(
                "npm is not installed: cannot install Mermaid for its parser (the grammar validator still checks)"
            )
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--prefix", str(MERMAID_DIR)],
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            pytest.skip(f"`npm ci --prefix tests/mermaid` failed ({last}); the grammar validator still checks")
    return MERMAID_DIR


@pytest.mark.slow  # Mermaid's own parser under node
def test_mermaids_own_parser_agrees(mermaid_parser: Path) -> None:
    ours = charts()
    results = node_parse([*ours.values(), *BROKEN.values()])
    for name, result in zip([*ours, *BROKEN], results, strict=True):
        if name in ours:
            assert result == {"ok": True, "type": "xychart"}, (name, result)
        else:
            assert result["ok"] is False, (name, result)


def test_the_safe_output_job_writes_the_summary(tmp_path: Path) -> None:
    """The shipped component's summary step, run as the runner runs it, after a record landed."""
    frontmatter, _ = load_component()
    steps = frontmatter["safe-outputs"]["jobs"]["record-iteration"]["steps"]
    step = next(s for s in steps if "summary" in str(s.get("run", "")))
    origin = tmp_path / "server" / "owner" / "repo.git"
    origin.parent.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", str(origin)], check=True)
    repos = make_repos(tmp_path)
    with Store.open(repos.work, remote=origin.as_uri(), max_bytes=10_000_000) as store:
        store.write_files({"perf.md": synthetic_state("perf", 20, seed=5)}, "seed")
    summary = tmp_path / "step-summary.md"
    server = (tmp_path / "server").as_uri()
    env = {"GITHUB_SERVER_URL": server, "GITHUB_REPOSITORY": "owner/repo", "GITHUB_STEP_SUMMARY": str(summary)}
    [done] = run_steps([step], env=env, contexts={"github.token": ""}, cwd=tmp_path, bin_dir=bin_dir())
    assert done.returncode == 0, done.stderr
    blocks = re.findall(r"```mermaid\n(.*?)```", summary.read_text(), re.S)
    assert len(blocks) == 1 and validate(blocks[0]) == [] and "perf: metric per iteration" in blocks[0]
    # Without a summary file (not on a runner) the step does nothing.
    [skipped] = run_steps([step], env={**env, "GITHUB_STEP_SUMMARY": ""}, contexts={"github.token": ""},
                          cwd=tmp_path, bin_dir=bin_dir())  # fmt: skip
    assert skipped.returncode == 0 and skipped.stdout == ""


def lower_history_as_seen() -> str:
    """A lower-is-better program as real files have it (issue 22, item 8): an agent's range line overlapping detailed
    entries (``Iters 172–180`` beside ``Iteration 173`` … ``180``), another ending where a detailed entry sits, entries
    out of order, and metrics with many digits; the Machine State's Best Metric is 32."""
    entries = [
        render_iteration(number=181, when="2026-05-31 10:00", status="accepted", metric="32"),
        render_iteration(number=180, when="2026-05-31 09:00", status="rejected", metric="606.759"),
    ]
    for n, metric, status in [(178, "38", "accepted"), (177, "41", "rejected"), (176, "39", "accepted"),
                              (175, "44", "rejected"), (174, "40", "accepted"), (173, "42", "accepted")]:  # fmt: skip
        entries.append(render_iteration(number=n, when="2026-05-30 10:00", status=status, metric=metric))
    entries.append("### Iters 172–180 — 2026-05-29/30 — ✅ (metrics 51->35.0115): repeated rebase attempts\n\n")
    entries.append(render_iteration(number=172, when="2026-05-29 10:00", status="accepted", metric="45"))
    entries.append("### Iters 160–171 — ✅ (metrics 80->51): early work\n\n")
    entries.append(render_iteration(number=167, when="2026-05-28 10:00", status="accepted", metric="51"))
    return new_state_file("perf", metric_direction="lower", best_metric="32").replace(
        "*(No iterations yet.)*\n", "".join(entries)
    )


def chart_lists(text: str) -> tuple[list[int], list[float], list[float], str]:
    axis = re.search(r"x-axis \"iteration\" \[(.*)\]", text)
    lines = re.findall(r"\n    line \[(.*)\]", text)
    bounds = re.search(r"y-axis \"metric\" (\S+) --> (\S+)", text)
    assert axis and bounds and len(lines) == 2, text
    return (
        [int(n) for n in axis.group(1).split(", ")],
        [float(v) for v in lines[0].split(", ")],
        [float(v) for v in lines[1].split(", ")],
        f"{bounds.group(1)} --> {bounds.group(2)}",
    )


def test_chart_of_a_lower_is_better_history_out_of_order_draws_forwards() -> None:
    history = history_rows(parse(lower_history_as_seen()), "perf")
    text = mermaid_xychart(history)
    assert text is not None and validate(text) == []
    numbers, values, best, bounds = chart_lists(text)
    # Sorted, one point per iteration: a detailed entry wins its number over a range line's end.
    assert numbers == sorted(set(numbers)) == [167, 171, 172, 173, 174, 175, 176, 177, 178, 180, 181]
    assert values[numbers.index(180)] == 606.759
    # The best so far only improves, in the Metric Direction, and ends at the Machine State's Best Metric.
    assert all(b <= a for a, b in __import__("itertools").pairwise(best))
    assert best == [51, 51, 45, 42, 40, 40, 39, 39, 38, 38, 32]
    assert best[-1] == 32
    # Round bounds that hold every value.
    assert bounds == "0 --> 700"


def test_bounds_are_round_numbers() -> None:
    from decimal import Decimal

    assert nice_bounds(35.0115, 606.759) == (Decimal(0), Decimal(700))
    assert nice_bounds(29, 51) == (Decimal(25), Decimal(55))
    low, high = nice_bounds(0.93, 0.93)
    assert low < Decimal("0.93") < high and (low, high) == (Decimal("0.8"), Decimal("1.05"))
    assert nice_bounds(-3, -1.5) == (Decimal(-3), Decimal("-1.5"))


def test_summary_says_when_the_history_best_is_not_the_machine_states() -> None:
    """The shape of a real file: an agent's range band ``8→51`` in other units, the table's Best Metric 34."""

    entries = [render_iteration(number=196, when="2026-04-11 13:40", status="accepted", metric="34"),
               render_iteration(number=195, when="2026-04-11 13:05", status="accepted", metric="33"),
               "### Iters 53–166 — ✅/⚠️ (metrics 8→51: feature implementations)\n\n"]  # fmt: skip
    text = new_state_file("mig", best_metric="34").replace("*(No iterations yet.)*\n", "".join(entries))
    history = history_rows(parse(text), "mig")
    row = {"program": "mig", "status": "active", "best_metric": "34", "size": 100, "percent_of_budget": 0.3}
    summary = step_summary([row], {"mig": history}, max_bytes=30720)
    assert "The history's best is 51, the Machine State's Best Metric 34" in summary
    agreeing = history_rows(parse(lower_history_as_seen()), "perf")
    row = {**row, "program": "perf", "best_metric": "32"}
    assert "Machine State's Best Metric" not in step_summary([row], {"perf": agreeing}, max_bytes=30720)


def test_a_sparkline_of_metrics_at_the_float_range_ends() -> None:
    """Found by a cold review: apply accepts metrics within 1e±308; 1e308 then -1e308 made the span overflow to
    inf and the sparkline raise (exit 70 in `summary`, the component's always-run step, and in `history`)."""
    line = sparkline([1e308, -1e308, 5.0, 1e-300])
    assert len(line) == 4 and line[0] == "█" and line[1] == "▁"
    assert len(sparkline([1e308, -1e308] * 50, width=10)) == 10


# -- pressure (statefile status) -----------------------------------------------------------------------------------


def test_estimate_tokens_is_ceil_of_bytes_over_four() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("📌") == 1  # 4 UTF-8 bytes
    assert estimate_tokens("é" * 4) == 2  # 8 bytes
    assert estimate_tokens("\udcff") == 1  # an undecodable byte counts as the one byte it is on disk


def pressure_entry(n: int, notes: str = "n") -> str:
    return render_iteration(number=n, when="2026-01-01 10:00", status="accepted", metric=str(n), notes=notes)


def test_fresh_file() -> None:
    doc = parse(new_state_file("perf"))
    report = pressure(doc, max_bytes=30720)
    assert report["size_bytes"] == doc.size
    assert report["percent_of_budget"] == round(100 * doc.size / 30720, 1)
    assert report["counts"] == {
        "iterations": 0,
        "ranges": 0,
        "other_entries": 0,
        "lessons": 0,
        "pinned_lessons": 0,
        "foreclosed": 0,
        "future": 0,
        "archived_entries": 0,
        "archive_parts": 0,
    }
    assert report["typical_entry_bytes"] == TYPICAL_ENTRY_BYTES
    assert not report["next_record_triggers_aggressive"]
    assert not report["over_budget"]
    json.dumps(report)  # JSON-ready for `status --json`


def test_counts_and_sections() -> None:
    doc = parse(new_state_file("perf"))
    for n in range(1, 4):
        doc = doc.with_entry(pressure_entry(n))
    doc = doc.with_lesson("one")
    doc = doc.with_lesson("📌 two")
    doc = doc.with_lesson("three <!-- pin -->")
    doc = doc.with_foreclosed("never again")
    chunk = make_chunk(pressure_entry(1) + pressure_entry(2), when="2026-01-01", what="iterations 1–2")
    parts = [content for _, content in plan_append("perf", None, chunk, 30720)] * 2
    report = pressure(doc, max_bytes=30720, archives=parts)
    counts = report["counts"]
    assert (counts["iterations"], counts["lessons"], counts["pinned_lessons"], counts["foreclosed"]) == (3, 3, 2, 1)
    assert (counts["archived_entries"], counts["archive_parts"]) == (4, len(parts))
    assert sum(s["bytes"] for s in report["sections"]) == doc.size
    for section, real in zip(report["sections"], doc.sections, strict=True):
        assert section["tokens"] == estimate_tokens(real.text)
        assert section["kind"] == real.kind
    assert report["tokens"] == estimate_tokens(doc.render())
    assert report["typical_entry_bytes"] == utf8_size(pressure_entry(2))


def test_aggressive_forecast_boundary() -> None:
    doc = parse(new_state_file("perf"))
    doc = doc.with_entry(pressure_entry(1, "x" * 400))
    typical = typical_entry_bytes(doc)
    # size + typical == 0.8 × max exactly: not yet aggressive; one byte less of budget and it is.
    max_bytes = int((doc.size + typical) / 0.8)
    while int(0.8 * max_bytes) < doc.size + typical:
        max_bytes += 1
    report = pressure(doc, max_bytes=max_bytes)
    assert report["aggressive_threshold_bytes"] == int(0.8 * max_bytes)
    assert not report["next_record_triggers_aggressive"]
    assert report["records_until_aggressive"] >= 1
    tighter = pressure(doc, max_bytes=max_bytes - 2)
    assert tighter["next_record_triggers_aggressive"]
    assert tighter["records_until_aggressive"] == 0
    over = pressure(doc, max_bytes=doc.size - 1)
    assert over["over_budget"] and over["headroom_bytes"] == -1


def test_records_until_aggressive_matches_simulation() -> None:
    doc = parse(new_state_file("perf"))
    doc = doc.with_entry(pressure_entry(1))
    report = pressure(doc, max_bytes=12000)
    typical = report["typical_entry_bytes"]
    n = 0
    while doc.size + (n + 1) * typical <= report["aggressive_threshold_bytes"]:
        n += 1
    assert report["records_until_aggressive"] == n


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_reports(path: Path) -> None:
    doc = parse(read_raw(path))
    report = pressure(doc, max_bytes=30720)
    assert report["size_bytes"] == len(path.read_bytes())
    assert sum(s["bytes"] for s in report["sections"]) == report["size_bytes"]
    lines = pressure_lines(report, program="p")
    assert lines[0].startswith(f"p: {report['size_bytes']:,} of 30,720 bytes")
    assert len(lines) == 4 + len(report["sections"])


def test_lines_mention_aggressive_compaction() -> None:
    doc = parse(new_state_file("perf"))
    text = "\n".join(pressure_lines(pressure(doc, max_bytes=doc.size + 10)))
    assert "OVER BUDGET" not in text
    assert "compaction will keep only the newest 5 entries" in text
    assert "OVER BUDGET" in "\n".join(pressure_lines(pressure(doc, max_bytes=doc.size - 1)))


def test_count_archived_entries_counts_entry_headings_only() -> None:
    chunk = make_chunk(
        pressure_entry(1)
        + pressure_entry(2)
        + "### Iters 3–9 — ✅ (metrics 1→2): ok\n\n```\n### Iteration 99 in a fence\n```\n"
        "### Population notes\n",
        when="2026-01-01",
        what="iterations 1–9",
    )
    parts = [content for _, content in plan_append("perf", None, chunk, 30720)]
    counts = pressure(parse(new_state_file("perf")), max_bytes=30720, archives=parts)["counts"]
    assert (counts["archived_entries"], counts["archive_parts"]) == (3, len(parts))
    assert pressure(parse(new_state_file("perf")), max_bytes=30720)["counts"]["archived_entries"] == 0


def test_status_forecasts_with_the_configured_aggressive_settings(tmp_path: Path) -> None:
    """As seen in issue 11: status forecasts with the configured aggressive settings."""
    text = state_file_text("".join(entry_text(n, metric=str(n), notes="x" * 200) for n in range(12, 0, -1)))
    (tmp_path / "perf.md").write_text(text, encoding="utf-8")
    size = len(text.encode())
    env = {
        "STATEFILE_AGGRESSIVE_AT": "0.5",
        "STATEFILE_AGGRESSIVE_KEEP": "3",
        "STATEFILE_MAX_BYTES": str(size * 3 // 2),
    }
    status = run_statefile("--dir", str(tmp_path), "--json", "status", "perf", cwd=tmp_path, env=env)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert (report["aggressive_at"], report["keep_aggressive"]) == (0.5, 3)
    assert report["next_record_triggers_aggressive"]  # 2/3 of the budget: past 0.5, short of the default 0.8
    words = run_statefile("--dir", str(tmp_path), "status", "perf", cwd=tmp_path, env=env).stdout
    assert "passes 50.0% of the budget: compaction will keep only the newest 3 entries" in words
    out = tmp_path / "autoloop.json"
    out.write_text("{}\n")  # what the scheduler wrote; report merges into it
    reported = run_statefile("--dir", str(tmp_path), "report", "--program", "perf", "--out", str(out), cwd=tmp_path,
                             env=env)  # fmt: skip
    assert reported.returncode == 0, reported.stderr
    assert json.loads(out.read_text())["statefile"]["programs"]["perf"]["needs_compaction"] is True
