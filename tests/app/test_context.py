"""What a command runs with (statefile.app.context): settings resolution (precedence, sources, file formats, gh-aw
frontmatter, errors), and one repository discovery, by git, for the configuration and the store; one commit identity
rule.

``--repo sub`` and ``cd sub`` find the same repository (and so the same ``.statefile.toml``); ``GIT_DIR`` is
honoured as git honours it; commits are made by statefile's author setting, else git's own identity
(``user.name``/``user.email``, the ``GIT_*`` variables), else statefile's default.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import MEMORY_BRANCH, GuardRepo, guard_run, only_error_line, refs_unchanged
from gitutil import Repos, make_repos, run_statefile
from gitutil import git as repo_git
from storeutil import LOCAL, appender, git, make_repo, rev
from upstream import upstream_machine_state

from statefile.app.context import OPTIONS, Config, option_docs, resolve_config
from statefile.defaults import BOT_EMAIL, BOT_NAME
from statefile.errors import EXIT_USAGE, UsageError
from statefile.store import GitStore, discover, find_repository

WORKFLOW = """\
---
description: |
  Runs the loop.
on:
  schedule: every 6h
  workflow_dispatch:
permissions: read-all
tools:
  bash: true
  repo-memory:
{memory}
---

# Autoloop

The prompt.
"""


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def workflow(root: Path, memory: str, name: str = "autoloop.md") -> None:
    indented = "\n".join("    " + line for line in memory.strip("\n").splitlines())
    write(root, f".github/workflows/{name}", WORKFLOW.format(memory=indented))


def resolve(
    root: Path | None = None, flags: dict[str, object] | None = None, env: dict[str, str] | None = None
) -> Config:
    return resolve_config(root, flags or {}, env or {})


# -- defaults and precedence ----------------------------------------------------------------------------------------


def test_defaults() -> None:
    config = resolve()
    assert config.max_bytes.value == 30720
    assert config.branch.value == "memory/autoloop"
    assert config.remote.value is None
    assert config.file_glob.value == ("*.md",)
    assert config.keep_recent.value == 10
    assert config.aggressive_at.value == 0.8
    assert config.aggressive_keep.value == 5
    assert config.summarizer.value is None
    assert config.summarizer_timeout.value == 30.0
    assert config.author_name.value is None
    assert {source for _, _, source in config.describe()} == {"default"}


def test_empty_repository_root_gives_defaults(tmp_path: Path) -> None:
    assert resolve(tmp_path) == resolve()


def test_each_layer_wins_over_the_ones_below(tmp_path: Path) -> None:
    workflow(tmp_path, "branch-name: memory/autoloop\nmax-file-size: 1000")
    assert resolve(tmp_path).max_bytes == dataclasses.replace(
        resolve().max_bytes, value=1000, source=".github/workflows/autoloop.md frontmatter"
    )
    write(tmp_path, "pyproject.toml", "[project]\nname = 'x'\n\n[tool.statefile]\nmax-bytes = 2000\n")
    config = resolve(tmp_path)
    assert (config.max_bytes.value, config.max_bytes.source) == (2000, "pyproject.toml [tool.statefile]")
    write(tmp_path, ".statefile.toml", "max-bytes = 3000\n")
    config = resolve(tmp_path)
    assert (config.max_bytes.value, config.max_bytes.source) == (3000, ".statefile.toml")
    config = resolve(tmp_path, env={"STATEFILE_MAX_BYTES": "4KB"})
    assert (config.max_bytes.value, config.max_bytes.source) == (4096, "env STATEFILE_MAX_BYTES")
    config = resolve(tmp_path, flags={"max_bytes": 5000}, env={"STATEFILE_MAX_BYTES": "4KB"})
    assert (config.max_bytes.value, config.max_bytes.source) == (5000, "flag --max-bytes")


def test_layers_merge_per_key(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.statefile]\nremote = 'upstream'\nkeep-recent = 8\n")
    write(tmp_path, ".statefile.toml", "keep-recent = 12\n")
    config = resolve(tmp_path, env={"STATEFILE_BRANCH": "memory/other"})
    assert (config.remote.value, config.remote.source) == ("upstream", "pyproject.toml [tool.statefile]")
    assert (config.keep_recent.value, config.keep_recent.source) == (12, ".statefile.toml")
    assert (config.branch.value, config.branch.source) == ("memory/other", "env STATEFILE_BRANCH")
    assert (config.max_bytes.value, config.max_bytes.source) == (30720, "default")


def test_flags_none_and_unrelated_keys_are_ignored() -> None:
    config = resolve(flags={"max_bytes": None, "program": "perf", "max-bytes": None, "keep-recent": 7})
    assert config.max_bytes.source == "default"
    assert (config.keep_recent.value, config.keep_recent.source) == (7, "flag --keep-recent")


def test_empty_environment_values_count_as_unset() -> None:
    config = resolve(env={"STATEFILE_MAX_BYTES": "", "STATEFILE_BRANCH": "  "})
    assert config.max_bytes.source == "default"
    assert config.branch.source == "default"


def test_every_option_reads_its_environment_variable() -> None:
    env = {
        "STATEFILE_MAX_BYTES": "20000",
        "STATEFILE_BRANCH": "refs/heads/memory/x",
        "STATEFILE_REMOTE": "mirror",
        "STATEFILE_FILE_GLOB": "*.md, notes/*.md",
        "STATEFILE_KEEP_RECENT": "12",
        "STATEFILE_AGGRESSIVE_AT": "0.9",
        "STATEFILE_AGGRESSIVE_KEEP": "4",
        "STATEFILE_SUMMARIZER": "llm -m small",
        "STATEFILE_SUMMARIZER_TIMEOUT": "2.5",
        "STATEFILE_AUTHOR_NAME": "Loop Bot",
        "STATEFILE_AUTHOR_EMAIL": "bot@example.invalid",
        "STATEFILE_MAX_PATCH_SIZE": "8KB",
        "STATEFILE_MAX_FILE_COUNT": "50",
        "STATEFILE_REPO_MEMORY_DIR": "/tmp/gh-aw/repo-memory/notes",
    }
    assert {option.env for option in OPTIONS} == set(env)
    config = resolve(env=env)
    assert [value for _, value, _ in config.describe()] == [
        20000,
        "memory/x",
        "mirror",
        ("*.md", "notes/*.md"),
        12,
        0.9,
        4,
        "llm -m small",
        2.5,
        "Loop Bot",
        "bot@example.invalid",
        8192,
        50,
        "/tmp/gh-aw/repo-memory/notes",
    ]
    assert all(source.startswith("env STATEFILE_") for _, _, source in config.describe())


def test_describe_lists_every_option_with_its_documentation() -> None:
    config = resolve(flags={"branch": "memory/b"})
    rows = config.describe()
    assert [key for key, _, _ in rows] == [option.key for option in OPTIONS]
    assert ("branch", "memory/b", "flag --branch") in rows
    docs = option_docs()
    assert [d[0] for d in docs] == [key for key, _, _ in rows]
    assert all(doc.strip() and flag.startswith("--") and env.startswith("STATEFILE_") for _, flag, env, _, doc in docs)


def test_config_is_immutable() -> None:
    config = resolve()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_bytes = config.branch  # type: ignore[misc, assignment]


# -- values -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"max_bytes": "huge"}, "flag --max-bytes: max-bytes must be a number of bytes"),
        ({"branch": "memory/a..b"}, "flag --branch: branch 'memory/a..b' is not a valid git branch name"),
        ({"branch": "has space"}, "not a valid git branch name"),
        ({"branch": "memory/x.lock"}, "not a valid git branch name"),
        ({"remote": "two words"}, "remote must be a single word"),
        ({"keep_recent": 0}, "keep-recent must be a whole number of 1 or more"),
        ({"keep_recent": True}, "keep-recent must be a whole number"),
        ({"aggressive_at": 1.5}, "aggressive-at must be a fraction"),
        ({"aggressive_at": "abc"}, "aggressive-at must be a fraction"),
        ({"summarizer_timeout": 0}, "summarizer-timeout must be a number of seconds"),
        ({"summarizer_timeout": "inf"}, "summarizer-timeout must be a number of seconds"),
        ({"file_glob": []}, "file-glob must be a glob"),
        ({"file_glob": ["*.md", 3]}, "file-glob must be a glob"),
        ({"author_name": 5}, "author-name must be text"),
    ],
)
def test_bad_values_name_their_source_and_key(flags: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace(".", r"\.").replace("(", r"\(")) as info:
        resolve(flags=flags)
    assert "\n" not in str(info.value)


def test_aggressive_keep_must_not_exceed_keep_recent(tmp_path: Path) -> None:
    write(tmp_path, ".statefile.toml", "keep-recent = 3\n")
    # Only keep-recent set: the default aggressive-keep follows it down.
    capped = resolve(tmp_path).aggressive_keep
    assert (capped.value, capped.source) == (3, "default (capped at keep-recent)")
    with pytest.raises(UsageError, match=r"aggressive-keep \(4, flag --aggressive-keep\) is larger than keep-recent"):
        resolve(tmp_path, flags={"aggressive_keep": 4})
    assert resolve(tmp_path, flags={"aggressive_keep": 3}).aggressive_keep.value == 3


# -- TOML files ----------------------------------------------------------------------------------------------------


def test_unknown_keys_list_the_valid_ones(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.statefile]\nmax-byte = 10\n")
    with pytest.raises(UsageError) as info:
        resolve(tmp_path)
    message = str(info.value)
    assert message.startswith("pyproject.toml [tool.statefile]: unknown key 'max-byte' (did you mean 'max-bytes'?)")
    assert "valid keys: aggressive-at, aggressive-keep, author-email, author-name, branch, file-glob" in (message)


def test_underscore_spelling_is_accepted_but_not_twice(tmp_path: Path) -> None:
    write(tmp_path, ".statefile.toml", "max_bytes = 999\n")
    assert resolve(tmp_path).max_bytes.value == 999
    write(tmp_path, ".statefile.toml", "max_bytes = 999\nmax-bytes = 998\n")
    with pytest.raises(UsageError, match="'max-bytes' is set twice"):
        resolve(tmp_path)


def test_wrong_types_in_toml_name_the_file_and_key(tmp_path: Path) -> None:
    write(tmp_path, ".statefile.toml", "keep-recent = 'ten'\n")
    with pytest.raises(UsageError, match=r"^\.statefile\.toml: keep-recent must be a whole number of 1 or more"):
        resolve(tmp_path)


def test_toml_lists_and_sizes(tmp_path: Path) -> None:
    write(tmp_path, ".statefile.toml", "file-glob = ['*.md', 'extra/*.md']\nmax-bytes = '20KB'\n")
    config = resolve(tmp_path)
    assert config.file_glob.value == ("*.md", "extra/*.md")
    assert config.max_bytes.value == 20480


def test_invalid_toml_is_a_usage_error(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.statefile\nmax-bytes = 1\n")
    with pytest.raises(UsageError, match=r"^pyproject\.toml: invalid TOML \(.*line 1.*\); fix the file$"):
        resolve(tmp_path)


def test_toml_that_is_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / ".statefile.toml").write_bytes(b"remote = '\xff'\n")
    with pytest.raises(UsageError, match="not valid UTF-8"):
        resolve(tmp_path)


def test_tool_table_in_the_dedicated_file_gets_a_hint(tmp_path: Path) -> None:
    write(tmp_path, ".statefile.toml", "[tool.statefile]\nmax-bytes = 1\n")
    with pytest.raises(UsageError, match="put the settings at the top level"):
        resolve(tmp_path)


def test_pyproject_without_our_table_is_ignored_and_a_non_table_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.ruff]\nline-length = 100\n")
    assert resolve(tmp_path) == resolve()
    write(tmp_path, "pyproject.toml", "[tool]\nstatefile = 3\n")
    with pytest.raises(UsageError, match=r"pyproject\.toml \[tool\.statefile\]: must be a table"):
        resolve(tmp_path)


# -- gh-aw workflow frontmatter ------------------------------------------------------------------------------------


def test_upstream_workflow_mapping(tmp_path: Path) -> None:
    workflow(tmp_path, 'branch-name: memory/autoloop\nfile-glob: ["*.md"]\nmax-file-size: 30720')
    config = resolve(tmp_path)
    source = ".github/workflows/autoloop.md frontmatter"
    assert (config.max_bytes.value, config.max_bytes.source) == (30720, source)
    assert (config.branch.value, config.branch.source) == ("memory/autoloop", source)
    assert (config.file_glob.value, config.file_glob.source) == (("*.md",), source)
    assert config.remote.source == "default"


@pytest.mark.parametrize(
    ("raw", "size"), [('"30KB"', 30720), ('"30720"', 30720), ("20480", 20480), ('"1 MB"', 1048576)]
)
def test_max_file_size_as_int_or_text(tmp_path: Path, raw: str, size: int) -> None:
    workflow(tmp_path, f"branch-name: memory/autoloop\nmax-file-size: {raw}")
    assert resolve(tmp_path).max_bytes.value == size


def test_a_list_of_memories_picks_ours(tmp_path: Path) -> None:
    workflow(
        tmp_path,
        """
- id: notes
  max-file-size: 1000
- branch-name: memory/autoloop
  max-file-size: 25KB
  file-glob: "*.md"
""",
    )
    config = resolve(tmp_path)
    assert config.max_bytes.value == 25600
    assert config.file_glob.value == ("*.md",)


def test_the_configured_branch_picks_its_memory(tmp_path: Path) -> None:
    workflow(tmp_path, "- id: notes\n  max-file-size: 1000\n- branch-name: memory/autoloop\n  max-file-size: 2000")
    config = resolve(tmp_path, env={"STATEFILE_BRANCH": "memory/notes"})
    assert (config.max_bytes.value, config.branch.source) == (1000, "env STATEFILE_BRANCH")
    # A branch no workflow writes: the workflows say nothing about it.
    assert resolve(tmp_path, flags={"branch": "memory/elsewhere"}).max_bytes.source == "default"


def test_the_only_memory_is_used(tmp_path: Path) -> None:
    workflow(tmp_path, "branch-name: memory/loop\nmax-file-size: 4000")
    config = resolve(tmp_path)
    assert (config.max_bytes.value, config.branch.value) == (4000, "memory/loop")


def test_an_id_and_prefix_give_the_branch(tmp_path: Path) -> None:
    workflow(tmp_path, "id: autoloop\nmax-file-size: 4000")
    config = resolve(tmp_path)
    assert (config.branch.value, config.max_bytes.value) == ("memory/autoloop", 4000)
    workflow(tmp_path, "id: loop\nbranch-prefix: track\nmax-file-size: 4000")
    assert resolve(tmp_path).branch.value == "track/loop"


def test_repo_memory_true_is_gh_aws_default_memory(tmp_path: Path) -> None:
    write(tmp_path, ".github/workflows/other.md", "---\ntools:\n  repo-memory: true\n---\nbody\n")
    config = resolve(tmp_path)
    assert config.branch.value == "memory/default"
    assert config.max_bytes.source == "default"


def test_several_unrelated_memories_say_nothing(tmp_path: Path) -> None:
    workflow(tmp_path, "- id: a\n  max-file-size: 1\n- id: b\n  max-file-size: 2")
    assert resolve(tmp_path) == resolve()


def test_autoloop_md_wins_over_other_workflows(tmp_path: Path) -> None:
    workflow(tmp_path, "branch-name: memory/autoloop\nmax-file-size: 111", name="aaa.md")
    workflow(tmp_path, "branch-name: memory/autoloop\nmax-file-size: 222")
    config = resolve(tmp_path)
    assert (config.max_bytes.value, config.max_bytes.source) == (222, ".github/workflows/autoloop.md frontmatter")


def test_files_that_are_not_workflows_are_skipped(tmp_path: Path) -> None:
    write(tmp_path, ".github/workflows/README.md", "---\n: : not yaml [\n---\n# Notes\n")
    write(tmp_path, ".github/workflows/plain.md", "# No frontmatter\n")
    write(tmp_path, ".github/workflows/list.md", "---\n- just\n- a list\n---\n")
    write(tmp_path, ".github/workflows/ci.yml", "on: push\n")
    workflow(tmp_path, "branch-name: memory/autoloop\nmax-file-size: 5000")
    assert resolve(tmp_path).max_bytes.value == 5000


def test_bad_frontmatter_values_name_the_file_and_key(tmp_path: Path) -> None:
    workflow(tmp_path, "branch-name: memory/autoloop\nmax-file-size: lots")
    with pytest.raises(UsageError) as info:
        resolve(tmp_path)
    assert str(info.value) == (
        ".github/workflows/autoloop.md frontmatter: tools.repo-memory.max-file-size must be a number of bytes "
        "such as 30720 or '30KB', got 'lots'"
    )
    workflow(tmp_path, "- 3")
    with pytest.raises(UsageError, match=r"tools\.repo-memory entries must be mappings"):
        resolve(tmp_path)


def test_a_higher_layer_hides_a_bad_frontmatter_value(tmp_path: Path) -> None:
    workflow(tmp_path, "branch-name: memory/autoloop\nmax-file-size: lots")
    assert resolve(tmp_path, env={"STATEFILE_MAX_BYTES": "100"}).max_bytes.value == 100


# -- issue 22: an explicit --dir outranks a remote from a file; messages name the key --------------------------------


def test_sources_name_the_key_in_their_file(tmp_path: Path) -> None:
    write(tmp_path, ".statefile.toml", 'remote = "origin"\nkeep-recent = 3\n')
    workflow(tmp_path, 'branch-name: memory/autoloop\nfile-glob: ["*.md"]')
    config = resolve(tmp_path, env={"STATEFILE_MAX_BYTES": "20000"})
    assert config.origin("remote") == "remote in .statefile.toml"
    assert config.origin("file_glob") == "tools.repo-memory.file-glob in .github/workflows/autoloop.md frontmatter"
    assert config.origin("max_bytes") == "env STATEFILE_MAX_BYTES"
    assert config.origin("summarizer") == "default"
    assert not config.explicit("remote") and config.explicit("max_bytes")
    with pytest.raises(UsageError, match=r"keep-recent \(3, keep-recent in \.statefile\.toml\)"):
        resolve(tmp_path, flags={"aggressive_keep": 4})


def _repo_with_remote_in_toml(tmp_path: Path) -> tuple[Path, Path]:
    import subprocess

    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    write(work, ".statefile.toml", 'remote = "origin"\n')
    folder = tmp_path / "repo-memory" / "autoloop"
    write(folder, "perf.md", "# Autoloop: perf\n")
    return work, folder


@pytest.mark.parametrize("how", ["flag", "env"])
def test_an_explicit_dir_wins_over_a_remote_from_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], how: str
) -> None:
    """As seen: after `remote = "origin"` in .statefile.toml, the component's `statefile --dir
    /tmp/gh-aw/repo-memory/autoloop list` exited 2 (`--dir … cannot use a remote`)."""
    from statefile.cli import cli
    from statefile.cli.run import invoke

    work, folder = _repo_with_remote_in_toml(tmp_path)
    monkeypatch.chdir(work)
    monkeypatch.delenv("STATEFILE_REMOTE", raising=False)
    if how == "env":
        monkeypatch.setenv("STATEFILE_DIR", str(folder))
        args = ["list"]
    else:
        monkeypatch.delenv("STATEFILE_DIR", raising=False)
        args = ["--dir", str(folder), "list"]
    assert invoke(cli, args) == 0
    out, err = capfd.readouterr()
    assert out.startswith("PROGRAM") and "perf" in out and err == ""
    # A remote given for this run is a real clash, and the message says where it came from.
    monkeypatch.setenv("STATEFILE_REMOTE", "origin")
    assert invoke(cli, args) == 2
    _, err = capfd.readouterr()
    assert "cannot use a remote (env STATEFILE_REMOTE)" in err and len(err.splitlines()) == 1


def test_a_missing_folder_names_the_config_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from statefile.cli import cli
    from statefile.cli.run import invoke

    work, _ = _repo_with_remote_in_toml(tmp_path)
    write(work, ".statefile.toml", f'repo-memory-dir = "{tmp_path / "nowhere"}"\n')
    monkeypatch.chdir(work)
    for name in ("STATEFILE_DIR", "STATEFILE_REMOTE", "STATEFILE_REPO_MEMORY_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert invoke(cli, ["--repo-memory", "list"]) == 3
    _, err = capfd.readouterr()
    assert "(repo-memory-dir in .statefile.toml)" in err, err


@pytest.mark.parametrize("name", [".statefile.toml", "pyproject.toml"])
def test_a_fifo_as_a_config_file_is_an_error_not_a_hang(initialized_repos: Repos, name: str) -> None:
    """Found by the hostile run (issue 15): a fifo as a config file is an error not a hang."""
    os.mkfifo(initialized_repos.work / name)
    proc = run_statefile("list", cwd=initialized_repos.work)
    assert proc.returncode == EXIT_USAGE
    assert "is a FIFO, not a regular file" in only_error_line(proc) and name in proc.stderr


def test_a_fifo_as_the_workflow_is_an_error_not_a_hang(initialized_repos: Repos) -> None:
    """Found by the hostile run (issue 15): a fifo as the workflow is an error not a hang."""
    workflows = initialized_repos.work / ".github" / "workflows"
    workflows.mkdir(parents=True)
    os.mkfifo(workflows / "autoloop.md")
    proc = run_statefile("--repo-memory", "config", cwd=initialized_repos.work)
    assert proc.returncode == EXIT_USAGE and "FIFO" in only_error_line(proc)


def test_a_billion_laughs_workflow_is_an_error_not_a_hang(initialized_repos: Repos) -> None:
    """The error message printed the entry with repr(): nine levels of nine aliases is 9**9 strings."""
    laughs = "\n".join(
        [f"a0: &a0 [{', '.join(['lol'] * 9)}]"]
        + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    )
    workflows = initialized_repos.work / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "autoloop.md").write_text(f"---\n{laughs}\ntools:\n  repo-memory: *a9\n---\nbody\n")
    proc = run_statefile("--repo-memory", "list", cwd=initialized_repos.work)
    assert proc.returncode == EXIT_USAGE and "must be mappings, got a sequence" in only_error_line(proc)


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
