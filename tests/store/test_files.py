"""Reading state files by path (statefile.store.files): size and line limits, what is refused unread."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import only_error_line
from gitutil import Repos, run_statefile
from gitutil import git as repo_git


def _headings(count: int) -> str:
    """A state file whose history is ``count`` one-line iteration headings: small in bytes, huge in lines."""
    lines = "\n".join(f"### Iteration {n}" for n in range(count, 0, -1))
    table = f"| Field | Value |\n|---|---|\n| Iteration Count | {count} |"
    return f"# perf\n\n## ⚙️ Machine State\n\n{table}\n\n## 📊 Iteration History\n\n{lines}\n"


def test_a_file_of_more_lines_than_statefile_reads_is_refused_unparsed(tmp_path: Path) -> None:
    """280,000 iteration headings fit in 7 MB (under the byte limit) and took minutes to parse and fold."""
    from statefile.store.files import line_limit

    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "perf.md").write_text(_headings(line_limit(30720) + 10))
    before = (folder / "perf.md").read_bytes()
    for args in (["show", "perf"], ["record", "perf", "--status", "accepted"], ["compact", "perf"], ["check"]):
        proc = run_statefile("--dir", str(folder), *args, cwd=tmp_path)
        assert proc.returncode in (1, 7), (args, proc.stderr)
        assert "lines, more than statefile will read" in proc.stdout + proc.stderr, args
    assert (folder / "perf.md").read_bytes() == before


def test_a_file_within_its_budget_is_always_within_the_line_limit() -> None:
    """Found by the hostile run (issue 15): a file within its budget is always within the line limit."""
    from statefile.store.files import MIN_LINE_LIMIT, line_limit

    for budget in (200, 30720, 1 << 20):
        assert line_limit(budget) >= max(budget, MIN_LINE_LIMIT)  # one byte per line at most


def test_a_branch_file_of_too_many_lines_is_refused(initialized_repos: Repos) -> None:
    """Found by the hostile run (issue 15): a branch file of too many lines is refused."""
    from statefile.store.files import line_limit

    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=initialized_repos.work,
        input=_headings(line_limit(30720) + 1),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    tree = subprocess.run(
        ["git", "mktree"],
        cwd=initialized_repos.work,
        input=f"100644 blob {blob}\tperf.md\n",
        capture_output=True,
        text=True,
    ).stdout.strip()
    commit = repo_git("commit-tree", tree, "-m", "huge", cwd=initialized_repos.work).strip()
    repo_git("update-ref", "refs/heads/memory/autoloop", commit, cwd=initialized_repos.work)
    proc = run_statefile("record", "perf", "--status", "accepted", cwd=initialized_repos.work)
    assert proc.returncode == 7 and "lines, more than statefile will read" in only_error_line(proc)
    assert repo_git("rev-parse", "memory/autoloop", cwd=initialized_repos.work).strip() == commit
