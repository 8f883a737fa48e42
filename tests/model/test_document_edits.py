"""Edits touch only their own lines: every other byte of the file stays identical."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import pytest
from conftest import all_corpus_files, corpus_params, examples, fixture_text, read_raw, real_file
from gitutil import invoke_statefile, make_repos
from hypothesis import given, settings
from hypothesis import strategies as st
from upstream import meaningful, upstream_machine_state

import statefile
from statefile.model.document import parse
from statefile.model.template import new_state_file
from statefile.store import Store

CORPUS = all_corpus_files()


def changed_lines(before: str, after: str) -> list[str]:
    """Lines removed or added between two texts (keepends)."""
    diff = difflib.ndiff(before.splitlines(keepends=True), after.splitlines(keepends=True))
    return [line for line in diff if line[:1] in "+-"]


@pytest.mark.parametrize("path", corpus_params())
def test_set_field_changes_one_row(path: Path) -> None:
    text = read_raw(path)
    doc = parse(text)
    doc = doc.with_field("Iteration Count", 999)
    diff = changed_lines(text, doc.render())
    assert len(diff) == 2, diff
    assert "| 999" in diff[1] or "|999" in diff[1]
    assert doc.machine_state["iteration_count"] == 999
    assert meaningful(upstream_machine_state(doc.render()))["iteration_count"] == 999


def test_missing_row_is_added_in_canonical_order_with_table_style() -> None:
    text = "## ⚙️ Machine State\n\n|Field|Value|\n|---|---|\n|Last Run|—|\n|Branch|x|\n|Custom|keep|\n\n## Next\n"
    doc = parse(text)
    doc = doc.with_fields({"metric_direction": "lower", "Paused": True})
    out = doc.render()
    assert out == (
        "## ⚙️ Machine State\n\n|Field|Value|\n|---|---|\n|Last Run|—|\n|Metric Direction|lower|\n|Branch|x|\n"
        "|Paused|true|\n|Custom|keep|\n\n## Next\n"
    )


def test_set_field_keeps_crlf_and_missing_final_newline() -> None:
    text = "## ⚙️ Machine State\r\n\r\n| Field | Value |\r\n|---|---|\r\n| Iteration Count | 1 |"
    doc = parse(text)
    doc = doc.with_field("iteration_count", 2)
    doc = doc.with_field("Paused", False)
    assert doc.render() == (
        "## ⚙️ Machine State\r\n\r\n| Field | Value |\r\n|---|---|\r\n| Iteration Count | 2 |\r\n| Paused | false |"
    )


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
