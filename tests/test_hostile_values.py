"""Absurd values typed or stored get a one-line error and a documented exit code, never exit 70; a hand edit never
loses text.  (Issue 15 #6 and #13; each case builds its own input.)"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from pathlib import Path

import pytest
from conftest import pinned_identity
from gitutil import Repos, copy_repos, git, make_repos, run_statefile

from statefile.errors import EXIT_INVALID_DATA, EXIT_USAGE, UsageError
from statefile.policy.rules import RecordRequest


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    with pinned_identity(tmp_path_factory):
        repos = make_repos(tmp_path_factory.mktemp("template"))
        assert run_statefile("-q", "init", "perf", cwd=repos.work).returncode == 0
        recorded = run_statefile("-q", "record", "perf", "--status", "accepted", "--metric", "5", cwd=repos.work)
        assert recorded.returncode == 0
    return repos


@pytest.fixture
def repos(template: Repos, tmp_path: Path) -> Repos:
    return copy_repos(template, tmp_path)


def tip(repos: Repos) -> str:
    return run_statefile("log", "perf", "-n", "1", "--json", cwd=repos.work).stdout


def assert_refused(repos: Repos, code: int, *args: str, needle: str) -> None:
    before = tip(repos)
    proc = run_statefile(*args, cwd=repos.work)
    assert proc.returncode == code, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert tip(repos) == before


@pytest.mark.parametrize(
    ("value", "needle"),
    [("nan", "not a finite number"), ("inf", "not a finite number"), ("1e400", "beyond 1e±308"), ("x", "not a number")],
)
def test_init_refuses_a_target_that_is_no_number(repos: Repos, value: str, needle: str) -> None:
    assert_refused(repos, EXIT_USAGE, "init", "other", "--target-metric", value, needle=needle)


def test_a_long_target_is_kept_exactly(repos: Repos) -> None:
    assert run_statefile("-q", "init", "big", "--target-metric", "12345678901234567891", cwd=repos.work).returncode == 0
    shown = json.loads(run_statefile("show", "big", "--json", cwd=repos.work).stdout)
    assert shown["machine_state"]["target_metric"] == "1.2345678901234567891e+19"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--metric", "1e999999999"], "beyond 1e±308"),
        (["--at", "9999-12-31T23:59:59-12:00"], "not a time an iteration ran at"),
        (["--at", "1901-01-01T00:00:00Z"], "not a time an iteration ran at"),
        (["--iteration", "99999999999999999999"], "beyond 10,000,000"),
    ],
)
def test_record_refuses_absurd_values(repos: Repos, args: list[str], needle: str) -> None:
    assert_refused(repos, EXIT_USAGE, "record", "perf", "--status", "accepted", *args, needle=needle)


def test_an_absurd_best_metric_in_the_file_is_an_error_naming_the_row(repos: Repos, tmp_path: Path) -> None:
    text = run_statefile("export", cwd=repos.work).stdout
    data = json.loads(text)
    perf = data["files"]["perf.md"]["text"].replace("| Best Metric | 5 |", "| Best Metric | 1e999999999 |")
    assert "1e999999999" in perf
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "perf.md").write_text(perf, encoding="utf-8")
    before = (folder / "perf.md").read_bytes()
    proc = run_statefile("--dir", str(folder), "record", "perf", "--status", "accepted", "--metric", "6", cwd=tmp_path)
    assert proc.returncode == EXIT_INVALID_DATA, proc.stderr
    assert "'Best Metric'" in proc.stderr and "statefile edit perf" in proc.stderr
    assert (folder / "perf.md").read_bytes() == before


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"format": "statefile-export", "version": ' + "9" * 5000 + ', "files": {}}', "5,000 digits"),
        ("[" * 100_000 + "]" * 100_000, "nested thousands of levels deep"),
    ],
    ids=["huge-version", "deep-nesting"],
)
def test_import_refuses_hostile_json(repos: Repos, tmp_path: Path, content: str, needle: str) -> None:
    source = tmp_path / "export.json"
    source.write_text(content, encoding="utf-8")
    assert_refused(repos, EXIT_USAGE, "import", str(source), needle=needle)


def _editor(code: str) -> str:
    """An $EDITOR that runs ``code`` on the file it is given (argv[1])."""
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def test_an_editor_that_deletes_its_file_saves_nothing(repos: Repos) -> None:
    before = tip(repos)
    proc = run_statefile(
        "edit", "perf", cwd=repos.work, env={"EDITOR": _editor("import os, sys; os.remove(sys.argv[1])")}
    )
    assert proc.returncode == EXIT_USAGE and "could not be read back" in proc.stderr, proc.stderr
    assert tip(repos) == before


def test_an_edit_that_deletes_the_history_archives_it(repos: Repos) -> None:
    """The entries a hand edit removed are in the archive, and expand still finds them."""
    entry = run_statefile("expand", "perf", "1", cwd=repos.work).stdout
    cut = "import sys; p = sys.argv[1]; t = open(p).read(); open(p, 'w').write(t.split('### Iteration 1 ')[0])"
    proc = run_statefile("edit", "perf", cwd=repos.work, env={"EDITOR": _editor(cut)})
    assert proc.returncode == 0, proc.stderr
    assert "### Iteration 1 " not in git("show", "memory/autoloop:perf.md", cwd=repos.work)
    again = run_statefile("expand", "perf", "1", cwd=repos.work)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == entry.strip()


# -- what check lets through must be what record accepts (issue 15, a cold tester) ------------------------------------


def _edited(repos: Repos, tmp_path: Path, mode: str, old: str, new: str) -> list[str]:
    """perf.md with ``old`` replaced by ``new``, on the branch or in a folder; the global flags to use it."""
    data = json.loads(run_statefile("export", cwd=repos.work).stdout)
    text = data["files"]["perf.md"]["text"]
    assert old in text
    if mode == "dir":
        folder = tmp_path / "folder"
        folder.mkdir()
        (folder / "perf.md").write_text(text.replace(old, new), encoding="utf-8")
        return ["--dir", str(folder)]
    # Not through `edit`, which refuses what check fails: an import writes it the way any other tool could.
    edited = text.replace(old, new)
    data["files"]["perf.md"] = {"text": edited, "sha256": hashlib.sha256(edited.encode()).hexdigest()}
    source = tmp_path / "edited.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    assert run_statefile("-q", "import", "--force", str(source), cwd=repos.work).returncode == 0
    assert new in git("show", "memory/autoloop:perf.md", cwd=repos.work)
    return []


@pytest.mark.parametrize("mode", ["branch", "dir"])
@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("| Iteration Count | 1 |", "| Iteration Count | 99999999999999999999 |",
         "'Iteration Count' row says 99,999,999,999,999,999,999"),
        ("| Best Metric | 5 |", "| Best Metric | 1e999999999 |", "'Best Metric' holds '1e999999999'"),
        ("| Target Metric | — |", "| Target Metric | 1e-999999 |", "'Target Metric' holds '1e-999999'"),
        # One more than this and Python refuses to print the number (it was exit 70 in record).
        ("| Iteration Count | 1 |", f"| Iteration Count | {'9' * 4300} |", "row says a number of more than 30 digits"),
    ],
    ids=["iteration-count", "best-metric", "target-metric", "4300-nines"],
)  # fmt: skip
def test_check_fails_on_the_machine_state_numbers_record_refuses(
    repos: Repos, tmp_path: Path, mode: str, old: str, new: str, needle: str
) -> None:
    """check said ok (exit 0) to numbers record then refused (exit 7): both now ask the same functions."""
    flags = _edited(repos, tmp_path, mode, old, new)
    checked = run_statefile(*flags, "check", cwd=repos.work)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "error: implausible-machine-state" in checked.stdout and needle in checked.stdout, checked.stdout
    recorded = run_statefile(*flags, "record", "perf", "--status", "accepted", "--metric", "6", cwd=repos.work)
    assert recorded.returncode == EXIT_INVALID_DATA and needle in recorded.stderr, recorded.stderr
    assert len(recorded.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["record", "perf", "--status", "accepted", "--pr", "9" * 23],
        ["record", "perf", "--status", "accepted", "--issue", "9" * 34],
        ["record", "perf", "--status", "accepted", "--pr", "2147483648"],
        ["record", "perf", "--status", "accepted", "--issue", "0"],
        ["init", "other", "--pr", "9" * 5000],
        ["init", "other", "--issue", "9" * 23],
    ],
    ids=["pr-23", "issue-34", "pr-2**31", "issue-0", "init-pr-5000", "init-issue-23"],
)
def test_issue_and_pr_numbers_github_cannot_have_are_refused(repos: Repos, args: list[str]) -> None:
    """record --pr/--issue wrote 23- to 34-digit numbers into the Machine State; GitHub's stop at 2**31 - 1."""
    assert_refused(repos, EXIT_USAGE, *args, needle="GitHub's go from 1 to 2,147,483,647")


def test_the_largest_github_number_is_accepted_and_apply_is_bounded_too(repos: Repos) -> None:
    proc = run_statefile("-q", "record", "perf", "--status", "rejected", "--pr", "2147483647", cwd=repos.work)
    assert proc.returncode == 0, proc.stderr
    assert "| PR | #2147483647 |" in git("show", "memory/autoloop:perf.md", cwd=repos.work)
    # apply and the Python API build the same request: the bound is there, not only on the flag.
    with pytest.raises(UsageError, match="beyond 2,147,483,647"):
        RecordRequest(status="accepted", issue=10**33)
