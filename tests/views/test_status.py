"""pressure(): size against budget, per-section token estimates, counts, and the aggressive-compaction forecast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import corpus_params, entry_text, read_raw, state_file_text
from gitutil import run_statefile

from statefile.model.archive import make_chunk, plan_append
from statefile.model.document import parse
from statefile.model.history import render_iteration
from statefile.model.template import new_state_file
from statefile.model.text import utf8_size
from statefile.views.status import (
    TYPICAL_ENTRY_BYTES,
    count_archived_entries,
    estimate_tokens,
    pressure,
    pressure_lines,
    typical_entry_bytes,
)


def test_estimate_tokens_is_ceil_of_bytes_over_four() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("📌") == 1  # 4 UTF-8 bytes
    assert estimate_tokens("é" * 4) == 2  # 8 bytes
    assert estimate_tokens("\udcff") == 1  # an undecodable byte counts as the one byte it is on disk


def entry(n: int, notes: str = "n") -> str:
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
        doc = doc.with_entry(entry(n))
    doc = doc.with_lesson("one")
    doc = doc.with_lesson("📌 two")
    doc = doc.with_lesson("three <!-- pin -->")
    doc = doc.with_foreclosed("never again")
    report = pressure(doc, max_bytes=30720, archived_entries=57, archive_parts=2)
    counts = report["counts"]
    assert (counts["iterations"], counts["lessons"], counts["pinned_lessons"], counts["foreclosed"]) == (3, 3, 2, 1)
    assert (counts["archived_entries"], counts["archive_parts"]) == (57, 2)
    assert sum(s["bytes"] for s in report["sections"]) == doc.size
    for section, real in zip(report["sections"], doc.sections, strict=True):
        assert section["tokens"] == estimate_tokens(real.text)
        assert section["kind"] == real.kind
    assert report["tokens"] == estimate_tokens(doc.render())
    assert report["typical_entry_bytes"] == utf8_size(entry(2))


def test_aggressive_forecast_boundary() -> None:
    doc = parse(new_state_file("perf"))
    doc = doc.with_entry(entry(1, "x" * 400))
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
    doc = doc.with_entry(entry(1))
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
        entry(1) + entry(2) + "### Iters 3–9 — ✅ (metrics 1→2): ok\n\n```\n### Iteration 99 in a fence\n```\n"
        "### Population notes\n",
        when="2026-01-01",
        what="iterations 1–9",
    )
    parts = [content for _, content in plan_append("perf", None, chunk, 30720)]
    assert count_archived_entries(parts) == 3
    assert count_archived_entries([]) == 0


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
