"""The remote (a configured name, or a URL fetched into a private ref): its tip, fetch, push (never forced), and
what a failed push means.  Credentials (a ``GITHUB_TOKEN``/``GH_TOKEN`` over https to github.com or
``GITHUB_SERVER_URL``'s host, or a URL's user and password) become an HTTP header in ``GIT_CONFIG_*``, scoped to
that URL: never a file or a command line."""

from __future__ import annotations

import binascii
import os
import urllib.parse
from collections.abc import Mapping
from typing import NamedTuple

from statefile.errors import GitError, InvalidDataError, NotFoundError, StatefileError
from statefile.store.git.refs import Outcome, clash_error, ref_clash
from statefile.store.git.runner import Git, Result, environment_error, is_oid, one_line
from statefile.store.names import is_remote_url

TOKEN_VARIABLES = ("GITHUB_TOKEN", "GH_TOKEN")  # where a token is taken from, in order
_PUSH_RACED = ("fetch first", "non-fast-forward", "stale info", "incorrect old value")  # someone pushed first
_PUSH_LOCKED = ("failed to update ref", "failed to lock", "cannot lock ref")  # a push there holds its ref lock
_UNPACK_FAILED = "error: remote unpack failed: "


class Credentials(NamedTuple):
    """What a URL remote needs: the URL to give git, and ``http.<url>.extraheader`` configuration for it."""

    url: str  # the URL without any user or password in it
    config: tuple[tuple[str, str], ...]  # (key, value) pairs for GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n
    secrets: tuple[str, ...]  # strings no message may contain


def credentials(url: str, env: Mapping[str, str]) -> Credentials:
    """The URL to use and the header configuration for ``url``, from the environment ``env``."""
    parts = urllib.parse.urlsplit(url) if "://" in url else None
    if parts is None or parts.scheme.lower() not in ("https", "http"):
        return Credentials(url, (), ())
    secrets: list[str] = []
    basic = ""
    host = parts.hostname or ""
    server = urllib.parse.urlsplit(env.get("GITHUB_SERVER_URL", ""))
    if parts.username is not None or parts.password is not None:
        user = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
        bare_host = f"[{host}]" if ":" in host else host
        netloc = bare_host if parts.port is None else f"{bare_host}:{parts.port}"
        url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        basic = f"{user}:{password}"
        secrets += [s for value in (user, password) for s in (value, urllib.parse.quote(value, safe="")) if s]
    # A token goes only to github.com or GITHUB_SERVER_URL's host, and only over https (or to this machine).
    elif host.lower() in {"github.com", (server.hostname or "").lower()} - {""} and (
        parts.scheme.lower() == "https" or host.lower() in ("127.0.0.1", "localhost", "::1")
    ):
        token = next((env[name].strip() for name in TOKEN_VARIABLES if env.get(name, "").strip()), "")
        if token:
            basic = f"x-access-token:{token}"
            secrets.append(token)
    if not basic:
        return Credentials(url, (), ())
    encoded = binascii.b2a_base64(basic.encode("utf-8"), newline=False).decode("ascii")
    secrets.append(encoded)
    key = f"http.{url}.extraheader"
    # The empty value first clears headers configured for the host (actions/checkout's own), so only one is sent.
    return Credentials(url, ((key, ""), (key, f"AUTHORIZATION: basic {encoded}")), tuple(secrets))


def private_ref(url: str, branch: str) -> str:
    """Where a URL remote's branch is fetched to: a ref no branch listing shows, one per URL and branch."""
    import hashlib  # here, not at the top: OpenSSL costs ~10 ms that stores without a URL remote need not pay

    digest = hashlib.sha256(url.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"refs/statefile/remotes/{digest}/{branch}"


class Remote:
    """Fetching from and pushing to one remote branch (a configured remote's name, or a URL)."""

    def __init__(self, git: Git, spec: str, branch: str) -> None:
        self._git = git
        self.spec = spec  # what git is given: the name, or the URL without credentials
        self.branch = branch
        self.is_url = is_remote_url(spec)
        self.tracking_ref = private_ref(self.spec, branch) if self.is_url else f"refs/remotes/{spec}/{branch}"
        self.remote_ref = f"refs/heads/{branch}"
        #: How messages name the remote (``origin``, or the URL without credentials) and its branch.
        self.name = git.redact(self.spec)
        self.display = f"{self.name} {branch}" if self.is_url else f"{self.name}/{branch}"

    def advertised(self) -> str | None:
        """The remote branch's commit now (``None``: no such branch); InvalidDataError for a symbolic ref there,
        which only ``ls-remote --symref`` over protocol v2 tells."""
        result = self._git.call(
            "-c", "protocol.version=2", "ls-remote", "--symref", "--end-of-options", self.spec, self.remote_ref
        )
        if not result.ok:
            raise self.fetch_error(result)
        tip = None
        for line in result.stdout.decode("utf-8", "replace").splitlines():
            head, _, name = line.partition("\t")
            if name == self.remote_ref and head.startswith("ref: ") and head[5:] != self.remote_ref:
                raise InvalidDataError(
                    f"{self.remote_ref} on {self.name} is a symbolic ref to {head[5:]}; statefile never follows one "
                    "onto another branch (it would read that branch's files as the memory, and a push would move "
                    f"it) — make {self.branch} a real branch there (or use another --branch); nothing was read or "
                    "written"
                )
            tip = head if name == self.remote_ref and is_oid(head) else tip
        return tip

    def fetch(self) -> Result:
        """``git fetch`` of the branch into :attr:`tracking_ref`; the caller decides what a failure means."""
        return self._git.call(
            "fetch", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--quiet", "--end-of-options",
            self.spec, f"+{self.remote_ref}:{self.tracking_ref}",
        )  # fmt: skip

    def fetch_error(self, result: Result) -> StatefileError:
        """The error for a fetch (or ``ls-remote``) that failed for another reason than a missing branch."""
        if not self.is_url and "does not appear to be a git repository" in result.err:
            configured = self._git.run("remote").decode("utf-8", "surrogateescape").split()
            if self.spec not in configured:
                return NotFoundError(
                    f"remote {self.spec!r} is not configured in {self._git.cwd}; configured remotes: "
                    f"{', '.join(configured) or 'none'} (add one with `git remote add`, or pass a URL)"
                )
        if (existing := ref_clash(result.err)) is not None:  # a copy of a branch deleted there is in the way
            fix = f"if it is a copy of a branch deleted on the remote, `git fetch --prune {self.name}` removes it; "
            return clash_error(self.tracking_ref, existing, fix=fix + "else use another --branch")
        if "mismatched algorithms" in result.err or "does not support this repository's hash" in result.err:
            return GitError(
                f"{self.display} and this repository use different object formats ({one_line(result.err, 200)}); "
                "git cannot move objects between a SHA-1 and a SHA-256 repository — work in a clone of the remote "
                "(or one made with the same --object-format); nothing was written"
            )
        hint = f"check that {self.display} is reachable and readable"
        return self._git.failure(result, hint, what=f"fetching {self.display}")

    def push(self, new: str) -> tuple[Outcome, Result]:
        """Push ``new``, never forced (``--no-verify``: pre-push hooks are about the user's code): REJECTED,
        REMOTE_LOCKED, or MOVED when git gave no verdict (the caller must look); other refusals raise."""
        target = f"{new}:{self.remote_ref}"
        result = self._git.call("push", "--porcelain", "--no-verify", "--end-of-options", self.spec, target)
        if result.ok:
            return Outcome.DONE, result
        refusal = next((line for line in result.stdout.decode("utf-8", "replace").splitlines() if line[:1] == "!"), "")
        if not refusal:
            return Outcome.MOVED, result
        reason = refusal.split("\t")[-1].strip()
        # "cannot lock ref …: is at X but expected Y": another push moved the ref while this one waited.
        if any(word in reason for word in _PUSH_RACED) or "but expected" in result.err:
            return Outcome.REJECTED, result
        said = remote_message(result.err)
        # Refused as "failed to lock" too, but no wait frees it: a ref on the remote is in the way of ours.
        if (existing := ref_clash(said)) is not None:
            raise clash_error(self.remote_ref, existing, where=f" on {self.name}")
        if any(word in reason for word in _PUSH_LOCKED) and environment_error("", result.err) is None:
            return Outcome.REMOTE_LOCKED, result
        # A remote on this machine or over ssh writes some reasons straight to stderr, not as "remote:" lines.
        if error := environment_error(f"the push to {self.display}", said or reason, remote=True):
            raise error
        if "hook declined" in reason:
            detail = f"{reason}: {said}" if said else reason
            raise GitError(
                f"the push to {self.display} was refused by a hook on the remote ({one_line(detail)}); that hook "
                "decides what this branch accepts — see its message"
            )
        detail = f"{reason}; the remote said: {said}" if said else reason
        raise GitError(
            f"the push to {self.display} was refused ({one_line(detail)}); check branch protection and write "
            f"permission for {self.branch}"
        )

    def push_error(self, result: Result) -> StatefileError:
        """The error for a push that failed without a verdict on the ref (after the remote was checked)."""
        what = f"the push to {self.display}"
        return environment_error(what, remote_message(result.err), remote=True) or self._git.failure(
            result, f"check that {self.display} is reachable and writable", what=f"pushing to {self.display}"
        )

    def locked_error(self, result: Result) -> StatefileError:
        """The error when the remote's ref stayed locked for every try."""
        said = remote_message(result.err)
        return GitError(
            f"the remote could not lock {self.remote_ref} for the push to {self.display}"
            f"{f' ({said})' if said else ''}; a push there kept it locked for every try, or a killed one left a "
            f"stale {self.remote_ref}.lock in the remote repository — if no push is running, remove that file there"
        )


def remote_message(stderr: str) -> str:
    """The remote's own words on one line: ``remote:`` lines and ``remote unpack failed`` (porcelain says less)."""
    said = (
        "unpack failed: " + line[len(_UNPACK_FAILED) :] if line.startswith(_UNPACK_FAILED) else line[len("remote:") :]
        for line in stderr.splitlines()
        if line.startswith(("remote:", _UNPACK_FAILED))
    )
    return one_line("\n".join(said))  # which strips each line


def env_tokens() -> tuple[str, ...]:
    """The tokens in the environment (to redact them from any message, used or not)."""
    return tuple(value.strip() for name in TOKEN_VARIABLES if (value := os.environ.get(name, "")).strip())
