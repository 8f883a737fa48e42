"""Git repositories for the store's tests: a repository, a bare remote, clones, and checks on what git holds."""

from __future__ import annotations

import subprocess
import sys
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


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def blob(repo: Path, data: bytes) -> str:
    return git(repo, "hash-object", "-w", "--stdin", input=data).strip()


# A writer: open the store at argv[1] (through argv[2] as remote unless "-"), make argv[4] updates to "perf", each
# adding the line "- {name}-{i}".  Exits non-zero on any error; prints the retries it needed.
WORKER = """
import sys
from statefile.model.document import StateDocument, parse
from statefile.store import Store, Change

path, remote, name, count, tries = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
limits = {"max_tries": tries} if tries else {}  # 0: the store's own limits (tries and time)
store = Store.open(path, remote=None if remote == "-" else remote, **limits)
retries = 0
for i in range(count):
    line = f"- {name}-{i}"
    def fn(doc, line=line):
        text = doc.render() if doc is not None else "# Autoloop: perf\\n\\n"
        return parse(text + line + "\\n")
    retries += store.update("perf", fn, f"statefile: {name} update {i}").attempts - 1
print(retries)
"""


def spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]
