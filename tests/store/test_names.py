"""Safety: names validated before use, credentials never printed, symlinks/submodules/bad UTF-8 refused, no shell."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gitutil import run_statefile
from storeutil import BRANCH, LOCAL, appender, clone, git, make_remote, make_repo, one_error_line, rev

from statefile.errors import EXIT_USAGE, GitError, InvalidDataError, NotFoundError, UsageError
from statefile.model.document import StateDocument, parse
from statefile.redaction import redact
from statefile.store import FolderStore, GitStore, Store
from statefile.store.git.runner import Git, Result
from statefile.store.names import (
    validate_branch,
    validate_part,
    validate_path,
    validate_program,
    validate_remote,
)

BAD_PROGRAMS = ["", "../perf", "a/b", "a\\b", "..", "a..b", ".hidden", "-rf", "_private", "perf.md", "x" * 101,
                "a b", "a\nb", "a\x00b", "perf.", "$(touch pwned)", "per;f", "ümlaut"]  # fmt: skip
# "_shared" is the reserved shared-lessons file: readable and writable, never listed as a program.
GOOD_PROGRAMS = ["_shared", "perf", "perf-comparison", "linear_regression_compat", "v1.2", "A9", "x" * 100]
BAD_BRANCHES = ["", "-x", "a..b", "a@{1}", "@", "a b", "a\x01b", "a\x7fb", "a~1", "a^", "a:b", "a?", "a*", "a[b",
                "a\\b", "/a", "a/", "a//b", ".a", "a/.b", "a.lock", "a/b.lock/c", "a.", "x" * 256]  # fmt: skip
GOOD_BRANCHES = ["memory/autoloop", "main", "memory/auto-loop_2", "a.b/c"]


@pytest.mark.parametrize("name", BAD_PROGRAMS)
def test_bad_program_names_are_refused_by_every_store_entry(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="invalid program name"):
        validate_program(name)
    repo = make_repo(tmp_path / "repo")
    for store in (Store.open(repo), FolderStore(tmp_path)):
        calls: list[Callable[[Store], object]] = [
            lambda s: s.read(name),
            lambda s: s.read_text(name),
            lambda s: s.archive_parts(name),
            lambda s: s.read_archive(name, "0001.md"),
            lambda s: s.log(name),
            lambda s: s.update(name, appender("- x"), "statefile: x"),
        ]
        for call in calls:
            with pytest.raises(UsageError, match="invalid program name"):
                call(store)
    assert rev(repo, LOCAL) is None
    assert not (tmp_path / "pwned").exists() and not (repo / "pwned").exists()


@pytest.mark.parametrize("name", GOOD_PROGRAMS)
def test_good_program_names_pass(name: str) -> None:
    assert validate_program(name) == name


@pytest.mark.parametrize("name", BAD_BRANCHES)
def test_bad_branch_names_never_reach_git(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="invalid branch name"):
        validate_branch(name)
    with pytest.raises(UsageError, match="invalid branch name"):
        Store.open(tmp_path, branch=name)  # refused before the path is even looked at
    # Where git can tell (printable names), it agrees they are not branch names.
    if name.isprintable() and name:
        proc = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True, check=False)
        git_refuses = proc.returncode != 0 or name.startswith("-") or len(name) > 255
        assert git_refuses or name.startswith("@")


@pytest.mark.parametrize("name", GOOD_BRANCHES)
def test_good_branch_names_pass(name: str) -> None:
    assert validate_branch(name) == name
    assert subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True).returncode == 0


@pytest.mark.parametrize("name", ["--upload-pack=touch pwned", "-o", "a/b", "a..b", "a b", "", "o@{u}"])
def test_bad_remote_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="invalid remote name"):
        validate_remote(name)
    with pytest.raises(UsageError, match="invalid remote name"):
        Store.open(make_repo(tmp_path / "repo"), remote=name)


@pytest.mark.parametrize("path", ["../x.md", "/etc/passwd", ".git/config", "a//b.md", "a/./b.md", "-x.md", "",
                                  "a/../b.md", "archive/.perf/0001.md", "a\\b.md", "a\nb.md"])  # fmt: skip
def test_bad_file_paths_are_refused_by_write_files(tmp_path: Path, path: str) -> None:
    with pytest.raises(UsageError, match="invalid file path"):
        validate_path(path)
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(UsageError, match="invalid file path"):
        Store.open(repo).write_files({path: "x\n"}, "import")
    with pytest.raises(UsageError, match="invalid file path"):
        FolderStore(tmp_path).write_files({path: "x\n"}, "import")
    assert rev(repo, LOCAL) is None


@pytest.mark.parametrize("part", ["../0001.md", "0001.txt", "1.md", "x0001.md", "0001.md/x"])
def test_bad_archive_part_names_are_refused(part: str) -> None:
    with pytest.raises(UsageError, match="invalid archive part"):
        validate_part(part)


# -- credentials ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("fatal: unable to access 'https://user:s3cret@github.com/o/r.git/'", "s3cret"),
        ("https://x-access-token:ghs_abcdefghijklmnopqrstuvwxyz0123@github.com/o/r", "ghs_abcdefghijklmnop"),
        ("http.extraheader=AUTHORIZATION: basic dXNlcjpzM2NyZXQ=", "dXNlcjpzM2NyZXQ="),
        ("token ghp_0123456789abcdefghijABCDEFGHIJ in a message", "ghp_0123456789"),
        ("ssh://deploy:hunter2@example.com/r.git", "hunter2"),
    ],
)
def test_redact_hides_credentials(text: str, secret: str) -> None:
    assert secret not in redact(text)
    assert "***" in redact(text)


def test_redact_keeps_ordinary_text() -> None:
    text = "git push failed: rejected https://github.com/o/r.git (fetch first); user@example.com"
    assert redact(text) == text


def test_credentials_in_a_remote_url_never_appear_in_errors(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    # Port 9 (discard) on localhost: the connection is refused at once, and git reports the URL.
    git(repo, "remote", "add", "origin", "https://statefile-user:s3cr3t-t0ken@127.0.0.1:9/o/r.git")
    store = Store.open(repo, remote="origin")
    with pytest.raises(GitError) as info:
        store.update("perf", appender("- x"), "statefile: x")
    message = str(info.value)
    assert "s3cr3t-t0ken" not in message and "s3cr3t-t0ken" not in repr(info.value.args)
    assert "fetch" in message and "127.0.0.1" in message and "\n" not in message
    with pytest.raises(GitError) as fetched:
        store.fetch()
    assert "s3cr3t-t0ken" not in str(fetched.value)


def test_git_failures_become_one_redacted_line() -> None:
    # git's stderr can echo a configured URL with its credentials, and a token the store knows of in any shape.
    stderr = (b"fatal: repository 'https://statefile-user:s3cr3t-t0ken@example.com/o/r.git/' not found\n"
              b"hint: a hint line\nerror: raw-token-value-123 rejected\n")  # fmt: skip
    runner = Git("git", ".", {}, secrets=["raw-token-value-123"])
    converted = runner.failure(Result(("fetch", "origin"), 128, b"", stderr), "check the remote")
    assert isinstance(converted, GitError)
    text = str(converted)
    assert "s3cr3t-t0ken" not in text and "raw-token-value-123" not in text and "example.com" in text
    assert "\n" not in text and "hint" not in text and text.startswith("git fetch failed (exit 128)")


# -- symlinks, submodules, undecodable files -------------------------------------------------------------------------


def _commit_tree(repo: Path, entries: list[str], parent: str | None = None) -> str:
    """Point the memory branch at a commit whose root tree has ``entries`` (``mktree`` lines)."""
    tree = git(repo, "mktree", input="".join(e + "\n" for e in entries).encode()).strip()
    args = ["commit-tree", tree, "-m", "crafted", *(["-p", parent] if parent else [])]
    commit = git(repo, *args).strip()
    git(repo, "update-ref", LOCAL, commit)
    return commit


def _blob(repo: Path, data: bytes) -> str:
    return git(repo, "hash-object", "-w", "--stdin", input=data).strip()


@pytest.mark.parametrize("kind", ["symlink", "submodule"])
def test_symlink_and_submodule_entries_are_refused_not_followed(tmp_path: Path, kind: str) -> None:
    repo = make_repo(tmp_path / "repo")
    head = rev(repo, "HEAD")
    assert head is not None
    if kind == "symlink":
        bad = f"120000 blob {_blob(repo, b'/etc/passwd')}\tperf.md"
        folder = f"120000 blob {_blob(repo, b'/etc')}\tarchive"
    else:
        bad = f"160000 commit {head}\tperf.md"
        folder = f"160000 commit {head}\tarchive"
    good = f"100644 blob {_blob(repo, b'# ok')}\tok.md"
    tip = _commit_tree(repo, [bad, folder, good])
    store = Store.open(repo)
    assert store.programs() == {"ok": 4}  # listed files are real files only
    for call in (
        lambda: store.read("perf"),
        lambda: store.update("perf", appender("- x"), "statefile: x"),
        lambda: store.archive_parts("perf"),
        lambda: store.read_archive("perf", "0001.md"),
        store.read_all,
        lambda: store.write_files({"perf.md": "replace\n"}, "import"),
        lambda: store.write_files({"archive/perf/0001.md": "x\n"}, "import"),
    ):
        with pytest.raises(InvalidDataError, match=r"not a regular file|not a folder"):
            call()
    assert rev(repo, LOCAL) == tip


def test_a_file_that_is_not_utf8_is_reported_not_rewritten(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    raw = b"# Autoloop: perf\n\nlatin-1 \xe9t\xe9\n"
    tip = _commit_tree(repo, [f"100644 blob {_blob(repo, raw)}\tperf.md"])
    store = Store.open(repo)
    with pytest.raises(InvalidDataError, match=r"perf\.md on branch memory/autoloop: not valid UTF-8 \(byte 26\)"):
        store.read_text("perf")
    with pytest.raises(InvalidDataError):
        store.update("perf", appender("- x"), "statefile: x")
    with pytest.raises(InvalidDataError):
        store.read_all()
    assert rev(repo, LOCAL) == tip
    assert subprocess.run(["git", "cat-file", "blob", f"{LOCAL}:perf.md"], cwd=repo, capture_output=True).stdout == raw

    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "perf.md").write_bytes(raw)
    with pytest.raises(InvalidDataError, match="not valid UTF-8"):
        FolderStore(folder).update("perf", appender("- x"), "statefile: x")
    assert (folder / "perf.md").read_bytes() == raw


def test_text_that_would_not_be_utf8_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")

    def lone_surrogate(doc: StateDocument | None) -> StateDocument:
        return parse("# Autoloop: perf\n\udce9\n")  # what surrogateescape makes of a stray byte

    for store in (Store.open(repo), FolderStore(tmp_path)):
        with pytest.raises(InvalidDataError, match="not valid UTF-8"):
            store.update("perf", lone_surrogate, "statefile: x")
    assert rev(repo, LOCAL) is None and not (tmp_path / "perf.md").exists()


def test_folder_store_refuses_symlinks(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    outside = tmp_path / "outside.md"
    outside.write_text("# secret\n")
    (folder / "perf.md").symlink_to(outside)
    (tmp_path / "elsewhere").mkdir()
    (folder / "archive").symlink_to(tmp_path / "elsewhere")
    store = FolderStore(folder)
    assert store.programs() == {}
    for call in (
        lambda: store.read("perf"),
        lambda: store.update("perf", appender("- x"), "statefile: x"),
        lambda: store.archive_parts("apm"),
        lambda: store.write_files({"archive/apm/0001.md": "x\n"}, "import"),
        lambda: store.write_files({"perf.md": "x\n"}, "import"),
        store.read_all,
    ):
        with pytest.raises(InvalidDataError, match="symbolic link"):
            call()
    assert outside.read_text() == "# secret\n" and list((tmp_path / "elsewhere").iterdir()) == []


# -- no shell, ever ------------------------------------------------------------------------------------------------


def test_no_shell_is_ever_invoked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    calls: list[Any] = []
    real_init = subprocess.Popen.__init__

    def spy(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        calls.append((args, kwargs.get("shell", False)))
        real_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    store = Store.open(work, remote="origin")
    assert isinstance(store, GitStore)
    store.update("perf", appender("- x"), "statefile: x")
    store.programs()
    store.read_all()
    store.log("perf")
    store.fetch()
    store.close()
    assert calls, "the spy saw no process at all"
    assert all(shell is False and isinstance(args, list) for args, shell in calls)
    assert git(remote, "show", f"{BRANCH}:perf.md").endswith("- x\n")


def test_unknown_remote_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="configured remotes: none"):
        Store.open(make_repo(tmp_path / "repo"), remote="upstream").fetch()  # said on first use: opening runs no git


@pytest.mark.parametrize("name", ["HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "AUTO_MERGE",
                                  "refs/heads/x", "refs/x"])  # fmt: skip
def test_branch_names_that_shadow_git_are_refused(tmp_path: Path, name: str) -> None:
    """Found by the adversarial run (issue 15): branch names that shadow git are refused."""
    with pytest.raises(UsageError, match="invalid branch name"):
        validate_branch(name)
    repo = make_repo(tmp_path / "repo")
    proc = run_statefile("--branch", name, "init", "perf", cwd=repo) if not name.startswith("refs/heads/") else None
    if proc is not None:
        assert proc.returncode == EXIT_USAGE and "branch" in one_error_line(proc)
    with pytest.raises(UsageError):
        Store.open(repo, branch=name)
    assert git(repo, "for-each-ref", "refs/heads").count("\n") == 1  # main only
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stderr == ""


def test_long_names_are_not_echoed_in_full(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): long names are not echoed in full."""
    repo = make_repo(tmp_path / "repo")
    for flags in (["--branch", "b" * 100_000], ["--remote", "r" * 100_000]):
        proc = run_statefile(*flags, "list", cwd=repo)
        assert proc.returncode == EXIT_USAGE and len(one_error_line(proc)) < 600


@pytest.mark.parametrize("name", ["con", "NUL", "aux", "com1", "LPT9", "prn", "con.x", "nul.notes"])
def test_windows_device_names_are_refused_as_programs(tmp_path: Path, name: str) -> None:
    """Found by the adversarial run (issue 15): windows device names are refused as programs."""
    with pytest.raises(UsageError, match="reserved device name on Windows"):
        validate_program(name)
    proc = run_statefile("--dir", str(tmp_path), "init", name, cwd=tmp_path)
    assert proc.returncode == EXIT_USAGE and not list(tmp_path.glob("*.md"))
