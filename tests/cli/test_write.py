"""What a maintainer runs to look after the memory, through the console script on a real repository with a bare
remote: lesson list, render's Program Info, repair, log -p, list --sort/--over-budget, compact --dry-run; export and
import back byte for byte; the demo's command lines."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    MEMORY_BRANCH,
    GuardRepo,
    assert_refused,
    covered_numbers,
    entry_text,
    guard_run,
    newest_log,
    only_error_line,
    pinned_identity,
    refs_unchanged,
    state_file_text,
)
from gitutil import Ran, Repos, git, invoke_statefile, make_repos, run_statefile
from gitutil import git as repo_git
from synthetic import synthetic_state

from statefile.cli import cli
from statefile.cli.write import run_demo, sample_text
from statefile.errors import EXIT_INVALID_DATA, EXIT_USAGE, UsageError
from statefile.model.document import parse
from statefile.model.history import render_iteration
from statefile.model.template import new_state_file
from statefile.policy.rules import RecordRequest
from statefile.store import Store


@pytest.fixture
def repos(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    return make_repos(tmp_path_factory.mktemp("maintainer"))


def sf(repos: Repos, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_statefile("--remote", "origin", *args, cwd=repos.work, env=env)


def seed(repos: Repos, files: dict[str, str]) -> None:
    with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
        store.write_files(files, "seed")


def test_lesson_list_shows_the_numbers_other_lesson_commands_take(repos: Repos) -> None:
    doc = parse(new_state_file("perf"))
    for text in ("Warm the cache before timing", "📌 Radix beats comparison sort above 1k rows",
                 "Old trick (expires 2030-01-31)"):  # fmt: skip
        doc = doc.with_lesson(text)
    seed(repos, {"perf.md": doc.render(), "fresh.md": new_state_file("fresh")})
    listed = sf(repos, "lesson", "list", "perf")
    assert listed.returncode == 0, listed.stderr
    data = json.loads(sf(repos, "lesson", "list", "perf", "--json").stdout)
    assert [(d["number"], d["pinned"], d["expires"]) for d in data] == [(1, False, None), (2, True, None),
                                                                        (3, False, "2030-01-31")]  # fmt: skip
    ids = [d["id"] for d in data]
    assert listed.stdout.splitlines() == [
        f"  1. [{ids[0]}] Warm the cache before timing",
        f"  2. [{ids[1]}] 📌 Radix beats comparison sort above 1k rows",
        f"  3. [{ids[2]}] Old trick (expires 2030-01-31)",
    ]
    # The number shown is the number `lesson remove` takes.
    assert sf(repos, "lesson", "remove", "perf", "1", "--reason", "superseded").returncode == 0
    assert (
        sf(repos, "lesson", "list", "perf").stdout.splitlines()[0]
        == f"  1. [{ids[1]}] 📌 Radix beats comparison sort above 1k rows"
    )
    assert sf(repos, "lesson", "promote", "perf", "1").returncode == 0
    assert "1 shared lesson in _shared.md" in sf(repos, "lesson", "list", "perf").stdout
    assert "has no lessons yet" in sf(repos, "lesson", "list", "fresh").stdout
    missing = sf(repos, "lesson", "list", "nope")
    assert missing.returncode == 3 and "no program 'nope'" in missing.stderr


def test_lesson_messages_name_the_lesson_and_a_repeated_restore_by_id_restores_nothing(
    repos: Repos, capsys: pytest.CaptureFixture[str]
) -> None:
    """`lesson remove` and `restore` said "moved the lesson" / "restored the lesson", and `restore perf 1` run twice
    restored two different lessons (the numbers moved up in between)."""
    doc = parse(new_state_file("perf"))
    for text in ("Warm the cache before timing", "Radix beats comparison sort above 1k rows", "Pin the seed"):
        doc = doc.with_lesson(text)
    seed(repos, {"perf.md": doc.render()})

    def run(*args: str) -> Ran:
        return invoke_statefile(capsys, "--remote", "origin", *args, cwd=repos.work)

    ids = [row["id"] for row in json.loads(run("--json", "lesson", "list", "perf").out)]
    first = run("lesson", "remove", "perf", "1", "--reason", "superseded")
    assert first.code == 0 and f"moved lesson {ids[0]} to " in first.out, first.err
    assert "Warm the cache before timing" in first.out and f"lesson restore perf {ids[0]}" in first.out
    second = run("lesson", "remove", "perf", "1", "--reason", "superseded")
    assert f"moved lesson {ids[1]} " in second.out and "Radix beats comparison sort" in second.out
    restored = run("lesson", "restore", "perf", ids[0])
    assert restored.code == 0 and restored.out.startswith(f"restored lesson {ids[0]} ("), restored.out
    assert restored.out.rstrip().endswith(": Warm the cache before timing")
    again = run("lesson", "restore", "perf", ids[0])
    assert again.code == 2 and f"lesson {ids[0]} (Warm the cache before timing) was already restored" in again.err
    assert "Radix beats" not in (repos.remote_file("perf.md") or "")  # no other lesson was restored instead
    by_number = run("lesson", "restore", "perf", "1")  # numbers still work, and say which lesson they took
    assert by_number.code == 0 and "Radix beats comparison sort above 1k rows" in by_number.out
    promoted = run("lesson", "promote", "perf", ids[2])
    assert promoted.code == 0 and promoted.out.startswith(f"promoted lesson {ids[2]} to _shared.md")
    assert promoted.out.rstrip().endswith(": Pin the seed")


def test_record_dry_run_says_what_would_be_recorded_and_writes_nothing(
    repos: Repos, capsys: pytest.CaptureFixture[str]
) -> None:
    """`compact`, `repair` and `apply` had --dry-run; `record` had none."""
    text = parse(synthetic_state("perf", 14, seed=5)).with_fields({"Consecutive Errors": 2, "Paused": False}).render()
    seed(repos, {"perf.md": text})
    tip = repos.remote_tip()

    def run(*args: str) -> Ran:
        return invoke_statefile(capsys, "--remote", "origin", *args, cwd=repos.work)

    said = run("record", "perf", "--status", "error", "--dry-run")
    assert said.code == 0, said.err
    lines = said.out.splitlines()
    assert lines[0].startswith("dry run: would record iteration 15 of perf (⚠️ error), ")
    paused = "  paused: 3 consecutive errors (last: iteration 15, error); fix the cause, then set Paused to false"
    assert paused in lines
    assert any(line.startswith("  compaction: ") and "would go to archive/perf/" in line for line in lines), lines
    data = json.loads(run("--json", "record", "perf", "--status", "accepted", "--metric", "1e9", "--dry-run").out)
    assert data["dry_run"] is True and data["commit"] == "" and data["iteration"] == 15
    assert data["best_metric"]["new_best"] is True and data["best_metric"]["after"] == "1000000000"
    assert repos.remote_tip() == tip and repos.remote_file("perf.md") == text  # nothing was written
    assert git("rev-parse", "refs/heads/memory/autoloop", cwd=repos.work).strip() == tip
    assert run("record", "perf", "--status", "error").out.startswith("recorded iteration 15 of perf")


def test_render_keeps_program_info_ahead_of_twenty_lessons(repos: Repos) -> None:
    seed(repos, {"perf.md": synthetic_state("perf", 60, seed=4, lessons=20)})
    proc = sf(repos, "render", "perf", "--budget", "3000")
    assert proc.returncode == 0, proc.stderr
    assert "**Goal**: Make perf faster, one measured change at a time." in proc.stdout
    assert "lessons" in proc.stdout.splitlines()[-1]  # some lessons were left out, Program Info was not


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    """Three programs of different sizes and ages, one over the budget, each with a little branch history."""
    with pinned_identity(tmp_path_factory):
        repos = make_repos(tmp_path_factory.mktemp("three"))
        seed(
            repos,
            {
                "alpha.md": synthetic_state("alpha", 12, seed=1),
                "beta.md": synthetic_state("beta", 240, seed=2),  # ~80 KB: over the 30 KB budget
                "gamma.md": synthetic_state("gamma", 40, seed=3),
            },
        )
        proc = sf(repos, "record", "alpha", "--status", "accepted", "--metric", "999", "--change", "Port module m3",
                  "--at", "2026-06-01T00:00:00+02:00")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    return repos


def test_log_shows_utc_author_and_with_p_the_diff(three: Repos) -> None:
    text = sf(three, "log", "alpha")
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["COMMIT", "WHEN", "(UTC)", "ITER", "AUTHOR", "CHANGE"]
    assert " UTC  " in lines[1] and "#13" in lines[1] and "statefile tests" in lines[1]
    assert lines[1].endswith("statefile: record iteration 13 of alpha (✅ accepted)")
    assert lines[2] == "            ↳ best metric 999 (was 110.65)"  # what the record did to the program's state
    assert lines[3].endswith("seed") and len(lines) == 4
    rows = json.loads(sf(three, "--json", "log", "alpha").stdout)
    assert rows[0]["author"] == "statefile tests <tests@statefile.invalid>" and rows[0]["when_utc"].endswith("Z")
    assert "patch" not in rows[0]
    patched = sf(three, "log", "alpha", "-p", "-n", "1")
    assert patched.returncode == 0, patched.stderr
    out = patched.stdout
    assert out.startswith(f"commit {rows[0]['commit']}\nAuthor: statefile tests <tests@statefile.invalid>\nDate:   ")
    assert "diff --git a/alpha.md b/alpha.md" in out and "+### Iteration 13 — " in out
    assert "+- **Change**: Port module m3" in out and "-| Iteration Count | 12 |" in out
    assert out.count("\ncommit ") == 0  # -n 1: one commit
    data = json.loads(sf(three, "--json", "log", "alpha", "-p").stdout)
    assert data[1]["patch"].startswith("diff --git a/alpha.md b/alpha.md\nnew file mode")


def test_list_sorts_filters_and_totals(three: Repos) -> None:
    by_size = sf(three, "list", "--sort", "size").stdout.splitlines()
    assert [line.split()[0] for line in by_size[1:4]] == ["beta", "gamma", "alpha"]
    assert by_size[-1].startswith("total: 3 programs · ") and "· 1 over budget" in by_size[-1]
    assert "293 iterations" in by_size[-1]  # 13 + 240 + 40 (alpha's record made 13)
    by_iterations = sf(three, "list", "--sort", "iterations").stdout.splitlines()
    assert [line.split()[0] for line in by_iterations[1:4]] == ["beta", "gamma", "alpha"]
    by_run = sf(three, "list", "--sort", "last-run").stdout.splitlines()
    assert by_run[1].split()[0] == "alpha"  # recorded last, at 2026-06-01T00:00:00+02:00
    over = sf(three, "list", "--over-budget").stdout.splitlines()
    assert [line.split()[0] for line in over[1:-1]] == ["beta"] and over[-1].startswith("total: 1 program of 3 · ")
    none = sf(three, "--max-bytes", "10MB", "list", "--over-budget")
    assert none.returncode == 0 and none.stdout.startswith("no program is over its budget")
    rows = json.loads(sf(three, "--json", "list", "--over-budget").stdout)
    assert [r["program"] for r in rows] == ["beta"]
    assert sf(three, "list", "--sort", "colour").returncode == 2


def test_compact_dry_run_summarises_per_program_with_details_on_request(three: Repos) -> None:
    tip = three.remote_tip()
    proc = sf(three, "compact", "--all", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) < 15, proc.stdout  # a summary, not a line per folded iteration
    beta = lines.index(next(line for line in lines if line.startswith("beta: dry run:")))
    assert lines[beta + 1].startswith("  fold 2") and " iterations (#1–2" in lines[beta + 1]
    assert "range lines: Iters " in lines[beta + 1]
    assert lines[-1] == "(--details lists every entry, lesson and avenue that would move)"
    detailed = sf(three, "compact", "beta", "--dry-run", "--details").stdout.splitlines()
    assert sum(1 for line in detailed if line.startswith("    iteration: Iteration ")) > 200
    assert three.remote_tip() == tip


def test_a_record_beside_an_exponent_heading_keeps_the_real_entry(tmp_path: Path) -> None:
    """Found by the cold review of issue 15: a record beside an exponent heading keeps the real entry."""
    real = render_iteration(number=1, when="2026-01-01 00:00", status="accepted", change="the real one")
    text = new_state_file("perf").replace("*(No iterations yet.)*\n", "### Iteration 1e308 — float\n\n" + real)
    (tmp_path / "perf.md").write_text(text, "utf-8")
    proc = run_statefile(
        "--dir", str(tmp_path), "record", "perf", "--status", "accepted", "--metric", "2", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    after = (tmp_path / "perf.md").read_text("utf-8")
    assert "recorded iteration 2" in proc.stdout
    assert "the real one" in after and "### Iteration 1e308 — float" in after
    assert not (tmp_path / "archive").exists()


def _editor(code: str) -> str:
    """An $EDITOR that runs ``code`` on the file it is given (argv[1])."""
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


@pytest.mark.parametrize(
    ("value", "needle"),
    [("nan", "not a finite number"), ("inf", "not a finite number"), ("1e400", "beyond 1e±308"), ("x", "not a number")],
)
def test_init_refuses_a_target_that_is_no_number(recorded_repos: Repos, value: str, needle: str) -> None:
    """Issue 15 (#6, #13), absurd values: init refuses a target that is no number."""
    assert_refused(recorded_repos, EXIT_USAGE, "init", "other", "--target-metric", value, needle=needle)


def test_a_long_target_is_kept_exactly(recorded_repos: Repos) -> None:
    """Issue 15 (#6, #13), absurd values: a long target is kept exactly."""
    assert (
        run_statefile(
            "-q", "init", "big", "--target-metric", "12345678901234567891", cwd=recorded_repos.work
        ).returncode
        == 0
    )
    shown = json.loads(run_statefile("show", "big", "--json", cwd=recorded_repos.work).stdout)
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
def test_record_refuses_absurd_values(recorded_repos: Repos, args: list[str], needle: str) -> None:
    """Issue 15 (#6, #13), absurd values: record refuses absurd values."""
    assert_refused(recorded_repos, EXIT_USAGE, "record", "perf", "--status", "accepted", *args, needle=needle)


def test_an_absurd_best_metric_in_the_file_is_an_error_naming_the_row(recorded_repos: Repos, tmp_path: Path) -> None:
    """Issue 15 (#6, #13), absurd values: an absurd best metric in the file is an error naming the row."""
    text = run_statefile("export", cwd=recorded_repos.work).stdout
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


def test_an_editor_that_deletes_its_file_saves_nothing(recorded_repos: Repos) -> None:
    """Issue 15 (#6, #13), absurd values: an editor that deletes its file saves nothing."""
    before = newest_log(recorded_repos)
    proc = run_statefile(
        "edit", "perf", cwd=recorded_repos.work, env={"EDITOR": _editor("import os, sys; os.remove(sys.argv[1])")}
    )
    assert proc.returncode == EXIT_USAGE and "could not be read back" in proc.stderr, proc.stderr
    assert newest_log(recorded_repos) == before


def test_an_edit_that_deletes_the_history_archives_it(recorded_repos: Repos) -> None:
    """The entries a hand edit removed are in the archive, and expand still finds them."""
    entry = run_statefile("expand", "perf", "1", cwd=recorded_repos.work).stdout
    cut = "import sys; p = sys.argv[1]; t = open(p).read(); open(p, 'w').write(t.split('### Iteration 1 ')[0])"
    proc = run_statefile("edit", "perf", cwd=recorded_repos.work, env={"EDITOR": _editor(cut)})
    assert proc.returncode == 0, proc.stderr
    assert "### Iteration 1 " not in git("show", "memory/autoloop:perf.md", cwd=recorded_repos.work)
    again = run_statefile("expand", "perf", "1", cwd=recorded_repos.work)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == entry.strip()


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
def test_issue_and_pr_numbers_github_cannot_have_are_refused(recorded_repos: Repos, args: list[str]) -> None:
    """record --pr/--issue wrote 23- to 34-digit numbers into the Machine State; GitHub's stop at 2**31 - 1."""
    assert_refused(recorded_repos, EXIT_USAGE, *args, needle="GitHub's go from 1 to 2,147,483,647")


def test_the_largest_github_number_is_accepted_and_apply_is_bounded_too(recorded_repos: Repos) -> None:
    """Issue 15 (#6, #13), absurd values: the largest github number is accepted and apply is bounded too."""
    proc = run_statefile("-q", "record", "perf", "--status", "rejected", "--pr", "2147483647", cwd=recorded_repos.work)
    assert proc.returncode == 0, proc.stderr
    assert "| PR | #2147483647 |" in git("show", "memory/autoloop:perf.md", cwd=recorded_repos.work)
    # apply and the Python API build the same request: the bound is there, not only on the flag.
    with pytest.raises(UsageError, match="beyond 2,147,483,647"):
        RecordRequest(status="accepted", issue=10**33)


def test_a_mistyped_status_is_a_usage_error_with_did_you_mean(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guard rail (issue 13): a mistyped status is a usage error with did you mean; the memory is left exactly as it
    was."""
    before = guard_repo.refs()
    result = guard_run(capsys, "--remote", "origin", "record", "perf", "--status", "acepted", "--metric", "5")
    assert result.code == 2
    assert "did you mean 'accepted'?" in result.error_line and "--new-status" in result.error_line
    refs_unchanged(guard_repo, before)
    forced = guard_run(capsys, "--remote", "origin", "record", "perf", "--status", "pending-ci", "--new-status")
    assert forced.code == 0 and "pending-ci" in forced.out


def test_record_reports_pause_unpause_best_and_completion(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guard rail (issue 13): record reports pause unpause best and completion; the memory is left exactly as it was."""
    base = ["--remote", "origin"]
    for _ in range(3):
        result = guard_run(capsys, *base, "record", "latency", "--status", "error")
    assert "paused: 3 consecutive errors" in result.out
    again = guard_run(capsys, *base, "record", "latency", "--status", "rejected")
    assert "note: the program is paused" in again.out
    accepted = guard_run(capsys, *base, "--json", "record", "latency", "--status", "accepted", "--metric", "1e9")
    data = json.loads(accepted.out)
    assert data["unpaused"] is True and data["previous_pause_reason"].startswith("3 consecutive errors")
    assert data["best_metric"]["new_best"] is True and data["paused"] is False
    log = repo_git("log", "-1", "--format=%B", MEMORY_BRANCH, cwd=guard_repo.remote)
    assert "unpaused: an accepted iteration un-pauses the program" in log  # the cleared reason is kept in git
    with Store.open(".", remote="origin") as store:
        text = store.read_text("latency") or ""
        store.write_files({"latency.md": text.replace("| Target Metric | — |", "| Target Metric | 5 |")}, "t")
    done = guard_run(capsys, *base, "record", "latency", "--status", "accepted", "--metric", "2e9")
    assert "completed: target metric 5 reached" in done.out
    after = guard_run(capsys, *base, "record", "latency", "--status", "rejected")
    assert "note: the program was already completed" in after.out


def test_no_op_commands_say_nothing_changed(guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]) -> None:
    """Guard rail (issue 13): no op commands say nothing changed; the memory is left exactly as it was."""
    base = ["--remote", "origin"]
    assert guard_run(capsys, *base, "lesson", "add", "perf", "Warm the cache first").code == 0
    before = guard_repo.refs()
    for args, says in (
        (["lesson", "add", "perf", "Warm the cache first"], "perf already has this lesson"),
        (["lesson", "unpin", "perf", "Warm the cache"], "the lesson is not pinned"),
    ):
        result = guard_run(capsys, *base, *args)
        assert result.code == 0 and result.out.strip() == f"nothing changed: {says}", result.out
    refs_unchanged(guard_repo, before)
    assert guard_run(capsys, *base, "lesson", "promote", "perf", "Warm the cache").code == 0
    before = guard_repo.refs()
    promoted = guard_run(capsys, *base, "lesson", "promote", "perf", "Warm the cache")
    assert promoted.out.strip() == "nothing changed: _shared.md already has this lesson"
    refs_unchanged(guard_repo, before)
    compacted = guard_run(capsys, *base, "compact", "pipeline")
    assert compacted.out.startswith("pipeline: nothing changed")


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("import os, sys; os.remove(sys.argv[1]); os.mkfifo(sys.argv[1])", "is a FIFO"),
        ("import os, sys; os.remove(sys.argv[1]); os.symlink('/dev/zero', sys.argv[1])", "character device"),
        ("import sys; open(sys.argv[1], 'ab').write(b'x' * 9_000_000)", "more than the"),
    ],
    ids=["fifo", "dev-zero", "huge"],
)
def test_an_editor_that_leaves_no_regular_file_saves_nothing(initialized_repos: Repos, code: str, needle: str) -> None:
    """Found by the hostile run (issue 15): an editor that leaves no regular file saves nothing."""
    before = repo_git("rev-parse", "memory/autoloop", cwd=initialized_repos.work)
    editor = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    proc = run_statefile("edit", "perf", cwd=initialized_repos.work, env={"EDITOR": editor})
    assert proc.returncode == EXIT_USAGE
    line = only_error_line(proc)
    assert needle in line and "nothing was saved" in line, line
    assert repo_git("rev-parse", "memory/autoloop", cwd=initialized_repos.work) == before


def test_a_misquoted_or_missing_editor_is_a_usage_error_not_a_hang(initialized_repos: Repos) -> None:
    """With no $EDITOR and no terminal, click started vim, which waited for keys forever; a stray quote was exit 70."""
    before = repo_git("rev-parse", "memory/autoloop", cwd=initialized_repos.work)
    for value, needle in (("", "no editor to run"), ('"unbalanced', "fix its quoting")):
        env = {"EDITOR": value, "VISUAL": ""}
        proc = subprocess.run(
            [str(Path(sys.executable).with_name("statefile")), "edit", "perf"],
            cwd=initialized_repos.work,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == EXIT_USAGE and needle in only_error_line(proc)
    assert repo_git("rev-parse", "memory/autoloop", cwd=initialized_repos.work) == before


def test_compact_two_files_with_one_name_compacts_both(tmp_path: Path) -> None:
    """As seen in issue 11: compact two files with one name compacts both."""
    text = state_file_text("".join(entry_text(n, metric=str(n), notes="y" * 150) for n in range(40, 0, -1)))
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "perf.md").write_text(text, encoding="utf-8")
    proc = run_statefile("compact", "a/perf.md", "b/perf.md", "--max-bytes", "8192", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for folder in ("a", "b"):
        after = (tmp_path / folder / "perf.md").read_text(encoding="utf-8")
        assert len(after.encode()) <= 8192 and after != text, folder
        assert (tmp_path / folder / "archive" / "perf" / "0001.md").is_file(), folder
        assert covered_numbers(after) == set(range(1, 41))
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["a/perf.md", "b/perf.md"]


def test_compact_labels_a_file_by_its_normalised_path_and_compacts_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 review: two spellings of one file are one target, named by its normalised path."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "perf.md").write_text(new_state_file("perf"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    done = guard_run(capsys, "compact", "./a/perf.md", "a//perf.md")
    assert done.code == 0, done.err
    assert [line.split(":")[0] for line in done.out.splitlines()] == ["a/perf.md"]


def test_repair_of_shared_is_a_usage_error_whether_or_not_it_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 review: `_shared` takes lessons only through `lesson promote`; naming it is a usage error (exit 2),
    not a missing program (exit 3), as before the rewrite."""
    for exists in (False, True):
        if exists:
            (tmp_path / "_shared.md").write_text(new_state_file("_shared"), encoding="utf-8")
        done = guard_run(capsys, "--dir", str(tmp_path), "repair", "_shared")
        assert done.code == EXIT_USAGE and "reserved for shared lessons" in done.err, done.err


def test_record_checks_its_own_arguments_before_reading_autoloop_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 review: a bad --metric is reported as such (exit 2) before --autoloop-json is even looked at."""
    args = ["--dir", str(tmp_path), "record", "perf", "--status", "accepted", "--autoloop-json", str(tmp_path / "no")]
    bad = guard_run(capsys, *args, "--metric", "fast")
    assert bad.code == EXIT_USAGE and "--metric" in bad.err, bad.err
    assert guard_run(capsys, *args, "--metric", "1").code == 3  # the missing file, once the arguments are good


def test_record_says_a_repeated_lesson_was_not_added_even_when_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 review: nothing is dropped silently; a lesson already there is not added again, and stderr says so."""
    (tmp_path / "perf.md").write_text(new_state_file("perf"), encoding="utf-8")
    args = ["--quiet", "--dir", str(tmp_path), "record", "perf", "--status", "rejected", "--lesson", "Warm the cache"]
    assert guard_run(capsys, *args).err == ""
    again = guard_run(capsys, *args)
    assert again.code == 0 and "1 lesson not added" in again.err, again.err
    assert (tmp_path / "perf.md").read_text(encoding="utf-8").count("Warm the cache") == 1


def test_an_edit_that_cannot_be_saved_says_where_the_text_is_even_with_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 review: --quiet never hides where the user's edited text was saved when the save failed."""
    state = tmp_path / "perf.md"
    state.write_text(new_state_file("perf"), encoding="utf-8")
    meanwhile = f"open({str(state)!r}, 'a').write('\\n')"  # another writer changes the file during the edit
    monkeypatch.setenv("EDITOR", _editor(f"import sys; open(sys.argv[1], 'a').write('\\n'); {meanwhile}"))
    done = guard_run(capsys, "--quiet", "--dir", str(tmp_path), "edit", "perf")
    assert done.code != 0 and "changed on the branch while you were editing" in done.err, done.err
    saved = Path(done.err.split("your edited text is saved in ", 1)[1].splitlines()[0])
    assert saved.read_text(encoding="utf-8") == new_state_file("perf") + "\n"
    saved.unlink()


def test_export_then_import_into_an_empty_branch_is_byte_identical(repos: Repos, tmp_path: Path) -> None:
    seed(repos, {"messy.md": sample_text("messy"), "long-running.md": sample_text("long-running")})
    assert sf(repos, "compact", "--all").returncode == 0
    out = tmp_path / "export.json"
    assert sf(repos, "export", "--out", str(out)).returncode == 0
    proc = sf(repos, "--branch", "memory/restored", "import", str(out))
    assert proc.returncode == 0, proc.stderr
    original = git("ls-tree", "-r", "memory/autoloop", cwd=repos.remote)
    restored = git("ls-tree", "-r", "memory/restored", cwd=repos.remote)
    assert original == restored and "archive/long-running/0001.md" in original


def test_import_rejects_damaged_exports_and_changes_nothing(repos: Repos, tmp_path: Path) -> None:
    seed(repos, {"messy.md": sample_text("messy")})
    out = tmp_path / "export.json"
    sf(repos, "export", "--out", str(out))
    data = json.loads(out.read_text())
    data["files"]["../escape.md"] = data["files"].pop("messy.md")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    tip = repos.remote_tip()
    for source in (bad, tmp_path / "missing.json"):
        proc = sf(repos, "import", str(source))
        assert proc.returncode in (2, 3) and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    (tmp_path / "notjson.json").write_text("{nope")
    assert sf(repos, "import", str(tmp_path / "notjson.json")).returncode == 2
    assert repos.remote_tip() == tip


def test_demo_echoes_command_lines_a_shell_reads_back_as_run() -> None:
    """The demo echoed `--change Vectorize the tokenizer inner loop`, unquoted: pasted, it was four arguments."""
    lines: list[str] = []
    run_demo(cli, lines.append)
    commands = [shlex.split(line.strip()[2:]) for line in lines if line.strip().startswith("$ ")]
    assert [
        "statefile", "record", "mid-life", "--status", "accepted", "--change", "Vectorize the tokenizer inner loop",
        "--metric", "131.5",
    ] in commands  # fmt: skip
    assert "$ statefile record messy --status error --change 'Parallel parse (CI timed out)'" in "\n".join(lines)


def test_a_bad_summarizer_fails_per_target_after_the_targets_are_found(tmp_path: Path) -> None:
    """Issue 23 review: compact builds each target's policy (and summarizer) when it reaches that target, so a
    missing program is still "not found" (exit 3) and with --all each program says the summarizer is bad."""
    repos = make_repos(tmp_path)
    for program in ("perf", "other"):
        assert run_statefile("init", program, cwd=repos.work).returncode == 0
    bad = ("--summarizer", 'a "')
    missing = run_statefile("compact", "nope", *bad, cwd=repos.work)
    assert missing.returncode == 3 and "no program 'nope'" in missing.stderr, missing.stderr
    every = run_statefile("compact", "--all", *bad, cwd=repos.work)
    lines = every.stderr.splitlines()
    assert every.returncode == EXIT_USAGE and len(lines) == 2, every.stderr
    assert lines[0].startswith("statefile: error: other: cannot parse --summarizer"), lines
    assert lines[1].startswith("statefile: error: perf: cannot parse --summarizer"), lines
