"""One repository discovery, by git, for the configuration and the store; one commit identity rule.

``--repo sub`` and ``cd sub`` find the same repository (and so the same ``.statefile.toml``); ``GIT_DIR`` is
honoured as git honours it; commits are made by statefile's author setting, else git's own identity
(``user.name``/``user.email``, the ``GIT_*`` variables), else statefile's default.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from gitutil import STATEFILE
from storeutil import LOCAL, appender, git, make_repo, rev

from statefile.defaults import BOT_EMAIL, BOT_NAME
from statefile.store import GitStore, discover, find_repository


def sf(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STATEFILE, *args], cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


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
