"""One repository discovery, by git, for the configuration and the store; one commit identity rule.

``--repo sub`` and ``cd sub`` find the same repository (and so the same ``.statefile.toml``); ``GIT_DIR`` is
honoured as git honours it; commits are made by statefile's author setting, else git's own identity
(``user.name``/``user.email``, the ``GIT_*`` variables), else statefile's default.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import MEMORY_BRANCH, GuardRepo, guard_run, refs_unchanged
from gitutil import git as repo_git
from gitutil import make_repos, run_statefile
from storeutil import LOCAL, appender, git, make_repo, rev
from upstream import upstream_machine_state

from statefile.defaults import BOT_EMAIL, BOT_NAME
from statefile.store import GitStore, discover, find_repository


def sf(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_statefile(*args, cwd=cwd, env=env)


def test_repo_flag_and_cwd_in_a_subfolder_read_the_same_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "sub" / "deeper").mkdir(parents=True)
    (repo / ".statefile.toml").write_text("max-bytes = 12345\n")
    by_flag = sf("--repo", str(repo / "sub" / "deeper"), "--json", "config", cwd=tmp_path)
    by_cwd = sf("--json", "config", cwd=repo / "sub" / "deeper")
    assert by_flag.returncode == by_cwd.returncode == 0, by_flag.stderr + by_cwd.stderr
    assert by_flag.stdout == by_cwd.stdout and "12345" in by_flag.stdout
    assert discover(repo / "sub").top == discover(repo).top == repo.resolve()
    assert find_repository(tmp_path) is None


def test_git_dir_is_honoured(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    created = sf("init", "perf", cwd=elsewhere, env={"GIT_DIR": str(repo / ".git")})
    assert created.returncode == 0, created.stderr
    assert rev(repo, LOCAL) is not None and "perf.md" in git(repo, "ls-tree", "--name-only", LOCAL)
    listed = sf("list", cwd=elsewhere, env={"GIT_DIR": str(repo / ".git")})
    assert listed.returncode == 0 and "perf" in listed.stdout
    assert not list(elsewhere.iterdir())  # nothing written where the command ran


def test_a_linked_work_tree_finds_the_shared_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "feature"))
    found = discover(tmp_path / "feature")
    assert found.common_dir == (repo / ".git").resolve() and found.git_dir != found.common_dir
    assert found.work_tree == (tmp_path / "feature").resolve()


def author(repo: Path) -> str:
    return git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", LOCAL).strip()


def no_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(key, raising=False)


def test_commits_use_gits_configured_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    no_identity(monkeypatch)
    git(repo, "config", "user.name", "Config User")
    git(repo, "config", "user.email", "config@example.com")
    GitStore(repo).update("perf", appender("- one"), "statefile: one")
    assert author(repo) == "Config User <config@example.com>|Config User <config@example.com>"
    # statefile's own setting wins for the author; the committer stays git's.
    GitStore(repo, author="Ada Lovelace <ada@example.com>").update("perf", appender("- two"), "statefile: two")
    assert author(repo) == "Ada Lovelace <ada@example.com>|Config User <config@example.com>"


def test_without_any_identity_the_default_is_used_never_a_guess(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")  # made with the environment's identity; none is configured
    no_identity(monkeypatch)
    store = GitStore(repo)
    store.update("perf", appender("- one"), "statefile: one")
    assert author(repo) == f"{BOT_NAME} <{BOT_EMAIL}>|{BOT_NAME} <{BOT_EMAIL}>"
    store.update("perf", appender("- two"), "statefile: two")  # the fallback is remembered, same result
    assert author(repo) == f"{BOT_NAME} <{BOT_EMAIL}>|{BOT_NAME} <{BOT_EMAIL}>"
    GitStore(repo, author="Ada <ada@example.com>").update("perf", appender("- three"), "statefile: three")
    assert author(repo) == "Ada <ada@example.com>|Ada <ada@example.com>"


# -- issue 22, item 11: reads in an ordinary clone show the remote's memory, or say plainly that they may not -------


def test_a_read_in_a_clone_fetches_the_memory_branch_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As seen: in a clone, `statefile list` read the last-fetched copy and showed two programs as paused that were
    running again on the remote; the only sign was one stderr line."""
    from gitutil import git as git_in
    from gitutil import invoke_statefile, make_repos

    from statefile.model.template import new_state_file

    for name in ("STATEFILE_REMOTE", "STATEFILE_DIR", "STATEFILE_REPO_MEMORY", "STATEFILE_NO_FETCH"):
        monkeypatch.delenv(name, raising=False)
    repos = make_repos(tmp_path)
    paused = {f"{p}.md": new_state_file(p, paused=True, pause_reason="3 consecutive errors") for p in ("perf", "docs")}
    with GitStore(repos.work, remote="origin") as store:
        store.write_files(paused, "seed: two paused programs")
    clone = repos.clone("clone")  # memory/autoloop only as origin/memory/autoloop, as a fresh clone has it
    for program in ("perf", "docs"):  # meanwhile, on the remote: both running again
        done = invoke_statefile(capsys, "--remote", "origin", "record", program, "--status", "accepted",
                                "--metric", "1", cwd=repos.work)  # fmt: skip
        assert done.code == 0, done.err
    listed = invoke_statefile(capsys, "list", cwd=clone)
    assert listed.code == 0, listed.err
    assert "paused" not in listed.out, listed.out  # the remote's memory, fetched
    assert "may be out of date" not in listed.out + listed.err
    # Asked not to fetch: the copy, and the main output says how old it is.
    offline = invoke_statefile(capsys, "--no-fetch", "list", cwd=clone)
    assert offline.code == 0 and "paused" not in offline.out  # the fetch above updated the copy
    assert "statefile: read origin/memory/autoloop as last fetched, whose newest commit is" in offline.out
    assert "(--no-fetch) — it may be out of date" in offline.out
    # The remote out of reach: the copy is read and the output says so (exit 0: a read of what is here).
    invoke_statefile(capsys, "--remote", "origin", "record", "perf", "--status", "error", cwd=repos.work)
    git_in("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=clone)
    unreachable = invoke_statefile(capsys, "status", "perf", cwd=clone)
    assert unreachable.code == 0, unreachable.err
    assert "fetching origin failed" in unreachable.out and "may be out of date" in unreachable.out
    assert "Traceback" not in unreachable.err
    # --json stays data; the note is on stderr.
    as_json = invoke_statefile(capsys, "--json", "--no-fetch", "list", cwd=clone)
    assert as_json.out.lstrip().startswith("[") and "may be out of date" in as_json.err
    # Writes are unchanged: no push nobody asked for, the same refusal as before.
    git_in("remote", "set-url", "origin", str(repos.remote), cwd=clone)
    refused = invoke_statefile(capsys, "record", "perf", "--status", "accepted", "--metric", "2", cwd=clone)
    assert refused.code == 3 and "pass --remote origin" in refused.err


def test_create_starts_a_program_and_the_scheduler_selected_one_needs_no_flag(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guard rail (issue 13): create starts a program and the scheduler selected one needs no flag; the memory is left
    exactly as it was."""
    created = guard_run(capsys, "--remote", "origin", "record", "fresh", "--status", "accepted", "--create")
    assert created.code == 0, created.err
    assert "created fresh.md (--create)" in created.out
    # The scheduler's selection (record --autoloop-json, or STATEFILE_AUTOLOOP_JSON) may be created without it.
    selection = tmp_path / "autoloop.json"
    selection.write_text(json.dumps({"selected": "chosen", "selected_metric_direction": "lower"}))
    monkeypatch.setenv("STATEFILE_AUTOLOOP_JSON", str(selection))
    chosen = guard_run(capsys, "--remote", "origin", "--json", "record", "chosen", "--status", "rejected")
    assert chosen.code == 0, chosen.err
    assert json.loads(chosen.out)["created"] is True
    other = guard_run(capsys, "--remote", "origin", "record", "not-chosen", "--status", "rejected")
    assert other.code == 3
    assert "chosen.md" in repo_git("ls-tree", "--name-only", MEMORY_BRANCH, cwd=guard_repo.remote)


def test_the_schedulers_first_run_starts_the_branch_but_a_mistyped_branch_never(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guard rail (issue 13): the schedulers first run starts the branch but a mistyped branch never; the memory is left
    exactly as it was."""
    (tmp_path / "first").mkdir()
    repos = make_repos(tmp_path / "first")
    monkeypatch.chdir(repos.work)
    monkeypatch.delenv("STATEFILE_BRANCH", raising=False)
    selection = tmp_path / "autoloop.json"
    selection.write_text(json.dumps({"selected": "perf"}))
    args = ["--remote", "origin", "record", "perf", "--status", "rejected", "--autoloop-json", str(selection)]
    typo = guard_run(capsys, "--branch", "memory/autolop", *args)
    assert typo.code == 3 and "no memory branch memory/autolop" in typo.error_line
    first = guard_run(capsys, *args)
    assert first.code == 0, first.err
    assert "selected in" in first.out
    assert repo_git("ls-remote", "--heads", "origin", cwd=repos.work).count("refs/heads/memory/") == 1


def test_without_remote_a_ci_clone_is_told_to_pass_it_not_forked(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guard rail (issue 13): without remote a ci clone is told to pass it not forked; the memory is left exactly as it
    was."""
    before = guard_repo.refs()
    result = guard_run(capsys, "record", "perf", "--status", "accepted", "--metric", "1")
    assert result.code == 3
    line = result.error_line
    assert "no local branch memory/autoloop, only origin/memory/autoloop" in line
    assert "pass --remote origin" in line and "nothing was written" in line
    refs_unchanged(guard_repo, before)  # no orphan local branch
    # Reading is fine: it fetches the branch first (issue 22), or, with --no-fetch, says in its output what it read.
    listed = guard_run(capsys, "list")
    assert listed.code == 0 and "perf" in listed.out and "as last fetched" not in listed.out + listed.err
    offline = guard_run(capsys, "--no-fetch", "list")
    assert offline.code == 0 and "perf" in offline.out
    assert "read origin/memory/autoloop as last fetched" in offline.out + offline.err


def test_a_mistyped_branch_is_never_created(guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]) -> None:
    """Guard rail (issue 13): a mistyped branch is never created; the memory is left exactly as it was."""
    before = guard_repo.refs()
    for args in (
        ["--branch", "memory/autolop", "record", "perf", "--status", "accepted"],
        ["--remote", "origin", "--branch", "memory/autolop", "record", "perf", "--status", "accepted"],
        ["--remote", "origin", "--branch", "memory/autolop", "lesson", "add", "perf", "x"],
    ):
        result = guard_run(capsys, *args)
        assert result.code == 3, result
        assert "no memory branch memory/autolop" in result.error_line
        assert "did you mean memory/autoloop?" in result.error_line
    refs_unchanged(guard_repo, before)
    listed = guard_run(capsys, "--branch", "nope", "list")
    assert listed.code == 3 and "no memory branch nope" in listed.error_line


def test_a_mistyped_branch_is_not_offered_for_creation_nor_created_by_create(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As seen: `--branch memory/autolop record …` said "did you mean memory/autoloop? … pass --create", and
    following that advice started a second memory on the typo'd branch."""
    monkeypatch.delenv("STATEFILE_NEW_BRANCH", raising=False)
    before = guard_repo.refs()
    typo = ["--remote", "origin", "--branch", "memory/autolop"]
    offered = guard_run(capsys, *typo, "record", "perf", "--status", "accepted")
    assert offered.code == 3 and "did you mean memory/autoloop?" in offered.error_line
    assert "--create" not in offered.error_line and "pass --branch memory/autoloop" in offered.error_line
    for args in (
        [*typo, "record", "perf", "--status", "accepted", "--create"],
        ["--branch", "memory/autolop", "record", "perf", "--status", "accepted", "--create"],
        [*typo, "init", "perf"],
        ["--remote", "origin", "--branch", "Memory/Autoloop", "init", "perf"],
    ):
        refused = guard_run(capsys, *args)
        assert refused.code == 3, (args, refused)
        assert "did you mean memory/autoloop?" in refused.error_line and "nothing was written" in refused.error_line
        assert "STATEFILE_NEW_BRANCH=" in refused.error_line
    refs_unchanged(guard_repo, before)
    # A name that is no near miss is created as asked; one that is, only when acknowledged by its full name.
    assert guard_run(capsys, "--remote", "origin", "--branch", "memory/experiments", "init", "perf").code == 0
    monkeypatch.setenv("STATEFILE_NEW_BRANCH", "memory/autolop")
    assert guard_run(capsys, *typo, "record", "perf", "--status", "accepted", "--create").code == 0
    assert guard_repo.remote_file("perf.md", "memory/autolop")


def test_a_stale_local_branch_is_reported_on_read_and_refused_on_write(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guard rail (issue 13): a stale local branch is reported on read and refused on write; the memory is left exactly
    as it was."""
    for n in range(3):
        assert guard_run(capsys, "--remote", "origin", "record", "perf", "--status", "rejected").code == 0, n
    repo_git(
        "branch", "-f", MEMORY_BRANCH, f"origin/{MEMORY_BRANCH}~3", cwd=guard_repo.work
    )  # the local branch, three commits behind
    listed = guard_run(capsys, "--json", "--no-fetch", "list")
    assert listed.code == 0
    assert next(r for r in json.loads(listed.out) if r["program"] == "perf")["iteration_count"] == 12
    assert "origin/memory/autoloop has 3 newer commits — pass --remote origin" in listed.err
    # By default a read fetches and shows the remote's memory, and moves no branch.
    local = repo_git("rev-parse", MEMORY_BRANCH, cwd=guard_repo.work)
    fetched = guard_run(capsys, "--json", "list")
    assert next(r for r in json.loads(fetched.out) if r["program"] == "perf")["iteration_count"] == 15
    assert repo_git("rev-parse", MEMORY_BRANCH, cwd=guard_repo.work) == local
    before = guard_repo.refs()
    result = guard_run(capsys, "record", "perf", "--status", "accepted")
    assert result.code == 5
    assert "3 commits behind origin/memory/autoloop" in result.error_line
    refs_unchanged(guard_repo, before)
    fresh = guard_run(capsys, "--remote", "origin", "--json", "list")
    assert next(r for r in json.loads(fresh.out) if r["program"] == "perf")["iteration_count"] == 15
    assert fresh.err == ""  # the remote's current tip: nothing to say


def test_a_remote_without_the_branch_is_said_and_not_written_to(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guard rail (issue 13): a remote without the branch is said and not written to; the memory is left exactly as it
    was."""
    repo_git("branch", MEMORY_BRANCH, f"origin/{MEMORY_BRANCH}", cwd=guard_repo.work)
    repo_git("init", "--quiet", "--bare", str(guard_repo.root / "empty.git"), cwd=guard_repo.root)
    repo_git("remote", "add", "empty", "../empty.git", cwd=guard_repo.work)
    listed = guard_run(capsys, "--remote", "empty", "list")
    assert listed.code == 0 and "perf" in listed.out
    assert "empty has no branch memory/autoloop: read the local one" in listed.err
    before = guard_repo.refs()
    result = guard_run(capsys, "--remote", "empty", "record", "perf", "--status", "accepted")
    assert result.code == 3
    assert "empty has no branch memory/autoloop" in result.error_line and "sync" in result.error_line
    refs_unchanged(guard_repo, before)


def test_a_diverged_local_branch_is_refused_then_synced_losing_nothing(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guard rail (issue 13): a diverged local branch is refused then synced losing nothing; the memory is left exactly
    as it was."""
    repo_git("branch", MEMORY_BRANCH, f"origin/{MEMORY_BRANCH}", cwd=guard_repo.work)
    local = guard_run(capsys, "record", "perf", "--status", "rejected", "--change", "local-only attempt", "--lesson",
               "Learned offline")  # fmt: skip
    assert local.code == 0, local.err  # a local-only write (no --remote): the branch is ahead of origin
    other = guard_repo.root / "other"  # meanwhile a scheduled run records through origin

    repo_git("clone", "--quiet", str(guard_repo.remote), str(other), cwd=guard_repo.root)
    assert run_statefile("--remote", "origin", "record", "perf", "--status", "accepted", "--metric", "999",
                         cwd=other).returncode == 0  # fmt: skip
    repo_git("fetch", "--quiet", "origin", cwd=guard_repo.work)
    before = guard_repo.refs()
    refused = guard_run(capsys, "--remote", "origin", "record", "perf", "--status", "accepted")
    assert refused.code == 5
    assert "have diverged" in refused.error_line and "statefile --remote origin sync" in refused.error_line
    refs_unchanged(guard_repo, before)
    synced = guard_run(capsys, "--remote", "origin", "sync")
    assert synced.code == 0, synced.err
    assert "recorded local iteration" in synced.out and "refs/statefile/kept/" in synced.out
    text = guard_repo.remote_file("perf.md")
    assert "local-only attempt" in text and "Learned offline" in text  # the local record, re-recorded
    state = upstream_machine_state(text)
    assert state["best_metric"] == "999"  # the remote's accepted iteration stands
    again = guard_run(capsys, "--remote", "origin", "sync")
    assert again.code == 0 and again.out.startswith("nothing changed")


def test_dir_with_branch_is_refused(guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Guard rail (issue 13): dir with branch is refused; the memory is left exactly as it was."""
    folder = tmp_path / "memory"
    folder.mkdir()
    result = guard_run(capsys, "--dir", str(folder), "--branch", "memory/x", "list")
    assert result.code == 2 and "--dir" in result.error_line and "--branch" in result.error_line


def test_repo_sub_and_cd_sub_read_the_same_settings(tmp_path: Path) -> None:
    """As seen in issue 11: repo sub and cd sub read the same settings."""
    repos = make_repos(tmp_path)
    (repos.work / ".statefile.toml").write_text("max-bytes = 12345\n")
    (repos.work / "sub").mkdir()
    from_top = run_statefile("--repo", "sub", "--json", "config", cwd=repos.work)
    from_sub = run_statefile("--json", "config", cwd=repos.work / "sub")
    assert from_top.returncode == from_sub.returncode == 0, (from_top.stderr, from_sub.stderr)
    assert json.loads(from_top.stdout) == json.loads(from_sub.stdout)
    assert {"key": "max-bytes", "value": 12345, "source": ".statefile.toml"} in json.loads(from_sub.stdout)
