"""Git repositories for the store's tests: a repository, a bare remote, clones, and checks on what git holds."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from statefile.model.document import StateDocument, parse

BRANCH = "memory/autoloop"
LOCAL = f"refs/heads/{BRANCH}"
TRACKING = f"refs/remotes/origin/{BRANCH}"


def git(cwd: Path, *args: str | None, input: bytes | None = None) -> str:
    """Run git in ``cwd`` and return its stdout (fails the test on a non-zero exit, or on a ``None`` argument: a
    commit a write did not make)."""
    words = [arg for arg in args if arg is not None]
    assert len(words) == len(args), args
    proc = subprocess.run(["git", *words], cwd=cwd, input=input, capture_output=True, check=False)
    assert proc.returncode == 0, f"git {' '.join(words)}: {proc.stderr.decode()}"
    return proc.stdout.decode()


def rev(cwd: Path, ref: str) -> str | None:
    """The commit ``ref`` points at, or None."""
    proc = subprocess.run(["git", "rev-parse", "-q", "--verify", ref], cwd=cwd, capture_output=True, check=False)
    return proc.stdout.decode().strip() or None


def make_repo(path: Path) -> Path:
    """A work tree with one commit on main."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "code.py").write_text("print('hello')\n")
    git(path, "add", "code.py")
    git(path, "commit", "-q", "-m", "initial")
    return path


def make_remote(tmp: Path) -> Path:
    """A bare repository with a main branch (no memory branch yet)."""
    bare = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    seed = make_repo(tmp / "seed")
    git(seed, "push", "-q", str(bare), "main")
    return bare


def clone(remote: Path, dest: Path) -> Path:
    """A fresh clone of ``remote`` (it has only remote-tracking refs for the memory branch)."""
    git(remote.parent, "clone", "-q", str(remote), str(dest))
    return dest


def appender(line: str) -> Callable[[StateDocument | None], StateDocument]:
    """An update function adding ``line`` to the end of the document (creating it when missing)."""

    def fn(doc: StateDocument | None) -> StateDocument:
        text = doc.render() if doc is not None else "# Autoloop: perf\n\n"
        return parse(text + line + "\n")

    return fn


def commit_count(cwd: Path, ref: str) -> int:
    return int(git(cwd, "rev-list", "--count", ref).strip())


def files_at(cwd: Path, ref: str | None) -> list[str]:
    return sorted(git(cwd, "ls-tree", "-r", "--name-only", ref).split())


def fsck_clean(cwd: Path) -> None:
    proc = subprocess.run(["git", "fsck", "--full", "--strict"], cwd=cwd, capture_output=True, check=False)
    text = (proc.stdout + proc.stderr).decode()
    assert proc.returncode == 0, text
    for word in ("error", "missing", "broken", "corrupt"):
        assert word not in text.lower(), text
