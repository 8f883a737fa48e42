"""The little of git that reading a branch needs, without GitPython: find the repository, resolve refs, read objects.

GitPython costs 70–90 ms to import, more than everything else ``statefile report`` does for 1000 programs, so the
git store reads through these instead:

- :func:`discover` – one ``git rev-parse`` finds the git dir, the common dir (linked work trees share it) and the
  work tree; one ``git remote`` lists the remotes.
- :class:`RefReader` – resolves a ref in-process from the loose ref file or ``packed-refs`` (re-read only when it
  changes), the way git and GitPython do; repositories with the reftable backend ask ``git rev-parse``.
- :class:`CatFile` – one long-lived ``git cat-file --batch`` per store; :meth:`CatFile.read_many` pipelines requests
  (a thread writes them while the answers are read), so reading 1000 blobs costs no round trip per blob.  An object
  larger than the caller's limit is never read: the process is stopped (and restarted on the next read) instead.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from statefile.errors import GitError, NotFoundError
from statefile.store.names import redact

_HEX = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")
# Requests small enough to write before reading the answers: far below a pipe buffer, so writing never blocks.
_SMALL_WRITE = 4096
# Pipe buffers for the long-lived reader: most state files are a few KB to 30 KB.
_BUFFER = 1 << 16
# Variables that would point git at another repository than the one asked for.
_REPO_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_OBJECT_DIRECTORY")


@dataclass(frozen=True)
class RepoPaths:
    """Where a repository lives: its git dir, the common dir shared by linked work trees, its work tree."""

    git_dir: Path
    common_dir: Path
    work_tree: Path | None  # None for a bare repository

    @property
    def bare(self) -> bool:
        """Whether the repository has no work tree."""
        return self.work_tree is None

    @property
    def top(self) -> Path:
        """The work tree's top, or the git dir of a bare repository: where git commands run."""
        return self.work_tree if self.work_tree is not None else self.git_dir


def discover(path: str | os.PathLike[str], exe: str = "git") -> tuple[RepoPaths, list[str]]:
    """The repository at or above ``path`` and its configured remotes; NotFoundError when there is none."""
    env = {k: v for k, v in os.environ.items() if k not in _REPO_ENV}
    env.update(LC_ALL="C", LANGUAGE="C")
    where = Path(path)
    try:
        proc = subprocess.run(
            [exe, "rev-parse", "--absolute-git-dir", "--git-common-dir", "--is-bare-repository", "--show-toplevel"],
            cwd=where, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False,
        )  # fmt: skip
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
    # --show-toplevel fails in a bare repository (or inside .git) after printing the other three answers.
    if len(lines) < 3 or (proc.returncode and "work tree" not in err):
        if "not a git repository" in err or not err:
            raise NotFoundError(
                f"{path}: not inside a git repository; run `git init` there, or use a folder store (--dir)"
            )
        raise GitError(redact(f"git rev-parse failed in {path}: {' '.join(err.split())}; check the repository"))
    git_dir = Path(lines[0])
    common = Path(lines[1])
    common_dir = common if common.is_absolute() else (where / common).resolve()
    if lines[2] == "true":
        work_tree = None
    elif len(lines) > 3:
        work_tree = Path(lines[3])
    else:  # asked from inside the .git folder of a normal repository
        work_tree = git_dir.parent
    paths = RepoPaths(git_dir, common_dir, work_tree)
    env["GIT_DIR"] = str(git_dir)
    remotes = subprocess.run(
        [exe, "remote"], cwd=paths.top, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    names = remotes.stdout.decode("utf-8", "surrogateescape").split() if remotes.returncode == 0 else []
    return paths, names


class RefReader:
    """Resolve refs of one repository in-process: the loose file first, else ``packed-refs``.

    Loose and packed refs live in the common dir (shared by linked work trees).  Git replaces both files by
    renaming, so a read sees a whole old or whole new value; a stale answer is harmless where the store uses it,
    because the compare-and-swap that follows every write is what decides.
    """

    def __init__(self, common_dir: Path, run_git: Callable[..., subprocess.CompletedProcess[bytes]]) -> None:
        self._common = common_dir
        self._run_git = run_git  # for the reftable backend, whose files only git reads
        self._packed: dict[str, str] = {}
        self._packed_stamp: tuple[int, int, int] | None = None
        self._reftable = (common_dir / "reftable").is_dir()

    def resolve(self, name: str) -> str | None:
        """The object id ``name`` (``refs/heads/…``) points at, following symbolic refs; ``None`` if missing."""
        if self._reftable:
            return self._rev_parse(name)
        for _ in range(6):  # symbolic refs chain at most a few deep; git itself stops at 5
            try:
                data = (self._common / name).read_bytes().strip()
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return self._packed_refs().get(name)
            if data.startswith(b"ref:"):
                name = data[4:].strip().decode("utf-8", "surrogateescape")
                continue
            return data.decode("ascii") if _HEX.fullmatch(data) else None
        return None

    def _packed_refs(self) -> dict[str, str]:
        path = self._common / "packed-refs"
        try:
            st = path.stat()
        except FileNotFoundError:
            self._packed, self._packed_stamp = {}, None
            return self._packed
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp != self._packed_stamp:
            refs: dict[str, str] = {}
            for line in path.read_bytes().splitlines():
                if line[:1] in (b"#", b"^") or b" " not in line:
                    continue  # header, or the peeled value of the tag above
                sha, _, ref = line.partition(b" ")
                if _HEX.fullmatch(sha):
                    refs[ref.decode("utf-8", "surrogateescape")] = sha.decode("ascii")
            self._packed, self._packed_stamp = refs, stamp
        return self._packed

    def _rev_parse(self, name: str) -> str | None:
        proc = self._run_git("rev-parse", "--verify", "--quiet", name)
        out = proc.stdout.strip()
        return out.decode("ascii") if proc.returncode == 0 and _HEX.fullmatch(out) else None


def _feed(stdin: IO[bytes], data: bytes) -> None:
    # Runs in a thread; a closed pipe means the batch was abandoned (the reader says why).
    with contextlib.suppress(OSError, ValueError):
        stdin.write(data)
        stdin.flush()


class ObjectTooLarge(Exception):
    """An object is larger than the caller allowed; it was not read."""

    def __init__(self, kind: str, size: int) -> None:
        super().__init__(f"{kind} of {size} bytes")
        self.kind = kind
        self.size = size
        self.index = 0  # which of the objects asked for (read_many)


class CatFile:
    """A long-lived ``git cat-file --batch``, started on first use and restarted if it ever stops."""

    def __init__(self, exe: str, cwd: str, env: Mapping[str, str]) -> None:
        self._argv = [exe, "cat-file", "--batch"]
        self._cwd = cwd
        self._env = dict(env)
        self._proc: subprocess.Popen[bytes] | None = None

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        if self._proc is None or self._proc.poll() is not None:
            try:
                self._proc = subprocess.Popen(
                    self._argv, cwd=self._cwd, env=self._env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL, bufsize=_BUFFER,
                )  # fmt: skip
            except OSError as exc:
                raise GitError(f"cannot run git cat-file ({exc.strerror}); install git and put it on PATH") from None
        assert self._proc.stdin is not None and self._proc.stdout is not None
        return self._proc.stdin, self._proc.stdout

    def read(self, sha: str, limit: int | None = None) -> tuple[str, bytes] | None:
        """``(type, data)`` of object ``sha``, or ``None`` when it is missing.  ObjectTooLarge over ``limit``."""
        return self.read_many([sha], limit)[0]

    def read_many(self, shas: Iterable[str], limit: int | None = None) -> list[tuple[str, bytes] | None]:
        """``read`` for many objects, fully pipelined; results in the order asked.

        A thread writes the requests while this one reads the answers, so git never waits for us and we never
        wait for a round trip (writing everything first could deadlock once both pipes are full).
        """
        wanted = list(shas)
        out: list[tuple[str, bytes] | None] = []
        if not wanted:
            return out
        stdin, stdout = self._pipes()
        requests = b"".join(sha.encode("ascii") + b"\n" for sha in wanted)
        feeder: threading.Thread | None = None
        try:
            if len(requests) <= _SMALL_WRITE:
                stdin.write(requests)
                stdin.flush()
            else:
                feeder = threading.Thread(target=_feed, args=(stdin, requests), daemon=True)
                feeder.start()
            for _ in wanted:
                try:
                    out.append(self._answer(stdout, limit))
                except ObjectTooLarge as exc:
                    exc.index = len(out)
                    raise
        except (BrokenPipeError, ConnectionError, ValueError) as exc:
            self.close()
            raise GitError(f"git cat-file stopped unexpectedly ({exc}); run `git fsck` and retry") from None
        finally:
            if feeder is not None:
                if self._proc is None or len(out) < len(wanted):
                    self.close()  # a failed batch: stop git so the feeder's write fails instead of blocking
                feeder.join()
        return out

    def _answer(self, stdout: IO[bytes], limit: int | None) -> tuple[str, bytes] | None:
        header = stdout.readline()
        if not header:
            raise ValueError("no answer")
        fields = header.split()
        if len(fields) == 2 and fields[1] in (b"missing", b"ambiguous"):
            return None
        if len(fields) != 3:
            raise ValueError(f"unexpected answer {header[:80]!r}")
        kind, size = fields[1].decode("ascii"), int(fields[2])
        if limit is not None and size > limit:
            # Reading and discarding it would still cost its whole size in time; stopping the process does not.
            self.close()
            raise ObjectTooLarge(kind, size)
        data = stdout.read(size)
        if len(data) != size or stdout.read(1) != b"\n":
            raise ValueError("short read")
        return kind, data

    def close(self) -> None:
        """Stop the process (the next read starts a new one)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()

    def __del__(self) -> None:
        # A store nobody closed: stop its reader (at interpreter exit there is nothing useful to do on failure).
        with contextlib.suppress(Exception):
            self.close()
