"""Objects: read through one long-lived ``git cat-file --batch`` (pipelined, trees parsed from it, cached by id),
written with git's plumbing (blobs and trees by one ``fast-import``, the commit by ``commit-tree``): complete or absent.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Iterable
from typing import IO, NamedTuple

from statefile.defaults import BOT_EMAIL, BOT_NAME
from statefile.errors import GitError, InvalidDataError, StatefileError
from statefile.store.git.runner import Git, Result, is_oid, one_line

MODE_TREE = "040000"
MODE_FILE = "100644"
_KINDS = {"120000": "a symbolic link", "160000": "a submodule", MODE_TREE: "a folder"}
_TYPES = {MODE_TREE: "tree", "160000": "commit"}

# Requests small enough to write before reading the answers: far below a pipe buffer, so writing never blocks.
_SMALL_WRITE = 4096
# Pipe buffers for the long-lived reader: most state files are a few KB to 30 KB.
_BUFFER = 1 << 16
# How many listings a store keeps: the trees of the current tip and its archive folders.
_CACHE = 256
_LS_TREE = re.compile(rb"(\d{6}) (\w+) ([0-9a-f]+)(?: +(\S+))?\t(.*)", re.S)
# How fast-import (LC_ALL=C) says an edit's object is missing, and where it put the crash report when it died.
_NOT_FOUND = re.compile(r"(?:Blob|Tree) not found: M \d+ ([0-9a-f]{40,64}) ")
_CRASH_REPORT = re.compile(r"dumping crash report to (.+)")
_SCRATCH_REF = "refs/statefile/scratch"  # the ref fast-import's commit is made on; the import resets it, never sets it


def missing_object(where: str, oid: str, branch: str) -> InvalidDataError:
    """The one error for an object a tree names that the repository lacks (``where``: its path, or "")."""
    what = f"{where} (object {oid})" if where else f"object {oid}"
    return InvalidDataError(
        f"{what} on branch {branch} is missing from the repository; it is damaged — run `git fsck`, or fetch the "
        "branch again"
    )


class ObjectMissing(Exception):
    """An edit carried over an entry whose object is missing; the caller knows its path and says where."""

    def __init__(self, oid: str) -> None:
        super().__init__(f"object {oid} is missing")
        self.oid = oid


def is_file_mode(mode: str) -> bool:
    """Whether a tree entry is a regular file: git reads any ``100xxx`` mode as one (old tools wrote 100664,
    others write 100600); only 100644 and 100755 are canonical."""
    return mode.startswith("100")


def canonical_mode(mode: str) -> str:
    """The mode git writes for an entry (its ``canon_mode``): a regular file is 100755 when its owner may run it,
    100644 otherwise; any other mode as it is."""
    return ("100755" if int(mode, 8) & 0o100 else MODE_FILE) if is_file_mode(mode) else mode


def kind_of(mode: str) -> str:
    """A human name for a tree entry's mode, with its article ("a folder")."""
    return "a file" if is_file_mode(mode) else _KINDS.get(mode, f"an entry of mode {mode}")


class Entry(NamedTuple):
    """One entry of a tree, as ``git ls-tree`` shows it."""

    mode: str  # "100644", "040000", …
    type: str  # "blob", "tree", "commit"
    oid: str
    size: int | None = None  # with ``ls-tree -l`` only; None when git cannot tell (a missing or damaged blob)

    @property
    def is_file(self) -> bool:
        return is_file_mode(self.mode)

    @property
    def is_tree(self) -> bool:
        return self.mode == MODE_TREE


Listing = dict[str, Entry]  # entry name → entry


class ObjectTooLarge(Exception):
    """An object is larger than the caller allowed; it was not read."""

    def __init__(self, kind: str, size: int) -> None:
        super().__init__(f"{kind} of {size} bytes")
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

    def resolve(self, refs: Iterable[str]) -> list[str | None]:
        """The commit each of ``refs`` (full ref names, validated by the caller) points at, ``None`` if missing."""
        wanted = list(refs)
        for ref in wanted:
            if not ref.startswith("refs/") or any(ch.isspace() for ch in ref):
                raise InvalidDataError(f"{ref[:80]!r} is not a ref name")
        return [None if item is None or item[0] != "commit" else item[2] for item in self._batch(wanted, None)]

    def read_many(self, oids: Iterable[str], limit: int | None = None) -> list[tuple[str, bytes] | None]:
        """``(type, data)`` of each object (``None``: missing), pipelined, in order; ObjectTooLarge over ``limit``."""
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
    """Tree listings, cached by the (immutable) id listed; ``branch`` names the branch in a damaged tree's error."""

    def __init__(self, git: Git, cat: CatFile, branch: str) -> None:
        self._git = git
        self._cat = cat
        self._branch = branch
        self._cache: dict[tuple[str, bool], Listing] = {}

    def listing(self, treeish: str, *, sizes: bool = False, path: str = "") -> Listing:
        """The entries of tree (or commit) ``treeish``; with ``sizes``, each blob's size too (``ls-tree -l``)."""
        cached = self._cache.get((treeish, sizes)) or (None if sizes else self._cache.get((treeish, True)))
        if cached is not None:
            return cached
        if not sizes and (entries := self._read(treeish)) is not None:
            return self._remember(treeish, entries)
        result = self._git.call("ls-tree", "-z", "--full-tree", *(["-l"] if sizes else []), treeish)
        if not result.ok:
            raise self._damaged(result, treeish, path)
        return self._remember(treeish, parse_listing(result.stdout), sizes=sizes)

    def _read(self, treeish: str) -> Listing | None:
        """The entries read in the running ``cat-file``; ``None`` leaves it to ``ls-tree``, which explains damage."""
        item = self._cat.read_many([treeish])[0] if is_oid(treeish) else None
        if item is not None and item[0] == "commit":
            tree = _tree_of(item[1])
            item = self._cat.read_many([tree])[0] if tree else None
        if item is None or item[0] != "tree":
            return None
        data, size, entries, pos = item[1], len(treeish) // 2, {}, 0
        while pos < len(data):
            space = data.find(b" ", pos)
            nul = data.find(b"\0", space + 1)
            if space < 0 or nul < 0 or nul + 1 + size > len(data):
                return None
            mode = data[pos:space].decode("ascii", "replace").zfill(6)
            name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
            entries[name] = Entry(mode, _TYPES.get(mode, "blob"), data[nul + 1 : nul + 1 + size].hex())
            pos = nul + 1 + size
        return entries

    def root(self, commit: str) -> str:
        """The id of ``commit``'s top tree, read in the running ``cat-file`` ("" when it cannot be read)."""
        item = self._cat.read_many([commit])[0] if is_oid(commit) else None
        return _tree_of(item[1]) if item is not None and item[0] == "commit" else ""

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
            tree = _tree_of(self._git.call("cat-file", "commit", treeish).stdout)
            return missing_object(path or "the top folder", tree or treeish, self._branch)
        where = f"{path} (object {treeish})" if path else f"object {treeish}"
        if found == "tree":  # there, and a tree, but git cannot read its entries: the object itself is damaged
            said = one_line(result.err, 120)
            return InvalidDataError(f"{where} on branch {self._branch} is a damaged tree ({said}); run `git fsck`")
        return InvalidDataError(f"{where} on branch {self._branch} is a {found}, expected a tree; run `git fsck`")

    def _remember(self, treeish: str, entries: Listing, *, sizes: bool = False) -> Listing:
        if len(self._cache) > _CACHE:
            self._cache.clear()
        self._cache[(treeish, sizes)] = entries
        return entries

    def everything(self, treeish: str, path: str = "") -> Listing:
        """Every file and submodule below ``treeish`` (at ``path``): path → entry; a damaged folder raises, named."""
        found: Listing = {}
        for name, entry in self.listing(treeish, path=path).items():
            where = f"{path}/{name}" if path else name
            if entry.type == "tree":
                found.update(self.everything(entry.oid, where))
            else:
                found[where] = entry
        return found


def _tree_of(commit: bytes) -> str:
    """The tree a commit object's text names ("" when it names none)."""
    tree = commit.split(b"\n", 1)[0].removeprefix(b"tree ").decode("ascii", "replace")
    return tree if commit.startswith(b"tree ") and is_oid(tree) else ""


class Writer:
    """Writes blobs, trees and commits with git's plumbing (see the module docstring)."""

    def __init__(self, git: Git) -> None:
        self._git = git
        self._identity: dict[str, str] = {}  # statefile's default identity, once git was found to have none

    def tree(self, base: str | None, edits: list[bytes]) -> str:
        """Apply ``edits`` (fast-import's ``M``/``D`` commands, one per item) to ``base``'s tree in one ``git
        fast-import``: the new top tree's id.  git checks that every object an ``M`` names exists; the commit
        fast-import needs around the edits sets no ref (``reset``) and is garbage for ``git gc``."""
        head = f"commit {_SCRATCH_REF}\ncommitter statefile <statefile> 0 +0000\ndata 0\n"
        stream = (head + (f"from {base}\n" if base else "")).encode("ascii") + b"".join(e + b"\n" for e in edits)
        # core.ignoreCase would make fast-import take one of two names differing only in case for the other.
        args = ("-c", "core.ignoreCase=false", "fast-import", "--quiet", "--done", "--cat-blob-fd=1")
        result = self._git.call(*args, input=stream + f'ls ""\nreset {_SCRATCH_REF}\ndone\n'.encode("ascii"))
        if not result.ok:
            if (crash := _CRASH_REPORT.search(result.err)) is not None:  # fast-import's report of its own death
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(self._git.cwd, crash[1].strip()))
            if (missing := _NOT_FOUND.search(result.err)) is not None:
                raise ObjectMissing(missing[1])
            raise self._git.failure(result, "check the repository and retry")
        fields = result.stdout.split()  # "040000 tree <id>\t"
        return self._oid(fields[2] if len(fields) == 3 else result.stdout, "fast-import")

    def fsck(self, tree: str, old: str | None) -> str:
        """What ``index-pack --strict`` says is wrong with the objects of ``tree`` that ``old`` lacks ("" if none)."""
        revs = f"{tree}\n" + (f"^{old}\n" if old else "")
        pack = self._git.run("pack-objects", "--stdout", "-q", "--revs", input=revs.encode("ascii"))
        import tempfile  # ~10 ms to import: only imports need it

        with tempfile.TemporaryDirectory(prefix="statefile-") as folder:  # outside the repository
            path = os.path.join(folder, "check.pack")
            with open(path, "wb") as handle:
                handle.write(pack)
            result = self._git.call("index-pack", "--strict", "-o", path[:-4] + "idx", path)
        return "" if result.ok else one_line(result.err, 300)

    def commit(self, tree: str, parent: str | None, message: str, author: tuple[str, str] | None) -> str:
        """Write a commit of ``tree`` on ``parent``: by ``author`` (name, email) when given, else git's identity.
        ``user.useConfigOnly`` makes git refuse to guess one from the host name: where git has none, statefile's
        default fills what the environment lacks (and is kept for this writer's later commits)."""
        args = ["-c", "user.useConfigOnly=true", "-c", "i18n.commitEncoding=UTF-8", "commit-tree", "--no-gpg-sign",
                tree, *(["-p", parent] if parent else [])]  # fmt: skip
        given = {} if author is None else {"GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1]}
        result = self._git.call(*args, input=message.encode("utf-8"), env=self._identity or given)
        if not result.ok and any(sign in result.err for sign in _IDENTITY_MISSING):
            env = os.environ
            name, email = author or (env.get("GIT_AUTHOR_NAME") or BOT_NAME, env.get("GIT_AUTHOR_EMAIL") or BOT_EMAIL)
            self._identity = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
                              "GIT_COMMITTER_NAME": env.get("GIT_COMMITTER_NAME") or name,
                              "GIT_COMMITTER_EMAIL": env.get("GIT_COMMITTER_EMAIL") or email}  # fmt: skip
            result = self._git.call(*args, input=message.encode("utf-8"), env=self._identity)
        if not result.ok:
            raise self._git.failure(result, "check the repository and retry")
        return self._oid(result.stdout, "commit-tree")

    @staticmethod
    def _oid(out: bytes, what: str) -> str:
        oid = out.decode("ascii", "replace").strip()
        if not is_oid(oid):
            raise GitError(f"git {what} printed {oid[:80]!r}, not an object id; check the git installation")
        return oid


_IDENTITY_MISSING = ("auto-detection is disabled", "Author identity unknown", "Committer identity unknown",
                     "empty ident name", "unable to auto-detect")  # fmt: skip
