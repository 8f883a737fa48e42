"""Real git repositories for tests: a bare remote, clones of it, and a way to run the statefile command."""

from __future__ import annotations

import io
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
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


_TEMPLATE: list[Repos] = []


def make_repos(root: Path) -> Repos:
    """A bare remote and a clone with an initial commit on main pushed to it: a copy of the pair this process built
    first (git's start-up is most of the cost of building one)."""
    if not _TEMPLATE or not _TEMPLATE[0].work.is_dir():
        _TEMPLATE[:] = [_build_repos(Path(tempfile.mkdtemp(prefix="statefile-repos-")))]
    return copy_repos(_TEMPLATE[0], root)


def _build_repos(root: Path) -> Repos:
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


def run_console_script(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed console script as a process: for tests about the script itself (tests/e2e)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [STATEFILE, *args], cwd=cwd, capture_output=True, text=True, env=full_env, input=stdin, check=False
    )


class _Kept(io.BytesIO):
    """Output that outlives a close: ``statefile list | head`` closes stderr, and the test still reads it."""

    def close(self) -> None:
        pass


class _Hung(BaseException):
    """Raised by the alarm into a command that did not finish in time (BaseException: nothing in statefile
    catches it)."""


def _hung(signum: int, frame: object) -> None:
    raise _Hung


def run_statefile(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run statefile in-process as the console script would run in ``cwd``, with ``env`` added to the environment
    and ``stdin`` (else nothing) as its input: the same exit code, stdout and stderr, decoded as
    ``subprocess.run(text=True)`` decodes them, without a process's start-up (a tenth of a second or more).
    A command still running after ``timeout`` seconds (a FIFO opened blindly) fails the test instead of hanging it."""
    out, err = _Kept(), _Kept()
    saved_env, saved_cwd, saved_streams = dict(os.environ), os.getcwd(), (sys.stdin, sys.stdout, sys.stderr)
    # Only the main thread may set a signal handler (and only it gets the alarm).
    saved_alarm = (
        signal.signal(signal.SIGALRM, _hung) if threading.current_thread() is threading.main_thread() else None
    )
    if saved_alarm is not None:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        os.environ.update(env or {})
        os.chdir(cwd)
        sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
        sys.stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
        try:
            code = invoke(cli, list(args))
        except Exception:  # what a process would print on its way out (STATEFILE_DEBUG=1 re-raises bugs)
            traceback.print_exc()
            code = 1
    except _Hung:
        raise AssertionError(f"statefile {shlex.join(args)} was still running after {timeout:g}s") from None
    finally:
        if saved_alarm is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, saved_alarm)
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)

    def text(stream: io.BytesIO) -> str:
        return stream.getvalue().decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")

    return subprocess.CompletedProcess([STATEFILE, *args], code, text(out), text(err))


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
