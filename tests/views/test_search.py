"""search(): across programs, archives and shared lessons; ranking rules; locations of each hit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import SAMPLES, all_corpus_files, read_raw
from gitutil import make_repos, run_statefile

from statefile.errors import UsageError
from statefile.model.archive import make_chunk, plan_append
from statefile.model.document import parse
from statefile.model.history import render_iteration
from statefile.model.template import new_state_file
from statefile.store import Store
from statefile.views.search import classify, hit_line, search


def entry(n: int, change: str, notes: str = "ok") -> str:
    return render_iteration(number=n, when="2026-01-01 10:00", status="accepted", change=change, notes=notes)


def program_file(name: str, entries: list[tuple[int, str, str]], lessons: tuple[str, ...] = ()) -> str:
    doc = parse(new_state_file(name))
    for n, change, notes in entries:
        doc = doc.with_entry(entry(n, change, notes))
    for lesson in lessons:
        doc = doc.with_lesson(lesson)
    return doc.render()


def test_classify_paths() -> None:
    assert classify("perf.md") == ("perf", False)
    assert classify("_shared.md") == ("_shared", False)
    assert classify("archive/perf/0001.md") == ("perf", True)
    assert classify("archive/perf/notes.md") is None
    assert classify("README.txt") is None
    assert classify("docs/perf.md") is None
    assert classify(".md") is None


def test_finds_text_that_lives_only_in_the_archive() -> None:
    folded = entry(3, "switched the parser to a zebra-striped lookup table", "zebra tables were 2x faster")
    live = program_file("perf", [(4, "tuned the cache", "fine"), (5, "more cache", "fine")])
    assert "zebra" not in live
    [(name, part)] = plan_append("perf", None, make_chunk(folded, when="2026-02-01", what="iterations 3"), 30720)
    files = {"perf.md": live, f"archive/perf/{name}": part}
    hits = search(files, "zebra")
    assert [h.path for h in hits] == ["archive/perf/0001.md"] * 2
    first = hits[0]
    assert first.program == "perf"
    assert first.iteration == 3
    assert first.section == "Archived 2026-02-01 — iterations 3"
    assert part.splitlines()[first.line_no - 1].strip() == first.line
    assert {h.line for h in hits} == {"- **Change**: switched the parser to a zebra-striped lookup table",
                                      "- **Notes**: zebra tables were 2x faster"}  # fmt: skip


def test_all_terms_beat_some_terms_and_the_phrase_beats_both() -> None:
    text = program_file(
        "perf",
        [
            (1, "radix sort", "nothing else"),
            (2, "sort radix buckets", "x"),
            (3, "only radix here", "x"),
        ],
        lessons=("radix sort is the way",),
    )
    hits = search({"perf.md": text}, "radix sort")
    lines = [h.line for h in hits]
    # The phrase first (the lesson, a shorter document than the entry, before it), then both words in another
    # order, then one word alone.
    assert lines[:2] == ["- radix sort is the way", "- **Change**: radix sort"]
    assert lines[2] == "- **Change**: sort radix buckets"
    assert lines[3] == "- **Change**: only radix here"
    assert hits[1].score > hits[2].score > hits[3].score
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_terms_spread_over_an_entry_rank_above_one_word_alone() -> None:
    text = program_file("perf", [(7, "tried the GARCH model", "phantom commit, never pushed"), (8, "phantom", "x")])
    hits = search({"perf.md": text}, "garch phantom")
    assert [h.iteration for h in hits] == [7, 7, 8]
    # The rare word's line first within the entry; the entry holding both words above the one holding one.
    assert "GARCH" in hits[0].line and hits[1].score > hits[2].score


def test_common_words_do_not_outrank_rare_ones() -> None:
    """BM25's inverse document frequency: "by" is everywhere, "blocked" and "policy" are not."""
    lessons = (
        *(f"step {n} is maintained by the Autoloop agent" for n in range(8)),
        "the push was blocked: branch protection policy",
        "retries were blocked by the rate limit",
    )
    text = program_file("perf", [(1, "tuned by hand", "written by the agent")], lessons=lessons)
    hits = search({"perf.md": text}, "blocked by policy")
    assert hits[0].line == "- the push was blocked: branch protection policy"
    assert hits[1].line == "- retries were blocked by the rate limit"
    assert all("blocked" not in h.line for h in hits[2:])
    # A rare word alone also beats a common one alone, whatever the line lengths.
    assert search({"perf.md": text}, "policy maintained")[0].line.endswith("branch protection policy")


def test_live_before_archive_on_ties_and_newer_first() -> None:
    live = program_file("perf", [(10, "cache warmup", "x"), (12, "cache warmup", "x")])
    archived = make_chunk(entry(2, "cache warmup", "x"), when="2026-01-01", what="iterations 2")
    [(name, part)] = plan_append("perf", None, archived, 30720)
    hits = search({f"archive/perf/{name}": part, "perf.md": live}, "cache warmup")
    assert [(h.path, h.iteration) for h in hits] == [
        ("perf.md", 12),
        ("perf.md", 10),
        (f"archive/perf/{name}", 2),
    ]
    assert hits[0].score == hits[1].score == hits[2].score  # the same text: a tie, broken by place and age


def test_program_filter_keeps_shared_and_limit() -> None:
    files = {
        "perf.md": program_file("perf", [(1, "speed up hashing", "x")]),
        "size.md": program_file("size", [(1, "shrink hashing tables", "x")]),
        "_shared.md": "# Shared lessons\n\n## 📚 Lessons Learned\n\n- hashing: prefer xxhash (from size)\n",
        "archive/size/0001.md": "# Archive: size (part 1)\n\n### Iteration 0\n\n- hashing seed\n",
        "notes.txt": "hashing",
    }
    assert {h.program for h in search(files, "hashing")} == {"perf", "size", "_shared"}
    perf = search(files, "hashing", program="perf")
    assert {h.program for h in perf} == {"perf", "_shared"}
    shared_hit = next(h for h in perf if h.program == "_shared")
    assert shared_hit.section == "📚 Lessons Learned" and shared_hit.iteration is None
    assert len(search(files, "hashing", limit=2)) == 2


def test_sections_ranges_and_code_fences() -> None:
    text = (
        "# Autoloop: p\n\n## 📊 Iteration History\n\n### Iters 1–40 — ✅ (metrics 1→9): widget tuning\n\n"
        "### Iteration 41 — 2026-01-01\n\n```\n## widget inside a fence\n```\n- widget notes\n"
    )
    hits = search({"p.md": text}, "widget")
    located = {(h.line, h.section, h.iteration) for h in hits}
    assert ("## widget inside a fence", "📊 Iteration History", 41) in located
    assert ("- widget notes", "📊 Iteration History", 41) in located
    assert ("### Iters 1–40 — ✅ (metrics 1→9): widget tuning", "📊 Iteration History", None) in located
    # The iteration outranks the older range on the tie.
    assert hits[0].iteration == 41


def test_case_insensitive_and_surrogates() -> None:
    text = "## 📚 Lessons Learned\n\n- Caf\udce9 CACHE rules\n"
    [hit] = search({"p.md": text}, "cache")
    assert hit.line == "- Caf\ufffd CACHE rules"
    assert "p.md:3 [📚 Lessons Learned] — - Caf" in hit_line(hit)


def test_bad_queries() -> None:
    with pytest.raises(UsageError, match="empty search query"):
        search({}, "  ")
    with pytest.raises(UsageError, match="empty search query"):
        search({}, "* **")
    with pytest.raises(UsageError, match="limit"):
        search({}, "x", limit=0)
    assert search({}, "x") == []


def test_corpus_search_is_consistent() -> None:
    files = {p.name: read_raw(p) for p in all_corpus_files()}
    hits = search(files, "push blocked", limit=500)
    assert hits
    for hit in hits:
        line = files[hit.path].splitlines()[hit.line_no - 1]
        assert hit.line == re.sub("[\udc80-\udcff]", "\ufffd", line.strip())
        assert "push" in hit.line.casefold() or "blocked" in hit.line.casefold()
    keys = [(-h.score) for h in hits]
    assert keys == sorted(keys)


def test_whole_words_only_and_prefixes_on_request() -> None:
    files = {
        "perf.md": "# Autoloop: perf\n\n## 📚 Lessons Learned\n\n- tried variant 30 first\n- variant 3 won\n"
        "- port m30 later\n- port m3, then m4\n- caching helps; the cache is warm\n- see #12 and x.ts\n"
    }
    assert [h.line for h in search(files, "variant 3")][:1] == ["- variant 3 won"]
    assert [h.line for h in search(files, "m3")] == ["- port m3, then m4"]
    assert [h.line for h in search(files, "cache")] == ["- caching helps; the cache is warm"]
    assert search(files, "cach") == []
    assert [h.line for h in search(files, "cach*")] == ["- caching helps; the cache is warm"]
    assert [h.line for h in search(files, "#12")] == ["- see #12 and x.ts"]
    assert [h.line for h in search(files, "x.ts")] == ["- see #12 and x.ts"]


def test_archived_copies_of_a_range_line_fold_below_the_entry() -> None:
    """Every record archives the range line it replaces: five copies must not crowd out the iteration itself."""
    ranges = [f"### Iters 1–{n} — ✅ {n} · metric 1→{n} · Port module m3 to Go, other work · archive/perf/\n\n"
              for n in range(21, 26)]  # fmt: skip
    chunks = [make_chunk(entry(21, "Port module m3 to Go"), when="2026-01-01", what="compaction of perf.md")]
    chunks += [make_chunk(r, when=f"2026-01-{d:02d}", what="compaction of perf.md") for d, r in enumerate(ranges, 2)]
    [(name, part)] = plan_append("perf", None, "".join(chunks), 30720)
    live = program_file("perf", [(27, "Port module m30 to Go", "x")]).replace(
        "### Iteration 27", ranges[-1].replace("1–25", "1–26") + "### Iteration 27"
    )
    hits = search({"perf.md": live, f"archive/perf/{name}": part}, "Port module m3 to Go")
    assert hits[0].kind == "iteration" and hits[0].iteration == 21 and hits[0].expand == "statefile expand perf 21"
    assert [h.kind for h in hits[:2]] == ["iteration", "range"]
    assert all("m3 " not in h.line for h in hits[2:])  # "m30" is not "m3"
    assert hits[1].score > max(h.score for h in hits[2:])
    folded = hits[1]
    assert folded.path == "perf.md" and (folded.first, folded.last) == (1, 26)
    assert len(folded.copies) == 5 and all(c.startswith(f"archive/perf/{name}:") for c in folded.copies)
    line = hit_line(folded)
    assert line.startswith("perf.md:") and "#1–26 (+5 older copies)" in line
    archived = hit_line(hits[0])
    assert (
        archived.startswith(f"archive/perf/{name}:") and "[Archived 2026-01-01 — compaction of perf.md] #21" in archived
    )


def test_search_through_the_console_script_after_real_records(tmp_path: Path) -> None:
    """Real records fold iteration 41 into a range line and archive each replaced copy of it."""
    repos = make_repos(tmp_path)
    with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
        store.write_files({"mid.md": (SAMPLES / "mid-life.md").read_text()}, "seed")
    env = {"STATEFILE_KEEP_RECENT": "2"}
    changes = ["Port module m3 to Go", "Port module m30 to Go", "Tune m4", "Tune m5", "Tune m6"]
    for change in changes:
        proc = run_statefile("--remote", "origin", "record", "mid", "--status", "accepted", "--metric", "130",
                             "--change", change, cwd=repos.work, env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    proc = run_statefile("--remote", "origin", "--json", "search", "Port module m3 to Go", cwd=repos.work)
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert hits[0]["iteration"] == 41 and hits[0]["path"].startswith("archive/mid/")
    assert hits[0]["expand"] == "statefile expand mid 41"
    exact = [h for h in hits if re.search(r"port module m3 to go", h["line"], re.I)]
    ranges = [h for h in exact if h["kind"] == "range"]
    assert len(ranges) <= 1, ranges  # the copies of one range line are one result
    assert all(re.search(r"\bm3\b", h["line"]) for h in exact)  # "m30" alone is no match
    text = run_statefile("--remote", "origin", "search", "Port module m3 to Go", "-n", "3", cwd=repos.work)
    lines = text.stdout.splitlines()
    assert lines[0].startswith("archive/mid/0001.md:") and "#41 — " in lines[0]
    assert lines[-1] == "whole entries: statefile --remote origin expand mid 41"  # runs as written, where read


def test_a_query_counts_its_first_32_distinct_words() -> None:
    """Found by a cold review: each word costs a pass over every line, and an agent's tool call could send ten
    thousand (51 s against the tool's 60 s time-out on a 700 KB archive)."""
    from statefile.views.search import MAX_TERMS, _terms

    assert len(_terms(" ".join(f"w{n}" for n in range(10_000)))) == MAX_TERMS == 32
    assert _terms("x" * 5000)[0] == "x" * 100
