"""A remote given as a URL, and credentials that reach git through the environment only.

A URL remote (``--remote file:///srv/memory.git``, ``--remote https://github.com/o/r.git``) is used without adding
a remote to the repository; its branch is fetched into a private ref.  A token from ``GITHUB_TOKEN``/``GH_TOKEN``
(or a user and password written into the URL) is passed to git as an HTTP header in ``GIT_CONFIG_*`` variables:
never in ``.git/config``, never on a command line, never in a message.  A small HTTP server on the loopback
interface stands in for GitHub, to see what git really sends.
"""

from __future__ import annotations

import base64
import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import only_error_line
from gitutil import Repos, make_repos, run_statefile
from storeutil import BRANCH, LOCAL, TRACKING, appender, clone, git, make_remote, make_repo, one_error_line, rev

from statefile.errors import EXIT_GIT, EXIT_INVALID_DATA, GitError, InvalidDataError
from statefile.store import GitStore, Store
from statefile.store.git.remote import credentials, private_ref
from statefile.store.names import is_remote_url, validate_remote

FAKE_TOKEN = "ghs_fAkEt0kEnFoRtEsTs0123456789abcdefXYZ"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# -- URL remotes ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/o/r.git",
        "http://127.0.0.1:8080/o/r.git",
        "ssh://git@example.com/o/r.git",
        "git@github.com:o/r.git",
        "file:///srv/memory.git",
        "git://example.com/r.git",
    ],
)
def test_urls_are_accepted_as_remotes(url: str) -> None:
    assert is_remote_url(url) and validate_remote(url) == url


@pytest.mark.parametrize(
    "text",
    ["ext::sh -c touch% /tmp/pwned", "-upload-pack=x", "https://a b/c", "origin", "a/b", "fd::17", "", "x" * 2000],
)
def test_other_texts_are_not_urls(text: str) -> None:
    assert not is_remote_url(text)


def test_a_file_url_remote_works_without_configuring_a_remote(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    work = make_repo(tmp_path / "work")
    url = remote.as_uri()  # file:///…/remote.git
    assert run_statefile("--remote", url, "init", "perf", cwd=work).returncode == 0
    recorded = run_statefile("--remote", url, "record", "perf", "--status", "accepted", "--metric", "1", cwd=work)
    assert recorded.returncode == 0, recorded.stderr
    assert "### Iteration 1 " in git(remote, "show", f"{BRANCH}:perf.md")
    assert git(work, "remote") == "" and "remote." not in git(work, "config", "--list", "--local")
    private = private_ref(url, BRANCH)
    assert private.startswith("refs/statefile/remotes/")
    assert rev(work, private) == rev(remote, LOCAL) == rev(work, LOCAL)
    assert git(work, "for-each-ref", "refs/remotes") == ""
    # A repository that never saw the remote reads it through the URL alone.
    reader = make_repo(tmp_path / "reader")
    listed = run_statefile("--remote", url, "list", cwd=reader)
    assert listed.returncode == 0 and "perf" in listed.stdout, listed.stderr
    assert rev(reader, private) == rev(remote, LOCAL) and rev(reader, LOCAL) is None  # read from the fetched copy


# -- credentials ---------------------------------------------------------------------------------------------------


def test_the_token_becomes_a_header_scoped_to_the_url() -> None:
    env = {"GITHUB_TOKEN": FAKE_TOKEN}
    creds = credentials("https://github.com/o/r.git", env)
    header = f"AUTHORIZATION: basic {b64('x-access-token:' + FAKE_TOKEN)}"
    key = "http.https://github.com/o/r.git.extraheader"
    assert creds.url == "https://github.com/o/r.git"
    assert creds.config == ((key, ""), (key, header))  # the empty value clears a header set for the host
    assert FAKE_TOKEN in creds.secrets and b64("x-access-token:" + FAKE_TOKEN) in creds.secrets
    assert (
        credentials("https://github.com/o/r.git", {"GH_TOKEN": "other"})
        .config[1][1]
        .endswith(b64("x-access-token:other"))
    )
    # Never to another host, never over plain http across a network, never to a non-http transport.
    for url in ("https://evil.example.com/o/r.git", "http://github.com/o/r.git", "ssh://git@github.com/o/r.git",
                "file:///srv/r.git"):  # fmt: skip
        assert credentials(url, env).config == ()
    enterprise = {"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_SERVER_URL": "https://ghe.example.com"}
    assert credentials("https://ghe.example.com/o/r.git", enterprise).config != ()
    assert credentials("https://github.com/o/r.git", {}).config == ()


def test_a_user_and_password_in_the_url_leave_it_for_a_header() -> None:
    creds = credentials("https://me:s3cr%2Ft@github.com:8443/o/r.git", {})
    assert creds.url == "https://github.com:8443/o/r.git"
    assert creds.config[1][1] == f"AUTHORIZATION: basic {b64('me:s3cr/t')}"
    assert {"s3cr/t", "s3cr%2Ft"} <= set(creds.secrets)


def test_the_header_is_in_gits_environment_not_in_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", FAKE_TOKEN)
    repo = make_repo(tmp_path / "repo")
    store = GitStore(repo, remote="https://github.com/o/r.git")
    encoded = b64("x-access-token:" + FAKE_TOKEN)
    seen = store._git.run("config", "--list", "--show-scope").decode()  # what every git the store runs sees
    assert f"command\thttp.https://github.com/o/r.git.extraheader=AUTHORIZATION: basic {encoded}" in seen
    config_file = (repo / ".git" / "config").read_text()
    assert FAKE_TOKEN not in config_file and encoded not in config_file and "extraheader" not in config_file
    assert "extraheader" not in git(repo, "config", "--list")


class _Recorder(BaseHTTPRequestHandler):
    """Answers every request 404 (no such repository) and remembers its Authorization header."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization", ""))
        self.send_response(404)
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Recorder.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_token_reaches_the_server_as_a_header_and_no_output(tmp_path: Path, server: str) -> None:
    repo = make_repo(tmp_path / "repo")
    env = {"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_SERVER_URL": server}
    proc = run_statefile("--remote", f"{server}/o/r.git", "list", cwd=repo, env=env)
    assert proc.returncode == EXIT_GIT
    encoded = b64("x-access-token:" + FAKE_TOKEN)
    assert _Recorder.seen and all(value == f"basic {encoded}" for value in _Recorder.seen)
    for secret in (FAKE_TOKEN, encoded):
        assert secret not in proc.stderr + proc.stdout
    assert proc.stderr.count("\n") == 1 and "127.0.0.1" in proc.stderr
    assert "extraheader" not in git(repo, "config", "--list")


def test_no_secret_is_ever_on_a_command_line(tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    argv: list[list[str]] = []
    real_init = subprocess.Popen.__init__

    def spy(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        argv.append(list(args))
        real_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    monkeypatch.setenv("GITHUB_TOKEN", FAKE_TOKEN)
    monkeypatch.setenv("GITHUB_SERVER_URL", server)
    repo = make_repo(tmp_path / "repo")
    port = server.rsplit(":", 1)[1]
    for url in (f"{server}/o/r.git", f"http://me:pa55w0rd-secret@127.0.0.1:{port}/o/r.git"):
        store = GitStore(repo, remote=url)
        with pytest.raises(GitError) as info:
            store.update("perf", appender("- x"), "statefile: x")
        store.close()
        for secret in (FAKE_TOKEN, "pa55w0rd-secret", b64("me:pa55w0rd-secret")):
            assert secret not in str(info.value)
    assert _Recorder.seen[-1] == f"basic {b64('me:pa55w0rd-secret')}"  # the URL's own credentials win
    assert argv and not any(s in " ".join(a) for a in argv for s in (FAKE_TOKEN, "pa55w0rd-secret"))
    assert rev(repo, LOCAL) is None


def test_a_hooks_message_reaches_the_terminal_redacted_and_inert(tmp_path: Path) -> None:
    """A pre-receive hook's `password=hunter2` was printed verbatim, its terminal escapes passed through raw."""
    repos = make_repos(tmp_path)
    assert run_statefile("-q", "--remote", "origin", "init", "perf", cwd=repos.work).returncode == 0
    hook = repos.remote / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\nprintf 'denied password=hunter2 \\033]0;pwned\\007 \\342\\200\\256gnp.exe\\n' >&2\nexit 1\n"
    )
    hook.chmod(0o755)
    proc = run_statefile(
        "--remote", "origin", "record", "perf", "--status", "accepted", "--metric", "1", cwd=repos.work
    )
    assert proc.returncode == 6 and proc.stderr.count("\n") == 1, proc.stderr
    assert "denied" in proc.stderr and "hunter2" not in proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr and "\u202e" not in proc.stderr
    assert "\\x1b]0;pwned\\x07" in proc.stderr


def test_a_password_with_a_slash_is_redacted_before_gits_message_is_cut(initialized_repos: Repos) -> None:
    """GIT_TRACE=1 fills git's stderr with trace lines quoting the URL; the message used to be cut inside the URL."""
    url = "https://user:LeftHalf9x/RightHalf9y@127.0.0.1:1/o/r.git"
    proc = run_statefile("list", cwd=initialized_repos.work, env={"STATEFILE_REMOTE": url, "GIT_TRACE": "1"})
    assert proc.returncode == EXIT_GIT
    line = only_error_line(proc)
    assert "LeftHalf9x" not in line and "RightHalf9y" not in line
    assert "trace:" not in line  # git's trace lines are not the message


def hook(bare: Path, name: str, body: str) -> None:
    path = bare / "hooks" / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_a_push_that_landed_before_the_connection_dropped_is_reported_as_landed(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): a push that landed before the connection dropped is said to have
    landed."""
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    assert run_statefile("--remote", "origin", "init", "perf", cwd=work).returncode == 0
    # receive-pack updates the ref, then its post-receive hook kills it: git push exits non-zero.
    hook(remote, "post-receive", "kill -9 $PPID")
    for n in (1, 2):
        proc = run_statefile(
            "--remote", "origin", "record", "perf", "--status", "accepted", "--metric", str(n), cwd=work
        )
        assert proc.returncode == 0, proc.stderr
    text = git(remote, "show", f"{BRANCH}:perf.md")
    assert text.count("### Iteration 1 ") == 1 and text.count("### Iteration 2 ") == 1
    assert rev(work, LOCAL) == rev(remote, LOCAL) == rev(work, TRACKING)


def test_a_push_that_did_not_land_is_still_an_error(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): a push that did not land is still an error."""
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    store = Store.open(work, remote="origin")
    store.update("perf", appender("- one"), "statefile: one")
    hook(remote, "pre-receive", "kill -9 $PPID")  # dies before any ref moves
    with pytest.raises(GitError, match=r"push"):
        store.update("perf", appender("- two"), "statefile: two")
    assert "- two" not in git(remote, "show", f"{BRANCH}:perf.md")


def test_a_remote_branch_that_is_a_symbolic_ref_is_never_pushed_through(tmp_path: Path) -> None:
    """On the remote, receive-pack follows a symbolic ref: a push to memory/autoloop would move main there."""
    remote = make_remote(tmp_path)
    first = clone(remote, tmp_path / "first")
    Store.open(first, remote="origin").update("perf", appender("- one"), "statefile: one")
    git(remote, "symbolic-ref", LOCAL, "refs/heads/main")
    main = rev(remote, "refs/heads/main")
    work = clone(remote, tmp_path / "work")
    proc = run_statefile("--remote", "origin", "record", "perf", "--create", "--status", "accepted", cwd=work)
    assert proc.returncode == EXIT_INVALID_DATA, proc.stderr
    assert "symbolic ref to refs/heads/main" in one_error_line(proc)
    assert rev(remote, "refs/heads/main") == main


def test_a_remote_branch_that_is_a_symbolic_ref_is_refused_before_anything_is_fetched(tmp_path: Path) -> None:
    """The remote advertises a symbolic ref with its target's commit: fetched, main's code commit became the
    remote-tracking copy, record said "diverged", and sync moved the local memory branch onto main."""
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    assert run_statefile("-q", "--remote", "origin", "init", "perf", cwd=work).returncode == 0
    git(remote, "symbolic-ref", LOCAL, "refs/heads/main")
    before = {ref: rev(work, ref) for ref in (LOCAL, TRACKING)}
    main = rev(remote, "refs/heads/main")
    for args in (["record", "perf", "--status", "accepted"], ["sync"], ["list"], ["show", "perf"], ["check"]):
        proc = run_statefile("--remote", "origin", *args, cwd=work)
        assert proc.returncode == EXIT_INVALID_DATA, (args, proc.stderr)
        line = one_error_line(proc)
        assert "refs/heads/memory/autoloop on origin is a symbolic ref to refs/heads/main" in line, line
        assert {ref: rev(work, ref) for ref in before} == before and rev(remote, "refs/heads/main") == main, args
    assert git(work, "for-each-ref", "--format=%(refname)", "refs/statefile") == ""  # sync set nothing aside
    listed = run_statefile("--json", "list", cwd=work)
    assert [row["program"] for row in json.loads(listed.stdout)] == ["perf"], listed.stdout
    store = GitStore(work, remote="origin")
    with store, pytest.raises(InvalidDataError, match="symbolic ref"):
        store.fetch()


@pytest.mark.slow  # fault injection: waits out a remote that stalls, a stale lock or a timeout
def test_a_stale_lock_on_the_remote_is_named_as_such(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): a stale lock on the remote is named as such."""
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    store = Store.open(work, remote="origin", max_tries=3)
    store.update("perf", appender("- one"), "statefile: one")
    (remote / "refs" / "heads" / "memory" / "autoloop.lock").write_text("")
    with pytest.raises(GitError) as info:
        store.update("perf", appender("- two"), "statefile: two")
    message = str(info.value)
    assert "kept changing" not in message and "stale" in message and "autoloop.lock" in message
    assert "\n" not in message


def test_a_pre_receive_hooks_own_message_is_kept(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): a pre receive hooks own message is kept."""
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    hook(remote, "pre-receive", "echo 'BLOCKED: the memory branch is frozen until Friday' >&2\n"
                                "echo 'ask #infra to unfreeze it' >&2\nexit 1")  # fmt: skip
    proc = run_statefile("--remote", "origin", "init", "perf", cwd=work)
    assert proc.returncode == EXIT_GIT
    line = one_error_line(proc)
    assert "BLOCKED: the memory branch is frozen until Friday" in line and "ask #infra" in line
    assert "branch protection" not in line and rev(remote, LOCAL) is None


def test_a_very_long_hook_message_is_cut_to_one_line(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): a very long hook message is cut to one line."""
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    hook(remote, "pre-receive", 'for i in $(seq 1 500); do echo "line $i of a very chatty hook" >&2; done; exit 1')
    proc = run_statefile("--remote", "origin", "init", "perf", cwd=work)
    assert proc.returncode == EXIT_GIT and len(one_error_line(proc)) < 1000


@pytest.mark.slow  # fault injection: waits out a remote that stalls, a stale lock or a timeout
def test_remote_reads_never_use_a_local_branch_a_stale_lock_keeps_behind(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): remote reads never use a local branch a stale lock keeps behind."""
    remote = make_remote(tmp_path)
    reader = clone(remote, tmp_path / "reader")
    writer = clone(remote, tmp_path / "writer")
    assert run_statefile("--remote", "origin", "init", "perf", cwd=writer).returncode == 0
    assert run_statefile("--remote", "origin", "list", cwd=reader).returncode == 0
    git(reader, "branch", BRANCH, TRACKING)  # a local branch, which a leftover lock will keep from moving
    lock = reader / ".git" / "refs" / "heads" / "memory" / "autoloop.lock"
    lock.write_text("")
    assert (
        run_statefile(
            "--remote", "origin", "record", "perf", "--status", "accepted", "--metric", "7", cwd=writer
        ).returncode
        == 0
    )
    shown = run_statefile("--remote", "origin", "--json", "list", cwd=reader)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)[0]["iteration_count"] == 1  # the fetched tip, not the stale local branch
    assert rev(reader, LOCAL) != rev(remote, LOCAL)  # the lock really did keep it behind
