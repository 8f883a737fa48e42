"""repair(): what check reports that has one right answer is fixed, everything removed is archived, nothing else
changes — pure cases, a property over every sample and corpus file, and the command on a real repository."""

from __future__ import annotations

import json

import pytest
from conftest import SAMPLES, all_corpus_files, examples, read_raw
from e2e.test_fuzz import OPS
from gitutil import make_repos, run_statefile
from hypothesis import given, settings
from hypothesis import strategies as st

from statefile.model.document import REPAIRABLE, parse
from statefile.model.history import render_iteration
from statefile.model.template import new_state_file
from statefile.model.text import line_body, split_lines
from statefile.policy.repair import repair
from statefile.store import Store


def entry(n: int, change: str = "x") -> str:
    return render_iteration(number=n, when=f"2026-01-{n:02d} 10:00", status="accepted", metric=str(n), change=change)


def with_entries(*entries: str) -> str:
    return new_state_file("perf").replace("*(No iterations yet.)*\n", "".join(entries))


def codes(text: str) -> set[str]:
    return {w.code for w in parse(text).warnings}


def test_the_messy_sample() -> None:
    doc = parse((SAMPLES / "messy.md").read_text())
    result = repair(doc, program="messy")
    assert [f.code for f in result.fixes] == [
        "machine-state-heading", "duplicate-section", "duplicate-iteration", "overlapping-ranges",
    ]  # fmt: skip
    text = result.document.render()
    assert "## ⚙️ Machine State" in text and text.count("## 📚 Lessons Learned") == 1
    assert "- Duplicated section left behind by an agent that re-wrote the file." in text  # merged, not dropped
    assert "Iteration 39 (partial)" not in text and "### Iteration 39 —" in text
    assert "### Iters 20–38 — " in text and "archive/messy/" in text
    for moved in ("## 📚 Lessons Learned\n\n- Duplicated", "### Iteration 39 (partial)", "### Iters 30-38 --",
                  "### Iterations 20–32 — Various features (condensed)"):  # fmt: skip
        assert moved in result.archive
    assert not REPAIRABLE & {w.code for w in result.remaining}
    assert parse(text).machine_state == doc.machine_state
    again = repair(result.document, program="messy")
    assert not again.changed and again.document == result.document and again.archive == ""


def test_heading_drift_is_restored_but_a_renamed_heading_is_kept() -> None:
    text = (
        new_state_file("perf")
        .replace("## ⚙️ Machine State", "## machine state")
        .replace("## 📚 Lessons Learned", "## Lessons")
    )
    result = repair(parse(text))
    assert [f.code for f in result.fixes] == ["machine-state-heading"]
    assert "## ⚙️ Machine State\n" in result.document.render() and "## Lessons\n" in result.document.render()
    assert result.archive == "- heading restored to ⚙️ Machine State, it was: ## machine state\n\n"


def test_a_missing_history_heading_is_added_above_the_entries() -> None:
    text = with_entries(entry(2), entry(1)).replace("## 📊 Iteration History\n", "")
    assert "missing-history-heading" in codes(text)
    result = repair(parse(text))
    assert [f.code for f in result.fixes] == ["missing-history-heading"]
    assert [e.covers for e in result.document.history] == [(2,), (1,)]
    assert "missing-history-heading" not in {w.code for w in result.remaining}


def test_duplicated_history_sections_merge_newest_first() -> None:
    text = with_entries(entry(5), entry(2)) + "\n## 📊 Iteration History\n\n" + entry(4) + entry(2) + entry(1)
    result = repair(parse(text))
    assert [f.code for f in result.fixes] == ["duplicate-section"]
    assert [e.covers[0] for e in result.document.history] == [5, 4, 2, 1]
    assert result.document.render().count("### Iteration 2 —") == 1
    assert "## 📊 Iteration History\n\n### Iteration 4" in result.archive


def test_a_second_machine_state_table_is_archived_unless_the_first_has_no_rows() -> None:
    base = new_state_file("perf", iteration_count=3)
    copy = "\n## ⚙️ Machine State\n\n| Field | Value |\n|-------|-------|\n| Iteration Count | 9 |\n"
    result = repair(parse(base + copy))
    assert [f.code for f in result.fixes] == ["duplicate-section"] and "| Iteration Count | 9 |" in result.archive
    assert result.document.machine_state["iteration_count"] == 3
    empty_first = base.replace("| Iteration Count | 3 |", "").replace("| Field | Value |\n|-------|-------|\n", "")
    empty_first = "\n".join(line for line in empty_first.splitlines() if not line.startswith("| ")) + "\n"
    left = repair(parse(empty_first + copy))
    assert not left.changed and "duplicate-section" in {w.code for w in left.remaining}


def test_repeated_entries_and_unclosed_fences() -> None:
    result = repair(parse(with_entries(entry(3), entry(2), entry(2), entry(1))))
    assert [f.message for f in result.fixes] == ["a repeated copy of iteration 2 archived"]
    assert [e.covers[0] for e in result.document.history] == [3, 2, 1]
    fenced = with_entries(entry(2), entry(1)) + "\n```\nunclosed\n" + "\n## 📚 Lessons Learned\n\n- copy\n"
    untouched = repair(parse(fenced.replace("## ⚙️ Machine State", "## Machine State")))
    assert not untouched.changed and "unclosed-block" in {w.code for w in untouched.remaining}


def _files() -> list[tuple[str, str]]:
    return [(p.name, p.read_text()) for p in sorted(SAMPLES.glob("*.md"))] + [
        (p.name, read_raw(p)) for p in all_corpus_files()
    ]


@pytest.mark.parametrize(("name", "text"), _files(), ids=[name for name, _ in _files()])
def test_repair_loses_nothing_and_is_idempotent(name: str, text: str) -> None:
    doc = parse(text)
    result = repair(doc, program="p")
    after = result.document.render()
    kept = {line_body(line).strip() for line in split_lines(after + "\n" + result.archive)}
    for line in split_lines(text):
        body = line_body(line).strip()
        # Every line is still in the file or the archive; a restored heading's old text is inside an archive line.
        assert not body or body in kept or body.lstrip("\ufeff") in result.archive, (name, body)
    covered = {n for e in doc.history for n in e.covers}
    assert covered <= {n for e in result.document.history for n in e.covers}, name
    assert result.document.machine_state == doc.machine_state or "machine-state-heading" in {
        f.code for f in result.fixes
    }
    assert not repair(result.document, program="p").changed, name
    if doc.unclosed_block is not None:
        assert not result.changed and result.document == doc  # documented: such a file is not edited at all
        return
    # These three have one right answer every time; the other two only when a complete copy exists.
    always = {"machine-state-heading", "missing-history-heading", "overlapping-ranges"}
    assert not always & {w.code for w in result.remaining}, (name, result.remaining)


@st.composite
def damaged(draw: st.DrawFn) -> str:
    """A sample or corpus file damaged the way the fuzz suite damages files (duplicated sections and all)."""
    text = draw(st.sampled_from([text for _, text in _files()]))
    for op in draw(st.lists(st.sampled_from(OPS), min_size=1, max_size=4)):
        text = op(draw, text)
    return text


@settings(max_examples=examples(150))
@given(text=damaged())
def test_repair_of_damaged_files_is_total_lossless_and_idempotent(text: str) -> None:
    test_repair_loses_nothing_and_is_idempotent("damaged", text)


def test_repair_through_the_console_script(tmp_path_factory: pytest.TempPathFactory) -> None:
    repos = make_repos(tmp_path_factory.mktemp("repair"))
    messy = (SAMPLES / "messy.md").read_text()
    with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
        store.write_files({"messy.md": messy, "clean.md": with_entries(entry(1))}, "seed")
    tip = repos.remote_tip()

    def sf(*args: str) -> tuple[int, str, str]:
        proc = run_statefile("--remote", "origin", *args, cwd=repos.work)
        return proc.returncode, proc.stdout, proc.stderr

    code, out, _ = sf("repair", "messy", "--dry-run")
    assert code == 0 and out.startswith("messy: dry run: would fix 4 problems") and repos.remote_tip() == tip
    code, out, err = sf("repair", "--all")
    assert code == 0, err
    assert (
        "clean: nothing to repair" in out and "messy: fixed 4 problems" in out and "archived to archive/messy/" in out
    )
    assert repos.remote_tip() != tip
    archive = repos.remote_file("archive/messy/0001.md")
    assert archive is not None and "### Iteration 39 (partial)" in archive and "## Archived " in archive
    assert "— repair of messy.md" in archive
    assert sf("check", "messy")[0] == 0
    code, out, _ = sf("--json", "repair", "messy")
    assert code == 0 and json.loads(out)[0]["fixes"] == []
    assert sf("repair")[0] == 2 and sf("repair", "nope")[0] == 3


def test_repair_a_file_by_path(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("memory")
    (folder / "messy.md").write_text((SAMPLES / "messy.md").read_text())
    proc = run_statefile("repair", str(folder / "messy.md"), cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert "messy: fixed 4 problems" in proc.stdout
    assert "### Iteration 39 (partial)" in (folder / "archive" / "messy" / "0001.md").read_text()
    assert "### Iteration 39 (partial)" not in (folder / "messy.md").read_text()
