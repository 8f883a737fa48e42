"""gh-aw's formats as statefile reads them: file-glob, the patch-size rule, agent output, sanitised values; and
folder mode for users who keep gh-aw's repo-memory (``statefile --repo-memory``): the folder from the workflow
frontmatter, archive parts where file-glob lets them reach the branch, and each run's additions within
max-patch-size while the file stays within max-file-size; autoloop.json reporting: program entries, merging into the
scheduler's JSON, safe writes."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import stat
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from conftest import GuardRepo, corpus_params, guard_run, only_error_line, read_raw
from ghaw import push_job
from ghaw.push_job import glob_to_regex, patch_size
from ghaw.safe_outputs import sanitize
from gitutil import Repos, run_statefile
from synthetic import synthetic_state

from statefile import __version__
from statefile.errors import EXIT_USAGE, NotFoundError, UsageError
from statefile.integrations.ghaw import (
    InputError,
    RepoMemoryFolder,
    count_value,
    glob_matches,
    lines_value,
    merge_report,
    number_value,
    parse_agent_output,
    patch_added_bytes,
    program_report,
    read_agent_output,
    read_json_object,
    reference_value,
    text_value,
    write_text_atomic,
)
from statefile.model.document import parse
from statefile.model.template import new_state_file

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
        # An unclosed opener goes before the leftover markers do (issue 23 review: a refactor kept it, and what
        # was left joined into other tokens).
        ("<!-<!--->", ">"),
        ("<!-<!-<!--->", "<!->"),
    ],
)
def test_clean_text_leaves_data_only(raw: str, kept: str) -> None:
    from statefile.integrations.ghaw import clean_text
    from statefile.policy.compaction import is_important, is_pinned

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


# -- autoloop.json: the scheduler's file ---------------------------------------------------------------------------

# What the upstream scheduler writes when it selects a program (githubnext/autoloop autoloop_scheduler.py).
UPSTREAM: dict[str, Any] = {
    "selected": "perf",
    "selected_file": ".autoloop/programs/perf.md",
    "selected_issue": None,
    "selected_target_metric": None,
    "selected_metric_direction": "higher",
    "state_file_size_bytes": 12000,
    "state_file_max_bytes": 30720,
    "issue_programs": {},
    "deferred": ["docs"],
    "skipped": [{"name": "old", "reason": "paused: 3 consecutive errors"}],
    "unconfigured": [],
    "no_programs": False,
    "head_branch": "autoloop/perf",
    "existing_pr": 12,
}


def entry(size: int, max_bytes: int = 30720, **state: Any) -> dict[str, Any]:
    doc = parse(new_state_file("p", **state)) if state else None
    return program_report("p", size, max_bytes, doc.machine_state if doc else {})


# -- program_report -------------------------------------------------------------------------------------------------


def test_program_report_reads_the_machine_state() -> None:
    doc = parse(
        new_state_file("perf", iteration_count=42, last_run="2025-01-15T12:00:00Z", paused=True, completed=False)
    )
    assert program_report("perf", 1000, 30720, doc.machine_state) == {
        "file": "perf.md",
        "size": 1000,
        "max": 30720,
        "headroom": 29720,
        "over_budget": False,
        "needs_compaction": False,
        "iteration_count": 42,
        "last_run": "2025-01-15T12:00:00Z",
        "paused": True,
        "completed": False,
    }


def test_a_missing_file_is_a_new_program() -> None:
    report = program_report("new", 0, 30720, {})
    assert report["iteration_count"] == 0
    assert report["last_run"] is None
    assert report["paused"] is False
    assert report["completed"] is False
    assert report["headroom"] == 30720


@pytest.mark.parametrize(
    ("size", "needs", "over", "headroom"),
    [(8000, False, False, 2000), (8001, True, False, 1999), (10000, True, False, 0), (10001, True, True, -1)],
)
def test_compaction_and_budget_thresholds(size: int, needs: bool, over: bool, headroom: int) -> None:
    report = program_report("p", size, 10000, {})
    assert (report["needs_compaction"], report["over_budget"], report["headroom"]) == (needs, over, headroom)


def test_aggressive_at_moves_the_threshold() -> None:
    assert program_report("p", 6000, 10000, {}, aggressive_at=0.5)["needs_compaction"] is True
    assert program_report("p", 6000, 10000, {}, aggressive_at=0.7)["needs_compaction"] is False


def test_a_garbled_count_reads_as_zero() -> None:
    assert entry(10, iteration_count="many")["iteration_count"] == 0


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_reports_agree_with_the_scheduler_view(path: Path) -> None:
    text = read_raw(path)
    doc = parse(text)
    report = program_report(path.stem, doc.size, 30720, doc.machine_state)
    state = doc.machine_state
    assert report["size"] == len(path.read_bytes())
    assert report["iteration_count"] == state["iteration_count"]
    assert report["last_run"] == state["last_run"]
    assert report["paused"] is bool(state.get("paused"))
    assert report["completed"] is bool(state.get("completed"))
    json.dumps(report)  # JSON-ready


# -- merge_report ---------------------------------------------------------------------------------------------------


def test_merge_keeps_every_upstream_key_and_corrects_the_sizes() -> None:
    programs = {"perf": entry(21000, 25000), "docs": entry(500, 25000)}
    merged = merge_report(UPSTREAM, programs, None)
    assert set(merged) == set(UPSTREAM) | {"statefile"}
    assert {
        k: v for k, v in merged.items() if k not in ("state_file_size_bytes", "state_file_max_bytes", "statefile")
    } == {k: v for k, v in UPSTREAM.items() if k not in ("state_file_size_bytes", "state_file_max_bytes")}
    assert merged["state_file_size_bytes"] == 21000
    assert merged["state_file_max_bytes"] == 25000
    assert merged["statefile"] == {
        "programs": {"docs": programs["docs"], "perf": programs["perf"]},
        "generated_by": f"statefile {__version__}",
    }
    assert list(merged["statefile"]["programs"]) == ["docs", "perf"]


def test_an_explicit_selection_wins_over_the_schedulers() -> None:
    merged = merge_report(UPSTREAM, {"perf": entry(21000), "docs": entry(500)}, "docs")
    assert merged["state_file_size_bytes"] == 500
    assert merged["selected"] == "perf"  # the scheduler's own keys are never rewritten


def test_a_selected_program_without_a_file_has_size_zero() -> None:
    merged = merge_report({"selected": "brand-new"}, {"perf": entry(21000, 20000)}, None)
    assert merged["state_file_size_bytes"] == 0
    assert merged["state_file_max_bytes"] == 20000


def test_nothing_selected_reports_zero_like_upstream() -> None:
    merged = merge_report({"selected": None, "no_programs": False}, {"perf": entry(100, 9000)}, None)
    assert (merged["state_file_size_bytes"], merged["state_file_max_bytes"]) == (0, 9000)


def test_the_budget_falls_back_to_what_was_there_then_the_default() -> None:
    assert merge_report({"state_file_max_bytes": 12345}, {}, None)["state_file_max_bytes"] == 12345
    assert merge_report({"state_file_max_bytes": True}, {}, None)["state_file_max_bytes"] == 30720
    assert merge_report({}, {}, "x")["state_file_max_bytes"] == 30720


def test_merge_is_pure() -> None:
    existing = copy.deepcopy(UPSTREAM) | {"statefile": {"programs": {"gone": {}}, "generated_by": "statefile 0.0"}}
    programs = {"perf": entry(1)}
    snapshot = copy.deepcopy((existing, programs))
    merged = merge_report(existing, programs, None)
    assert (existing, programs) == snapshot
    merged["statefile"]["programs"]["perf"]["size"] = 99
    assert programs["perf"]["size"] == 1
    assert "gone" not in merged["statefile"]["programs"]  # a fresh report replaces the previous one


# -- files ----------------------------------------------------------------------------------------------------------


def test_write_creates_folders_and_ends_with_a_newline(tmp_path: Path) -> None:
    target = tmp_path / "gh-aw" / "deep" / "autoloop.json"
    write_text_atomic(target, json.dumps({"a": 1, "pause_reason": "naïve — ok"}, indent=2) + "\n")
    text = target.read_text(encoding="utf-8")
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert json.loads(text) == {"a": 1, "pause_reason": "naïve — ok"}
    assert os.listdir(target.parent) == ["autoloop.json"]


def test_write_replaces_the_file_and_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "autoloop.json"
    target.write_text("{}\n")
    target.chmod(0o640)
    inode = target.stat().st_ino
    write_text_atomic(target, json.dumps({"b": 2}, indent=2) + "\n")
    assert read_json_object(target) == {"b": 2}
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode  # a new file renamed into place, never rewritten in place
    assert sorted(os.listdir(tmp_path)) == ["autoloop.json"]


def test_a_new_file_gets_the_usual_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "a.json", json.dumps({}, indent=2) + "\n")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "autoloop.json").mkdir()
    with pytest.raises(UsageError, match="is a folder; name a file to write"):
        write_text_atomic(tmp_path / "autoloop.json", json.dumps({"a": 1}, indent=2) + "\n")
    assert os.listdir(tmp_path) == ["autoloop.json"]
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="cannot write"):
        write_text_atomic(tmp_path / "file" / "below.json", json.dumps({"a": 1}, indent=2) + "\n")


def test_read_missing_is_empty(tmp_path: Path) -> None:
    assert read_json_object(tmp_path / "nope.json") == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is not valid JSON"),
        (b"{", "is not valid JSON"),
        (b"[1, 2]", "holds a JSON array, not an object"),
        (b'"text"', "holds a JSON string, not an object"),
        (b"null", "holds a JSON null, not an object"),
        (b'{"a": "\xff"}', "is not valid JSON"),
    ],
)
def test_read_rejects_what_is_not_an_object(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "autoloop.json"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=message) as info:
        read_json_object(path)
    assert "\n" not in str(info.value)


def test_read_a_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a folder, not a regular file"):
        read_json_object(tmp_path)


def test_round_trip_of_the_schedulers_file(tmp_path: Path) -> None:
    path = tmp_path / "autoloop.json"
    path.write_text(json.dumps(UPSTREAM, indent=2))
    doc = parse(new_state_file("perf", iteration_count=3))
    merged = merge_report(
        read_json_object(path), {"perf": program_report("perf", doc.size, 30720, doc.machine_state)}, None
    )
    write_text_atomic(path, json.dumps(merged, indent=2) + "\n")
    again = read_json_object(path)
    assert again == merged
    assert again["state_file_size_bytes"] == doc.size
    assert again["statefile"]["programs"]["perf"]["iteration_count"] == 3


@pytest.mark.parametrize("out", ["/dev/null", "fifo"])
def test_report_into_something_that_is_no_file_says_so(unreadable_folder: Path, out: str) -> None:
    """`report --out /dev/null` said "no such file" (exit 3) of a path that exists."""
    (unreadable_folder / "linked.md").unlink()
    path = Path(out) if out.startswith("/") else unreadable_folder.parent / out
    if out == "fifo":
        os.mkfifo(path)
    proc = run_statefile("--dir", str(unreadable_folder), "report", "--out", str(path), cwd=unreadable_folder.parent)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr and proc.stderr.count("\n") == 1


def test_report_out_to_a_mistyped_path_creates_nothing(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Guard rail (issue 13): report out to a mistyped path creates nothing; the memory is left exactly as it was."""
    wrong = tmp_path / "gh-aw" / "autolop.json"
    result = guard_run(capsys, "--remote", "origin", "report", "--out", str(wrong))
    assert result.code == 3 and "no such file" in result.error_line
    assert not wrong.exists() and not wrong.parent.exists()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"selected": "perf", "state_file_max_bytes": ' + "9" * 5000 + "}", "5,000 digits"),
        ('{"selected": "perf", "x": 1e999}', "out of range"),
    ],
    ids=["5000-digit-number", "infinite-float"],
)
def test_numbers_json_cannot_hold_are_a_usage_error(
    initialized_repos: Repos, tmp_path: Path, text: str, needle: str
) -> None:
    """Found by the hostile run (issue 15): numbers json cannot hold are a usage error."""
    source = tmp_path / "autoloop.json"
    source.write_text(text)
    for args in (
        ["prepare", "--autoloop-json", str(source), "--out", str(tmp_path / "out")],
        ["report", "--out", str(source)],
    ):
        proc = run_statefile(*args, cwd=initialized_repos.work)
        assert proc.returncode == EXIT_USAGE and needle in only_error_line(proc), proc.stderr
    assert source.read_text() == text
