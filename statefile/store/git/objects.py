"""Objects: read through one long-lived ``git cat-file --batch``, written by one ``fast-import`` and ``commit-tree``."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from statefile.defaults import BOT_EMAIL, BOT_NAME
from statefile.errors import GitError, InvalidDataError, StatefileError, UsageError
from statefile.store.atomic import check_lines, read_limit, too_large
from statefile.store.git.runner import Git, Result, is_oid, one_line

MODE_TREE = "040000"
MODE_FILE = "100644"
_KINDS = {"120000": "a symbolic link", "160000": "a submodule", MODE_TREE: "a folder"}
_TYPES = {MODE_TREE: "tree", "160000": "commit"}

# Requests written before their answers are read: at most ~20 KB (ref names are short), far below a pipe buffer.
_SLICE = 64
_BUFFER = 1 << 16  # pipe buffers for the long-lived reader: most state files are a few KB to 30 KB.
_CACHE = 256  # how many listings a store keeps: the trees of the current tip and its archive folders.
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


def is_file_mode(mode: str) -> bool:
    """Whether a tree entry is a regular file: git reads any ``100xxx`` mode (100664, 100600, …) as one."""
    return mode.startswith("100")


def canonical_mode(mode: str) -> str:
    """The mode git writes for an entry (its ``canon_mode``): a file is 100755 or 100644, the rest as it is."""
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


Listing = dict[str, Entry]  # entry name → entry


class ObjectTooLarge(Exception):
    """An object larger than the caller allowed, not read; ``args``: its index among those asked for, its size."""


class Objects:
    """The objects of one branch's repository: read through a long-lived ``git cat-file --batch`` (started on first
    use, restarted if it ever stops), tree listings cached by id, blobs of at most a read limit of ``max_bytes``;
    and the trees and commits a write makes."""

    def __init__(self, git: Git, branch: str, max_bytes: int) -> None:
        self._git = git
        self._branch = branch
        self._max_bytes = max_bytes
        self._proc: subprocess.Popen[bytes] | None = None
        self._cache: dict[tuple[str, bool], Listing] = {}
        self._identity: dict[str, str] = {}  # statefile's default identity, once git was found to have none

    def resolve(self, refs: Iterable[str]) -> list[str | None]:
        """The commit each of ``refs`` (full ref names, validated by the caller) points at, ``None`` if missing."""
        found = self._batch(list(refs), None, lambda ref: ref.startswith("refs/") and ref.split()[0] == ref)
        return [None if item is None or item[0] != "commit" else item[2] for item in found]

    def read_many(self, oids: Iterable[str], limit: int | None = None) -> list[tuple[str, bytes] | None]:
        """``(type, data)`` of each object (``None``: missing), pipelined, in order; ObjectTooLarge over ``limit``."""
        return [None if item is None else (item[0], item[1]) for item in self._batch(list(oids), limit, is_oid)]

    def _batch(
        self, wanted: list[str], limit: int | None, valid: Callable[[str], bool]
    ) -> list[tuple[str, bytes, str] | None]:
        for name in wanted:
            if not valid(name):  # a name with a newline or a space would desynchronise the batch
                raise InvalidDataError(f"{name[:80]!r} is not an object id or a ref name; run `git fsck`")
        out: list[tuple[str, bytes, str] | None] = []
        if not wanted:
            return out
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self._git.popen("cat-file", "--batch", bufsize=_BUFFER)
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        try:
            # Requests go in slices far below a pipe buffer, each answered before the next: a write never blocks.
            for start in range(0, len(wanted), _SLICE):
                names = wanted[start : start + _SLICE]
                stdin.write(b"".join(name.encode("ascii") + b"\n" for name in names))
                stdin.flush()
                for _ in names:
                    header = stdout.readline()
                    fields = header.split()
                    if len(fields) == 2 and fields[1] in (b"missing", b"ambiguous"):
                        out.append(None)
                        continue
                    if len(fields) != 3:
                        raise ValueError(f"unexpected answer {header[:80]!r}" if header else "no answer")
                    kind, size = fields[1].decode("ascii"), int(fields[2])
                    if limit is not None and size > limit:
                        # Reading and discarding it would still cost its whole size in time; stopping git does not.
                        self.close()
                        raise ObjectTooLarge(len(out), size)
                    data = stdout.read(size)
                    if len(data) != size or stdout.read(1) != b"\n":
                        raise ValueError("short read")
                    out.append((kind, data, fields[0].decode("ascii")))
        except (BrokenPipeError, ConnectionError, ValueError) as exc:
            self.close()
            raise GitError(f"git cat-file stopped unexpectedly ({exc}); run `git fsck` and retry") from None
        return out

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
        # BaseException too: a Ctrl-C here at shutdown would print "Exception ignored … Traceback" under an answer.
        with contextlib.suppress(BaseException):
            self.close()

    def listing(self, treeish: str, *, sizes: bool = False, path: str = "") -> Listing:
        """The entries of tree (or commit) ``treeish``; with ``sizes``, each blob's size too (``ls-tree -l``)."""
        cached = self._cache.get((treeish, sizes)) or (None if sizes else self._cache.get((treeish, True)))
        if cached is not None:
            return cached
        entries = None if sizes else self._read(treeish)
        if entries is None:
            result = self._git.call("ls-tree", "-z", "--full-tree", *(["-l"] if sizes else []), treeish)
            if not result.ok:
                raise self._damaged(result, treeish, path)
            entries = {}
            for record in filter(None, result.stdout.split(b"\0")):
                if (match := _LS_TREE.fullmatch(record)) is None:
                    raise InvalidDataError(f"unexpected git ls-tree output {record[:80]!r}; run `git fsck`")
                mode, kind, oid, size, name = (
                    bytes(group).decode("utf-8", "surrogateescape") for group in match.groups(b"-")
                )
                # With -l, git prints "-" for a tree or submodule, and cannot print a size for a missing blob.
                entries[name] = Entry(mode, kind, oid, int(size) if size.isdigit() else None)
        if len(self._cache) > _CACHE:
            self._cache.clear()
        self._cache[(treeish, sizes)] = entries
        return entries

    def _read(self, treeish: str) -> Listing | None:
        """The entries read in the running ``cat-file``; ``None`` leaves it to ``ls-tree``, which explains damage."""
        item = self.read_many([treeish])[0] if is_oid(treeish) else None
        if item is not None and item[0] == "commit":
            item = self.read_many([tree])[0] if (tree := _tree_of(item[1])) else None
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
        item = self.read_many([commit])[0] if is_oid(commit) else None
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
            return missing_object(path or "the top folder", self.root(treeish) or treeish, self._branch)
        where = f"{path} (object {treeish})" if path else f"object {treeish}"
        if found == "tree":  # there, and a tree, but git cannot read its entries: the object itself is damaged
            said = one_line(result.err, 120)
            return InvalidDataError(f"{where} on branch {self._branch} is a damaged tree ({said}); run `git fsck`")
        return InvalidDataError(f"{where} on branch {self._branch} is a {found}, expected a tree; run `git fsck`")

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

    def blobs(self, oids: list[str], paths: list[str]) -> list[bytes]:
        """The data of blobs ``oids`` (at ``paths``) in one batch; those over the read limit are refused unread."""
        try:
            found = self.read_many(oids, read_limit(self._max_bytes))
        except ObjectTooLarge as exc:
            index, size = exc.args
            where = paths[index] or f"object {oids[index]}"
            raise too_large(f"{where} on branch {self._branch}", size, self._max_bytes) from None
        out = []
        for oid, path, item in zip(oids, paths, found, strict=True):
            where = f"{path} (object {oid})" if path else f"object {oid}"
            if item is None:
                raise missing_object(path, oid, self._branch)
            if item[0] != "blob":
                raise InvalidDataError(f"{where} is a {item[0]}, expected a blob; run `git fsck`")
            out.append(check_lines(f"{where} on branch {self._branch}", item[1], self._max_bytes))
        return out

    def lookup(self, commit: str | None, path: str, *, folder: bool = False) -> Entry | None:
        """The entry of ``path`` in ``commit``'s tree: a regular file (with ``folder``, a folder) or nothing."""
        parts = path.split("/")
        entry = None if commit is None else Entry(MODE_TREE, "tree", commit)
        for index, part in enumerate(parts):
            if entry is None:
                return None
            entry = self.listing(entry.oid, path="/".join(parts[:index])).get(part)
            if entry is not None:
                self.require(entry, "/".join(parts[: index + 1]), folder=folder or index < len(parts) - 1)
        return entry

    def require(self, entry: Entry, path: str, *, folder: bool = False) -> None:
        """Refuse anything but a regular file (with ``folder``, a folder): statefile follows no link or submodule."""
        if not (entry.mode == MODE_TREE if folder else entry.is_file):
            what = "a folder" if folder else "a regular file"
            raise InvalidDataError(f"{path} on branch {self._branch} is {kind_of(entry.mode)}, not {what}; "
                                   f"statefile will not follow it — replace it with {what}")  # fmt: skip

    def _edits(
        self, listing: Listing | None, changes: Mapping[str, bytes | None], prefix: str, kept: dict[str, str]
    ) -> list[bytes]:
        """fast-import commands: the folder's other entries (so git checks them; ``kept``: id → path), then changes."""
        files: dict[str, bytes | None] = {}
        folders: dict[str, dict[str, bytes | None]] = {}
        for path, data in changes.items():
            head, slash, rest = path.partition("/")
            if slash:
                folders.setdefault(head, {})[rest] = data
            else:
                files[head] = data
        for name in files.keys() & folders.keys():
            raise UsageError(f"{prefix}{name} cannot be both a file and a folder in one write")
        entries = listing or {}
        edits = []
        for name, entry in entries.items():
            if name not in files and name not in folders:
                kept[entry.oid] = prefix + name
                edits.append(f"M {canonical_mode(entry.mode)} {entry.oid} ".encode() + _quoted(prefix + name))
        for name, data in files.items():
            if (current := entries.get(name)) is not None:
                self.require(current, prefix + name)
            if data is not None:
                mode = canonical_mode(current.mode) if current else MODE_FILE
                edits.append(f"M {mode} inline ".encode() + _quoted(prefix + name) + b"\ndata %d\n" % len(data) + data)
            elif current is not None:
                edits.append(b"D " + _quoted(prefix + name))
        for name, sub in folders.items():
            if (current := entries.get(name)) is not None:
                self.require(current, prefix + name, folder=True)
            below = self.listing(current.oid, path=prefix + name) if current is not None else None
            edits += self._edits(below, sub, f"{prefix}{name}/", kept)
        return edits

    def write(self, base: str | None, changes: Mapping[str, bytes | None]) -> str:
        """``base``'s tree with ``changes`` (path → bytes, ``None`` deletes) made by one ``fast-import``: the new top
        tree's id; git checks every object the edits name.  The scratch commit sets no ref (``reset``)."""
        kept: dict[str, str] = {}  # id → path of every entry carried over, to name a missing one
        edits = self._edits(self.listing(base) if base else None, changes, "", kept)
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
                raise missing_object(kept.get(missing[1], ""), missing[1], self._branch)
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
        """Write a commit of ``tree`` on ``parent`` by ``author`` (name, email), else git's identity, else statefile's
        (``user.useConfigOnly``: git never guesses one from the host name)."""
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


def _tree_of(commit: bytes) -> str:
    tree = commit.split(b"\n", 1)[0].removeprefix(b"tree ").decode("ascii", "replace")
    return tree if commit.startswith(b"tree ") and is_oid(tree) else ""


_IDENTITY_MISSING = ("auto-detection is disabled", "Author identity unknown", "Committer identity unknown",
                     "empty ident name", "unable to auto-detect")  # fmt: skip


def _quoted(path: str) -> bytes:
    """``path`` as fast-import reads a quoted path (any name a tree can hold)."""
    raw = path.encode("utf-8", "surrogateescape").replace(b"\\", b"\\\\").replace(b'"', b'\\"')
    return b'"' + raw.replace(b"\n", b"\\n") + b'"'
