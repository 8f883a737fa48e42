"""Objects: read through one long-lived ``git cat-file --batch``, listed with ``git ls-tree``, written with plumbing.

Nothing here knows how git encodes an object.  Reading:

- :class:`CatFile` – one ``git cat-file --batch`` per store; :meth:`CatFile.read_many` pipelines requests (a
  thread writes them while the answers are read), so reading 1000 blobs costs no round trip per blob.  An object
  larger than the caller's limit is never read: the process is stopped (and restarted on the next read) instead.
  This is the measured fast path of ``statefile report`` (see benchmarks/RESULTS.md).
- :class:`Trees` – a tree's entries from ``git ls-tree -z`` (mode, type, id, and with ``-l`` the size), cached
  by the id of the tree or commit listed: objects never change, so a cached listing is never stale.

Writing, each object by the git command made for it (git checks and hashes it, in whatever object format the
repository uses, SHA-1 or SHA-256, and writes it to a temporary file renamed into place, so an object is either
complete or absent): ``git hash-object -w --stdin`` for a blob, ``git mktree`` for a tree, ``git commit-tree`` for
a commit.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Iterable, Mapping
from typing import IO, NamedTuple

from statefile.errors import GitError, InvalidDataError, StatefileError
from statefile.store.git.runner import NETWORK_TIMEOUT, Git, Result, is_oid, one_line

MODE_TREE = "040000"
MODE_FILE = "100644"
#: Modes of regular files (git writes 100644 and 100755; old trees may hold 100664).
FILE_MODES = frozenset({"100644", "100755", "100664"})
_KINDS = {"120000": "symbolic link", "160000": "submodule", MODE_TREE: "folder"}

# Requests small enough to write before reading the answers: far below a pipe buffer, so writing never blocks.
_SMALL_WRITE = 4096
# Pipe buffers for the long-lived reader: most state files are a few KB to 30 KB.
_BUFFER = 1 << 16
# How many listings a store keeps: the trees of the current tip and its archive folders.
_CACHE = 256
_LS_TREE = re.compile(rb"(\d{6}) (\w+) ([0-9a-f]+)(?: +(\S+))?\t(.*)", re.S)
# How git says a tree names an object the repository lacks: ls-tree -r reaching a missing subtree, and mktree
# given an entry whose object is missing (the runner sets LC_ALL=C, so these stay in English).
_UNREADABLE = re.compile(r"Could not read ([0-9a-f]{40,64})")
_UNAVAILABLE = re.compile(r"entry '(.*)' object ([0-9a-f]{40,64}) is unavailable")


def missing_object(where: str, oid: str, branch: str) -> InvalidDataError:
    """The one error for an object a tree names that is not in the repository, a blob or a tree alike: a damaged
    repository is invalid data, whichever git command ran into it (``where``: its path on the branch, or "")."""
    what = f"{where} (object {oid})" if where else f"object {oid}"
    return InvalidDataError(
        f"{what} on branch {branch} is missing from the repository; it is damaged — run `git fsck`, or fetch the "
        "branch again"
    )


class ObjectMissing(Exception):
    """``git mktree`` was given an entry whose object is missing; the caller knows the folder and says where."""

    def __init__(self, name: str, oid: str) -> None:
        super().__init__(f"entry {name!r} object {oid} is unavailable")
        self.name = name
        self.oid = oid


def kind_of(mode: str) -> str:
    """A human name for a tree entry's mode."""
    return "file" if mode in FILE_MODES else _KINDS.get(mode, f"entry of mode {mode}")


class Entry(NamedTuple):
    """One entry of a tree, as ``git ls-tree`` shows it."""

    mode: str  # "100644", "040000", …
    type: str  # "blob", "tree", "commit"
    oid: str
    size: int | None = None  # with ``ls-tree -l`` only; None when git cannot tell (a missing or damaged blob)

    @property
    def is_file(self) -> bool:
        """A regular file (not a symbolic link, submodule or folder)."""
        return self.mode in FILE_MODES

    @property
    def is_tree(self) -> bool:
        """A folder."""
        return self.mode == MODE_TREE


Listing = dict[str, Entry]  # entry name → entry


class ObjectTooLarge(Exception):
    """An object is larger than the caller allowed; it was not read."""

    def __init__(self, kind: str, size: int) -> None:
        super().__init__(f"{kind} of {size} bytes")
        self.kind = kind
        self.size = size
        self.index = 0  # which of the objects asked for (read_many)


def _feed(stdin: IO[bytes], data: bytes) -> None:
    # Runs in a thread; a closed pipe means the batch was abandoned (the reader says why).
    with contextlib.suppress(OSError, ValueError):
        stdin.write(data)
        stdin.flush()


class CatFile:
    """A long-lived ``git cat-file --batch``, started on first use and restarted if it ever stops."""

    def __init__(self, git: Git) -> None:
        self._git = git
        self._proc: subprocess.Popen[bytes] | None = None

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self._git.popen("cat-file", "--batch", bufsize=_BUFFER)
        assert self._proc.stdin is not None and self._proc.stdout is not None
        return self._proc.stdin, self._proc.stdout

    def read(self, oid: str, limit: int | None = None) -> tuple[str, bytes] | None:
        """``(type, data)`` of object ``oid``, or ``None`` when it is missing.  ObjectTooLarge over ``limit``."""
        return self.read_many([oid], limit)[0]

    def resolve(self, refs: Iterable[str]) -> list[str | None]:
        """The commit each of ``refs`` (full ref names, validated by the caller) points at, ``None`` if missing.

        Reads resolve the tip this way, in the reader that is already running: no process per read.  (Writes
        look at refs with ``for-each-ref``, which also says whether a ref is symbolic or checked out.)
        """
        wanted = list(refs)
        for ref in wanted:
            if not ref.startswith("refs/") or any(ch.isspace() for ch in ref):
                raise InvalidDataError(f"{ref[:80]!r} is not a ref name")
        return [None if item is None or item[0] != "commit" else item[2] for item in self._batch(wanted, None)]

    def read_many(self, oids: Iterable[str], limit: int | None = None) -> list[tuple[str, bytes] | None]:
        """``read`` for many objects, fully pipelined; results in the order asked.

        A thread writes the requests while this one reads the answers, so git never waits for us and we never
        wait for a round trip (writing everything first could deadlock once both pipes are full).
        """
        wanted = list(oids)
        for oid in wanted:
            if not is_oid(oid):  # only ever object ids: a name with a newline would desynchronise the batch
                raise InvalidDataError(f"{oid[:80]!r} is not an object id; run `git fsck`")
        return [None if item is None else (item[0], item[1]) for item in self._batch(wanted, limit)]

    def _batch(self, wanted: list[str], limit: int | None) -> list[tuple[str, bytes, str] | None]:
        out: list[tuple[str, bytes, str] | None] = []
        if not wanted:
            return out
        stdin, stdout = self._pipes()
        requests = b"".join(oid.encode("ascii") + b"\n" for oid in wanted)
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

    def _answer(self, stdout: IO[bytes], limit: int | None) -> tuple[str, bytes, str] | None:
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
        return kind, data, fields[0].decode("ascii")

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
        # BaseException too: a Ctrl-C that lands in this wait while the interpreter shuts down, after the command
        # said what it did, would otherwise print Python's "Exception ignored … Traceback" under a true answer.
        with contextlib.suppress(BaseException):
            self.close()


def parse_listing(data: bytes) -> Listing:
    """Entries of ``git ls-tree -z [-l]`` output: name (a path with ``-r``) → :class:`Entry`."""
    entries: Listing = {}
    for record in data.split(b"\0"):
        if not record:
            continue
        match = _LS_TREE.fullmatch(record)
        if match is None:
            raise InvalidDataError(f"unexpected git ls-tree output {record[:80]!r}; run `git fsck`")
        mode, kind, oid, size, name = match.groups()
        # With -l, git prints "-" for a tree or submodule, and cannot print a size for a missing blob.
        number = int(size) if size is not None and size.isdigit() else None
        entries[name.decode("utf-8", "surrogateescape")] = Entry(mode.decode(), kind.decode(), oid.decode(), number)
    return entries


class Trees:
    """Tree listings through ``git ls-tree``, cached by the (immutable) id listed; ``branch`` names the branch in
    what a damaged tree's error says."""

    def __init__(self, git: Git, branch: str) -> None:
        self._git = git
        self._branch = branch
        self._cache: dict[tuple[str, bool], Listing] = {}

    def listing(self, treeish: str, *, sizes: bool = False, path: str = "") -> Listing:
        """The entries of tree (or commit) ``treeish``; with ``sizes``, each blob's size too (``ls-tree -l``).

        ``path`` is where the tree is on the branch ("" for the top folder), for the error when it is missing.
        """
        cached = self._cache.get((treeish, sizes)) or (None if sizes else self._cache.get((treeish, True)))
        if cached is not None:
            return cached
        args = ("ls-tree", "-z", "--full-tree", *(["-l"] if sizes else []), treeish)
        result = self._git.call(*args)
        if not result.ok:
            raise self._damaged(result, treeish, path)
        return self.remember(treeish, parse_listing(result.stdout), sizes=sizes)

    def _damaged(self, result: Result, treeish: str, path: str) -> StatefileError:
        """The error for a failed ``ls-tree`` of ``treeish``: invalid data when it is missing or not a tree."""
        if not any(sign in result.err for sign in ("not a tree object", "bad object", "not a valid object",
                                                  "Could not read", "malformed", "too-short", "corrupt")):  # fmt: skip
            return self._git.failure(result, "run `git fsck`")
        kind = self._git.call("cat-file", "-t", treeish)
        found = kind.stdout.decode("ascii", "replace").strip()
        if not kind.ok:
            return missing_object(path or "the top folder", treeish, self._branch)
        if found == "commit":  # the commit is there, its top folder is not: name the tree, not the commit
            header = self._git.call("cat-file", "commit", treeish).stdout.split(b"\n", 1)[0]
            tree = header.removeprefix(b"tree ").decode("ascii", "replace")
            return missing_object(path or "the top folder", tree if is_oid(tree) else treeish, self._branch)
        where = f"{path} (object {treeish})" if path else f"object {treeish}"
        if found == "tree":  # there, and a tree, but git cannot read its entries: the object itself is damaged
            said = one_line(result.err, 120)
            return InvalidDataError(f"{where} on branch {self._branch} is a damaged tree ({said}); run `git fsck`")
        return InvalidDataError(f"{where} on branch {self._branch} is a {found}, expected a tree; run `git fsck`")

    def remember(self, treeish: str, entries: Listing, *, sizes: bool = False) -> Listing:
        """Keep ``entries`` as the listing of ``treeish`` (a tree this process just wrote needs no ls-tree)."""
        if len(self._cache) > _CACHE:
            self._cache.clear()
        self._cache[(treeish, sizes)] = entries
        return entries

    def everything(self, treeish: str) -> Listing:
        """Every file below ``treeish`` (``ls-tree -r``): path → entry; folders are not listed, submodules are."""
        result = self._git.call("ls-tree", "-r", "-z", "--full-tree", treeish)
        if result.ok:
            return parse_listing(result.stdout)
        found = _UNREADABLE.search(result.err)
        if found is None:
            # A tree that is there but cannot be read (corrupt, not missing): git does not say which, so walk the
            # folders one listing at a time; the first that fails raises its own error, with its path.
            self._walk(treeish, "")
            raise self._damaged(result, treeish, "")
        # git names only the missing object: list again with the folders (-t, each printed before its contents)
        # to say which folder of the branch it is.
        again = self._git.call("ls-tree", "-r", "-t", "-z", "--full-tree", treeish)
        folders = [path for path, entry in parse_listing(again.stdout).items() if entry.oid == found[1]]
        raise missing_object(folders[0] if folders else "a folder", found[1], self._branch)

    def _walk(self, treeish: str, path: str) -> None:
        """List every folder below ``treeish`` (at ``path``), raising the error of the first that cannot be read."""
        for name, entry in self.listing(treeish, path=path).items():
            if entry.type == "tree":
                self._walk(entry.oid, f"{path}/{name}" if path else name)


class Writer:
    """Writes blobs, trees and commits with git's plumbing (see the module docstring)."""

    def __init__(self, git: Git) -> None:
        self._git = git

    def blobs(self, contents: list[bytes]) -> list[str]:
        """Write each of ``contents`` as a blob; their ids.  ``--no-filters``: the bytes are stored as given.

        One ``git hash-object -w --stdin`` per blob, all started before the first is waited for, so a write of a
        state file and its archive parts costs about one process's time, not one per file.
        """
        args = ("hash-object", "-w", "--no-filters", "--stdin")
        procs = [self._git.popen(*args, stderr=True) for _ in contents]
        results: list[Result] = []
        try:
            for proc, data in zip(procs, contents, strict=True):
                out, err = proc.communicate(data)
                results.append(Result(args, proc.returncode, out, err))
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        for result in results:
            if not result.ok:
                raise self._git.failure(result, "check the repository and retry")
        return [self._oid(result.stdout, "hash-object") for result in results]

    def trees(self) -> TreeWriter:
        """A writer of several trees through one ``git mktree --batch`` (use it as a context manager)."""
        return TreeWriter(self._git)

    def fsck(self, oids: Iterable[str]) -> str:
        """What git's fsck (``--strict``) says is wrong with objects ``oids``, "" when nothing is.

        The objects go into a pack that ``git index-pack --strict`` checks, object by object, with the same code
        as ``git fsck --strict`` and a remote's ``receive.fsckObjects`` — without looking at the rest of the
        repository.  Written to a temporary folder, never into the repository.
        """
        import tempfile  # ~10 ms to import; only an import of foreign files needs it

        listing = "".join(f"{oid}\n" for oid in dict.fromkeys(oids)).encode("ascii")
        pack = self._git.run("pack-objects", "--stdout", "-q", input=listing)
        with tempfile.TemporaryDirectory(prefix="statefile-fsck-") as folder:
            path = os.path.join(folder, "check.pack")
            with open(path, "wb") as handle:
                handle.write(pack)
            result = self._git.call("index-pack", "--strict", "-o", os.path.join(folder, "check.idx"), path)
        return "" if result.ok else one_line(result.err, 300)

    def commit(self, tree: str, parent: str | None, message: str, env: Mapping[str, str]) -> str:
        """Write a commit of ``tree`` on ``parent`` with ``message``; ``env`` holds the identity variables.

        ``user.useConfigOnly`` makes git refuse to guess an identity from the host name: the caller then retries
        with statefile's default identity (see :meth:`GitStore._identity_env`).
        """
        args = ["-c", "user.useConfigOnly=true", "-c", "i18n.commitEncoding=UTF-8", "commit-tree", "--no-gpg-sign",
                tree, *(["-p", parent] if parent else [])]  # fmt: skip
        result = self._git.call(*args, input=message.encode("utf-8"), env=env)
        if not result.ok:
            if _identity_missing(result.err):
                raise IdentityMissing(result.err)
            raise self._git.failure(result, "check the repository and retry")
        return self._oid(result.stdout, "commit-tree")

    @staticmethod
    def _oid(out: bytes, what: str) -> str:
        oid = out.decode("ascii", "replace").strip()
        if not is_oid(oid):
            raise GitError(f"git {what} printed {oid[:80]!r}, not an object id; check the git installation")
        return oid


class TreeWriter:
    """Writes trees, children before parents, through one interactive ``git mktree -z --batch``."""

    def __init__(self, git: Git) -> None:
        self._git = git
        self._proc: subprocess.Popen[bytes] | None = None
        self.written: list[str] = []  # every tree id written, in order

    def __enter__(self) -> TreeWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, entries: Mapping[str, Entry]) -> str:
        """Write a tree of ``entries`` (git sorts them and checks each object exists); its id.

        :class:`ObjectMissing` when an entry's object is not in the repository.
        """
        if self._proc is None:
            self._proc = self._git.popen("mktree", "-z", "--batch", stderr=True)
        assert self._proc.stdin is not None and self._proc.stdout is not None
        lines = b"".join(f"{e.mode} {e.type} {e.oid}\t".encode() + name.encode("utf-8", "surrogateescape") + b"\0"
                         for name, e in entries.items())  # fmt: skip
        try:
            # An empty record ends the tree; an empty tree is one more (mktree skips a tree with no entries).
            self._proc.stdin.write(lines + b"\0" if lines else b"\0")
            self._proc.stdin.flush()
            answer = self._proc.stdout.readline()
        except OSError:
            answer = b""
        if not answer:
            raise self._failed()
        oid = Writer._oid(answer, "mktree")
        self.written.append(oid)
        return oid

    def _failed(self) -> StatefileError | ObjectMissing:
        proc, self._proc = self._proc, None
        assert proc is not None
        # communicate() closes stdin itself (a pipe git already closed is fine) and reads what git said; closing
        # stdin first would make it flush a closed file (a ValueError, not git's message).
        try:
            _, err = proc.communicate(timeout=NETWORK_TIMEOUT)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            proc.kill()
            err = proc.stderr.read() if proc.stderr is not None else b""
            proc.wait()
        text = err.decode("utf-8", "surrogateescape")
        missing = _UNAVAILABLE.search(text)
        if missing is not None:
            return ObjectMissing(missing[1], missing[2])
        return self._git.failure(Result(("mktree",), proc.returncode or 1, b"", err), "check the repository and retry")

    def close(self) -> None:
        """End the ``git mktree`` process."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.communicate(timeout=NETWORK_TIMEOUT)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


class IdentityMissing(Exception):
    """git has no configured identity (and was told not to guess one)."""


_IDENTITY_MISSING = ("auto-detection is disabled", "Author identity unknown", "Committer identity unknown",
                     "empty ident name", "unable to auto-detect")  # fmt: skip


def _identity_missing(stderr: str) -> bool:
    return any(sign in stderr for sign in _IDENTITY_MISSING)
