"""The read use cases (statefile.app.reading): what read-only commands do, and what a command's program names,
state-file paths or --all stand for (resolve_targets)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GuardRepo, entry_text, guard_run, refs_unchanged, state_file_text

from statefile.app.context import resolve_config
from statefile.app.reading import (
    Target,
    all_status,
    expand_iteration,
    is_path_argument,
    memory_summary,
    resolve_targets,
)
from statefile.errors import InvalidDataError, NotFoundError, StatefileError, UsageError
from statefile.model.archive import make_chunk, part_header
from statefile.store import FolderStore


def test_a_mistyped_program_is_not_found_with_the_closest_names(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guard rail (issue 13): a mistyped program is not found with the closest names; the memory is left exactly as it
    was."""
    before = guard_repo.refs()
    result = guard_run(capsys, "--remote", "origin", "record", "perff", "--status", "accepted")
    assert result.code == 3
    assert "no program 'perff' (did you mean 'perf'?)" in result.error_line
    assert "--create" in result.error_line
    refs_unchanged(guard_repo, before)


def folder_with_archive(tmp_path: Path, archived: str) -> FolderStore:
    (tmp_path / "perf.md").write_text(state_file_text(entry_text(5)), encoding="utf-8")
    part = tmp_path / "archive" / "perf" / "0001.md"
    part.parent.mkdir(parents=True)
    part.write_text(part_header("perf", 1) + make_chunk(archived, when="2026-05-01", what="compaction"))
    return FolderStore(tmp_path, max_bytes=30720)


def test_expand_reads_past_a_heading_inside_a_code_fence(tmp_path: Path) -> None:
    """As seen in issue 11: expand reads past a heading inside a code fence."""
    archived = (
        "### Iteration 3 — 2026-03-03 10:00 UTC\n\n- **Status**: ✅ Accepted\n- **Notes**: the config was\n\n"
        "```\n## not a heading\n### Iteration 99 — nor this\n```\n\n- **Commit**: abc1234\n\n"
        "### Iteration 2 — 2026-03-02 10:00 UTC\n\n- **Status**: ❌ Rejected\n"
    )
    where, text = expand_iteration(folder_with_archive(tmp_path, archived), "perf", 3)
    assert where == "archive/perf/0001.md"
    assert text.startswith("### Iteration 3") and "- **Commit**: abc1234" in text and "Iteration 2 —" not in text


def test_expand_finds_a_bullet_form_entry_in_the_archive(tmp_path: Path) -> None:
    """As seen in issue 11: expand finds a bullet form entry in the archive."""
    archived = "- Iter 1: ❌ CI failed · Island 1 · commit 24bbe85\n"
    where, text = expand_iteration(folder_with_archive(tmp_path, archived), "perf", 1)
    assert (where, text.strip()) == ("archive/perf/0001.md", archived.strip())


def folder_of_two(tmp_path: Path) -> FolderStore:
    """perf with two iterations, perf-b with one, and a link that looks like a third state file."""
    (tmp_path / "perf.md").write_text(state_file_text(entry_text(2, metric="2") + entry_text(1, metric="1")))
    (tmp_path / "perf-b.md").write_text(state_file_text(entry_text(1)))
    (tmp_path / "elsewhere").write_text("x")
    (tmp_path / "linked.md").symlink_to(tmp_path / "elsewhere")
    return FolderStore(tmp_path, max_bytes=30720)


def test_status_over_every_program_lists_the_unreadable_one_and_a_named_one_raises(tmp_path: Path) -> None:
    store = folder_of_two(tmp_path)
    config = resolve_config(None, {}, {})
    found = all_status(store, None, config, ("*.md",), trends=True)
    assert sorted(found.reports) == ["perf", "perf-b"] and list(found.unreadable) == ["linked"]
    assert found.reports["perf"]["counts"]["iterations"] == 2 and "over 2 iterations" in found.trends["perf"]
    assert all_status(store, "perf", config, ("*.md",)).trends == {}
    with pytest.raises(StatefileError):
        all_status(store, "linked", config, ("*.md",))


def test_summary_names_a_missing_program_and_counts_what_it_lists(tmp_path: Path) -> None:
    store = folder_of_two(tmp_path)
    text, count = memory_summary(store, (), 2, ("*.md",))
    assert count == 3 and "```mermaid" in text and "none here" not in text
    assert "1 more program has none here" in memory_summary(store, (), 1, ("*.md",))[0]
    assert memory_summary(store, ("perf-b",), 5, ("*.md",))[1] == 1
    with pytest.raises(NotFoundError, match="did you mean 'perf-b'"):
        memory_summary(store, ("perf-b", "perf-"), 5, ("*.md",))


STATE = "# Autoloop: {name}\n\n## ⚙️ Machine State\n\n| Field | Value |\n|---|---|\n| Iteration Count | 0 |\n"


@pytest.fixture
def store(tmp_path: Path) -> FolderStore:
    folder = tmp_path / "memory"
    folder.mkdir()
    for name in ("perf-comparison", "alpha", "beta"):
        (folder / f"{name}.md").write_text(STATE.format(name=name), encoding="utf-8")
    return FolderStore(folder)


def test_all_and_names_or_neither_is_a_usage_error(store: FolderStore) -> None:
    with pytest.raises(UsageError, match="not both"):
        resolve_targets(store, ["alpha"], all_programs=True)
    with pytest.raises(UsageError, match="name the programs to compact, or pass --all"):
        resolve_targets(store, [], all_programs=False, verb="compact")


def test_all_is_every_program_sorted_and_the_unreadable_ones_fail(store: FolderStore, tmp_path: Path) -> None:
    (tmp_path / "elsewhere.md").write_text("x", encoding="utf-8")
    (store.root / "linked.md").symlink_to(tmp_path / "elsewhere.md")
    targets = resolve_targets(store, [], all_programs=True)
    assert targets.found == (Target("alpha"), Target("beta"), Target("perf-comparison"))
    assert [name for name, _ in targets.failures] == ["linked"]
    assert isinstance(targets.failures[0][1], InvalidDataError)


def test_all_follows_the_globs(store: FolderStore) -> None:
    assert resolve_targets(store, [], all_programs=True, globs=("a*.md",)).found == (Target("alpha"),)


def test_names_paths_and_failures_are_collected_in_order(store: FolderStore, tmp_path: Path) -> None:
    path = tmp_path / "other" / "gamma.md"
    path.parent.mkdir()
    path.write_text(STATE.format(name="gamma"), encoding="utf-8")
    targets = resolve_targets(store, ["beta", str(path), "perf", "bad/name.md", "../x", "beta"], all_programs=False)
    assert targets.found == (Target("beta"), Target("gamma", path))
    assert targets.found[1].label == str(path) and targets.found[0].label == "beta"
    failures = dict(targets.failures)
    assert isinstance(failures["perf"], NotFoundError)
    assert "no program 'perf' (did you mean 'perf-comparison'?)" in str(failures["perf"])
    assert str(failures["bad/name.md"]) == "bad/name.md: no such file; check the path"
    assert isinstance(failures["../x"], NotFoundError)


def test_without_paths_a_path_is_an_invalid_program_name(store: FolderStore) -> None:
    failures = dict(resolve_targets(store, ["memory/alpha.md"], all_programs=False, allow_paths=False).failures)
    assert isinstance(failures["memory/alpha.md"], UsageError)


def test_the_same_file_twice_is_one_target(store: FolderStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(store.root)
    targets = resolve_targets(store, ["alpha.md", "./alpha.md"], all_programs=False)
    assert targets.found == (Target("alpha", Path("alpha.md")),)


def test_shared_lessons_are_a_target_when_present(store: FolderStore) -> None:
    assert resolve_targets(store, ["_shared"], all_programs=False).failures[0][0] == "_shared"
    (store.root / "_shared.md").write_text("# Shared lessons\n", encoding="utf-8")
    assert resolve_targets(store, ["_shared"], all_programs=False).found == (Target("_shared"),)


def test_is_path_argument() -> None:
    assert is_path_argument("perf.md") and is_path_argument("memory/perf") and not is_path_argument("perf")
