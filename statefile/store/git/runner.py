"""The one place statefile starts git: finding the repository once (``git rev-parse``), the environment (``GIT_DIR``
pinned, English, never a prompt), time limits, one-line errors; git's output is redacted where it enters."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from statefile.errors import EnvironmentFailure, GitError, NotFoundError, StatefileError
from statefile.redaction import redact

NETWORK_TIMEOUT = 300.0  # how long one git command may run: a fetch or push over a slow network, never forever
MESSAGE_LIMIT = 400  # the longest message kept from git's output (a hook can print pages)
_WORK_TREE_ENV = ("GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX")  # the store never touches a work tree or index
# A full disk or an unwritable repository in git's (LC_ALL=C) messages; the last two are a remote's receive-pack.
_NO_SPACE = ("no space left on device", "disk quota exceeded", "file too large", "out of diskspace")
_READ_ONLY = ("read-only file system", "permission denied", "insufficient permission", "operation not permitted",
              "unable to create temporary object directory",
              "unable to migrate objects to permanent storage")  # fmt: skip


class Result(NamedTuple):
    """A finished git command."""

    args: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")


# A line of GIT_TRACE* output: "12:34:56.789012 git.c:460  trace: …", "packet: fetch< …".
_TRACE = re.compile(r"\d\d:\d\d:\d\d\.\d+ \S+:\d+ +|(?:packet|trace): ")
# git's paragraph under a lock failure, and fast-import's crash report (removed): they add nothing to the message.
_BOILERPLATE = ("hint:", "Another git process seems", "an editor opened by", "are terminated then try",
                "may have crashed in this", "remove the file manually",
                "fast-import: dumping crash report")  # fmt: skip


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` as one line (lines joined by `` | ``, git's hints and boilerplate dropped), cut at ``limit``."""
    parts = [part.strip() for part in text.splitlines()]
    line = " | ".join(part for part in parts if part and not part.startswith(_BOILERPLATE) and not _TRACE.match(part))
    return line if len(line) <= limit else line[: limit - 1] + "…"


def environment_error(what: str, detail: str, *, remote: bool = False) -> EnvironmentFailure | None:
    """The error when ``detail`` (git's or the OS's words) says a disk, here or the remote's, is full or unwritable."""
    lower = detail.lower()
    if any(sign in lower for sign in _NO_SPACE):
        said = "is full"
        where, fix = ("the remote's disk", "free space on the remote") if remote else ("the disk", "free space")
    # ssh's "Permission denied (publickey)" is about credentials, not this machine's files.
    elif any(sign in lower for sign in _READ_ONLY) and "permission denied (" not in lower:
        where = "the remote repository" if remote else "the repository"
        said = "cannot be written"
        fix = "fix its permissions (or its read-only or full disk)" if remote else "make it writable for this user"
    else:
        return None
    return EnvironmentFailure(  # retrying will not help
        f"{what} failed: {where} {said} ({detail}); {fix}, then run the command again — nothing was changed"
        + (" there" if remote else "")
    )


def subcommand(args: Iterable[str]) -> str:
    """The git subcommand in ``args`` (skipping ``-c key=value`` options), for messages."""
    rest = list(args)
    while rest and rest[0] == "-c":
        rest = rest[2:]
    return rest[0] if rest else "?"


class Git:
    """Runs git for one repository with one environment."""

    def __init__(self, exe: str, cwd: str, env: Mapping[str, str], *, secrets: Iterable[str] = ()) -> None:
        self.exe = exe
        self.cwd = cwd
        self.env = dict(env)
        self.secrets = tuple(s for s in secrets if s)

    @staticmethod
    def environment(git_dir: str, extra_config: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
        """The environment every git command of a store runs with (``os.environ`` plus what the store needs)."""
        env = {k: v for k, v in os.environ.items() if k not in _WORK_TREE_ENV}
        env.update(
            GIT_DIR=git_dir,
            LC_ALL="C",  # we read git's messages (rejections, missing refs): keep them in English
            LANGUAGE="C",
            GIT_TERMINAL_PROMPT="0",  # a push must fail, not wait for a password nobody will type
            GCM_INTERACTIVE="never",
            GIT_LITERAL_PATHSPECS="1",
        )
        entries = list(extra_config)
        if entries:
            count = env.get("GIT_CONFIG_COUNT", "").strip()
            first = int(count) if count.isdigit() else 0
            for index, (key, value) in enumerate(entries, start=first):
                env[f"GIT_CONFIG_KEY_{index}"] = key
                env[f"GIT_CONFIG_VALUE_{index}"] = value
            env["GIT_CONFIG_COUNT"] = str(first + len(entries))
        return env

    def redact(self, text: str) -> str:
        """``text`` without this store's secrets or any credential :func:`redact` recognises."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return redact(text)

    def call(
        self,
        *args: str,
        input: bytes | None = None,
        timeout: float = NETWORK_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        """Run ``git args…`` and return its result, whatever the exit code (never a shell, never a prompt)."""
        try:
            proc = subprocess.run(
                [self.exe, *args],
                cwd=self.cwd,
                env=self.env if env is None else {**self.env, **env},
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitError(
                f"git {subcommand(args)} did not finish within {timeout:.0f} s; check the network and the remote, retry"
            ) from None
        except OSError as exc:
            raise GitError(f"cannot run git ({exc.strerror}); install git and put it on PATH") from None
        # Redacted before anything cuts them short (half a password matches no pattern); a failure's stdout too.
        out = proc.stdout if proc.returncode == 0 else self._redacted(proc.stdout)
        return Result(tuple(args), proc.returncode, out, self._redacted(proc.stderr))

    def _redacted(self, data: bytes) -> bytes:
        return self.redact(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape") if data else data

    def run(self, *args: str, input: bytes | None = None, hint: str = "check the repository and retry") -> bytes:
        """Run ``git args…``; its stdout, or the error :meth:`failure` makes of a non-zero exit."""
        result = self.call(*args, input=input)
        if not result.ok:
            raise self.failure(result, hint)
        return result.stdout

    def failure(self, result: Result, hint: str, what: str = "") -> StatefileError:
        """The one-line error for a failed command: git's own message kept, credentials removed."""
        # Redacted again where the error leaves: a Result need not come from call().
        detail = one_line(self.redact(result.err or result.stdout.decode("utf-8", "replace")))
        what = what or f"git {subcommand(result.args)}"
        failed = f"{what} failed (exit {result.returncode}): {detail}; {hint}"
        return environment_error(what, detail) or GitError(failed)

    def popen(self, *args: str, bufsize: int = -1) -> subprocess.Popen[bytes]:
        """Start ``git args…`` with pipes for stdin and stdout (stderr is discarded)."""
        try:
            return subprocess.Popen(
                [self.exe, *args], cwd=self.cwd, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, bufsize=bufsize,
            )  # fmt: skip
        except OSError as exc:
            raise GitError(f"cannot run git {subcommand(args)} ({exc.strerror}); install git, put it on PATH") from None


_OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def is_oid(text: str) -> bool:
    """Whether ``text`` is a full object id (40 hex digits for SHA-1 repositories, 64 for SHA-256)."""
    return _OID.fullmatch(text) is not None


#: The object formats statefile writes through git's plumbing (git itself knows no others today).
OBJECT_FORMATS = ("sha1", "sha256")


class Repository(NamedTuple):
    """Where a repository lives, as git reports it."""

    git_dir: Path  # this work tree's git dir (a linked work tree has its own)
    common_dir: Path  # shared by all work trees: objects and refs live here
    work_tree: Path | None  # None for a bare repository
    object_format: str  # "sha1" or "sha256"

    @property
    def top(self) -> Path:
        """The work tree's top, or a bare repository's git dir: where git runs."""
        return self.work_tree if self.work_tree is not None else self.git_dir


def git_executable() -> str:
    """The git program to run."""
    return shutil.which("git") or "git"


def find_repository(path: str | os.PathLike[str], exe: str | None = None) -> Repository | None:
    """The repository at or above ``path`` (as git finds it), or ``None`` when there is none."""
    try:
        return discover(path, exe)
    except NotFoundError:
        return None


def discover(path: str | os.PathLike[str], exe: str | None = None) -> Repository:
    """The repository at or above ``path``; NotFoundError when there is none, GitError when git refuses it."""
    exe = exe or git_executable()
    env = {**os.environ, "LC_ALL": "C", "LANGUAGE": "C"}
    where = Path(path)
    args = ["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", "--is-bare-repository",
            "--show-object-format", "--show-toplevel"]  # fmt: skip
    try:
        proc = subprocess.run(
            [exe, *args], cwd=where, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False
        )
    except OSError as exc:
        if not where.is_dir():
            what = "not a folder" if where.exists() else "no such folder"
            raise NotFoundError(f"{path}: {what}; pass the path of a git repository") from None
        if isinstance(exc, FileNotFoundError):  # the folder is there: git is not
            raise GitError("cannot run git; install git and put it on PATH") from None
        raise GitError(f"cannot run git in {path} ({exc.strerror}); check the path and that git is installed") from None
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    err = proc.stderr.decode("utf-8", "replace")
    # --show-toplevel fails in a bare repository (and inside a .git folder) after printing the other answers.
    if len(lines) < 4 or (proc.returncode and "work tree" not in err):
        if "not a git repository" in err or not err:
            raise NotFoundError(f"{path}: not inside a git repository; `git init` one, or use a folder store (--dir)")
        raise GitError(f"git rev-parse failed in {path}: {one_line(redact(err))}; check the repository")
    git_dir = Path(lines[0])
    # Without a fifth line, git was asked from inside the .git folder of a repository with a work tree.
    work_tree = None if lines[2] == "true" else Path(lines[4]) if len(lines) > 4 else git_dir.parent
    return Repository(git_dir, Path(lines[1]), work_tree, lines[3].strip())


def init_bare(path: str | os.PathLike[str], exe: str | None = None) -> Repository:
    """Create an empty bare repository at ``path`` and return it (a scratch place for a store with a URL remote)."""
    git = Git(exe or git_executable(), ".", {**os.environ, "LC_ALL": "C", "LANGUAGE": "C"})
    git.run("init", "--quiet", "--bare", os.fspath(path), hint=f"check that {path} is writable")
    return discover(path, exe)
