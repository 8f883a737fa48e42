"""The document model on both corpora and on hand-made oddities: round trip, structure, machine state, edits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import (
    FIXTURES,
    TESTS,
    all_corpus_files,
    changed_lines,
    corpus_files,
    corpus_params,
    covered_numbers,
    entry_text,
    examples,
    fixture_files,
    fixture_text,
    read_raw,
    real_file,
    state_file_text,
)
from gitutil import invoke_statefile, make_repos, run_statefile
from hypothesis import given, settings
from hypothesis import strategies as st
from upstream import upstream_machine_state

import statefile
from statefile.errors import UsageError
from statefile.model.document import parse
from statefile.model.history import Iteration, IterationRange, OpaqueEntry
from statefile.model.template import new_state_file
from statefile.policy.compaction import compact
from statefile.store import Store


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_round_trips_byte_for_byte(path: Path) -> None:
    text = read_raw(path)
    assert parse(text).render() == text


def test_fixture_corpus_is_complete_and_documented() -> None:
    """30 fixtures, each described in tests/data/MANIFEST.md, which sits outside the folder the tests glob."""
    names = [path.name for path in fixture_files()]
    assert len(names) == 30
    assert not (FIXTURES / "MANIFEST.md").exists()
    manifest = (TESTS / "data" / "MANIFEST.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in manifest for name in names)


def test_real_corpus_is_complete_when_present() -> None:
    real_file("24ec373")  # skips, saying why, when the real corpus is not beside this checkout
    assert len(corpus_files()) == 27


def test_machine_state_found_under_drifted_heading() -> None:
    good = "# Autoloop: x\n\n## ⚙️ Machine State\n\n| Field | Value |\n|---|---|\n| Iteration Count | 4 |\n"
    for heading in ("## Machine State", "## \ufffd\ufffd Machine State", "## ⚙ machine   state"):
        doc = parse(good.replace("## ⚙️ Machine State", heading))
        assert doc.machine_state["iteration_count"] == 4
        assert any(w.code == "machine-state-heading" for w in doc.warnings)
        doc = doc.with_field("Paused", False)
        assert doc.render().startswith("# Autoloop: x\n\n## ⚙️ Machine State\n")
        assert upstream_machine_state(doc.render())["iteration_count"] == 4
    assert not any(w.code == "machine-state-heading" for w in parse(good).warnings)


def test_heading_inside_code_fence_is_text() -> None:
    text = "# T\n\n## 📚 Lessons Learned\n\n```\n## ⚙️ Machine State\n| Iteration Count | 3 |\n```\n"
    doc = parse(text)
    assert [s.kind for s in doc.sections] == ["title", "lessons"]
    assert doc.machine_state == {}


def test_history_entry_shapes() -> None:
    text = (
        "## 📊 Iteration History\n\n<!-- New entries are prepended below this line -->\n\n"
        "### Iteration 263 — 2026-04-20T19:51 UTC — [Run](https://example.invalid/runs/1)\n\n"
        "- **Status**: ✅ Accepted | **Metric**: 606 (previous best: 605, delta: +1) | **Commit**: b8edf68\n"
        "- Added pairs.\n\n"
        "### Iteration 261 (partial) — 2026-04-20T18:22 UTC — [Run](https://example.invalid/runs/2)\n\n"
        "- **Status**: ⚠️ Error\n\n"
        "### Iteration 200 -- 2026-04-01 10:00 UTC -- [Run](https://example.invalid/runs/3)\n"
        "### Iterations 12 & 13 — 2026-03-01\n\n- **Status**: ❌ Rejected\n\n"
        "### Iters 84-93 -- 2026-05-16 -- ✅ (metrics 551->578%): steady\n"
        "### Iters 1–426: (0→191) Full pandas port\n"
        "### Iterations 53–165 — Various features (condensed)\n"
        "### c029 · island 3 · fitness pending CI · gen 29\n"
    )
    entries = parse(text).history
    assert [e.kind for e in entries] == [
        "iteration", "iteration", "iteration", "iteration", "range", "range", "range", "opaque",
    ]  # fmt: skip
    first = entries[0]
    assert isinstance(first, Iteration)
    assert (first.number, first.status, first.metric, first.previous_best, first.delta, first.commit) == (
        263, "accepted", "606", "605", "+1", "b8edf68",
    )  # fmt: skip
    assert first.run_url == "https://example.invalid/runs/1"
    assert first.when == "2026-04-20T19:51 UTC"
    partial = entries[1]
    assert isinstance(partial, Iteration) and partial.partial and partial.status == "error"
    heading_only = entries[2]
    assert isinstance(heading_only, Iteration) and heading_only.number == 200
    pair = entries[3]
    assert isinstance(pair, Iteration) and pair.covers == (12, 13)
    r1, r2, r3 = entries[4], entries[5], entries[6]
    assert isinstance(r1, IterationRange) and (r1.first, r1.last, r1.metric_from, r1.metric_to) == (
        84,
        93,
        "551",
        "578",
    )
    assert isinstance(r2, IterationRange) and (r2.first, r2.last, r2.metric_from, r2.metric_to) == (
        1,
        426,
        "0",
        "191",
    )
    assert isinstance(r3, IterationRange) and r3.metric_from is None and r3.summary.startswith("Various")
    assert isinstance(entries[7], OpaqueEntry)
    assert "".join(e.raw for e in entries) == text[text.index("### Iteration 263") :]


def test_bullet_entries_without_headings() -> None:
    text = "## 📊 Iteration History\n\n- Iter 2: ✅ fine\n- Iter 1: ❌ CI failed · commit 24bbe85\n"
    entries = parse(text).history
    assert [(e.kind, e.covers) for e in entries] == [("iteration", (2,)), ("iteration", (1,))]
    assert [e.status for e in entries if isinstance(e, Iteration)] == ["accepted", "rejected"]


def check_entries_under_another_section(text: str, population_tag: str, newest: int) -> None:
    doc = parse(text)
    assert doc.history_misplaced
    assert [e.kind for e in doc.history] == ["iteration", "iteration", "range"]
    # The Population section's "### c0… · island …" headings are not history.
    assert all(population_tag not in e.heading for e in doc.history)
    future = doc.section("future")
    assert future is not None and f"### Iteration {newest} " in future.text


def test_entries_under_another_section_when_history_heading_is_missing() -> None:
    check_entries_under_another_section(fixture_text("missing-history-heading.md"), "island", 31)


def test_entries_under_another_section_when_history_heading_is_missing_real() -> None:
    check_entries_under_another_section(read_raw(real_file("24ec373")), "c029", 29)


def check_warnings(texts: dict[str, str], duplicated: str, partial: str, after_rule: str) -> None:
    codes = {name: {w.code for w in parse(text).warnings} for name, text in texts.items()}
    assert "duplicate-section" in codes[duplicated]
    assert "duplicate-iteration" in codes[partial]
    assert "missing-history-heading" in codes[after_rule]
    assert any("range-overlaps-entry" in c for c in codes.values())
    assert any("history-gap" in c for c in codes.values())


def test_warnings_on_corpus_oddities() -> None:
    texts = {path.name: read_raw(path) for path in fixture_files()}
    check_warnings(
        texts, "duplicated-sections.md", "partial-duplicate-entry.md", "missing-history-heading-after-rule.md"
    )


def test_warnings_on_corpus_oddities_real() -> None:
    names = [real_file(tag).name for tag in ("e45365e", "36c0d7f", "d1b9067")]
    check_warnings({path.name: read_raw(path) for path in corpus_files()}, *names)


def test_warnings_for_missing_machine_state_and_count_mismatch() -> None:
    doc = parse("# Autoloop: x\n\n## 📊 Iteration History\n\n### Iteration 3 — 2026-01-01\n")
    assert {w.code for w in doc.warnings} >= {"missing-machine-state", "history-gap"}
    doc = parse(statefile.new_state_file("x"))
    doc = doc.with_field("Iteration Count", 5)
    doc = doc.with_entry("### Iteration 1 — 2026-01-01 00:00 UTC\n\n- **Status**: ✅ Accepted\n\n")
    assert "iteration-count-mismatch" in {w.code for w in doc.warnings}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "no structure at all",
        "\ufeff# T\r\n\r\n## Machine State\r\n",
        "a\rb\r\nc\n",
        "\x00\x00",
        "\ud800x",
    ],
)
def test_parse_is_total_and_lossless_on_odd_text(text: str) -> None:
    doc = parse(text)
    assert doc.render() == text
    doc.warnings  # noqa: B018 - computing the views must not raise either
    doc.history  # noqa: B018


def test_an_unclosed_fence_is_an_anomaly() -> None:
    text = statefile.new_state_file("x").replace("## 📚 Lessons Learned", "```\n## 📚 Lessons Learned")
    codes = {w.code for w in parse(text).warnings}
    assert "unclosed-block" in codes
    assert "unclosed-block" not in {w.code for w in parse(statefile.new_state_file("x")).warnings}


@pytest.mark.parametrize("rule", ["---", "***", "___", "* * *", " - - -"])
def test_an_added_bullet_or_table_goes_above_the_section_separator_whatever_its_shape(rule: str) -> None:
    """Every thematic break is a section separator (compaction.split_tail reads them so too), not just ``---``."""
    text = (
        "# Autoloop: x\n\n## ⚙️ Machine State\n\nNo table yet.\n\n"
        f"{rule}\n\n## 📚 Lessons Learned\n\nWhat we learned.\n\n{rule}\n\n## 🔭 Future Directions\n\n- more\n"
    )
    doc = parse(text).with_lesson("cache the parser").with_field("Iteration Count", 3)
    assert doc.list_items("lessons")[0].text == "- cache the parser\n"
    assert doc.machine_state["iteration_count"] == 3
    lessons = doc.section("lessons")
    state = doc.section("machine_state")
    assert lessons is not None and state is not None
    assert lessons.text.endswith(f"What we learned.\n\n- cache the parser\n\n{rule}\n\n")
    assert state.text.endswith(f"| Iteration Count | 3 |\n\n{rule}\n\n")


def test_a_rule_inside_a_fence_is_content_not_a_separator() -> None:
    from statefile.model.blocks import content_end

    lines = ["## Notes\n", "\n", "```\n", "---\n", "```\n", "\n", "***\n", "\n"]
    assert content_end(lines) == 5
    assert content_end(["## Notes\n", "---\n"]) == 1
    assert content_end([]) == 0


def gap_file(ack: str = "") -> str:
    """Iterations 1–5 and 41–45 in full, nothing for 6–40 (as real files have: an agent lost those entries)."""
    from statefile.model.history import render_iteration

    entries = "".join(
        render_iteration(number=n, when="2026-01-01 00:00", status="accepted", metric=str(n))
        for n in [*range(45, 40, -1), *range(5, 0, -1)]
    )
    text = statefile.new_state_file("perf", iteration_count=45).replace("*(No iterations yet.)*\n", entries)
    if ack:
        text = text.replace("## 📊 Iteration History\n", f"## 📊 Iteration History\n\n{ack}\n", 1)
    return text


def test_a_known_history_gap_can_be_acknowledged(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As seen (issue 22): real files' history-gap warnings could not be accepted, so `check` warned forever."""
    import json

    from statefile.cli import cli
    from statefile.cli.run import invoke

    assert [w.message for w in parse(gap_file()).warnings if w.code == "history-gap"] == [
        "no entry or range covers iterations 6–40 (a known gap: add '<!-- statefile: gap 6–40 acknowledged -->' "
        "under the history heading)"
    ]
    acknowledged = gap_file("<!-- statefile: gap 6–40 acknowledged -->")
    assert "history-gap" not in {w.code for w in parse(acknowledged).warnings}
    # Only the numbers it names: a gap beyond them still warns.
    partly = gap_file("<!-- statefile: gap 6-30 acknowledged (lost in the 2026-04 push failures) -->")
    assert [w.message.split(" (")[0] for w in parse(partly).warnings if w.code == "history-gap"] == [
        "no entry or range covers iterations 31–40"
    ]

    monkeypatch.chdir(tmp_path)
    for name in ("STATEFILE_DIR", "STATEFILE_REPO_MEMORY", "STATEFILE_REMOTE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "perf.md").write_text(acknowledged)
    assert invoke(cli, ["--dir", str(tmp_path), "check"]) == 0
    out, _ = capfd.readouterr()
    assert "warning" not in out and "acknowledged: history-gap: iterations 6–40" in out, out
    assert invoke(cli, ["--dir", str(tmp_path), "--json", "check"]) == 0
    [report] = json.loads(capfd.readouterr()[0])
    assert report["warnings"] == [] and report["acknowledged"] == [
        "history-gap: iterations 6–40 (acknowledged in the file)"
    ]
    # Records and compaction keep the acknowledgement where it is (it is not an entry: nothing folds it away).
    assert invoke(cli, ["--dir", str(tmp_path), "--max-bytes", "6000", "record", "perf", "--status", "accepted",
                        "--metric", "46"]) == 0  # fmt: skip
    capfd.readouterr()
    text = (tmp_path / "perf.md").read_text()
    assert "<!-- statefile: gap 6–40 acknowledged -->" in text and "### Iters" in text, text
    assert "history-gap" not in {w.code for w in parse(text).warnings}


def test_a_note_mentioning_other_iterations_stays_in_its_entry() -> None:
    """As seen in issue 11: a note mentioning other iterations stays in its entry."""
    notes = [
        "- Iteration 190 and 189 both had wrong branch; fixed here.",
        "- Iter 171: the push was retried (label-shaped, but inside this entry's body).",
        "- **Iteration 188**: see above",
    ]
    first = entry_text(191, metric="5").rstrip("\n") + "\n" + "\n".join(notes) + "\n\n"
    text = state_file_text(first + entry_text(190) + entry_text(189) + entry_text(188))
    doc = parse(text)
    assert [e.covers for e in doc.history] == [(191,), (190,), (189,), (188,)]
    assert "duplicate-iteration" not in {w.code for w in doc.warnings}
    result = compact(doc)  # far under budget: nothing to fold
    assert not result.report.changed and result.archive == ""
    assert covered_numbers(result.document.render()) == {188, 189, 190, 191}
    assert all(note in doc.history[0].raw for note in notes)


def test_bullets_in_a_range_body_are_its_text() -> None:
    """As seen in issue 11: bullets in a range body are its text."""
    body = "### Iterations 168–171 — 2026-04-10 — ⚠️ Error (push failures)\n- Iters 168-170: not registered\n"
    text = state_file_text(entry_text(172) + body + "- Iter 171: auth error\n\n" + entry_text(167))
    history = parse(text).history
    assert [(e.kind, tuple(e.covers)) for e in history][1] == ("range", tuple(range(168, 172)))
    assert len(history) == 3 and "overlapping-ranges" not in {w.code for w in parse(text).warnings}


def test_a_level_two_range_heading_is_an_entry_not_a_second_history(tmp_path: Path) -> None:
    """'## Iterations 1–12 — condensed' under the history is its range line written a level up: check does not call
    it a duplicate section, history counts 1–12, repair leaves it, and compaction keeps it readable."""
    text = state_file_text(
        "".join(entry_text(n, metric=str(n)) for n in range(15, 12, -1))
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


# -- Edits touch only their own lines: every other byte of the file stays identical ----------


CORPUS = all_corpus_files()


def test_missing_machine_state_section_is_created_after_title() -> None:
    doc = parse("# Autoloop: x\n\nbanner\n\n## 📚 Lessons Learned\n\n- one\n")
    doc = doc.with_field("Iteration Count", 1)
    out = doc.render()
    assert out.index("## ⚙️ Machine State") < out.index("## 📚 Lessons Learned")
    assert out.endswith("## 📚 Lessons Learned\n\n- one\n")
    assert upstream_machine_state(out)["iteration_count"] == 1


@pytest.mark.parametrize("path", corpus_params())
def test_with_entry_inserts_only_the_entry(path: Path) -> None:
    text = read_raw(path)
    doc = parse(text)
    before = doc.history
    entry = "### Iteration 9999 — 2026-11-22 10:00 UTC\n\n- **Status**: ✅ Accepted\n\n"
    doc = doc.with_entry(entry)
    after = doc.history
    assert after[0].kind == "iteration" and after[0].covers == (9999,)
    assert [e.raw for e in after[1:]] == [e.raw for e in before] or before == ()
    removed = [line for line in changed_lines(text, doc.render()) if line.startswith("-")]
    assert removed == [] or all(not line[2:].strip() or "No iterations yet" in line for line in removed)


def test_prepend_into_template_replaces_placeholder() -> None:
    doc = parse(statefile.new_state_file("x"))
    doc = doc.with_entry("### Iteration 1 — 2026-11-22 10:00 UTC\n\n- **Status**: ✅ Accepted\n\n")
    out = doc.render()
    assert "No iterations yet" not in out
    assert "<!-- New entries are prepended below this line -->\n\n### Iteration 1" in out
    doc = doc.with_entry("### Iteration 2 — 2026-11-22 11:00 UTC\n\n- **Status**: ❌ Rejected\n\n")
    assert [e.covers for e in doc.history] == [(2,), (1,)]


def check_prepend_adds_heading_above_stray_entries(text: str, newest: int) -> None:
    entry = f"### Iteration {newest + 1} — 2026-05-01 10:00 UTC\n\n- **Status**: ✅ Accepted\n\n"
    doc = parse(text).with_entry(entry)
    out = doc.render()
    assert not doc.history_misplaced
    assert [e.covers for e in doc.history][:2] == [(newest + 1,), (newest,)]
    assert out.replace("## 📊 Iteration History\n\n" + entry, "") == text


def test_prepend_when_history_heading_is_missing_adds_heading_above_stray_entries() -> None:
    check_prepend_adds_heading_above_stray_entries(fixture_text("missing-history-heading.md"), 31)


def test_prepend_when_history_heading_is_missing_adds_heading_above_stray_entries_real() -> None:
    check_prepend_adds_heading_above_stray_entries(read_raw(real_file("24ec373")), 29)


@pytest.mark.parametrize("kind", ["lessons", "foreclosed", "future"])
def test_add_item_replaces_placeholder_then_appends(kind: str) -> None:
    doc = parse(statefile.new_state_file("x"))
    method = {"lessons": "with_lesson", "foreclosed": "with_foreclosed", "future": "with_future_direction"}[kind]
    doc = getattr(getattr(doc, method)("first"), method)("second\nline")
    section = doc.section(kind)
    assert section is not None
    assert "- *(none yet)*" not in section.text
    assert section.text.count("\n- first\n- second line\n") == 1
    assert [i.text.strip() for i in doc.list_items(kind)] == ["- first", "- second line"]


def test_add_lesson_creates_missing_section_in_canonical_position() -> None:
    doc = parse("# Autoloop: x\n\n## ⚙️ Machine State\n\n| Field | Value |\n\n## 📊 Iteration History\n\n")
    doc = doc.with_lesson("learned")
    kinds = [s.kind for s in doc.sections]
    assert kinds == ["title", "machine_state", "lessons", "history"]


SECTION_TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=200)


@settings(max_examples=examples(200))
@given(st.text(max_size=400))
def test_round_trip_any_text(text: str) -> None:
    assert parse(text).render() == text


@settings(max_examples=examples(200))
@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                ["## ⚙️ Machine State\n", "## 📊 Iteration History\n", "### Iteration 5 — x\n", "```\n", "\r\n",
                 "| Iteration Count | 3 |\n", "- **Status**: ✅\n", "### Iters 1–4 — ✅\n", "<!--\n", "\ufeff", "\r"]
            ),
            st.text(max_size=30),
        ),
        max_size=40,
    )
)  # fmt: skip
def test_round_trip_structured_noise(parts: list[str]) -> None:
    text = "".join(parts)
    doc = parse(text)
    assert doc.render() == text
    doc.warnings  # noqa: B018


@settings(max_examples=examples(60))
@given(
    index=st.integers(min_value=0, max_value=len(CORPUS) - 1),
    value=st.integers(min_value=0, max_value=10**6),
    lesson=st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1, max_size=80),
)
def test_corpus_edits_leave_other_sections_identical(index: int, value: int, lesson: str) -> None:
    text = read_raw(CORPUS[index])
    doc = parse(text)
    untouched = {s.start: s.text for s in doc.sections if s.kind not in ("machine_state", "lessons")}
    doc = doc.with_field("Consecutive Errors", value)
    if lesson.strip():
        doc = doc.with_lesson(lesson)
    after = {s.text for s in doc.sections if s.kind not in ("machine_state", "lessons")}
    assert set(untouched.values()) == after
    assert doc.machine_state["consecutive_errors"] == value


# -- statefile edit refuses what the record rules could not read (issue 22, item 6) --------------------------------


@pytest.mark.parametrize(
    ("old", "new", "row"),
    [
        ("| Best Metric | 335 |", "| Best Metric | lots |", "Best Metric"),
        ("| Iteration Count | 12 |", "| Iteration Count | abc |", "Iteration Count"),
        ("| Target Metric | — |", "| Target Metric | soon |", "Target Metric"),
        ("| Consecutive Errors | 0 |", "| Consecutive Errors | few |", "Consecutive Errors"),
    ],
)
def test_edit_check_and_record_refuse_a_machine_state_row_record_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, old: str, new: str, row: str
) -> None:
    """`Best Metric | lots` was saved by the "validated" edit and passed check; the next accepted record then said
    `new best metric: 1 (was lots)` and the real best, 335, was lost."""
    repos = make_repos(tmp_path)
    text = parse(new_state_file("perf")).with_fields({"Best Metric": 335, "Iteration Count": 12}).render()
    assert old in text
    with Store.open(repos.work) as store:
        store.write_files({"perf.md": text}, "seed")
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
        f"p.write_text(p.read_text(encoding='utf-8').replace({old!r}, {new!r}), encoding='utf-8')\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    edited = invoke_statefile(capsys, "edit", "perf", cwd=repos.work)
    assert edited.code == 2, edited.err
    assert f"edit refused: implausible-machine-state: the Machine State row '{row}'" in edited.err
    saved = Path(edited.err.strip().rsplit("saved in ", 1)[1])
    assert new in saved.read_text(encoding="utf-8") and len(edited.err.strip().splitlines()) == 1
    with Store.open(repos.work) as store:
        assert store.read_text("perf") == text  # nothing was committed
        store.write_files({"perf.md": text.replace(old, new)}, "by hand, around edit")
    checked = invoke_statefile(capsys, "check", "perf", cwd=repos.work)
    assert checked.code == 1 and f"'{row}'" in checked.out, checked.out
    recorded = invoke_statefile(capsys, "record", "perf", "--status", "accepted", "--metric", "1", cwd=repos.work)
    assert recorded.code == 7, recorded.out
    assert f"'{row}'" in recorded.err and "statefile edit perf" in recorded.err
    with Store.open(repos.work) as store:
        assert store.read_text("perf") == text.replace(old, new)  # the real best was not written over


def test_cells_that_say_none_on_purpose_are_not_refused() -> None:
    for cell in ("—", "-", "n/a", "— (CI failed)", "none", "null"):
        doc = parse(new_state_file("perf").replace("| Best Metric | — |", f"| Best Metric | {cell} |"))
        assert not [w for w in doc.warnings if w.code == "implausible-machine-state"], cell


def test_a_lesson_of_only_marks_is_refused_as_such_not_as_empty() -> None:
    """Cold review: `record --lesson "(from me)"` said "empty lesson", which was not true of what was typed."""
    doc = parse("# Autoloop: perf\n\n## 📚 Lessons Learned\n\n- one\n")
    for text in ("(from me)", "📌"):
        with pytest.raises(UsageError, match="has only marks") as raised:
            doc.with_lesson(text)
        assert repr(text) in str(raised.value)
    with pytest.raises(UsageError, match="empty lesson"):
        doc.with_lesson("   ")


def test_with_priority_appends_to_current_priorities() -> None:
    """The Python API's priority editor (a cold review found it dropped with the rename to with_*)."""
    doc = parse("# Autoloop: perf\n\n## 🎯 Current Priorities\n\n- first\n").with_priority("second")
    assert [item.text for item in doc.list_items("priorities")] == ["- first\n", "- second\n"]
