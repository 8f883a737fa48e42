"""The read commands (statefile.cli.read): check, report, show, list, log, config, expand."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from conftest import GuardRepo, guard_run
from gitutil import Repos, git, invoke_statefile, make_repos, run_statefile
from gitutil import git as repo_git
from synthetic import synthetic_state

from statefile.errors import EXIT_INVALID_DATA
from statefile.model.document import parse
from statefile.model.template import new_state_file
from statefile.store import Store


def test_check_warns_of_a_heading_whose_number_is_no_whole_number(tmp_path: Path) -> None:
    """Found by the cold review of issue 15: check warns of a heading whose number is no whole number."""
    text = new_state_file("perf").replace("*(No iterations yet.)*\n", "### Iteration 1e308 — float\n\n- text\n")
    (tmp_path / "perf.md").write_text(text, "utf-8")
    proc = run_statefile("check", str(tmp_path / "perf.md"), cwd=tmp_path)
    assert "iteration 1e308, no whole number" in proc.stdout, proc.stdout


def test_case_twins_are_judged_among_state_files_and_the_archive_only(tmp_path: Path) -> None:
    """check failed on `notes/a.txt` beside `Notes/a.txt` (not statefile's files), and printed "0 bytes" for a pair."""
    folder = tmp_path / "memory"
    for path in ("perf.md", "notes/a.txt", "Notes/a.txt"):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(new_state_file("perf") if path == "perf.md" else "x\n", "utf-8")
    assert run_statefile("--dir", str(folder), "check", cwd=tmp_path).returncode == 0
    (folder / "PERF.md").write_text(new_state_file("PERF"), "utf-8")
    proc = run_statefile("--dir", str(folder), "check", cwd=tmp_path)
    assert proc.returncode == 1 and "perf.md and PERF.md differ only in case" in proc.stdout, proc.stdout
    assert "perf.md: FAIL\n" in proc.stdout and "notes" not in proc.stdout.lower()


def _edited(recorded_repos: Repos, tmp_path: Path, mode: str, old: str, new: str) -> list[str]:
    """perf.md with ``old`` replaced by ``new``, on the branch or in a folder; the global flags to use it."""
    data = json.loads(run_statefile("export", cwd=recorded_repos.work).stdout)
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
    assert run_statefile("-q", "import", "--force", str(source), cwd=recorded_repos.work).returncode == 0
    assert new in git("show", "memory/autoloop:perf.md", cwd=recorded_repos.work)
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
    recorded_repos: Repos, tmp_path: Path, mode: str, old: str, new: str, needle: str
) -> None:
    """check said ok (exit 0) to numbers record then refused (exit 7): both now ask the same functions."""
    flags = _edited(recorded_repos, tmp_path, mode, old, new)
    checked = run_statefile(*flags, "check", cwd=recorded_repos.work)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "error: implausible-machine-state" in checked.stdout and needle in checked.stdout, checked.stdout
    recorded = run_statefile(*flags, "record", "perf", "--status", "accepted", "--metric", "6", cwd=recorded_repos.work)
    assert recorded.returncode == EXIT_INVALID_DATA and needle in recorded.stderr, recorded.stderr
    assert len(recorded.stderr.strip().splitlines()) == 1


def test_list_columns_line_up_and_values_read_as_words(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guard rail (issue 13): list columns line up and values read as words; the memory is left exactly as it was."""
    assert guard_run(capsys, "--remote", "origin", "init", "a").code == 0  # a short name, never run
    lines = guard_run(capsys, "--remote", "origin", "list").out.splitlines()
    header = lines[0]
    assert header.split() == ["PROGRAM", "BYTES", "BUDGET", "ITERS", "LAST", "RUN", "STATUS"]
    rows = [line for line in lines[1:] if not line.startswith("total:")]  # H14's totals line is prose
    assert len(rows) == 4
    for line in rows:
        for name in ("BYTES", "BUDGET", "ITERS"):  # numbers end where their header ends
            end = header.index(name) + len(name)
            assert line[end - 1] != " " and line[end : end + 1] in (" ", ""), (name, line)
        for name in ("LAST RUN", "STATUS"):  # text starts where its header starts
            start = header.index(name)
            assert line[start - 1] == " " and line[start] != " ", (name, line)
    row = next(line for line in lines if line.startswith("a "))
    assert row.split()[3:] == ["0", "—", "new"]
    shown = guard_run(capsys, "--remote", "origin", "show", "a").out
    assert "None" not in shown and "False" not in shown and "['" not in shown
    assert "Paused              no" in shown and "history: 0 iterations, 0 ranges" in shown


def test_check_fails_on_links_at_the_shared_lessons_and_in_an_archive(initialized_repos: Repos) -> None:
    """The gate read only the programs' own files: a link as _shared.md or as an archive part passed."""
    repo_git("fetch", "--quiet", "origin", cwd=initialized_repos.work, check=False)
    listing = repo_git("ls-tree", "memory/autoloop", cwd=initialized_repos.work)
    link = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=initialized_repos.work,
        input="/etc/passwd",
        capture_output=True,
        text=True,
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "mktree"],
        cwd=initialized_repos.work,
        input=f"120000 blob {link}\t0001.md\n",
        capture_output=True,
        text=True,
    ).stdout.strip()
    folder = subprocess.run(
        ["git", "mktree"],
        cwd=initialized_repos.work,
        input=f"040000 tree {archive}\tperf\n",
        capture_output=True,
        text=True,
    ).stdout.strip()
    full = listing + f"120000 blob {link}\t_shared.md\n040000 tree {folder}\tarchive\n"
    tree = subprocess.run(
        ["git", "mktree"], cwd=initialized_repos.work, input=full, capture_output=True, text=True
    ).stdout.strip()
    commit = repo_git("commit-tree", tree, "-p", "memory/autoloop", "-m", "links", cwd=initialized_repos.work).strip()
    repo_git("update-ref", "refs/heads/memory/autoloop", commit, cwd=initialized_repos.work)
    proc = run_statefile("check", cwd=initialized_repos.work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "_shared.md on branch memory/autoloop is a symbolic link" in proc.stdout
    assert "archive/perf/0001.md on branch memory/autoloop is a symbolic link" in proc.stdout


def test_check_fails_on_names_differing_only_in_case(initialized_repos: Repos, tmp_path: Path) -> None:
    """check and list showed PERF and perf side by side, exit 0, in both modes."""
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=initialized_repos.work, input="x\n", capture_output=True, text=True
    ).stdout.strip()

    def tree(listing: str) -> str:
        made = subprocess.run(
            ["git", "mktree"], cwd=initialized_repos.work, input=listing, capture_output=True, text=True
        )
        return made.stdout.strip()

    perf = tree(tree(f"100644 blob {blob}\t0001.md\n").join(["040000 tree ", "\tperf\n"]))
    top = repo_git("ls-tree", "memory/autoloop", cwd=initialized_repos.work) + f"040000 tree {perf}\tArchive\n"
    top += f"040000 tree {perf}\tarchive\n" + repo_git(
        "ls-tree", "memory/autoloop", "perf.md", cwd=initialized_repos.work
    ).replace("\tperf.md", "\tPERF.md")
    commit = repo_git(
        "commit-tree", tree(top), "-p", "memory/autoloop", "-m", "twins", cwd=initialized_repos.work
    ).strip()
    repo_git("update-ref", "refs/heads/memory/autoloop", commit, cwd=initialized_repos.work)
    proc = run_statefile("check", cwd=initialized_repos.work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "error: perf.md and PERF.md differ only in case" in proc.stdout
    assert "error: archive/ and Archive/ differ only in case" in proc.stdout

    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "perf.md").write_text(
        repo_git("show", "memory/autoloop:perf.md", cwd=initialized_repos.work), encoding="utf-8"
    )
    assert run_statefile("--dir", str(folder), "check", cwd=tmp_path).returncode == 0
    (folder / "Perf.md").write_bytes((folder / "perf.md").read_bytes())
    proc = run_statefile("--dir", str(folder), "check", cwd=tmp_path)
    assert proc.returncode == 1 and "error: perf.md and Perf.md differ only in case" in proc.stdout, proc.stdout


@pytest.mark.parametrize("heading", ["## 2. ⚙️ Machine State", "## [1] ⚙️ Machine State", "## Machine State"])
def test_a_machine_state_heading_the_scheduler_cannot_find_fails_check(tmp_path: Path, heading: str) -> None:
    """statefile reads a decorated Machine State heading; the scheduler's re.search for the exact bytes does not,
    so check fails (exit 1) and the next write restores the exact heading."""
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "perf.md").write_text(synthetic_state("perf", 3).replace("## ⚙️ Machine State", heading), "utf-8")
    proc = run_statefile("--dir", str(folder), "check", "perf", cwd=tmp_path)
    assert proc.returncode == 1 and "machine-state-heading" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert run_statefile("--dir", str(folder), "record", "perf", "--status", "rejected", cwd=tmp_path).returncode == 0
    assert "\n## ⚙️ Machine State\n" in (folder / "perf.md").read_text("utf-8")
    assert run_statefile("--dir", str(folder), "check", "perf", cwd=tmp_path).returncode == 0


# -- pauses, un-pauses, completion and best metric, from the branch history (issue 22) ----------------------------


@pytest.fixture
def paused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Repos:
    """perf: a best of 5, three errors (the third pauses it), an accepted 9 (un-pauses it, new best), then a
    maintainer's edit that pauses it by hand — the case a maintainer had to `log -p | grep "Pause Reason"` for."""
    repos = make_repos(tmp_path)
    doc = parse(new_state_file("perf", target_metric="100")).with_fields({"Best Metric": 5, "Iteration Count": 1})
    with Store.open(repos.work, remote="origin") as store:
        store.write_files({"perf.md": doc.render()}, "seed")
    for args in (["--status", "error"],) * 3 + (["--status", "accepted", "--metric", "9"],):
        assert invoke_statefile(capsys, "--remote", "origin", "record", "perf", *args, cwd=repos.work).code == 0
    with Store.open(repos.work, remote="origin") as store:
        text = store.read_text("perf") or ""
        held = parse(text).with_fields({"Paused": True, "Pause Reason": "hold for the release review"})
        store.write_files({"perf.md": held.render()}, "maintainer: hold perf")
    return repos


def test_log_shows_when_and_why_a_program_paused_and_unpaused(
    paused: Repos, capsys: pytest.CaptureFixture[str]
) -> None:
    text = invoke_statefile(capsys, "--remote", "origin", "log", "perf", cwd=paused.work)
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    events = [line.strip() for line in lines if line.strip().startswith("↳")]
    assert events == [
        "↳ paused: hold for the release review",
        "↳ unpaused (was paused: 3 consecutive errors (last: iteration 4, error); fix the cause, then set Paused to "
        "false)",
        "↳ best metric 9 (was 5)",
        "↳ paused: 3 consecutive errors (last: iteration 4, error); fix the cause, then set Paused to false",
    ]
    assert lines[lines.index(next(line for line in lines if "hold for the release" in line)) - 1].endswith(
        "maintainer: hold perf"
    )  # each event sits under the commit that made it
    data = json.loads(invoke_statefile(capsys, "--remote", "origin", "--json", "log", "perf", cwd=paused.work).out)
    assert [[e["event"] for e in row["events"]] for row in data] == [
        ["paused"], ["unpaused", "best_metric"], ["paused"], [], [], [],
    ]  # fmt: skip
    assert data[2]["iteration"] == 4 and data[2]["events"][0]["reason"].startswith("3 consecutive errors")
    best = {"event": "best_metric", "before": "5", "after": "9", "text": "best metric 9 (was 5)"}
    assert data[1]["events"][1] == best
    patched = invoke_statefile(capsys, "--remote", "origin", "log", "perf", "-p", "-n", "1", cwd=paused.work)
    assert "    ↳ paused: hold for the release review" in patched.out.splitlines()
    one = json.loads(invoke_statefile(capsys, "--remote", "origin", "--json", "log", "perf", "-n", "1",
                                      cwd=paused.work).out)  # fmt: skip
    assert len(one) == 1 and one[0]["events"][0]["event"] == "paused"


def test_show_says_since_when_and_why_a_program_is_paused(paused: Repos, capsys: pytest.CaptureFixture[str]) -> None:
    shown = invoke_statefile(capsys, "--remote", "origin", "show", "perf", cwd=paused.work)
    assert shown.code == 0, shown.err
    tip = git("rev-parse", "origin/memory/autoloop", cwd=paused.work).strip()
    line = next(line for line in shown.out.splitlines() if line.startswith("paused: "))
    assert line.startswith("paused: hold for the release review — since 20") and line.endswith(f"commit {tip[:10]}")
    data = json.loads(invoke_statefile(capsys, "--remote", "origin", "--json", "show", "perf", cwd=paused.work).out)
    assert data["paused"]["reason"] == "hold for the release review" and data["paused"]["since"]["commit"] == tip
    assert "completed" not in data
