"""resolve_targets: what a command's program names, state-file paths or --all stand for."""

from __future__ import annotations

from pathlib import Path

import pytest

from statefile.app.targets import Target, is_path_argument, resolve_targets
from statefile.errors import InvalidDataError, NotFoundError, UsageError
from statefile.store.folder import FolderStore

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
