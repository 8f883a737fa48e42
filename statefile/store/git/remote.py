"""The remote: fetch the branch, push a commit (never forced), and say what a failed push means.

A remote is the name of a configured remote (``origin``) or a URL (``https://github.com/o/r.git``,
``file:///srv/memory.git``, ``git@github.com:o/r.git``).  A URL is used as it is: no remote is added to the
repository's configuration, and its branch is fetched into a private ref, ``refs/statefile/remotes/<hash of the
URL>/<branch>``, that no git command shows as a branch.

Credentials for a URL never touch a file or a command line: a token from the environment (``GITHUB_TOKEN``, else
``GH_TOKEN``) — or a user and password written into the URL, which are then taken out of it — is passed to git as
an HTTP header through ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``, scoped to that URL.  The
token is only sent over https, and only to github.com or the host of ``GITHUB_SERVER_URL``: it must not leak to a
host the user did not mean to give it to.  Every message is redacted (the token, the header, and any credential
shape :func:`statefile.redaction.redact` knows).
"""

from __future__ import annotations

import binascii
import os
import urllib.parse
from collections.abc import Mapping
from typing import NamedTuple

from statefile.errors import EnvironmentFailure, GitError, InvalidDataError, StatefileError
from statefile.store.git.refs import clash_error, lock_busy, ref_clash
from statefile.store.git.retry import Outcome
from statefile.store.git.runner import Git, Result, environment_problem, is_oid, one_line
from statefile.store.names import is_remote_url

#: Environment variables a token is taken from, in order.
TOKEN_VARIABLES = ("GITHUB_TOKEN", "GH_TOKEN")
# Reasons a push is refused that mean "someone else got there first": fetch, re-apply and try again.
_PUSH_RACED = ("fetch first", "non-fast-forward", "stale info", "incorrect old value")
# The remote could not take its ref lock: a concurrent push holds it, or a killed one left it behind.
_PUSH_LOCKED = ("failed to update ref", "failed to lock", "cannot lock ref")
# How git relays the remote's own reason for not storing the pushed objects.
_UNPACK_FAILED = "error: remote unpack failed: "


class Credentials(NamedTuple):
    """What a URL remote needs: the URL to give git, and ``http.<url>.extraheader`` configuration for it."""

    url: str  # the URL without any user or password in it
    config: tuple[tuple[str, str], ...]  # (key, value) pairs for GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n
    secrets: tuple[str, ...]  # strings no message may contain


def credentials(url: str, env: Mapping[str, str]) -> Credentials:
    """The URL to use and the header configuration for ``url`` (pure: ``env`` is the environment to read).

    A user (and password) in an http(s) URL become a basic-auth header and leave the URL, which git would show
    in ``ps`` and in messages; otherwise ``GITHUB_TOKEN``/``GH_TOKEN`` does, as ``x-access-token:TOKEN``, for a
    URL on github.com or on ``GITHUB_SERVER_URL``'s host, over https (or http to this machine's loopback, where
    nothing crosses a network).  No header at all otherwise: the token never goes to a host it was not meant for.
    """
    parts = urllib.parse.urlsplit(url) if "://" in url else None
    if parts is None or parts.scheme.lower() not in ("https", "http"):
        return Credentials(url, (), ())
    secrets: list[str] = []
    basic = ""
    host = parts.hostname or ""
    if parts.username is not None or parts.password is not None:
        user = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
        bare_host = f"[{host}]" if ":" in host else host
        netloc = bare_host if parts.port is None else f"{bare_host}:{parts.port}"
        url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        basic = f"{user}:{password}"
        secrets += [s for value in (user, password) for s in (value, urllib.parse.quote(value, safe="")) if s]
    elif _token_host(parts, env):
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


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _token_host(parts: urllib.parse.SplitResult, env: Mapping[str, str]) -> bool:
    host = (parts.hostname or "").lower()
    server = urllib.parse.urlsplit(env.get("GITHUB_SERVER_URL", ""))
    if host not in {"github.com", (server.hostname or "").lower()} - {""}:
        return False
    return parts.scheme.lower() == "https" or host in _LOOPBACK


def private_ref(url: str, branch: str) -> str:
    """Where a URL remote's branch is fetched to: a ref no branch listing shows, one per URL and branch."""
    import hashlib  # here, not at the top: OpenSSL costs ~10 ms that stores without a URL remote need not pay

    digest = hashlib.sha256(url.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"refs/statefile/remotes/{digest}/{branch}"


class Remote:
    """Fetching from and pushing to one remote branch (a configured remote's name, or a URL)."""

    def __init__(self, git: Git, spec: str, branch: str, *, url: str | None = None) -> None:
        self._git = git
        self.spec = spec
        self.branch = branch
        self.is_url = is_remote_url(spec)
        #: What git is given: the remote's name, or the URL without credentials.
        self.target = url if url is not None else spec
        self.tracking_ref = private_ref(self.target, branch) if self.is_url else f"refs/remotes/{spec}/{branch}"
        self.remote_ref = f"refs/heads/{branch}"
        self._symref_checked = False

    @property
    def display(self) -> str:
        """How messages name the remote branch (credentials removed)."""
        return self._git.redact(f"{self.target} {self.branch}" if self.is_url else f"{self.spec}/{self.branch}")

    @property
    def name(self) -> str:
        """How messages and suggested commands name the remote: ``origin``, or the URL without credentials."""
        return self._git.redact(self.target)

    def fetch(self) -> Result:
        """``git fetch`` of the branch into :attr:`tracking_ref`; the caller decides what a failure means."""
        return self._git.call(
            "fetch", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--quiet", "--end-of-options",
            self.target, f"+{self.remote_ref}:{self.tracking_ref}",
        )  # fmt: skip

    @staticmethod
    def missing_branch(result: Result) -> bool:
        """Whether a failed fetch failed only because the remote has no such branch."""
        return "couldn't find remote ref" in result.err

    @staticmethod
    def fetch_locked(result: Result) -> bool:
        """Whether a failed fetch could not update the local ref because a lock is held."""
        return lock_busy(result.err)

    def fetch_error(self, result: Result) -> StatefileError:
        """The error for a fetch that failed for another reason."""
        existing = ref_clash(result.err)
        if existing is not None:
            # A copy of a branch since deleted on the remote keeps the copy of this one from being made here.
            return clash_error(self.tracking_ref, self._git.redact(existing), fix=(
                f"if it is a copy of a branch deleted on the remote, `git fetch --prune {self.name}` removes it; "
                "else use another --branch"
            ))  # fmt: skip
        if "mismatched algorithms" in result.err or "does not support this repository's hash" in result.err:
            return GitError(self._git.redact(
                f"{self.display} and this repository use different object formats ({one_line(result.err, 200)}); "
                "git cannot move objects between a SHA-1 and a SHA-256 repository — work in a clone of the remote "
                "(or one made with the same --object-format); nothing was written"
            ))  # fmt: skip
        return self._git.failure(result, f"check that {self.display} is reachable and readable",
                                 what=f"fetching {self.display}")  # fmt: skip

    def push(self, new: str) -> tuple[Outcome, Result]:
        """Push commit ``new`` to the remote branch, never forced.

        :attr:`Outcome.DONE` when git says it landed; :attr:`Outcome.REJECTED` when someone pushed first;
        :attr:`Outcome.REMOTE_LOCKED` when the remote could not lock its ref.  A refusal for any other reason
        raises, with the remote's own message (a hook's, say) kept.  A push that failed without saying what
        became of the ref (the connection dropped) returns ``(Outcome.MOVED, result)``: the caller must look at
        the remote before it reports anything, because the commit may have landed.
        """
        # --no-verify: the user's pre-push hooks are about their code, not this bookkeeping branch.
        result = self._git.call("push", "--porcelain", "--no-verify", "--end-of-options", self.target,
                                f"{new}:{self.remote_ref}")  # fmt: skip
        if result.ok:
            return Outcome.DONE, result
        for line in result.stdout.decode("utf-8", "replace").splitlines():
            if not line.startswith("!"):
                continue
            reason = line.split("\t")[-1].strip()
            # "cannot lock ref …: is at X but expected Y": another push moved the ref while this one waited.
            if any(word in reason for word in _PUSH_RACED) or "but expected" in result.err:
                return Outcome.REJECTED, result
            # Refused as "failed to lock" too, but no wait frees it: a ref on the remote is in the way of ours.
            existing = ref_clash(remote_message(result.err))
            if existing is not None:
                raise clash_error(self.remote_ref, self._git.redact(existing), where=f" on {self.name}")
            if any(word in reason for word in _PUSH_LOCKED) and environment_problem(result.err) == "":
                return Outcome.REMOTE_LOCKED, result
            raise self.refused(reason, result)
        return Outcome.MOVED, result

    def refused(self, reason: str, result: Result) -> StatefileError:
        """The error for a push the remote refused: what the remote (or its hook) said, on one line."""
        said = remote_message(result.err)
        # A remote on this machine or over ssh writes some reasons straight to stderr, not as "remote:" lines:
        # then git's one-line verdict ("unable to migrate objects to permanent storage") is all there is to read.
        problem = environment_problem(said or reason)
        if problem == "full":
            return EnvironmentFailure(self._git.redact(
                f"the push to {self.display} failed: the remote's disk is full ({said or reason}); free space on "
                "the remote, then run the command again — nothing was changed there"
            ))  # fmt: skip
        if problem == "read-only":
            return EnvironmentFailure(self._git.redact(
                f"the push to {self.display} failed: the remote repository cannot be written ({said or reason}); "
                "fix its permissions (or its read-only or full disk), then run the command again — nothing was "
                "changed there"
            ))  # fmt: skip
        if "hook declined" in reason:
            detail = f"{reason}: {said}" if said else reason
            return GitError(self._git.redact(
                f"the push to {self.display} was refused by a hook on the remote ({one_line(detail)}); that hook "
                "decides what this branch accepts — see its message"
            ))  # fmt: skip
        detail = f"{reason}; the remote said: {said}" if said else reason
        return GitError(self._git.redact(
            f"the push to {self.display} was refused ({one_line(detail)}); check branch protection and write "
            f"permission for {self.branch}"
        ))  # fmt: skip

    def push_error(self, result: Result) -> StatefileError:
        """The error for a push that failed without a verdict on the ref (after the remote was checked)."""
        said = remote_message(result.err)
        if said and environment_problem(said):
            return self.refused("the remote failed", result)
        return self._git.failure(result, f"check that {self.display} is reachable and writable",
                                 what=f"pushing to {self.display}")  # fmt: skip

    def unverified_error(self, seconds: float, check: str) -> StatefileError:
        """The error for a push that ended without a verdict when reading the remote back did not work either.

        Not "failed": the commit may well be there, and a caller that took this for a failure and ran the
        command again would record the same thing twice.  A GitError all the same (exit 6): what stopped statefile
        is git not reaching the remote — neither this machine's disk (8) nor a concurrent writer (5).  git's own
        words are left out: they say "failed", and ``check`` shows them if the remote is still unreachable.
        """
        return GitError(self._git.redact(
            f"the push to {self.display} may have landed, but it could not be verified: the connection broke "
            f"before git reported the outcome, and {self.display} could not be read back for {seconds:.0f} s; "
            f"check with `{check}` before recording again, or the same change may be recorded twice"
        ))  # fmt: skip

    def locked_error(self, result: Result) -> StatefileError:
        """The error when the remote's ref stayed locked for every try."""
        said = remote_message(result.err)
        return GitError(self._git.redact(
            f"the remote could not lock {self.remote_ref} for the push to {self.display}"
            f"{f' ({said})' if said else ''}; a push there kept it locked for every try, or a killed one left a "
            f"stale {self.remote_ref}.lock in the remote repository — if no push is running, remove that file there"
        ))  # fmt: skip

    def refuse_symref(self) -> None:
        """InvalidDataError when the remote's branch is a symbolic ref; asked once per remote, before its first
        fetch.

        The remote advertises a symbolic ref with its target's commit: a fetch would bring that other branch in
        as the memory (its files read as state files, and a local branch behind it fast-forwarded onto it), and a
        push would move that branch (``git receive-pack`` follows it).  Only ``ls-remote --symref`` tells, and only
        over protocol v2 (v0 names HEAD's target alone), so v2 is asked for whatever the user's configuration says.
        """
        if self._symref_checked:
            return
        result = self._git.call(
            "-c", "protocol.version=2", "ls-remote", "--symref", "--end-of-options", self.target, self.remote_ref
        )
        if not result.ok:
            raise self.fetch_error(result)
        for line in result.stdout.decode("utf-8", "replace").splitlines():
            head, _, name = line.partition("\t")
            if name == self.remote_ref and head.startswith("ref: ") and head[5:] != self.remote_ref:
                raise InvalidDataError(self._git.redact(
                    f"{self.remote_ref} on {self.name} is a symbolic ref to {head[5:]}; statefile never follows one "
                    "onto another branch (it would read that branch's files as the memory, and a push would move "
                    f"it) — make {self.branch} a real branch there (or use another --branch); nothing was read or "
                    "written"
                ))  # fmt: skip
        self._symref_checked = True

    def ls_remote(self) -> str | None:
        """The remote branch's commit as the remote reports it now (``git ls-remote``), ``None`` if absent."""
        result = self._git.call("ls-remote", "--end-of-options", self.target, self.remote_ref)
        if not result.ok:
            raise self.fetch_error(result)
        for line in result.stdout.decode("ascii", "replace").splitlines():
            oid, _, name = line.partition("\t")
            if name == self.remote_ref and is_oid(oid):
                return oid
        return None


def remote_message(stderr: str) -> str:
    """What the remote itself said, on one line, git's boilerplate dropped: its ``remote:`` lines, and why it
    could not store the pushed objects, which git relays as ``error: remote unpack failed: …`` (a push that fails
    this way says only "unpacker error" on its porcelain line)."""
    lines = []
    for line in stderr.splitlines():
        if line.startswith("remote:"):
            lines.append(line[len("remote:") :].strip())
        elif line.startswith(_UNPACK_FAILED):
            lines.append("unpack failed: " + line[len(_UNPACK_FAILED) :].strip())
    return one_line("\n".join(lines))


def env_tokens(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The tokens in the environment (to redact them from any message, used or not)."""
    source = os.environ if env is None else env
    return tuple(value.strip() for name in TOKEN_VARIABLES if (value := source.get(name, "")).strip())
