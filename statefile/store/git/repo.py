"""Finding the repository once, by asking git (``git rev-parse``: ``GIT_DIR``, linked work trees,
``safe.directory``), so the configuration and the store agree on where it is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

from statefile.errors import GitError, NotFoundError
from statefile.redaction import redact
from statefile.store.git.runner import one_line

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
        """The work tree's top, or the git dir of a bare repository: where configuration is read, git runs."""
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
    except FileNotFoundError:
        if not where.exists():
            raise NotFoundError(f"{path}: no such folder; pass the path of a git repository") from None
        raise GitError("cannot run git; install git and put it on PATH") from None
    except NotADirectoryError:
        raise NotFoundError(f"{path}: not a folder; pass the path of a git repository") from None
    except OSError as exc:
        raise GitError(f"cannot run git in {path} ({exc.strerror}); check the path and that git is installed") from None
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    err = proc.stderr.decode("utf-8", "replace")
    # --show-toplevel fails in a bare repository (and inside a .git folder) after printing the other answers.
    if len(lines) < 4 or (proc.returncode and "work tree" not in err):
        if "not a git repository" in err or not err:
            raise NotFoundError(
                f"{path}: not inside a git repository; run `git init` there, or use a folder store (--dir)"
            )
        raise GitError(f"git rev-parse failed in {path}: {one_line(redact(err))}; check the repository")
    git_dir, common_dir = Path(lines[0]), Path(lines[1])
    if lines[2] == "true":
        work_tree = None
    elif len(lines) > 4:
        work_tree = Path(lines[4])
    else:  # asked from inside the .git folder of a repository with a work tree
        work_tree = git_dir.parent
    return Repository(git_dir, common_dir, work_tree, lines[3].strip())


def init_bare(path: str | os.PathLike[str], exe: str | None = None) -> Repository:
    """Create an empty bare repository at ``path`` and return it (a scratch place for a store with a URL remote)."""
    exe = exe or git_executable()
    env = {**os.environ, "LC_ALL": "C", "LANGUAGE": "C"}
    proc = subprocess.run(
        [exe, "init", "--quiet", "--bare", os.fspath(path)], env=env, stdin=subprocess.DEVNULL, capture_output=True
    )
    if proc.returncode:
        err = proc.stderr.decode("utf-8", "replace")
        raise GitError(f"git init failed in {path}: {one_line(redact(err))}; check the folder is writable")
    return discover(path, exe)
