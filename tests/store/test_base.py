"""Archive parts hold whole entries: an entry is split only when it is larger than a part, and reads back whole.

The end-to-end test compacts 390 iterations into the archive through a store, at the default budget and at 5 KB,
and expands every one of them: each comes back exactly as it was in the file.  The unit tests pin down how
parts are filled.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gitutil import run_statefile
from storeutil import LOCAL, git, make_repo, one_error_line
from synthetic import synthetic_state

from statefile.app.reading import expand_iteration
from statefile.app.writing import compact_program
from statefile.errors import EXIT_USAGE
from statefile.model.archive import (
    CONTINUED,
    CONTINUED_END,
    archive_entries,
    continuation,
    find_iteration,
    find_iteration_in_parts,
    make_chunk,
    plan_append,
)
from statefile.model.document import parse
from statefile.model.history import Iteration
from statefile.model.text import utf8_size
from statefile.policy.compaction import CompactionPolicy
from statefile.store import FolderStore


def entry(n: int, lines: int) -> str:
    body = "".join(f"- note {k} of iteration {n}: {'detail ' * (k % 9 + 1)}\n" for k in range(lines))
    return f"### Iteration {n} — 2026-01-{n % 28 + 1:02d} 12:00 UTC — [Run](https://example.com/{n})\n\n{body}\n"


def build(entries: list[str], max_bytes: int, per_chunk: int) -> list[str]:
    """Archive ``entries`` chunk by chunk, as compactions would: the texts of the parts, oldest first."""
    parts: dict[str, str] = {}
    for start in range(0, len(entries), per_chunk):
        chunk = make_chunk("".join(entries[start : start + per_chunk]), when="2026-01-01T00:00:00Z", what="fold")
        last = max(parts.items()) if parts else None
        parts.update(plan_append("perf", last, chunk, max_bytes))
    return [parts[name] for name in sorted(parts)]


@pytest.mark.slow  # scale
@pytest.mark.parametrize("max_bytes", [1500, 5120, 30720])
def test_entries_are_never_split_unless_larger_than_a_part(max_bytes: int) -> None:
    sizes = [3, 8, 20, 2, 140, 5, 60, 1, 400, 12] * 4  # some entries far larger than a part
    entries = [entry(n, lines) for n, lines in enumerate(sizes, 1)]
    texts = build(entries, max_bytes, per_chunk=6)
    assert all(utf8_size(text) <= max_bytes for text in texts)  # repo-memory refuses larger files
    for n, original in enumerate(entries, 1):
        found = find_iteration_in_parts(lambda i: texts[i], len(texts), n)
        assert found is not None and found[1].rstrip("\n") == original.rstrip("\n"), n
        fits = utf8_size(original) + 300 < max_bytes
        if fits:  # an entry that fits a part is in one part, whole
            assert find_iteration(texts[found[0]], n) == found[1]
    continued = [text for text in texts if continuation(text) is not None]
    assert continued if max_bytes < 30720 else True
    assert all(CONTINUED in text for text in continued)
    assert sum(text.count(CONTINUED_END) for text in texts) <= len(continued)


def test_an_over_long_line_is_cut_by_characters_and_joined_back() -> None:
    huge = entry(7, 1).replace("- note 0", "- note 0 " + "é" * 9000)
    texts = build([entry(6, 2), huge, entry(8, 2)], 3000, per_chunk=3)
    assert all(utf8_size(text) <= 3000 for text in texts) and len(texts) >= 7
    for n, original in ((6, entry(6, 2)), (7, huge), (8, entry(8, 2))):
        found = find_iteration_in_parts(lambda i: texts[i], len(texts), n)
        assert found is not None and found[1].rstrip("\n") == original.rstrip("\n")


def test_a_chunk_that_fits_the_newest_part_is_appended_to_it() -> None:
    first = plan_append("perf", None, make_chunk(entry(1, 2), when="t", what="one"), 30720)
    assert [name for name, _ in first] == ["0001.md"]
    second = plan_append("perf", first[0], make_chunk(entry(2, 2), when="t", what="two"), 30720)
    assert second == [("0001.md", first[0][1] + make_chunk(entry(2, 2), when="t", what="two"))]


@pytest.mark.slow  # scale
@pytest.mark.parametrize("max_bytes", [30720, 5120])
def test_390_archived_iterations_all_expand_whole(tmp_path: Path, max_bytes: int) -> None:
    text = synthetic_state("perf", 390, seed=11, lessons=2, foreclosed=1)
    original = {e.covers[0]: e.raw for e in parse(text).history if isinstance(e, Iteration)}
    assert len(original) == 390
    (tmp_path / "perf.md").write_text(text, "utf-8")
    store = FolderStore(tmp_path, max_bytes=max_bytes)
    outcome = compact_program(store, "perf", CompactionPolicy(max_bytes=max_bytes, program="perf"), dry_run=False)
    assert outcome.report.changed
    parts = store.archive_parts("perf")
    assert len(parts) > 1 and all(len(store.read_archive("perf", p).encode()) <= max_bytes for p in parts)
    texts = [store.read_archive("perf", p) for p in parts]
    current = (tmp_path / "perf.md").read_text("utf-8")
    archived = {n for n, raw in original.items() if any(raw.rstrip("\n") in text for text in texts)}
    # The entries at risk are those at a part's edges, and any a part split (whole in no one part): each of them is
    # expanded, with every 9th other one (an expand parses the parts it reads: all 390 take half a minute).
    split = {n for n, raw in original.items() if n not in archived and raw.rstrip("\n") not in current}
    detailed = [[a.entry.covers[0] for a in archive_entries(text) if isinstance(a.entry, Iteration)] for text in texts]
    edges = {n for numbers in detailed for n in numbers[:1] + numbers[-1:]}
    assert len(archived | split) > 300 and len(edges) >= len(parts)
    for number in sorted(split | edges | set(sorted(original)[::9])):
        where, found = expand_iteration(store, "perf", number)
        assert found.rstrip("\n") == original[number].rstrip("\n"), (number, where)
        assert where.startswith("archive/") == (number in archived | split), (number, where)


def test_a_branch_both_gh_aw_paths_wrote_is_read_in_both_archive_layouts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As seen (issue 22, a newcomer's walk-through of both paths): path 1 archives to ``archive/perf/``, path 2
    under upstream's ``*.md`` to ``_archive.perf.0001.md``; each reader looked only in its own layout, so
    ``expand``, ``history``, the agent's expand tool and a re-run's marker lookup lost sight of what the other path
    archived, although its text was on the branch.  Every reader now reads both."""
    from gitutil import git, invoke_statefile, make_repos

    from statefile.model.template import new_state_file
    from statefile.store import Store

    repos = make_repos(tmp_path)
    files = {
        "perf.md": new_state_file("perf").replace("*(No iterations yet.)*\n", entry(5, 2)),
        "archive/perf/0001.md": make_chunk(entry(1, 2) + entry(2, 2), when="2026-01-01T00:00:00Z", what="path 1"),
        "_archive.perf.0001.md": make_chunk(entry(3, 2) + entry(4, 2), when="2026-01-02T00:00:00Z", what="path 2"),
    }
    with Store.open(repos.work, remote="origin") as store:
        store.write_files(files, "seed: a branch both paths wrote")
    folder = tmp_path / "scheduler-clone"
    git("clone", "-q", "-b", "memory/autoloop", str(repos.remote), str(folder), cwd=tmp_path)
    for where in (["--remote", "origin"], ["--dir", str(folder)]):
        for number, path in ((1, "archive/perf/0001.md"), (3, "_archive.perf.0001.md")):
            ran = invoke_statefile(capsys, *where, "expand", "perf", str(number), "--json", cwd=repos.work)
            assert ran.code == 0, ran.err
            assert f"Iteration {number} —" in ran.out and path in ran.out, ran.out
        ran = invoke_statefile(capsys, *where, "history", "perf", "--json", cwd=repos.work)
        listed = [n for n in range(1, 6) if f'"iteration": {n}' in ran.out or f'"first": {n}' in ran.out]
        assert ran.code == 0 and listed == [1, 2, 3, 4, 5], ran.out


def test_a_program_differing_only_in_case_is_refused(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): a program differing only in case is refused."""
    repo = make_repo(tmp_path / "repo")
    folder = tmp_path / "folder"
    folder.mkdir()
    for flags in ([], ["--dir", str(folder)]):
        assert run_statefile(*flags, "init", "perf", cwd=repo).returncode == 0
        proc = run_statefile(*flags, "init", "PERF", cwd=repo)
        assert proc.returncode == EXIT_USAGE and "differs only in case" in one_error_line(proc)
        assert run_statefile(*flags, "record", "Perf", "--status", "accepted", cwd=repo).returncode == EXIT_USAGE
    assert git(repo, "ls-tree", "--name-only", LOCAL).split() == ["perf.md"]
    assert sorted(p.name for p in folder.glob("*.md")) == ["perf.md"]
