"""Regression tests for what issue 11 saw, each built from a file the test writes.

1. The README's test command failed on a fresh clone (tests read ../shared) and docstrings pointed outside the
   repository.
2. The suite was not deterministic, and a test oracle failed falsely on a section holding a copy of the entries.
3. A bullet in an entry's notes that mentions iteration numbers was read as an entry: compaction archived the real
   entries as its duplicates and left their numbers uncovered.
4. Known sections were recognised only when their name started the heading.
5. Hand-written scanners disagreed: ``expand`` cut an archived entry at a ``## `` line in a code fence and missed
   bullet-form entries; ``- *(none)*`` was a lesson in one module and a placeholder in another; numbers were
   compared as floats in one place.
6. Two readings of the metric direction: with "minimize", the range line said ``metric 99→99``.
7. Settings commands ignored: ``status``'s aggressive forecast, git identity, ``--repo sub`` against ``cd sub``,
   the summarizer's defaults, ``compact a/perf.md b/perf.md``.

(The SHA-256 repository case is in tests/store/git/test_objects.py.)
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import EXAMPLE_BUDGET, TESTS, examples
from gitutil import git, make_repos, run_statefile
from hypothesis import given, settings
from hypothesis import strategies as st
from policy.test_compaction_properties import check

from statefile.app.config import resolve_config
from statefile.app.reading import expand_iteration
from statefile.app.writing import compaction_policy
from statefile.defaults import SUMMARIZER_TIMEOUT, SUMMARY_CAP
from statefile.integrations.summarizer import command_summarizer
from statefile.model.archive import make_chunk, part_header
from statefile.model.document import parse
from statefile.model.history import Iteration, render_iteration
from statefile.model.patterns import is_placeholder, metric_direction, section_name
from statefile.model.sections import SECTION_KINDS, section_kind
from statefile.model.synthetic import synthetic_state
from statefile.model.template import new_state_file
from statefile.model.text import clip
from statefile.policy import ranges
from statefile.policy.compaction import CompactionPolicy, compact
from statefile.policy.lessons import add_lesson, lessons
from statefile.policy.rules import RecordRequest, record
from statefile.store import FolderStore
from statefile.views.render import render_view
from statefile.views.status import pressure

ROOT = TESTS.parent
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


def entry(n: int, *, status: str = "accepted", metric: str | None = None, notes: str | None = None) -> str:
    return render_iteration(number=n, when=f"2026-03-{n % 28 + 1:02d} 10:00", status=status, metric=metric,
                            change=f"change {n}", notes=notes)  # fmt: skip


def state_file(entries: str, **fields: object) -> str:
    return new_state_file("perf", **fields).replace("*(No iterations yet.)*\n", entries)


def covered(text: str) -> set[int]:
    return {n for e in parse(text).history for n in e.covers}


# -- 1. a fresh clone passes on its own ----------------------------------------------------------------------------


def test_tests_reach_the_real_corpus_only_through_conftest() -> None:
    """A test that names a real file or the ../shared path directly would fail (not skip) on a fresh clone."""
    offenders = []
    for path in sorted(TESTS.glob("*.py")):
        if path.name in ("conftest.py", Path(__file__).name):
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"shared/corpus|parents\[2\]|__[0-9a-f]{7}\.md|idx\d{11}\.md", text):
            offenders.append(path.name)
    assert offenders == []


def test_the_generated_fixtures_match_their_generator() -> None:
    """tests/data/make_corpus.py builds some fixtures from the package's own template words: a template change must
    not leave the files on disk describing a format the generator no longer writes."""
    proc = subprocess.run(
        [sys.executable, str(TESTS / "data" / "make_corpus.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_docstring_points_outside_the_repository() -> None:
    outside = re.compile(r"\b(?:FORMAT|DESIGN|GHAW)\.md\b|\.\./shared|/work/")
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "statefile").rglob("*.py"))
        if outside.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


# -- 2. the same every run ---------------------------------------------------------------------------------------


def test_the_default_profile_is_derandomized_with_a_fixed_budget() -> None:
    ci = settings.get_profile("ci")
    assert ci is not None and ci.derandomize and ci.database is None and ci.deadline is None
    # Every property states its count through conftest.examples(N): fixed in CI, scaled when exploring.
    unscaled = [
        f"{path.name}: @settings({arguments})"
        for path in sorted(TESTS.glob("test_*.py"))
        for arguments in re.findall(r"^@settings\((.*?)\)\n(?=@|def )", path.read_text(encoding="utf-8"), re.M | re.S)
        if "max_examples=examples(" not in arguments
    ]
    assert unscaled == [], "write @settings(max_examples=examples(N)) (tests/conftest.py)"
    loaded = settings.default
    if loaded is not None and loaded.derandomize:  # the CI profile is loaded (HYPOTHESIS_PROFILE unset)
        counts = []
        for path in sorted(TESTS.glob("test_*.py")):
            module = importlib.import_module(path.stem)
            for name in dir(module):
                chosen = getattr(getattr(module, name), "_hypothesis_internal_use_settings", None)
                if name.startswith("test_") and chosen is not None:
                    counts.append(chosen.max_examples)
        assert sum(counts) <= EXAMPLE_BUDGET, counts  # the ceiling docs/development.md and conftest document


def test_a_section_holding_a_copy_of_the_entries_is_left_alone() -> None:
    """The false oracle: a `</details>` line opens an HTML block that swallows a history heading, so Current
    Priorities holds a verbatim copy of the entries; compaction must leave that copy (maintainer text) alone."""
    entries = "".join(entry(n, metric=str(n)) for n in range(30, 0, -1))
    text = state_file(entries)
    text = text.replace("*(No specific priorities set — agent is exploring freely.)*\n",
                        "</details>\n## 📊 Iteration History\n\n" + entries)  # fmt: skip
    before = parse(text)
    priorities = before.section("priorities")
    assert priorities is not None and priorities.text.endswith(entries + "\n---\n\n")
    result = check(text, CompactionPolicy(max_bytes=8192))
    assert result is not None and result.report.changed
    after = result.document.section("priorities")
    assert after is not None and after.text == priorities.text


# -- 3. prose bullets are not entries ----------------------------------------------------------------------------


def test_a_note_mentioning_other_iterations_stays_in_its_entry() -> None:
    notes = [
        "- Iteration 190 and 189 both had wrong branch; fixed here.",
        "- Iter 171: the push was retried (label-shaped, but inside this entry's body).",
        "- **Iteration 188**: see above",
    ]
    first = entry(191, metric="5").rstrip("\n") + "\n" + "\n".join(notes) + "\n\n"
    text = state_file(first + entry(190) + entry(189) + entry(188))
    doc = parse(text)
    assert [e.covers for e in doc.history] == [(191,), (190,), (189,), (188,)]
    assert "duplicate-iteration" not in {w.code for w in doc.warnings}
    result = compact(doc)  # far under budget: nothing to fold
    assert not result.report.changed and result.archive == ""
    assert covered(result.document.render()) == {188, 189, 190, 191}
    assert all(note in doc.history[0].raw for note in notes)


def test_bullets_in_a_range_body_are_its_text() -> None:
    body = "### Iterations 168–171 — 2026-04-10 — ⚠️ Error (push failures)\n- Iters 168-170: not registered\n"
    text = state_file(entry(172) + body + "- Iter 171: auth error\n\n" + entry(167))
    history = parse(text).history
    assert [(e.kind, tuple(e.covers)) for e in history][1] == ("range", tuple(range(168, 172)))
    assert len(history) == 3 and "overlapping-ranges" not in {w.code for w in parse(text).warnings}


def test_genuine_bullet_entries_are_read_and_recorded_into() -> None:
    text = state_file("- Iter 2: ✅ fine · commit abc1234\n- Iter 1: ❌ CI failed · commit 24bbe85\n")
    doc = parse(text)
    assert [(e.kind, e.covers, getattr(e, "status", None)) for e in doc.history] == [
        ("iteration", (2,), "accepted"),
        ("iteration", (1,), "rejected"),
    ]
    recorded = record(doc, RecordRequest("accepted", metric=3, change="more"), program="perf", now=NOW)
    assert [e.covers for e in recorded.history] == [(3,), (2,), (1,)]
    newest = recorded.history[0]
    assert isinstance(newest, Iteration) and newest.status == "accepted" and newest.metric == "3"


# -- 4. decorated headings ---------------------------------------------------------------------------------------

PREFIXES = ["", "📚 ", "[WIP] ", "3. ", "2) ", "IV. ", "#4 ", "🧠 [agent] 1. ", "**", "Section 5: ", "— ", "» "]
SUFFIXES = ["", " (pruned)", " — newest first", " [auto]", " 📌", "**", " & more", ":"]
NAMES = [(name, kind) for kind, (_, names) in SECTION_KINDS.items() for name in names]


@settings(max_examples=examples(200))
@given(
    prefix=st.sampled_from(PREFIXES),
    named=st.sampled_from(NAMES),
    suffix=st.sampled_from(SUFFIXES),
    case=st.sampled_from([str.title, str.lower, str.upper]),
)
def test_known_sections_are_recognised_however_decorated(
    prefix: str, named: tuple[str, str], suffix: str, case: object
) -> None:
    name, kind = named
    assert callable(case)
    title = f"{prefix}{case(name)}{suffix}"
    assert section_kind(title, 2) == kind, (title, section_name(title))


@pytest.mark.parametrize(
    ("title", "kind"),
    [
        ("📚 Key Lessons", "lessons"),
        ("📜 Iterations", "history"),
        ("📊 Recent Iterations", "history"),
        ("🧬 Population (summary)", "other"),
        ("Notes", "other"),
        ("Foreclosed / Ruled-out Avenues", "foreclosed"),
    ],
)
def test_decorated_names_from_the_fixture_report(title: str, kind: str) -> None:
    assert section_kind(title, 2) == kind


def test_a_file_with_decorated_headings_compacts_under_budget() -> None:
    text = state_file("".join(entry(n, metric=str(n)) for n in range(60, 0, -1)))
    lessons_ = "\n".join(f"- Lesson {n}: use typed arrays for kernel {n} (iteration {n})." for n in range(40))
    text = text.replace("- *(none yet)*", lessons_, 1)
    text = text.replace("## 📚 Lessons Learned", "## [agent] 4. 🧠 Key Lessons (pruned)")
    text = text.replace("## 📊 Iteration History", "## 5) 📜 Recent Iterations — newest first")
    doc = parse(text)
    assert doc.section("lessons") is not None and len(doc.history) == 60
    result = check(text, CompactionPolicy(max_bytes=8192))
    assert result is not None and result.document.size <= 8192
    assert covered(result.document.render()) == set(range(1, 61))


# -- 5. one reading everywhere -----------------------------------------------------------------------------------


def folder_with_archive(tmp_path: Path, archived: str) -> FolderStore:
    (tmp_path / "perf.md").write_text(state_file(entry(5)), encoding="utf-8")
    part = tmp_path / "archive" / "perf" / "0001.md"
    part.parent.mkdir(parents=True)
    part.write_text(part_header("perf", 1) + make_chunk(archived, when="2026-05-01", what="compaction"))
    return FolderStore(tmp_path, max_bytes=30720)


def test_expand_reads_past_a_heading_inside_a_code_fence(tmp_path: Path) -> None:
    archived = (
        "### Iteration 3 — 2026-03-03 10:00 UTC\n\n- **Status**: ✅ Accepted\n- **Notes**: the config was\n\n"
        "```\n## not a heading\n### Iteration 99 — nor this\n```\n\n- **Commit**: abc1234\n\n"
        "### Iteration 2 — 2026-03-02 10:00 UTC\n\n- **Status**: ❌ Rejected\n"
    )
    where, text = expand_iteration(folder_with_archive(tmp_path, archived), "perf", 3)
    assert where == "archive/perf/0001.md"
    assert text.startswith("### Iteration 3") and "- **Commit**: abc1234" in text and "Iteration 2 —" not in text


def test_expand_finds_a_bullet_form_entry_in_the_archive(tmp_path: Path) -> None:
    archived = "- Iter 1: ❌ CI failed · Island 1 · commit 24bbe85\n"
    where, text = expand_iteration(folder_with_archive(tmp_path, archived), "perf", 1)
    assert (where, text.strip()) == ("archive/perf/0001.md", archived.strip())


def test_none_is_a_placeholder_everywhere() -> None:
    doc = parse(new_state_file("perf").replace("- *(none yet)*", "- *(none)*", 1))
    section = doc.section("lessons")
    assert section is not None and "- *(none)*" in section.text
    assert lessons(doc) == []
    assert all(item.is_placeholder and is_placeholder(item.text) for item in doc.list_items("lessons"))
    assert pressure(doc, max_bytes=30720)["counts"]["lessons"] == 0
    assert "(none)" not in render_view(doc, program="perf").text
    added = add_lesson(doc, "Warm the cache first")
    assert "- *(none)*" not in added.render() and [i.text.strip() for i in lessons(added)] == ["- Warm the cache first"]


def test_metric_bands_compare_numbers_exactly() -> None:
    """As floats, 10000000000000001 and 10000000000000000 are equal: the band kept the old best."""
    entries = [
        parse_entry_text(entry(2, metric="10000000000000001")),
        parse_entry_text(entry(1, metric="10000000000000000")),
    ]
    band = ranges.band_from_entries(entries, "higher", "")
    assert (band.metric_from, band.metric_to) == ("10000000000000000", "10000000000000001")


def parse_entry_text(text: str) -> Iteration:
    found = parse(state_file(text)).history[0]
    assert isinstance(found, Iteration)
    return found


# -- 6. one metric direction -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "words", ["lower", "minimize", "minimise", "decrease", "lower is better", "less is better", "Minimize ms"]
)
def test_every_way_of_saying_lower_is_lower(words: str) -> None:
    assert metric_direction(words) == "lower"


@pytest.mark.parametrize("words", ["higher", "maximize", "higher is better", "", "—", "increase"])
def test_everything_else_is_higher(words: str) -> None:
    assert metric_direction(words) == "higher"


def test_minimize_moves_best_metric_and_the_range_line_together() -> None:
    doc = parse(new_state_file("perf", metric_direction="minimize"))
    for n, metric in enumerate([99, 90, 85, 88, 95, 91, 87, 86, 93, 89, 92, 94, 96], start=1):
        status = "accepted" if n <= 3 else "rejected"
        doc = record(doc, RecordRequest(status, metric=metric, change=f"try {n}"), program="perf", now=NOW)
    assert doc.machine_state["best_metric"] == "85"
    folded = compact(doc, CompactionPolicy(keep_recent=2)).document
    line = next(r.heading for r in folded.ranges if r.first == 1)
    assert "(metrics 99→85)" in line, line


# -- 7. settings every command uses --------------------------------------------------------------------------------


def test_status_forecasts_with_the_configured_aggressive_settings(tmp_path: Path) -> None:
    text = state_file("".join(entry(n, metric=str(n), notes="x" * 200) for n in range(12, 0, -1)))
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


def test_commits_use_the_identity_from_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repos = make_repos(tmp_path)
    git("config", "user.name", "Config Person", cwd=repos.work)
    git("config", "user.email", "config@example.invalid", cwd=repos.work)
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key)
    assert run_statefile("init", "perf", cwd=repos.work).returncode == 0
    author = git("log", "-1", "--format=%an <%ae>|%cn <%ce>", "memory/autoloop", cwd=repos.work).strip()
    assert author == "Config Person <config@example.invalid>|Config Person <config@example.invalid>"


def test_repo_sub_and_cd_sub_read_the_same_settings(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    (repos.work / ".statefile.toml").write_text("max-bytes = 12345\n")
    (repos.work / "sub").mkdir()
    from_top = run_statefile("--repo", "sub", "--json", "config", cwd=repos.work)
    from_sub = run_statefile("--json", "config", cwd=repos.work / "sub")
    assert from_top.returncode == from_sub.returncode == 0, (from_top.stderr, from_sub.stderr)
    assert json.loads(from_top.stdout) == json.loads(from_sub.stdout)
    assert {"key": "max-bytes", "value": 12345, "source": ".statefile.toml"} in json.loads(from_sub.stdout)


def test_summarizer_defaults_come_from_one_definition() -> None:
    config = resolve_config(None, {"summarizer": "llm-summarize"}, {})
    assert config.summarizer_timeout.value == SUMMARIZER_TIMEOUT
    summarizer = compaction_policy(config, now=NOW).summarizer
    assert summarizer is not None and repr(summarizer) == repr(command_summarizer("llm-summarize"))
    assert f"timeout={SUMMARIZER_TIMEOUT:g}, cap={SUMMARY_CAP}" in repr(summarizer)
    assert CompactionPolicy().summary_cap == SUMMARY_CAP


def test_compact_two_files_with_one_name_compacts_both(tmp_path: Path) -> None:
    text = state_file("".join(entry(n, metric=str(n), notes="y" * 150) for n in range(40, 0, -1)))
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "perf.md").write_text(text, encoding="utf-8")
    proc = run_statefile("compact", "a/perf.md", "b/perf.md", "--max-bytes", "8192", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for folder in ("a", "b"):
        after = (tmp_path / folder / "perf.md").read_text(encoding="utf-8")
        assert len(after.encode()) <= 8192 and after != text, folder
        assert (tmp_path / folder / "archive" / "perf" / "0001.md").is_file(), folder
        assert covered(after) == set(range(1, 41))
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["a/perf.md", "b/perf.md"]


# -- the done-when property: coverage on synthetic files with decorated headings and prose mentions -----------------


@st.composite
def decorated_file(draw: st.DrawFn) -> str:
    count = draw(st.integers(min_value=1, max_value=70))
    parts = []
    for n in range(count, 0, -1):
        mention = draw(st.sampled_from(["", "- Iteration {a} and {b} both had wrong branch; fixed in iter {n}.",
                                        "- Iter {a}: retried here", "- **Iters {b}-{a}**: same cause"]))  # fmt: skip
        notes = mention.format(n=n, a=max(1, n - 1), b=max(1, n - 2))
        text = entry(n, status=draw(st.sampled_from(["accepted", "rejected", "error"])), metric=str(n))
        parts.append(text.rstrip("\n") + ("\n" + notes if notes else "") + "\n\n")
    text = state_file("".join(parts), metric_direction=draw(st.sampled_from(["higher", "minimize"])))
    lessons_ = draw(st.integers(min_value=0, max_value=30))
    if lessons_:
        text = text.replace("- *(none yet)*", "\n".join(f"- Iter {k}: lesson {k}" for k in range(lessons_)), 1)
    for kind in ("lessons", "history", "future"):
        canonical = SECTION_KINDS[kind][0]
        decorated = draw(st.sampled_from(PREFIXES)) + draw(st.sampled_from(SECTION_KINDS[kind][1]).map(str.title))
        text = text.replace(canonical, "## " + decorated + draw(st.sampled_from(SUFFIXES)), 1)
    return text


@settings(max_examples=examples(60))
@given(text=decorated_file(), budget=st.sampled_from([30720, 8192, 4000]))
def test_decorated_files_with_prose_mentions_keep_every_number_covered(text: str, budget: int) -> None:
    numbers = covered(text)
    assert numbers == set(range(1, max(numbers) + 1))  # the prose never adds or hides an entry
    result = check(text, CompactionPolicy(max_bytes=budget))
    if result is not None:
        assert covered(result.document.render()) >= numbers


# -- found while building the fixture corpus (tests/data/MANIFEST.md) ----------------------------------------------


@pytest.mark.parametrize(
    ("status", "word"),
    [
        ("✅ Accepted (reconciled from pending-ci)", "accepted"),
        ("⏳ Pending CI (publication requested)", "pending-ci"),
        ("⏳ pending CI · **Op**: exploitation", "pending-ci"),
        ("⚠️ CI fix exhausted", "ci-fix-exhausted"),
        ("⚠️ Local Only", "local-only"),
        ("⚠️ Error (push failure — pending-ci never came)", "error"),
        ("❌ Rejected", "rejected"),
    ],
)
def test_the_first_status_a_field_states_is_the_entrys(status: str, word: str) -> None:
    text = state_file(f"### Iteration 3 — 2026-03-03 10:00 UTC\n\n- **Status**: {status}\n\n")
    found = parse(text).iterations[0]
    assert found.status == word


def test_statuses_outside_a_status_field_are_read_from_a_leading_glyph() -> None:
    text = state_file(
        "### Iter 5 — 2026-10-02 — [Run](https://example.invalid/5)\n✅ +1 → 530: added x\n\n"
        "### Iteration 4 — 2026-10-01\n\n- ⏳ pending CI · island 2 · c004\n\n"
        "### Iteration 3 — 2026-09-30\n\nNotes say it was ✅ later, but the entry states nothing.\n\n"
    )
    assert [e.status for e in parse(text).iterations] == ["accepted", "pending-ci", None]


def test_iterations_joined_in_one_heading_all_count() -> None:
    text = state_file(
        "### Iteration 126 — ✅ abs (81) · Iteration 125 — ✅ autocorr (80) · Iteration 124 — ✅ m\n\n"
        "### Iters 1–123 — ✅ (metrics 0→78): the rest\n\n"
    )
    doc = parse(text)
    assert doc.iterations[0].covers == (124, 125, 126)
    assert "history-gap" not in {w.code for w in doc.warnings}


def test_glyph_only_recent_statuses_become_words_on_record() -> None:
    doc = parse(new_state_file("perf", recent_statuses="✅✅❌"))
    assert doc.machine_state["recent_statuses"] == ["✅✅❌"]  # as the upstream scheduler reads the cell
    after = record(doc, RecordRequest("accepted"), program="perf", now=NOW)
    assert after.machine_state["recent_statuses"] == ["accepted", "accepted", "rejected", "accepted"]


def test_compaction_keeps_a_missing_final_newline() -> None:
    text = state_file("".join(entry(n, metric=str(n)) for n in range(14, 0, -1))).replace("\n", "\r\n").rstrip()
    result = compact(parse(text), CompactionPolicy(keep_recent=3))
    assert result.report.changed
    assert not result.document.render().endswith(("\n", "\r")) and "\r\n" in result.document.render()
    assert not compact(result.document, CompactionPolicy(keep_recent=3)).report.changed


def test_a_three_point_band_reads_first_to_last() -> None:
    text = state_file("### Iters 1–9 — 2026-04-12 23:12–00:31 UTC — ✅ (metrics 112→127→130): steady\n\n")
    found = parse(text).ranges[0]
    assert (found.first, found.last, found.metric_from, found.metric_to) == (1, 9, "112", "130")


@pytest.mark.parametrize("heading", ["## 2. ⚙️ Machine State", "## [1] ⚙️ Machine State", "## Machine State"])
def test_a_machine_state_heading_the_scheduler_cannot_find_fails_check(tmp_path: Path, heading: str) -> None:
    """statefile reads a decorated Machine State heading; the scheduler's re.search for the exact bytes does not,
    so check fails (exit 1) and the next write restores the exact heading."""
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "perf.md").write_text(synthetic_state("perf", 3).replace("## ⚙️ Machine State", heading), "utf-8")
    proc = run_statefile("--dir", str(folder), "check", "perf", cwd=tmp_path)
    assert proc.returncode == 1 and "machine-state-heading" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert run_statefile("--dir", str(folder), "record", "perf", "--status", "rejected", cwd=tmp_path).returncode == 0
    assert "\n## ⚙️ Machine State\n" in (folder / "perf.md").read_text("utf-8")
    assert run_statefile("--dir", str(folder), "check", "perf", cwd=tmp_path).returncode == 0


def test_clip_never_doubles_an_ellipsis() -> None:
    assert clip("word… word… word… word… word… word…", 12) == "word… word…"


def test_a_summary_that_mentions_an_iteration_never_claims_it(tmp_path: Path) -> None:
    """'· Iteration 7 approach restored' in entry 12's summary is prose, not a joined entry: 7 stays the real 7."""
    text = state_file(
        "### Iteration 12 — ✅ reverted the cache · Iteration 7 approach restored\n\n- **Notes**: twelve's text\n\n"
        + "".join(entry(n, metric=str(n)) for n in range(11, 7, -1))
        + "### Iteration 7 — ❌ cache\n\n- **Notes**: seven's own text\n\n"
        + "".join(entry(n, metric=str(n)) for n in range(6, 0, -1))
    )
    (tmp_path / "perf.md").write_text(text, encoding="utf-8")
    assert parse(text).iterations[0].covers == (12,)

    def run(*args: str) -> str:
        proc = run_statefile("--dir", str(tmp_path), *args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    shown = run("expand", "perf", "7")
    assert "seven's own text" in shown and "twelve's text" not in shown
    rows = json.loads(run("--json", "history", "perf"))["rows"]
    assert [(r["first"], r["last"]) for r in rows] == [(n, n) for n in range(1, 13)]
    assert next(r for r in rows if r["first"] == 7)["status"] == "rejected"
    assert "duplicate-iteration" not in run("--json", "check", "perf")
    run("compact", "perf", "--max-bytes", "1000000")
    assert "seven's own text" in (tmp_path / "perf.md").read_text(encoding="utf-8")


def test_a_level_two_range_heading_is_an_entry_not_a_second_history(tmp_path: Path) -> None:
    """'## Iterations 1–12 — condensed' under the history is its range line written a level up: check does not call
    it a duplicate section, history counts 1–12, repair leaves it, and compaction keeps it readable."""
    text = state_file(
        "".join(entry(n, metric=str(n)) for n in range(15, 12, -1))
        + "## Iterations 1–12 — condensed\n\n- ✅ (metrics 0→12): the early work\n\n"
    )
    (tmp_path / "perf.md").write_text(text, encoding="utf-8")

    def run(*args: str) -> str:
        proc = run_statefile("--dir", str(tmp_path), *args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    checked = run("check", "perf")
    assert "duplicate-section" not in checked and "history-gap" not in checked, checked
    rows = json.loads(run("--json", "history", "perf"))["rows"]
    assert [(r["first"], r["last"]) for r in rows] == [(1, 12), (13, 13), (14, 14), (15, 15)]
    run("repair", "perf")
    assert "## Iterations 1–12 — condensed\n" in (tmp_path / "perf.md").read_text(encoding="utf-8")
    run("compact", "perf", "--max-bytes", str(len(text.encode()) - 100))
    archived = "".join(p.read_text("utf-8") for p in sorted((tmp_path / "archive" / "perf").glob("*.md")))
    assert "the early work" in archived + (tmp_path / "perf.md").read_text(encoding="utf-8")
    after = json.loads(run("--json", "history", "perf"))
    assert after["rows"][0]["first"] == 1 and "history-gap" not in run("check", "perf")


def test_a_budget_error_names_the_opaque_entries_that_keep_the_file_over(tmp_path: Path) -> None:
    """An entry compaction cannot fold (here a typo'd range) is what stands in the way: the error names it and says
    how to fix it, not some unrelated maintainer text."""
    body = "".join(f"- line {i}: " + "x" * 80 + "\n" for i in range(60))
    text = state_file(
        "".join(entry(n, metric=str(n)) for n in range(6, 0, -1)) + "### Iters 2–1000000000000 — typo\n\n" + body
    )
    (tmp_path / "perf.md").write_text(text, encoding="utf-8")
    proc = run_statefile("--dir", str(tmp_path), "compact", "perf", "--max-bytes", "4000", cwd=tmp_path)
    assert proc.returncode == 4 and "Traceback" not in proc.stderr, proc.stderr
    assert "'### Iters 2–1000000000000 — typo' (" in proc.stderr and "`statefile edit perf`" in proc.stderr
    assert "maintainer-owned text such as" not in proc.stderr
    assert (tmp_path / "perf.md").read_text(encoding="utf-8") == text


def test_a_marker_written_as_the_last_bullet_field_is_no_part_of_the_notes() -> None:
    """Older versions joined the item marker to a bullet entry's fields with " · "; such files still read clean."""
    text = state_file(
        "- Iteration 3 — 2026-01-01 10:00 UTC: **Status**: ✅ Accepted · **Notes**: faster"
        " · <!-- statefile-item: run 500 attempt 1 item 1 -->\n- Iter 2: ❌ CI failed\n- Iter 1: ✅ first\n"
    )
    newest = parse(text).iterations[0]
    assert newest.notes == "faster" and newest.fields == {"status": "✅ Accepted", "notes": "faster"}
