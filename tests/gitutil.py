"""Real git repositories for tests: a bare remote, clones of it, and a way to run the statefile command."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from statefile.cli import cli
from statefile.cli.run import invoke

if TYPE_CHECKING:
    from pytest import CaptureFixture

STATEFILE = str(Path(sys.executable).with_name("statefile"))


def git(*args: str, cwd: Path, check: bool = True) -> str:
    """Run git in ``cwd`` and return its stdout."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and proc.returncode:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


@dataclass
class Repos:
    """A bare ``remote`` and a working clone ``work`` with one commit on main."""

    root: Path
    remote: Path
    work: Path

    def clone(self, name: str) -> Path:
        """Another clone of the remote (all refs fetched, memory branch only as origin/…)."""
        path = self.root / name
        git("clone", "--quiet", str(self.remote), str(path), cwd=self.root)
        return path

    def remote_file(self, path: str, branch: str = "memory/autoloop") -> str | None:
        """A file's text on the remote branch, or ``None``."""
        proc = subprocess.run(["git", "show", f"{branch}:{path}"], cwd=self.remote, capture_output=True, check=False)
        return proc.stdout.decode("utf-8", "surrogateescape") if proc.returncode == 0 else None

    def remote_tip(self, branch: str = "memory/autoloop") -> str | None:
        """The remote branch's commit, or ``None``."""
        out = git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=self.remote, check=False)
        return out.strip() or None


def make_repos(root: Path) -> Repos:
    """Create a bare remote and a clone with an initial commit on main pushed to it."""
    remote = root / "remote.git"
    work = root / "work"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(remote), cwd=root)
    git("init", "--quiet", "--initial-branch=main", str(work), cwd=root)
    (work / "README.md").write_text("project\n")
    git("add", "README.md", cwd=work)
    git("commit", "--quiet", "-m", "init", cwd=work)
    git("remote", "add", "origin", str(remote), cwd=work)
    git("push", "--quiet", "origin", "main", cwd=work)
    return Repos(root, remote, work)


def copy_repos(template: Repos, root: Path) -> Repos:
    """A copy of ``template``'s remote and clone under ``root``, the clone's ``origin`` pointed at the copy.

    A fixture that takes git and statefile processes to build is built once a module and copied for each test
    (milliseconds against a second): each test still has repositories of its own to break.
    """
    remote, work = root / template.remote.name, root / template.work.name
    shutil.copytree(template.remote, remote, symlinks=True)
    shutil.copytree(template.work, work, symlinks=True)
    git("remote", "set-url", "origin", str(remote), cwd=work)
    return Repos(root, remote, work)


def run_statefile(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed console script."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [STATEFILE, *args], cwd=cwd, capture_output=True, text=True, env=full_env, input=stdin, check=False
    )


@dataclass
class Ran:
    """What one in-process statefile command did: its exit code, stdout and stderr."""

    code: int
    out: str
    err: str


def invoke_statefile(capsys: CaptureFixture[str], *args: str, cwd: Path) -> Ran:
    """Run statefile in-process on the repository at ``cwd``, exactly as the console script does
    (:func:`statefile.cli.run.invoke`): faster than a process, and what a user sees."""
    capsys.readouterr()
    code = invoke(cli, ["--repo", str(cwd), *args])
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)
