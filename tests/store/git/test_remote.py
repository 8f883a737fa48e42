"""A remote given as a URL, and credentials that reach git through the environment only.

A URL remote (``--remote file:///srv/memory.git``, ``--remote https://github.com/o/r.git``) is used without adding
a remote to the repository; its branch is fetched into a private ref.  A token from ``GITHUB_TOKEN``/``GH_TOKEN``
(or a user and password written into the URL) is passed to git as an HTTP header in ``GIT_CONFIG_*`` variables:
never in ``.git/config``, never on a command line, never in a message.  A small HTTP server on the loopback
interface stands in for GitHub, to see what git really sends.
"""

from __future__ import annotations

import base64
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from gitutil import run_statefile
from storeutil import BRANCH, LOCAL, appender, git, make_remote, make_repo, rev

from statefile.errors import EXIT_GIT, GitError
from statefile.store import GitStore
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
