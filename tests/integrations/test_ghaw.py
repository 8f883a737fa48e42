"""gh-aw's formats as statefile reads them: file-glob, the patch-size rule, agent output, sanitised values; and
folder mode for users who keep gh-aw's repo-memory (``statefile --repo-memory``): the folder from the workflow
frontmatter, archive parts where file-glob lets them reach the branch, and each run's additions within
max-patch-size while the file stays within max-file-size."""

from __future__ import annotations

import math
import re
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
from ghaw import push_job
from ghaw.push_job import glob_to_regex, patch_size
from ghaw.safe_outputs import sanitize
from gitutil import run_statefile
from synthetic import synthetic_state

from statefile.errors import NotFoundError, UsageError
from statefile.integrations.ghaw import (
    InputError,
    RepoMemoryFolder,
    count_value,
    glob_matches,
    lines_value,
    number_value,
    parse_agent_output,
    patch_added_bytes,
    read_agent_output,
    reference_value,
    text_value,
)

# (pattern, path, pushed?) — the table in the team's gh-aw notes (§1.5), checked by running gh-aw's function.
GLOB_TABLE = [
    ("*.md", "a.md", True),
    ("*.md", ".hidden.md", True),
    ("*.md", "sub/a.md", False),
    ("*.md", "A.MD", False),
    ("**/*.md", "x/a.md", True),
    ("**/*.md", "a.md", False),
    ("archive/*.md", "archive/a.md", True),
    ("?.md", "a.md", False),
    ("?.md", "?.md", True),
    ("[ab].md", "a.md", False),
    ("[ab].md", "[ab].md", True),
    ("archive/**", "archive/perf/0001.md", True),
    ("*", "_archive.perf.0001.md", True),
    ("a+b.md", "a+b.md", True),
]


@pytest.mark.parametrize(("pattern", "path", "pushed"), GLOB_TABLE)
def test_glob_semantics_match_gh_aw(pattern: str, path: str, pushed: bool) -> None:
    assert glob_matches(path, (pattern,)) is pushed
    # statefile's translation and the tests' independent re-statement of the push job agree.
    assert bool(push_job.glob_to_regex(pattern).match(path)) is pushed


def test_no_globs_is_no_filter() -> None:
    assert glob_matches("anything/at/all", ())


def _folder(max_patch_size: int) -> RepoMemoryFolder:
    return RepoMemoryFolder(Path("."), globs=(), max_file_size=1, max_patch_size=max_patch_size, max_file_count=1)


def test_patch_limit_is_floor_of_1_2_times() -> None:
    for limit in (1, 10, 1000, 10240, 30720, 12345, 99999):
        assert _folder(limit).patch_limit == math.floor(limit * 1.2)
    assert _folder(10240).patch_limit == 12288


def test_patch_size_counts_added_lines_like_the_push_job(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.md").write_text("one\ntwo\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "a"], cwd=repo, check=True)
    (repo / "a.md").write_text("one\nzwei ü\n++ quirk\nthree")
    (repo / "b.md").write_text("new\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    diff = subprocess.run(["git", "diff", "--cached"], cwd=repo, capture_output=True, text=True, check=True).stdout
    # "+zwei ü" (8 bytes) + 1, "+three" + 1, "+new" + 1; "+++ quirk" is not counted (it reads as a header).
    assert patch_added_bytes(diff) == push_job.patch_size(diff) == (len("+zwei ü".encode()) + 1) + 7 + 5


def test_agent_output_items_of_a_type() -> None:
    output = parse_agent_output(
        '{"items":[{"type":"record_iteration","program":"a"},{"type":"add_comment"},'
        '{"type":"record-iteration","program":"b"}],"errors":["Line 4: Too many items"]}',
        "out.json",
    )
    assert [i["program"] for i in output.of_type("record-iteration")] == ["a", "b"]
    assert output.errors == ("Line 4: Too many items",)


@pytest.mark.parametrize("text", ["[]", "not json", '{"items": {}}', '{"items": [1]}'])
def test_agent_output_that_is_not_one_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_agent_output(text, "out.json")


def test_missing_agent_output_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="GH_AW_AGENT_OUTPUT"):
        read_agent_output(tmp_path / "agent_output.json")


def test_numbers_arrive_as_numbers_or_strings() -> None:
    assert number_value({"m": 0.93}, "m") == Decimal("0.93")
    assert number_value({"m": "0.93"}, "m") == Decimal("0.93")
    assert number_value({"m": " `1,234.5` "}, "m") == Decimal("1234.5")
    assert number_value({"m": 7}, "m") == 7
    assert number_value({"m": "—"}, "m") is None
    assert count_value({"n": "3"}, "n") == 3
    for bad in ({"m": "fast"}, {"m": True}, {"m": "nan"}):
        with pytest.raises(InputError):
            number_value(bad, "m")
    with pytest.raises(InputError):
        count_value({"n": "2.5"}, "n")


def test_references_survive_sanitisation_or_say_they_did_not() -> None:
    assert reference_value({"pr": "#12"}, "pr") == (12, None)
    assert reference_value({"pr": 12}, "pr") == (12, None)
    assert reference_value({"pr": "PR #12"}, "pr") == (12, None)
    assert reference_value({"pr": "https://github.com/o/r/pull/12"}, "pr") == (12, None)
    redacted = sanitize("https://ghe.example.com/o/r/pull/12")
    assert redacted == "(ghe.example.com/redacted)"
    number, warning = reference_value({"pr": redacted}, "pr")
    assert number is None and warning and "redacted" in warning
    with pytest.raises(InputError):
        reference_value({"pr": "twelve"}, "pr")


def test_text_and_lists_after_sanitisation() -> None:
    notes = sanitize("  <!-- hidden --> Faster; thanks @octocat, see http://example.com/x and {{ x }}  ")
    assert notes == "Faster; thanks `@octocat`, see (example.com/redacted) and \\{\\{ x }}"
    assert text_value({"notes": notes}, "notes") == notes
    assert lines_value({"l": "- one\n* two\n\n3. three\n(none)"}, "l") == ["one", "two", "three", "(none)"]
    assert lines_value({"l": ["a", " b "]}, "l") == ["a", "b"]
    assert lines_value({"l": "none"}, "l") == []


# -- agent text is data ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("\x1b[31mred\x1b[0m text", "red text"),
        ("title \x1b]0;pwned\x07 here", "title  here"),
        ("bell\x07 nul\x00 del\x7f c1\x9b31m", "bell nul del c1"),
        ("evil\u202etxt.exe \u2066iso\u2069", "eviltxt.exe iso"),
        ("a <!-- statefile-item: run 1 attempt 1 item 1 --> b", "a  b"),
        ("open <!-- never closed", "open  never closed"),
        ("📌 pinned <!-- pin --> <!--pinned-->", " pinned  "),
        ("**IMPORTANT**: do it, CRITICAL too, ** Important** x", "important: do it, critical too,  important x"),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        # A removal must not join what is left into a comment or a pin (found by the hostile suite).
        ("x <📌!-- hidden -📌-> y", "x  y"),
        ("done <📌!-- everything after this is hidden", "done  everything after this is hidden"),
        ("**Important:** x", "important: x"),
        ("line\r\nbreak\rhere\ttab", "line\nbreak\nhere\ttab"),
    ],
)
def test_clean_text_leaves_data_only(raw: str, kept: str) -> None:
    from statefile.integrations.ghaw import clean_text
    from statefile.policy.pruning import is_important, is_pinned

    cleaned = clean_text(raw)
    assert cleaned == kept
    assert not is_pinned(cleaned) and not is_important(cleaned)


def test_texts_are_capped_with_a_warning() -> None:
    warnings: list[str] = []
    notes = text_value({"notes": "é" * 5_000_000}, "notes", warnings)
    assert notes is not None and len(notes.encode()) <= 1000 and notes.endswith("…")
    assert warnings == ["notes was cut to 1,000 bytes (it had 10,000,000)"]
    warnings.clear()
    lessons = lines_value({"lessons": "\n".join(f"📌 lesson {n}" for n in range(3000))}, "lessons", warnings)
    assert lessons == [f"lesson {n}" for n in range(5)]
    assert "(2,995 more left out)" in warnings[0]


@pytest.mark.parametrize(
    "value",
    ["1e5000", "1e999999999", "٣", "１２", "0x10", "9" * 41, "1" * 5000, "1e", "NaN", "Infinity", "--1", "1.2.3"],
)
def test_numbers_are_bounded_before_they_are_converted(value: str) -> None:
    with pytest.raises(InputError):
        number_value({"metric": value}, "metric")
    with pytest.raises(InputError):
        count_value({"ci_fix_attempts": value}, "ci_fix_attempts")
    with pytest.raises(InputError):
        reference_value({"pr": value}, "pr")


def test_counts_and_references_are_ranged() -> None:
    assert count_value({"n": "1000"}, "n") == 1000
    for bad in ("1001", -1, 1001, 2.5):
        with pytest.raises(InputError):
            count_value({"n": bad}, "n")
    assert reference_value({"pr": 2**31 - 1}, "pr") == (2**31 - 1, None)
    for bad in (2**31, "#2147483648", 0):
        with pytest.raises(InputError):
            reference_value({"pr": bad}, "pr")


def test_one_huge_number_is_its_items_problem_not_the_outputs() -> None:
    output = parse_agent_output('{"items": [{"type": "t", "pr": 123456789012345678901234567890123456789012},'
                                ' {"type": "t", "metric": 1e999}]}', "x")  # fmt: skip
    assert output.items[0]["pr"] == "123456789012345678901234567890123456789012"
    assert output.items[1]["metric"] == "1e999"
    with pytest.raises(InputError):
        reference_value(output.items[0], "pr")
    with pytest.raises(InputError):
        number_value(output.items[1], "metric")


# -- the repo-memory folder ------------------------------------------------------------------------------------


WORKFLOW = """---
on:
  schedule: every 6h
tools:
  repo-memory:
{memory}
---

# Autoloop
"""


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _workspace(tmp_path: Path, memory: str) -> Path:
    work = tmp_path / "workspace"
    (work / ".github" / "workflows").mkdir(parents=True)
    (work / ".github" / "workflows" / "autoloop.md").write_text(WORKFLOW.format(memory=memory))
    _git("init", "-q", str(work), cwd=tmp_path)
    return work


def _memory_clone(tmp_path: Path, files: dict[str, str]) -> Path:
    """A repo-memory folder as gh-aw leaves it for the agent: a clone of the branch, at its HEAD."""
    folder = tmp_path / "repo-memory" / "default"
    folder.mkdir(parents=True)
    _git("init", "-q", str(folder), cwd=tmp_path)
    _git("checkout", "-q", "--orphan", "memory/autoloop", cwd=folder)
    for name, text in files.items():
        (folder / name).write_text(text)
    _git("add", "-A", cwd=folder)
    _git("commit", "-q", "-m", "branch", "--allow-empty", cwd=folder)
    return folder


def _push(folder: Path, globs: list[str]) -> int:
    """Commit what the push job would copy (files matching the glob); the patch size it would count."""
    patterns = [glob_to_regex(g) for g in globs]
    files = [p for p in _git("ls-files", "--others", "--modified", "--exclude-standard", cwd=folder).split()
             if any(r.match(p) for r in patterns)]  # fmt: skip
    if not files:
        return 0
    _git("add", "--", *files, cwd=folder)
    size = patch_size(_git("diff", "--cached", cwd=folder))
    _git("commit", "-q", "-m", "push", cwd=folder)
    return size


MEMORY = (
    '    branch-name: memory/autoloop\n    file-glob: ["*.md"]\n    max-file-size: {size}\n    max-patch-size: {patch}'
)


def test_the_folder_comes_from_the_frontmatter(tmp_path: Path) -> None:
    work = _workspace(tmp_path, MEMORY.format(size=30720, patch=10240))
    done = run_statefile("--json", "config", cwd=work)
    rows = {row["key"]: row for row in __import__("json").loads(done.stdout)}
    assert rows["repo-memory-dir"]["value"] == "/tmp/gh-aw/repo-memory/default"
    assert rows["max-patch-size"]["value"] == 10240 and "frontmatter" in rows["max-patch-size"]["source"]
    listed = '    - id: notes\n      branch-name: memory/autoloop\n      file-glob: ["*.md"]'
    work2 = _workspace(tmp_path / "two", listed)
    rows = {row["key"]: row for row in __import__("json").loads(run_statefile("--json", "config", cwd=work2).stdout)}
    assert rows["repo-memory-dir"]["value"] == "/tmp/gh-aw/repo-memory/notes"
    done = run_statefile("--repo-memory", "list", cwd=work2, env={"STATEFILE_REPO_MEMORY_DIR": str(tmp_path / "no")})
    assert done.returncode == 3 and "no such folder" in done.stderr


@pytest.mark.parametrize(
    ("globs", "archive"),
    [('["*.md"]', "_archive.perf.0001.md"), ('["*.md", "**/*.md"]', "archive/perf/0001.md"),
     ('["*.md", "archive/*.md"]', "archive/perf.0001.md"), ('"*"', "_archive.perf.0001.md")],
)  # fmt: skip
def test_archive_parts_go_where_the_glob_lets_them_through(tmp_path: Path, globs: str, archive: str) -> None:
    work = _workspace(tmp_path, f"    branch-name: memory/autoloop\n    file-glob: {globs}\n    max-patch-size: 100000")
    folder = _memory_clone(tmp_path, {"perf.md": synthetic_state("perf", 14, seed=2)})
    done = run_statefile("--repo-memory", "--dir", str(folder), "compact", "perf", cwd=work)
    assert done.returncode == 0, done.stderr
    assert (folder / archive).is_file()
    assert run_statefile("--repo-memory", "--dir", str(folder), "expand", "perf", "1", cwd=work).returncode == 0
    check = run_statefile("--repo-memory", "--dir", str(folder), "check", cwd=work)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("globs", ['["perf.md"]', '["**/*.md"]'])
def test_a_glob_that_holds_no_archive_or_state_file_is_a_clear_error(tmp_path: Path, globs: str) -> None:
    work = _workspace(tmp_path, f"    branch-name: memory/autoloop\n    file-glob: {globs}")
    text = synthetic_state("perf", 14, seed=2)
    folder = _memory_clone(tmp_path, {"perf.md": text})
    done = run_statefile("--repo-memory", "--dir", str(folder), "compact", "perf", cwd=work)
    assert done.returncode == 2 and "nothing was written" in done.stderr and "Traceback" not in done.stderr
    assert (folder / "perf.md").read_text() == text and not (folder / "archive").exists()
    check = run_statefile("--repo-memory", "--dir", str(folder), "check", cwd=work)
    assert check.returncode == 1 and "file-glob" in check.stdout


def test_check_flags_what_the_push_would_drop_or_refuse(tmp_path: Path) -> None:
    work = _workspace(tmp_path, MEMORY.format(size=6000, patch=1000))
    folder = _memory_clone(tmp_path, {"perf.md": synthetic_state("perf", 3, seed=1)})
    (folder / "archive" / "perf").mkdir(parents=True)
    (folder / "archive" / "perf" / "0001.md").write_text("# Archive: perf (part 1)\n")
    (folder / "notes.md").write_text("x" * 7000)
    done = run_statefile("--repo-memory", "--dir", str(folder), "check", cwd=work)
    assert done.returncode == 1
    assert "archive/perf/0001.md does not match repo-memory's file-glob (*.md)" in done.stdout
    assert "notes.md is 7,000 bytes, over repo-memory's max-file-size (6,000 bytes)" in done.stdout
    assert re.search(r"this run adds [\d,]+ bytes, over repo-memory's patch limit \(1,200 bytes = 1.2", done.stdout)


def test_a_large_first_compaction_spreads_over_runs(tmp_path: Path) -> None:
    """A 29 KB file never compacted: each run archives what its push may add; nothing is lost or oversize."""
    work = _workspace(tmp_path, MEMORY.format(size=30720, patch=10240))
    original = synthetic_state("legacy", 88, seed=1)
    assert 28000 < len(original.encode()) <= 30720
    folder = _memory_clone(tmp_path, {"legacy.md": original})
    sizes, patches = [], []
    for run in range(1, 7):
        done = run_statefile("--repo-memory", "--dir", str(folder), "record", "legacy", "--status", "rejected",
                             "--metric", "1", "--notes", f"run {run}", cwd=work)  # fmt: skip
        assert done.returncode == 0, done.stderr
        sizes.append((folder / "legacy.md").stat().st_size)
        patches.append(_push(folder, ["*.md"]))
    assert all(size <= 30720 for size in sizes), sizes
    assert all(patch <= 10240 for patch in patches), patches
    assert max(patches) > 5000, "the first runs move as much as the push allows"
    assert sizes[-1] < 15000, f"compaction caught up over the runs: {sizes}"
    # Every one of the 88 original entries is verbatim in the file or the archive on the "branch".
    pushed = "".join(p.read_text() for p in folder.glob("*.md"))
    for block in re.split(r"\n(?=### Iteration \d+ )", original)[1:]:
        entry = block.split("\n---")[0].split("\n## ")[0].rstrip("\n")
        assert entry in pushed, entry[:60]


def test_both_limits_cannot_be_met_fails_before_writing(tmp_path: Path) -> None:
    work = _workspace(tmp_path, MEMORY.format(size=20000, patch=600))
    text = synthetic_state("legacy", 88, seed=1)  # ~29 KB: must lose ~9 KB this run, the push allows ~720 bytes
    folder = _memory_clone(tmp_path, {"legacy.md": text})
    done = run_statefile("--repo-memory", "--dir", str(folder), "compact", "legacy", cwd=work)
    assert done.returncode == 4 and "nothing was written" in done.stderr and "max-patch-size" in done.stderr
    assert (folder / "legacy.md").read_text() == text
    assert not list(folder.glob("_archive*"))


# -- issue 22: what the post-step judges, a --dir naming the folder, the lock file ------------------------------------


def _statefile(capfd: pytest.CaptureFixture[str], cwd: Path, *args: str) -> tuple[int, str, str]:
    """The CLI in this process, as the console script runs it, from ``cwd``: exit code, stdout, stderr."""
    from statefile.cli import cli
    from statefile.cli.run import invoke

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        for name in ("STATEFILE_DIR", "STATEFILE_REPO_MEMORY", "STATEFILE_REMOTE"):
            patch.delenv(name, raising=False)
        code = invoke(cli, list(args))
    out, err = capfd.readouterr()
    return code, out, err


def test_check_judges_only_what_this_run_pushes(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """As seen: archive/perf-comparison/0001.md, written on the branch by path 1 (or the maintenance job, a
    maintainer's record, repair), made every path-2 post-step `check` fail, though the push leaves it as it is."""
    work = _workspace(tmp_path, MEMORY.format(size=30720, patch=10240))
    archive = "# Archive: perf-comparison (part 1)\n\n## Archived 2026-01-01 00:00 UTC — compaction\n\nold text\n"
    folder = _memory_clone(tmp_path, {"perf-comparison.md": synthetic_state("perf-comparison", 3, seed=1)})
    (folder / "archive" / "perf-comparison").mkdir(parents=True)
    (folder / "archive" / "perf-comparison" / "0001.md").write_text(archive)
    _git("add", "-A", cwd=folder)
    _git("commit", "-q", "-m", "written through the remote (path 1)", cwd=folder)

    code, out, _ = _statefile(capfd, work, "--repo-memory", "--dir", str(folder), "check")
    assert code == 0, out
    assert "does not match" not in out
    notes = [line for line in out.splitlines() if line.strip().startswith("note:")]
    assert len(notes) == 1 and "archive/perf-comparison/0001.md" in notes[0] and "unchanged" in notes[0], out

    # What this run changes outside the glob is still an error: that change would never reach the branch.
    (folder / "archive" / "perf-comparison" / "0001.md").write_text(archive + "\nnew text\n")
    (folder / "archive" / "perf-comparison" / "0002.md").write_text("# Archive: perf-comparison (part 2)\n")
    code, out, _ = _statefile(capfd, work, "--repo-memory", "--dir", str(folder), "check")
    assert code == 1
    assert "archive/perf-comparison/0001.md does not match repo-memory's file-glob" in out
    assert "archive/perf-comparison/0002.md does not match repo-memory's file-glob" in out


def test_a_dir_naming_the_repo_memory_folder_writes_as_repo_memory(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """As seen: `statefile --dir /tmp/gh-aw/repo-memory/default record …` compacted into archive/perf/0001.md,
    which repo-memory's push dropped (file-glob *.md): the folded history never reached the branch."""
    work = _workspace(tmp_path, MEMORY.format(size=30720, patch=100000))
    folder = _memory_clone(tmp_path, {"perf.md": synthetic_state("perf", 14, seed=2)})
    (work / ".statefile.toml").write_text(f'keep-recent = 3\nrepo-memory-dir = "{folder}"\n')
    code, _, err = _statefile(capfd, work, "--dir", str(folder), "record", "perf", "--status", "accepted",
                                "--metric", "1")  # fmt: skip
    assert code == 0, err
    assert not (folder / "archive").exists(), "a plain folder store's archive layout, which the push drops"
    assert list(folder.glob("_archive.perf.*.md")), sorted(p.name for p in folder.iterdir())
    assert "repo-memory folder" in err  # it says why it wrote elsewhere than --dir's plain layout
    _push(folder, ["*.md"])
    assert _statefile(capfd, work, "--dir", str(folder), "expand", "perf", "1")[0] == 0
    # The scheduler's clone beside it is a plain folder, as before.
    other = tmp_path / "repo-memory" / "autoloop"
    other.mkdir()
    (other / "perf.md").write_text(synthetic_state("perf", 14, seed=2))
    code, _, err = _statefile(capfd, work, "--dir", str(other), "record", "perf", "--status", "accepted",
                                "--metric", "1")  # fmt: skip
    assert code == 0, err
    assert (other / "archive" / "perf" / "0001.md").is_file()


def test_no_lock_file_is_left_in_the_folder(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """As seen: .statefile.lock stayed in the repo-memory folder after a --repo-memory write."""
    work = _workspace(tmp_path, MEMORY.format(size=30720, patch=10240))
    folder = _memory_clone(tmp_path, {"perf.md": synthetic_state("perf", 3, seed=1)})
    code, _, err = _statefile(capfd, work, "--repo-memory", "--dir", str(folder), "record", "perf", "--status",
                              "rejected", "--metric", "1")  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in folder.iterdir()) == [".git", "perf.md"]
    assert _git("status", "--porcelain", cwd=folder).split() == ["M", "perf.md"]


def test_range_lines_and_messages_name_the_archive_where_it_is(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """As seen (issue 22, item 7): in --repo-memory mode under file-glob *.md the parts are _archive.perf.0001.md,
    yet range lines ended in `· archive/perf/` and record, repair and lesson remove named archive/perf/."""
    work = _workspace(tmp_path, MEMORY.format(size=30720, patch=100000))
    folder = _memory_clone(tmp_path, {"perf.md": synthetic_state("perf", 14, seed=2)})
    (work / ".statefile.toml").write_text("keep-recent = 3\n")
    memory = ("--repo-memory", "--dir", str(folder))
    code, out, err = _statefile(capfd, work, *memory, "record", "perf", "--status", "accepted", "--metric", "1")
    assert code == 0, err
    text = (folder / "perf.md").read_text()
    pointers = re.findall(r"^### Iters .* · (\S+)$", text, re.M)
    assert pointers and set(pointers) == {"_archive.perf.*.md"}, text
    assert "archive/perf/" not in out + err and "the full text is in _archive.perf.*.md" in out + err
    assert list(folder.glob("_archive.perf.0001.md"))
    # The line reads back as statefile's own: compacting again changes nothing.
    code, out, err = _statefile(capfd, work, *memory, "compact", "perf")
    assert code == 0 and (folder / "perf.md").read_text() == text, out + err
    code, out, err = _statefile(capfd, work, *memory, "--json", "expand", "perf", "1")
    assert code == 0 and __import__("json").loads(out)["source"] == "_archive.perf.0001.md", out + err
    # repair merges two overlapping range lines into one pointing at the same place.
    overlapping = text.replace("<!-- New entries", "### Iters 2–6 — an agent's own line\n\n<!-- New entries", 1)
    if overlapping == text:
        overlapping = re.sub(r"(^### Iters )", r"### Iters 2–6 — an agent's own line\n\n\1", text, count=1, flags=re.M)
    (folder / "perf.md").write_text(overlapping)
    code, out, err = _statefile(capfd, work, *memory, "repair", "perf")
    assert code == 0, err
    assert "archived to _archive.perf.*.md" in out + err and "archive/perf/" not in out + err
    assert set(re.findall(r"^### Iters .* · (\S+)$", (folder / "perf.md").read_text(), re.M)) == {"_archive.perf.*.md"}
    code, out, err = _statefile(capfd, work, *memory, "lesson", "add", "perf", "Warm the cache first")
    assert code == 0, err
    code, out, err = _statefile(capfd, work, *memory, "lesson", "remove", "perf", "Warm the cache",
                                "--reason", "superseded")  # fmt: skip
    assert code == 0 and "to _archive.perf.*.md" in out + err and "archive/perf/" not in out + err, out + err


def test_a_number_the_agent_got_wrong_is_answered_with_the_formats_rules() -> None:
    """Issue 23 review: the messages an agent reads back name its value as JSON does and the whole number format
    (digits each side of the point and the exponent), so the next report can be right."""
    with pytest.raises(InputError, match=r"metric must be a number, got true$"):
        number_value({"metric": True}, "metric")
    with pytest.raises(InputError, match=r"at most 40 before and after the point, an exponent of at most 4 digits"):
        number_value({"metric": "1e99999"}, "metric")
