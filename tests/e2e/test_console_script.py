"""The command line against real repositories with a bare remote: the moments users live through.

Most run in-process (gitutil.run_statefile, what the console script runs, without a process's start-up); the
smoke tests (``--version``, ``--help``, the demo, a missing repository) run the installed console script itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import GuardRepo, refs_unchanged
from gitutil import Repos, git, make_repos, run_console_script, run_statefile
from upstream import meaningful, upstream_machine_state

from statefile.cli.write import sample_text
from statefile.store import Store


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    return make_repos(tmp_path)


def sf(repos: Repos, *args: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """statefile through the remote, from the work clone."""
    return run_statefile("--remote", "origin", *args, cwd=cwd or repos.work, stdin=stdin)


def seed(repos: Repos, files: dict[str, str], max_bytes: int = 10_000_000) -> None:
    """Put files on the remote memory branch as an agent (or a human) left them."""
    with Store.open(repos.work, remote="origin", max_bytes=max_bytes) as store:
        store.write_files(files, "seed")


def assert_clean_error(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


STATUSES = ["accepted", "rejected", "error", "accepted", "error", "error", "error", "accepted", "pending-ci"]


def test_sixteen_recorded_iterations_read_back_through_the_scheduler(repos: Repos) -> None:
    assert sf(repos, "init", "perf", "--metric-direction", "lower", "--target-metric", "1").returncode == 0
    expected_statuses: list[str] = []
    best: float | None = None
    errors = 0
    for n in range(1, 17):  # past the newest 10 that stay detailed, and through every status twice
        status = STATUSES[n % len(STATUSES)]
        metric = 100.0 - n
        args = ["record", "perf", "--status", status, "--change", f"change {n}", "--notes", "notes"]
        if status == "pending-ci":
            args.append("--new-status")  # not an upstream word: asked for explicitly
        if status != "error":
            args += ["--metric", str(metric)]
        proc = sf(repos, *args)
        assert proc.returncode == 0, proc.stderr
        assert f"recorded iteration {n} of perf" in proc.stdout
        expected_statuses.append(status)
        if status == "accepted" and (best is None or metric < best):
            best = metric
        errors = 0 if status == "accepted" else errors + 1 if status == "error" else errors
    text = repos.remote_file("perf.md")
    assert text is not None
    state = meaningful(upstream_machine_state(text))
    assert state["iteration_count"] == 16
    assert state["recent_statuses"] == expected_statuses[-10:]
    assert state["best_metric"] == f"{best:g}"
    assert state["consecutive_errors"] == errors
    assert state["metric_direction"] == "lower"
    assert state["completed"] is False
    assert len(text.encode()) <= 30720
    log = sf(repos, "--json", "log", "perf", "-n", "50")
    rows = json.loads(log.stdout)
    assert [r["iteration"] for r in rows[:3]] == [16, 15, 14]
    assert rows[0]["message"].startswith("statefile: record iteration 16 of perf")
    # Older iterations were folded into ranges; each is still reachable verbatim.
    assert "### Iteration 2 — " not in text
    expanded = sf(repos, "expand", "perf", "2")
    assert expanded.returncode == 0, expanded.stderr
    assert expanded.stdout.startswith("### Iteration 2 — ")
    assert "change 2" in expanded.stdout


def test_scheduler_prestep_merges_sizes_and_keeps_its_keys(repos: Repos, tmp_path: Path) -> None:
    seed(repos, {"messy.md": sample_text("messy"), "mid-life.md": sample_text("mid-life")})
    out = tmp_path / "gh-aw" / "autoloop.json"
    out.parent.mkdir()
    out.write_text(sample_text("autoloop.json"))
    before = json.loads(out.read_text())
    fresh = repos.clone("fresh-runner")  # only origin/memory/autoloop there, no local branch
    proc = sf(repos, "report", "--out", str(out), cwd=fresh)
    assert proc.returncode == 0, proc.stderr
    after = json.loads(out.read_text())
    for key, value in before.items():
        assert after[key] == value
    assert after["state_file_size_bytes"] == len(sample_text("messy").encode())
    assert after["state_file_max_bytes"] == 30720
    assert after["statefile"]["programs"]["messy"]["iteration_count"] == 41
    assert git("status", "--porcelain", cwd=fresh) == ""
    all_programs = json.loads(sf(repos, "report", "--all", cwd=fresh).stdout)
    assert set(all_programs["statefile"]["programs"]) == {"messy", "mid-life"}


def test_check_catches_an_oversize_file_and_compact_fixes_it(repos: Repos) -> None:
    seed(repos, {"long-running.md": sample_text("long-running"), "fresh.md": sample_text("fresh")})
    tip = repos.remote_tip()
    proc = sf(repos, "check")
    assert proc.returncode == 1
    assert "long-running: FAIL" in proc.stdout and "over budget" in proc.stdout
    assert "fresh: ok" in proc.stdout
    assert repos.remote_tip() == tip
    dry = sf(repos, "compact", "long-running", "--dry-run")
    assert dry.returncode == 0 and "dry run: compacted" in dry.stdout
    assert repos.remote_tip() == tip
    done = sf(repos, "compact", "--all")
    assert done.returncode == 0, done.stderr
    assert sf(repos, "check").returncode == 0
    parts = git("ls-tree", "-r", "-l", "memory/autoloop", "archive/long-running/", cwd=repos.remote).splitlines()
    assert parts, "the folded entries went to the archive"
    assert all(int(line.split()[3]) <= 30720 for line in parts)
    archived = "".join(repos.remote_file(line.split("\t")[1]) or "" for line in parts)
    assert "### Iteration 1 — " in archived


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["record", "../evil", "--status", "accepted"], 2, "program name"),
        (["record", "-rf", "--status", "accepted"], 2, ""),
        (["show", "nope"], 3, "no program 'nope'"),
        (["expand", "nope", "3"], 3, "no program 'nope'"),
        (["record", "perf", "--status", "accepted", "--metric", "fast"], 2, "not a number"),
        (["record", "perf", "--status", "two words"], 2, "status"),
        (["record", "perf", "--status", "accepted", "--iteration", "1"], 5, "1"),
        (["compact"], 2, "--all"),
    ],
)
def test_bad_input_is_one_clear_line_and_changes_nothing(repos: Repos, args: list[str], code: int, needle: str) -> None:
    assert sf(repos, "init", "perf").returncode == 0
    assert sf(repos, "record", "perf", "--status", "accepted", "--metric", "1").returncode == 0
    tip = repos.remote_tip()
    proc = sf(repos, *args)
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert needle in proc.stderr
    assert repos.remote_tip() == tip


def test_invalid_utf8_on_the_branch_is_reported_not_rewritten(repos: Repos, tmp_path: Path) -> None:
    # Plumbing, so the bad bytes land exactly as a broken tool would leave them.
    blob = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=repos.work,
            input=b"# Autoloop: bad\n\n\xff\xfe broken\n",
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    tree = subprocess.run(
        ["git", "mktree"], cwd=repos.work, input=f"100644 blob {blob}\tbad.md\n".encode(), capture_output=True,
        check=True,
    ).stdout.decode().strip()  # fmt: skip
    commit = git("commit-tree", tree, "-m", "bad bytes", cwd=repos.work).strip()
    git("push", "--quiet", "origin", f"{commit}:refs/heads/memory/autoloop", cwd=repos.work)
    for args in (["show", "bad"], ["record", "bad", "--status", "accepted"], ["compact", "bad"]):
        proc = sf(repos, *args)
        assert_clean_error(proc, 7, "UTF-8")
    assert repos.remote_tip() == commit
    check = sf(repos, "check")
    assert check.returncode == 1 and "UTF-8" in check.stdout


def test_missing_repository_is_a_clear_error(tmp_path: Path) -> None:
    proc = run_console_script("--repo", str(tmp_path / "nowhere"), "list", cwd=tmp_path)
    assert_clean_error(proc, 3, "nowhere")
    outside = tmp_path / "plain"
    outside.mkdir()
    proc = run_console_script("list", cwd=outside)
    assert_clean_error(proc, 3, "no git repository")


def test_user_checkout_is_untouched(repos: Repos) -> None:
    (repos.work / "README.md").write_text("dirty edit\n")
    (repos.work / "untracked.txt").write_text("x\n")
    git("add", "README.md", cwd=repos.work)
    (repos.work / "README.md").write_text("dirtier edit\n")
    head, status = git("rev-parse", "HEAD", cwd=repos.work), git("status", "--porcelain", cwd=repos.work)
    index = (repos.work / ".git" / "index").read_bytes()
    assert sf(repos, "init", "perf").returncode == 0
    assert sf(repos, "record", "perf", "--status", "accepted", "--metric", "3").returncode == 0
    assert git("rev-parse", "HEAD", cwd=repos.work) == head
    assert git("status", "--porcelain", cwd=repos.work) == status
    assert (repos.work / ".git" / "index").read_bytes() == index
    assert (repos.work / "README.md").read_text() == "dirtier edit\n"


def test_file_mode_show_check_and_compact(tmp_path: Path) -> None:
    folder = tmp_path / "repo-memory"
    folder.mkdir()
    (folder / "long-running.md").write_text(sample_text("long-running"))
    (folder / "bad.md").write_bytes(b"\xff\xfe")
    show = run_statefile("--json", "show", str(folder / "long-running.md"), cwd=tmp_path)
    assert json.loads(show.stdout)["history"]["iterations"] == 240
    check = run_statefile("check", str(folder / "long-running.md"), str(folder / "bad.md"), cwd=tmp_path)
    assert check.returncode == 1 and "over budget" in check.stdout and "UTF-8" in check.stdout
    assert run_statefile("show", str(folder / "bad.md"), cwd=tmp_path).returncode == 7
    proc = run_statefile("compact", str(folder / "long-running.md"), "--max-bytes", "8192", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len((folder / "long-running.md").read_bytes()) <= 8192
    archive = sorted((folder / "archive" / "long-running").iterdir())
    assert archive and all(len(p.read_bytes()) <= 8192 for p in archive)
    assert "### Iteration 1 — " in "".join(p.read_text() for p in archive)


def test_folder_mode_end_to_end(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    base = ["--dir", str(folder)]
    assert run_statefile(*base, "init", "perf", cwd=tmp_path).returncode == 0
    for n in range(1, 16):
        proc = run_statefile(*base, "record", "perf", "--status", "accepted", "--metric", str(n), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    state = upstream_machine_state((folder / "perf.md").read_text())
    assert state["iteration_count"] == 15 and state["best_metric"] == "15"
    listing = json.loads(run_statefile(*base, "--json", "list", cwd=tmp_path).stdout)
    assert listing[0]["program"] == "perf" and listing[0]["iteration_count"] == 15


def test_config_reports_sources(repos: Repos) -> None:
    workflows = repos.work / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "autoloop.md").write_text(
        "---\non:\n  schedule: daily\ntools:\n  repo-memory:\n    branch-name: memory/autoloop\n"
        "    max-file-size: 20480\n---\n# Autoloop\n"
    )
    rows = {r["key"]: r for r in json.loads(run_statefile("--json", "config", cwd=repos.work).stdout)}
    assert rows["max-bytes"]["value"] == 20480
    assert "frontmatter" in rows["max-bytes"]["source"]
    env_rows = json.loads(run_statefile("--json", "config", cwd=repos.work, env={"STATEFILE_MAX_BYTES": "9000"}).stdout)
    assert {r["key"]: r for r in env_rows}["max-bytes"]["source"] == "env STATEFILE_MAX_BYTES"


def test_version_help_and_demo(tmp_path: Path) -> None:
    assert run_console_script("--version", cwd=tmp_path).stdout.startswith("statefile, version")
    helped = run_console_script("--help", cwd=tmp_path)
    for command in ("record", "report", "compact", "check", "render", "expand", "demo"):
        assert command in helped.stdout
    record_help = run_console_script("record", "--help", cwd=tmp_path).stdout
    assert "Example:" in record_help
    demo = run_console_script("demo", cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    assert "recorded iteration 41 of mid-life" in demo.stdout
    assert "recorded iteration 42 of messy" in demo.stdout
    assert "complete: nothing left out" in demo.stdout or "statefile expand" in demo.stdout
    assert "state_file_size_bytes" in demo.stdout


def test_file_glob_limits_which_files_are_programs(repos: Repos) -> None:
    seed(repos, {"perf-a.md": sample_text("fresh"), "perf-b.md": sample_text("fresh"), "notes.md": "# notes\n"})
    (repos.work / ".statefile.toml").write_text('file-glob = ["perf-*.md"]\n')
    listing = json.loads(sf(repos, "--json", "list").stdout)
    assert [row["program"] for row in listing] == ["perf-a", "perf-b"]
    assert sf(repos, "check").returncode == 0  # notes.md (no Machine State) is not a state file here


def test_import_refuses_to_roll_back_existing_state(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    base = ["--dir", str(folder)]
    run_statefile(*base, "init", "perf", cwd=tmp_path)
    run_statefile(*base, "record", "perf", "--status", "accepted", "--metric", "1", cwd=tmp_path)
    export = tmp_path / "old.json"
    assert run_statefile(*base, "export", "--out", str(export), cwd=tmp_path).returncode == 0
    run_statefile(*base, "record", "perf", "--status", "accepted", "--metric", "2", cwd=tmp_path)
    before = (folder / "perf.md").read_bytes()
    proc = run_statefile(*base, "import", str(export), cwd=tmp_path)
    assert_clean_error(proc, 5, "1 file exists with different content (perf.md)")  # as seen: "1 file exist"
    assert (folder / "perf.md").read_bytes() == before
    assert run_statefile(*base, "import", str(export), "--force", cwd=tmp_path).returncode == 0
    assert upstream_machine_state((folder / "perf.md").read_text())["iteration_count"] == 1


def test_edit_with_an_editor_that_writes_bad_bytes_keeps_the_text(repos: Repos, tmp_path: Path) -> None:
    assert sf(repos, "init", "perf").returncode == 0
    tip = repos.remote_tip()
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nprintf '\\377\\376' >> \"$1\"\n")
    editor.chmod(0o755)
    proc = run_statefile("--remote", "origin", "edit", "perf", cwd=repos.work, env={"EDITOR": str(editor)})
    assert_clean_error(proc, 7, "not valid UTF-8", "your text is in")
    assert repos.remote_tip() == tip
    good = tmp_path / "good.sh"
    good.write_text("#!/bin/sh\nsed -i 's/^- \\*(none yet)\\*$/- Maintainer note/' \"$1\"\n")
    good.chmod(0o755)
    proc = run_statefile("--remote", "origin", "edit", "perf", cwd=repos.work, env={"EDITOR": str(good)})
    assert proc.returncode == 0, proc.stderr
    assert "- Maintainer note" in (repos.remote_file("perf.md") or "")


def test_option_mixups_and_partial_identity(repos: Repos, tmp_path: Path) -> None:
    proc = run_statefile("--dir", str(tmp_path), "--remote", "origin", "list", cwd=tmp_path)
    assert_clean_error(proc, 2, "--dir")
    proc = run_statefile("--remote", "origin", "init", "perf", cwd=repos.work, env={"STATEFILE_AUTHOR_NAME": "Bot"})
    assert proc.returncode == 0, proc.stderr
    assert git("log", "-1", "--format=%an <%ae>", "memory/autoloop", cwd=repos.remote).strip() == (
        "Bot <statefile@users.noreply.github.com>"
    )


def test_one_unreadable_file_does_not_hide_the_others(repos: Repos) -> None:
    seed(repos, {"good.md": sample_text("fresh")})
    blob = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"], cwd=repos.work, input=b"\xff\xfe", capture_output=True, check=True
        )
        .stdout.decode()
        .strip()
    )
    git("fetch", "--quiet", "origin", "memory/autoloop", cwd=repos.work)
    listing = git("ls-tree", "FETCH_HEAD", cwd=repos.work) + f"100644 blob {blob}\tbad.md\n"
    tree = (
        subprocess.run(["git", "mktree"], cwd=repos.work, input=listing.encode(), capture_output=True, check=True)
        .stdout.decode()
        .strip()
    )
    commit = git("commit-tree", tree, "-p", "FETCH_HEAD", "-m", "bad", cwd=repos.work).strip()
    git("push", "--quiet", "origin", f"{commit}:refs/heads/memory/autoloop", cwd=repos.work)
    rows = {r["program"]: r for r in json.loads(sf(repos, "--json", "list").stdout)}
    assert rows["good"]["status"] == "new" and rows["bad"]["status"] == "unreadable"
    report = json.loads(sf(repos, "report", "--all").stdout)
    assert "error" in report["statefile"]["programs"]["bad"]
    assert report["statefile"]["programs"]["good"]["size"] > 0
    compacted = sf(repos, "compact", "--all")
    assert compacted.returncode == 7 and "bad" in compacted.stderr


class TestConsoleScript:
    """A few representative mistakes through the installed ``statefile`` executable (not in-process)."""

    def test_mistyped_program_status_and_branch(self, guard_repo: GuardRepo) -> None:
        before = guard_repo.refs()
        cases = [
            (["--remote", "origin", "record", "perff", "--status", "accepted"], 3, "did you mean 'perf'?"),
            (["--remote", "origin", "record", "perf", "--status", "acepted"], 2, "did you mean 'accepted'?"),
            (["--branch", "memory/typo", "record", "perf", "--status", "accepted"], 3, "no memory branch memory/typo"),
            (["record", "perf", "--status", "accepted"], 3, "pass --remote origin"),
        ]
        for args, code, needle in cases:
            proc = run_console_script(*args, cwd=guard_repo.work)
            assert proc.returncode == code, (args, proc.stderr)
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr
        refs_unchanged(guard_repo, before)

    def test_notes_go_to_stderr_and_colour_never_reaches_a_pipe(self, guard_repo: GuardRepo) -> None:
        proc = run_console_script("--json", "--no-fetch", "list", cwd=guard_repo.work)
        assert proc.returncode == 0
        json.loads(proc.stdout)  # stdout stays data
        assert "as last fetched" in proc.stderr
        assert "\x1b[" not in proc.stdout + proc.stderr
        quiet = run_console_script("-q", "list", cwd=guard_repo.work)
        assert quiet.stderr == ""
