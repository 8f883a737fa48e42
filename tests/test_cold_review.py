"""What a cold tester found after the hostile run's fixes (issue 15, third pass), each built from its input.

Every case ran against the installed console script; the ones here are the commands that go over every program
or echo what was typed.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from gitutil import git, make_repos

from statefile.cli.run import invoke, shown
from statefile.model.history import Iteration, IterationRange, parse_entry, render_iteration
from statefile.model.template import new_state_file
from statefile.redaction import redact
from statefile.store.exchange import export_json

LONGEST_LINE = 1000  # what tests/hostile calls an overlong line


def sf(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """statefile, failed by the timeout if it hangs."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("statefile")), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder store with one good program, a link and a FIFO named as programs."""
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "perf.md").write_text(new_state_file("perf"), "utf-8")
    (memory / "linked.md").symlink_to(memory / "perf.md")
    if hasattr(os, "mkfifo"):
        os.mkfifo(memory / "piped.md")
    return memory


def test_status_over_every_program_shows_the_unreadable_ones(folder: Path) -> None:
    """`status` left a link or FIFO named as a program out, silently (list and check named them)."""
    broken = {"linked", *({"piped"} if hasattr(os, "mkfifo") else set())}
    proc = sf("--dir", str(folder), "status", cwd=folder.parent)
    assert proc.returncode == 0, proc.stderr
    assert "perf: " in proc.stdout
    for name in broken:
        assert f"{name}: unreadable: " in proc.stdout, proc.stdout
    data = json.loads(sf("--dir", str(folder), "--json", "status", cwd=folder.parent).stdout)
    assert sorted(data) == sorted({"perf", *broken})
    assert all(data[name]["status"] == "unreadable" and data[name]["error"] for name in broken)
    assert data["perf"]["size_bytes"] == len(new_state_file("perf").encode())


def test_status_of_a_named_unreadable_program_is_still_an_error(folder: Path) -> None:
    proc = sf("--dir", str(folder), "status", "linked", cwd=folder.parent)
    assert proc.returncode == 7 and proc.stderr.count("\n") == 1 and "symbolic link" in proc.stderr


def test_a_long_query_or_path_is_cut_in_what_is_printed(folder: Path) -> None:
    """A pasted 100 KB query came back in full in "no matches for …"; a 100 KB path twice in check's report."""
    for name in ("linked.md", "piped.md"):
        (folder / name).unlink(missing_ok=True)
    found = sf("--dir", str(folder), "search", "q" * 100_000, cwd=folder.parent)
    assert found.returncode == 0 and "no matches for" in found.stdout
    path = "c" * 100_000 + ".md"
    checked = sf("check", path, cwd=folder.parent)
    assert checked.returncode == 1 and "cannot read" in checked.stdout
    for proc in (found, checked):
        lines = (proc.stdout + proc.stderr).splitlines()
        assert lines and max(len(line) for line in lines) < LONGEST_LINE, [len(line) for line in lines]


def test_a_hooks_message_reaches_the_terminal_redacted_and_inert(tmp_path: Path) -> None:
    """A pre-receive hook's `password=hunter2` was printed verbatim, its terminal escapes passed through raw."""
    repos = make_repos(tmp_path)
    assert sf("-q", "--remote", "origin", "init", "perf", cwd=repos.work).returncode == 0
    hook = repos.remote / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\nprintf 'denied password=hunter2 \\033]0;pwned\\007 \\342\\200\\256gnp.exe\\n' >&2\nexit 1\n"
    )
    hook.chmod(0o755)
    proc = sf("--remote", "origin", "record", "perf", "--status", "accepted", "--metric", "1", cwd=repos.work)
    assert proc.returncode == 6 and proc.stderr.count("\n") == 1, proc.stderr
    assert "denied" in proc.stderr and "hunter2" not in proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr and "\u202e" not in proc.stderr
    assert "\\x1b]0;pwned\\x07" in proc.stderr


def test_secrets_in_any_case_are_redacted() -> None:
    assert redact("password=hunter2 Api_Key=k1 github_token=t2") == "password=*** Api_Key=*** github_token=***"
    # A loop's ordinary notes are left alone: the name must end in the secret's word.
    notes = "max_tokens=8192 tokenizer=bpe num_tokens=3 token_budget=900 llm -o max_tokens=400"
    assert redact(notes) == notes
    assert shown("a\x1b[2Jb\u2066c") == "a\\x1b[2Jb\\u2066c"


@pytest.mark.parametrize("out", ["/dev/null", "fifo"])
def test_report_into_something_that_is_no_file_says_so(folder: Path, out: str) -> None:
    """`report --out /dev/null` said "no such file" (exit 3) of a path that exists."""
    (folder / "linked.md").unlink()
    path = Path(out) if out.startswith("/") else folder.parent / out
    if out == "fifo":
        os.mkfifo(path)
    proc = sf("--dir", str(folder), "report", "--out", str(path), cwd=folder.parent)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("heading", ["### Iteration 1e308 — float", "### Iteration 1.5 — half", "### Iters 3–1e5 — x"])
def test_a_number_that_goes_on_is_no_iteration_number(heading: str) -> None:
    """`Iteration 1e308` was read as iteration 1: the next record archived the real iteration 1 as its duplicate."""
    assert not isinstance(parse_entry(heading + "\n- text\n"), (Iteration, IterationRange))


def test_a_record_beside_an_exponent_heading_keeps_the_real_entry(tmp_path: Path) -> None:
    real = render_iteration(number=1, when="2026-01-01 00:00", status="accepted", change="the real one")
    text = new_state_file("perf").replace("*(No iterations yet.)*\n", "### Iteration 1e308 — float\n\n" + real)
    (tmp_path / "perf.md").write_text(text, "utf-8")
    proc = sf("--dir", str(tmp_path), "record", "perf", "--status", "accepted", "--metric", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    after = (tmp_path / "perf.md").read_text("utf-8")
    assert "recorded iteration 2" in proc.stdout
    assert "the real one" in after and "### Iteration 1e308 — float" in after
    assert not (tmp_path / "archive").exists()


def test_an_import_naming_a_file_and_a_folder_alike_writes_nothing_and_says_so(tmp_path: Path) -> None:
    """`perf.md` and `perf.md/x` in one export: the folder store wrote `perf.md/x` before failing; the message
    then spoke of names that differ only in case."""
    export = export_json({"perf.md": new_state_file("perf"), "perf.md/x": "x\n"}, branch="memory/autoloop", commit=None)
    source = tmp_path / "export.json"
    source.write_text(json.dumps(export), "utf-8")
    folder = tmp_path / "memory"
    folder.mkdir()
    (tmp_path / "git").mkdir()
    repos = make_repos(tmp_path / "git")
    for args, cwd in ((["--dir", str(folder)], tmp_path), ([], repos.work)):
        proc = sf(*args, "import", str(source), cwd=cwd)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "perf.md is a folder in the export and a file in the export" in proc.stderr
    assert list(folder.iterdir()) == []
    assert git("for-each-ref", "refs/heads/memory", cwd=repos.work) == ""


@pytest.mark.parametrize(
    ("error", "code", "needle"),
    [
        (PermissionError(errno.EACCES, "Permission denied", "/locked/autoloop.json"), 8, "make it readable"),
    ],
)
def test_a_path_the_system_will_not_look_at_is_one_line_not_exit_70(
    error: OSError, code: int, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report --out` under a folder this user may not enter was exit 70 (PermissionError from Path.exists)."""

    @click.command()
    def looks() -> None:
        raise error

    assert invoke(looks, []) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "internal error" not in err


def test_a_corrupt_archive_tree_is_named_by_its_path(tmp_path: Path) -> None:
    """A tree that is there but unreadable: check said "is a tree, expected a tree", search and export blamed the
    top folder as missing."""
    repos = make_repos(tmp_path)
    work = repos.work
    assert sf("-q", "init", "perf", cwd=work).returncode == 0
    hashed = subprocess.run(["git", "hash-object", "-t", "tree", "--literally", "-w", "--stdin"], cwd=work,
                            input=b"100644 perf\0abc", capture_output=True, check=True)  # fmt: skip
    bad = hashed.stdout.decode().strip()
    blob = git("rev-parse", "memory/autoloop:perf.md", cwd=work).strip()
    listing = f"100644 blob {blob}\tperf.md\n040000 tree {bad}\tarchive\n"
    made = subprocess.run(["git", "mktree"], cwd=work, input=listing, capture_output=True, text=True, check=True)
    commit = git("commit-tree", made.stdout.strip(), "-p", "memory/autoloop", "-m", "damaged", cwd=work).strip()
    git("update-ref", "refs/heads/memory/autoloop", commit, cwd=work)
    checked = sf("check", cwd=work)
    assert checked.returncode == 1 and "damaged tree" in checked.stdout and "expected a tree" not in checked.stdout
    for args in (["search", "x"], ["export"], ["expand", "perf", "1"]):
        proc = sf(*args, cwd=work)
        assert proc.returncode == 7 and proc.stderr.count("\n") == 1, (args, proc.stderr)
        assert f"archive (object {bad})" in proc.stderr and "damaged tree" in proc.stderr, (args, proc.stderr)
    assert git("rev-parse", "refs/heads/memory/autoloop", cwd=work).strip() == commit


def test_check_warns_of_a_heading_whose_number_is_no_whole_number(tmp_path: Path) -> None:
    text = new_state_file("perf").replace("*(No iterations yet.)*\n", "### Iteration 1e308 — float\n\n- text\n")
    (tmp_path / "perf.md").write_text(text, "utf-8")
    proc = sf("check", str(tmp_path / "perf.md"), cwd=tmp_path)
    assert "iteration 1e308, no whole number" in proc.stdout, proc.stdout


def test_case_twins_are_judged_among_state_files_and_the_archive_only(tmp_path: Path) -> None:
    """check failed on `notes/a.txt` beside `Notes/a.txt` (not statefile's files), and printed "0 bytes" for a pair."""
    folder = tmp_path / "memory"
    for path in ("perf.md", "notes/a.txt", "Notes/a.txt"):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(new_state_file("perf") if path == "perf.md" else "x\n", "utf-8")
    assert sf("--dir", str(folder), "check", cwd=tmp_path).returncode == 0
    (folder / "PERF.md").write_text(new_state_file("PERF"), "utf-8")
    proc = sf("--dir", str(folder), "check", cwd=tmp_path)
    assert proc.returncode == 1 and "perf.md and PERF.md differ only in case" in proc.stdout, proc.stdout
    assert "perf.md: FAIL\n" in proc.stdout and "notes" not in proc.stdout.lower()
