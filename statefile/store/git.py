"""State files on a git branch, written without a checkout: objects through gitdb, the ref by compare-and-swap.

How a write works (the user's HEAD, index and working tree are never read or written):

1. Resolve the branch tip: ``refs/heads/{branch}``, else ``refs/remotes/{remote}/{branch}`` (a CI checkout that
   fetched every ref has only the remote-tracking ref), else nothing (the first write makes an orphan commit).
   With a remote, fetch the branch first and build on the remote's tip.
2. Read the files from the tip through one long-lived ``git cat-file --batch`` (no process per object; see
   :mod:`statefile.store.gitio`, which also finds the repository and resolves refs without GitPython's 70–90 ms
   import), call the update function, and write blob, trees and commit with ``odb.store`` (gitdb writes each
   loose object to a temporary file and renames it into place, so an object is either complete or absent).
3. Move the ref last, with ``git update-ref REF NEW OLD``: git moves it only if it still points at OLD, so a
   concurrent writer is detected, never overwritten.  With a remote, the push is the compare-and-swap (a plain,
   never forced, push is refused unless it fast-forwards), and the local refs follow after it succeeds.
4. On a conflict, start again from 1 (``fn`` is applied afresh to the new tip), with jittered exponential backoff,
   up to ``max_tries`` times.  Objects written by a lost attempt are unreferenced garbage that ``git gc`` removes.

A process killed at any moment therefore leaves the branch at the old commit or the new one, never at a commit
whose objects are missing.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING

from statefile.errors import (
    BudgetError,
    ConflictError,
    GitError,
    InvalidDataError,
    NotFoundError,
    StatefileError,
    UsageError,
)
from statefile.model.archive import archive_dir
from statefile.store import (
    BOT_EMAIL,
    BOT_NAME,
    DEFAULT_BRANCH,
    DEFAULT_MAX_BYTES,
    LogEntry,
    Store,
    UpdateFn,
    checked_bytes,
    decode_text,
    first_line,
    newest_part,
    plan_update,
    sorted_parts,
    state_path,
)
from statefile.store.files import read_limit, too_large
from statefile.store.gitio import CatFile, ObjectTooLarge, RefReader, discover
from statefile.store.names import (
    is_program_name,
    parse_identity,
    redact,
    validate_branch,
    validate_part,
    validate_path,
    validate_program,
    validate_remote,
)

if TYPE_CHECKING:
    from gitdb.db.loose import LooseObjectDB

ZERO = "0" * 40
MODE_TREE = b"40000"
MODE_FILE = b"100644"
FILE_MODES = frozenset({b"100644", b"100755", b"100664"})
_KINDS = {b"120000": "symbolic link", b"160000": "submodule", MODE_TREE: "folder"}
# Reasons a push is refused that mean "someone else got there first": fetch, re-apply and try again.
_RETRYABLE_PUSH = ("fetch first", "non-fast-forward", "stale info", "cannot lock ref", "failed to update ref",
                   "incorrect old value", "failed to lock")  # fmt: skip
_NETWORK_TIMEOUT = 300.0

Tree = dict[bytes, tuple[bytes, bytes]]  # entry name → (mode, binary sha), in git's order


# -- pure helpers: git's tree and commit encodings -----------------------------------------------------------------


def parse_tree(data: bytes) -> Tree:
    """Decode a raw tree object into ``{name: (mode, binsha)}``."""
    entries: Tree = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        entries[data[space + 1 : nul]] = (data[pos:space], data[nul + 1 : nul + 21])
        pos = nul + 21
    return entries


def encode_tree(entries: Tree) -> bytes:
    """Encode ``entries`` as a raw tree object, sorted the way git requires (a folder sorts as ``name/``)."""

    def key(item: tuple[bytes, tuple[bytes, bytes]]) -> bytes:
        return item[0] + b"/" if item[1][0] == MODE_TREE else item[0]

    return b"".join(mode + b" " + name + b"\0" + sha for name, (mode, sha) in sorted(entries.items(), key=key))


def object_sha(kind: str, data: bytes) -> bytes:
    """The binary sha git gives an object of ``kind`` with ``data`` (computed without writing it)."""
    import hashlib  # here, not at the top: loading OpenSSL costs ~10 ms that read-only commands need not pay

    return hashlib.sha1(b"%s %d\0" % (kind.encode(), len(data)) + data).digest()


def kind_of(mode: bytes) -> str:
    """A human name for a tree entry's mode."""
    return "file" if mode in FILE_MODES else _KINDS.get(mode, f"entry of mode {mode.decode(errors='replace')}")


def clean_message(message: str) -> str:
    """A commit message as stored: trailing spaces and blank edges removed, one final newline."""
    text = "\n".join(line.rstrip() for line in message.strip().splitlines())
    if not text:
        raise UsageError("empty commit message; describe the change, e.g. 'statefile: record iteration 57 of perf'")
    if "\x00" in text:
        raise UsageError("the commit message contains a NUL character; remove it")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the commit message is not valid Unicode text; remove undecodable characters") from None
    return text + "\n"


def _one_line(text: str, limit: int = 400) -> str:
    line = " | ".join(part.strip() for part in text.splitlines() if part.strip())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _is_lock_busy(stderr: str) -> bool:
    # "Unable to create '…/x.lock': File exists." — another git process holds the lock (or a killed one left it);
    # "cannot lock ref '…': is at X but expected Y" — a concurrent fetch in the same clone moved the ref first.
    return any(sign in stderr for sign in ("File exists", "Unable to create", "cannot lock ref", "but expected"))


def git_error(exc: Exception, hint: str = "check the repository and retry") -> GitError:
    """A :class:`GitError` for a failed git command (e.g. GitPython's GitCommandError): one line, redacted."""
    return GitError(redact(f"git failed: {_one_line(str(exc))}; {hint}"))


class GitStore(Store):
    """State files on a branch of a git repository (see the module docstring for how writes work).

    Attributes: ``branch``, ``remote`` (``None`` for local-only), ``max_bytes``, ``max_tries``, and ``retries``
    (how many times the last write had to start again after a concurrent change).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        branch: str = DEFAULT_BRANCH,
        remote: str | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        author: str | None = None,
        max_tries: int = 10,
    ) -> None:
        self.branch = validate_branch(branch)
        self.remote = None if remote is None else validate_remote(remote)
        if not isinstance(max_bytes, int) or max_bytes < 1:
            raise UsageError(f"max_bytes must be a positive number of bytes, not {max_bytes!r}")
        if not isinstance(max_tries, int) or max_tries < 1:
            raise UsageError(f"max_tries must be at least 1, not {max_tries!r}")
        self.max_bytes = max_bytes
        self.max_tries = max_tries
        self.retries = 0
        self._author = None if author is None else parse_identity(author)
        self._exe = shutil.which("git") or "git"
        self._paths, configured = discover(path, self._exe)
        self._git_dir = str(self._paths.git_dir)
        self._common_dir = self._paths.common_dir
        self._local_ref = f"refs/heads/{self.branch}"
        if self.remote is not None and self.remote not in configured:
            raise NotFoundError(
                f"remote {self.remote!r} is not configured in {self._paths.top}; "
                f"configured remotes: {', '.join(configured) or 'none'} (add one with `git remote add`)"
            )
        # Reads fall back to the remote-tracking ref; without an explicit remote, origin first.
        names = [self.remote] if self.remote else sorted(configured, key=lambda n: (n != "origin", n))
        self._fallback = [n for n in names if n and not _ref_component_bad(n)]
        # Relative remote URLs (`git remote add x ../memory.git`) are resolved from the work tree's top, as the
        # user's own git commands would; GIT_DIR (below) pins the repository whatever the directory.
        self._cwd = str(self._paths.top)
        self._env = self._make_env()
        self._refs = RefReader(self._common_dir, self._git)
        # One long-lived reader; it looks at this repository whatever GIT_DIR the caller has set (self._env).
        self._cat = CatFile(self._exe, self._cwd, self._env)
        # gitdb's loose-object writer, made on the first write (reads never need it).
        self._loose: LooseObjectDB | None = None
        self._trees: dict[bytes, Tree] = {}
        self._listing: tuple[str, dict[str, tuple[int, str]]] | None = None
        self._roots: dict[str, bytes] = {}
        self._random = random.Random()

    def _make_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX")}
        env.update(
            GIT_DIR=self._git_dir,
            LC_ALL="C",  # we read git's messages (rejections, missing refs): keep them in English
            LANGUAGE="C",
            GIT_TERMINAL_PROMPT="0",  # a push must fail, not wait for a password nobody will type
            GIT_LITERAL_PATHSPECS="1",
        )
        return env

    def __repr__(self) -> str:
        where = f" via {self.remote}" if self.remote else ""
        return f"<GitStore {self._paths.top} branch {self.branch}{where}>"

    def close(self) -> None:
        """Stop the long-lived ``git cat-file`` process."""
        self._cat.close()

    # -- running git ---------------------------------------------------------------------------------------------

    def _git(self, *args: str, timeout: float = _NETWORK_TIMEOUT) -> subprocess.CompletedProcess[bytes]:
        # An argument list, never a shell; every name in it was validated, so none can be read as an option.
        try:
            return subprocess.run(
                [self._exe, *args],
                cwd=self._cwd,
                env=self._env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitError(f"git {_op(args)} did not finish within {timeout:.0f} s; check the network and the "
                           "remote, then retry") from None  # fmt: skip
        except OSError as exc:
            raise GitError(f"cannot run git ({exc.strerror}); install git and put it on PATH") from None

    def _failure(self, args: tuple[str, ...], proc: subprocess.CompletedProcess[bytes], hint: str) -> GitError:
        detail = _one_line(proc.stderr.decode("utf-8", "replace") or proc.stdout.decode("utf-8", "replace"))
        return GitError(redact(f"git {_op(args)} failed (exit {proc.returncode}): {detail}; {hint}"))

    def _run(self, *args: str, hint: str = "check the repository and retry") -> bytes:
        proc = self._git(*args)
        if proc.returncode != 0:
            raise self._failure(args, proc, hint)
        return proc.stdout

    # -- reading objects -----------------------------------------------------------------------------------------

    def _ref(self, name: str) -> str | None:
        # Loose and packed refs are read in-process (microseconds, no git process).  A stale answer is harmless:
        # the compare-and-swap that follows every write is what decides.
        return self._refs.resolve(name)

    def _tracking_ref(self, remote: str) -> str:
        return f"refs/remotes/{remote}/{self.branch}"

    def _tracking_tip(self) -> str | None:
        for remote in self._fallback:
            sha = self._ref(self._tracking_ref(remote))
            if sha is not None:
                return sha
        return None

    def tip(self) -> str | None:
        """The commit reads see: the local branch, else the remote-tracking branch, else ``None``."""
        local = self._ref(self._local_ref)
        return local if local is not None else self._tracking_tip()

    def _object(self, hexsha: str, kind: str, path: str = "") -> bytes:
        return self._objects([hexsha], kind, [path])[0]

    def _objects(self, shas: list[str], kind: str, paths: list[str]) -> list[bytes]:
        """The data of objects ``shas`` (all of ``kind``), read in one pipelined batch.

        Blobs larger than :func:`statefile.store.files.read_limit` of the budget are refused unread (InvalidDataError
        naming ``paths``): a state file an agent wrote is never that big, and reading one would cost memory
        without bound.
        """
        limit = read_limit(self.max_bytes) if kind == "blob" else None
        try:
            found = self._cat.read_many(shas, limit)
        except ObjectTooLarge as exc:
            where = paths[exc.index] or f"object {shas[exc.index]}"
            raise too_large(f"{where} on branch {self.branch}", exc.size, self.max_bytes) from None
        out = []
        for sha, item in zip(shas, found, strict=True):
            if item is None:
                raise InvalidDataError(
                    f"object {sha} is missing from {self._git_dir}; the repository is damaged — run `git fsck`"
                )
            if item[0] != kind:
                raise InvalidDataError(f"object {sha} is a {item[0]}, expected a {kind}; run `git fsck`")
            out.append(item[1])
        return out

    def _root(self, commit: str) -> bytes:
        root = self._roots.get(commit)
        if root is None:
            head = self._object(commit, "commit").split(b"\n", 1)[0]
            if not head.startswith(b"tree "):
                raise InvalidDataError(f"commit {commit} has no tree; run `git fsck`")
            root = bytes.fromhex(head[5:].decode())
            if len(self._roots) > 256:
                self._roots.clear()
            self._roots[commit] = root
        return root

    def _tree(self, binsha: bytes) -> Tree:
        entries = self._trees.get(binsha)
        if entries is None:
            entries = self._remember(binsha, parse_tree(self._object(binsha.hex(), "tree")))
        return entries

    def _remember(self, binsha: bytes, entries: Tree) -> Tree:
        # Trees are immutable, so caching by sha is always right; the cache only needs the current tip's trees.
        if len(self._trees) > 256:
            self._trees.clear()
        self._trees[binsha] = entries
        return entries

    def _lookup(self, root: bytes | None, path: str) -> tuple[bytes, bytes] | None:
        """The (mode, binsha) of ``path`` under tree ``root``; folders on the way must be real folders."""
        parts = path.split("/")
        tree = root
        for index, part in enumerate(parts):
            if tree is None:
                return None
            entry = self._tree(tree).get(part.encode())
            if entry is None or index == len(parts) - 1:
                return entry
            if entry[0] != MODE_TREE:
                where = "/".join(parts[: index + 1])
                raise InvalidDataError(
                    f"{where} on branch {self.branch} is a {kind_of(entry[0])}, not a folder; statefile will not "
                    "follow it — replace it with a folder"
                )
            tree = entry[1]
        return None

    def _require_file(self, mode: bytes, path: str) -> None:
        if mode not in FILE_MODES:
            raise InvalidDataError(
                f"{path} on branch {self.branch} is a {kind_of(mode)}, not a regular file; statefile refuses to "
                "follow it — replace it with a regular file"
            )

    def _read_at(self, root: bytes | None, path: str) -> str | None:
        entry = self._lookup(root, path)
        if entry is None:
            return None
        self._require_file(entry[0], path)
        return decode_text(self._object(entry[1].hex(), "blob", path), f"{path} on branch {self.branch}")

    def _tip_root(self) -> bytes | None:
        tip = self.tip()
        return None if tip is None else self._root(tip)

    def _archive_names(self, root: bytes | None, program: str) -> list[str]:
        entry = self._lookup(root, archive_dir(program))
        if entry is None:
            return []
        if entry[0] != MODE_TREE:
            raise InvalidDataError(
                f"{archive_dir(program)} on branch {self.branch} is a {kind_of(entry[0])}, not a folder; "
                "replace it with a folder"
            )
        return [name.decode("utf-8", "surrogateescape") for name in self._tree(entry[1])]

    def _last_part(self, root: bytes | None, program: str) -> tuple[str, str] | None:
        name = newest_part(self._archive_names(root, program))
        if name is None:
            return None
        text = self._read_at(root, f"{archive_dir(program)}/{name}")
        return None if text is None else (name, text)

    # -- the Store reading interface -----------------------------------------------------------------------------

    def read_text(self, program: str) -> str | None:
        """The raw text of ``{program}.md`` at the branch tip, or ``None``."""
        validate_program(program)
        return self._read_at(self._tip_root(), state_path(program))

    def programs(self) -> dict[str, int]:
        """Program name → size in bytes, from one ``git ls-tree -l`` of the tip (no blob is read).

        Entries that are not regular files (symbolic links, submodules) and names that are not valid program
        names (``_shared.md``, ``.hidden.md``) are left out.
        """
        return {name: size for name, (size, _) in self._top_files(self.tip()).items()}

    def _top_files(self, tip: str | None) -> dict[str, tuple[int, str]]:
        """Program name → (size, blob id) of every regular ``*.md`` file at the top of ``tip``'s tree."""
        if tip is None:
            return {}
        if self._listing is not None and self._listing[0] == tip:
            return self._listing[1]  # a commit never changes: programs() then read_texts() list it once
        files: dict[str, tuple[int, str]] = {}
        for record in self._run("ls-tree", "-l", "-z", "--full-tree", tip).split(b"\0"):
            meta, _, raw_name = record.partition(b"\t")
            fields = meta.split()
            if len(fields) != 4 or fields[0] not in FILE_MODES or not raw_name.endswith(b".md"):
                continue
            name = raw_name[:-3].decode("utf-8", "replace")
            if is_program_name(name):
                files[name] = (int(fields[3]), fields[2].decode("ascii"))
        self._listing = (tip, files)
        return files

    def read_texts(
        self, programs: Iterable[str], *, errors: dict[str, StatefileError] | None = None
    ) -> dict[str, str | None]:
        """The raw text of each program's state file at one tip (``None`` when missing), read in one batch.

        One ``git ls-tree`` and one pipelined ``git cat-file`` exchange for all of them: this is what makes
        ``statefile report --all`` over 1000 programs cost tens of milliseconds of git, not seconds.  Files the
        listing cannot vouch for (missing, too large, not a regular file, a reserved name) take the one-by-one
        path, which raises the usual errors; ``errors`` collects per-program errors as in :meth:`Store.read_texts`.
        """
        names = [validate_program(name) for name in programs]
        tip = self.tip()
        files = self._top_files(tip)
        limit = read_limit(self.max_bytes)
        batch = [name for name in names if name in files and files[name][0] <= limit]
        data = self._objects([files[n][1] for n in batch], "blob", [state_path(n) for n in batch])
        raw_by_name = dict(zip(batch, data, strict=True))
        root = None if tip is None else self._root(tip)
        texts: dict[str, str | None] = {}
        for name in names:
            try:
                raw = raw_by_name.get(name)
                if raw is not None:
                    texts[name] = decode_text(raw, f"{state_path(name)} on branch {self.branch}")
                else:
                    texts[name] = self._read_at(root, state_path(name))
            except StatefileError as exc:
                if errors is None:
                    raise
                errors[name] = exc
        return texts

    def archive_parts(self, program: str) -> list[str]:
        """Archive part names of ``program`` at the tip, oldest first."""
        validate_program(program)
        return sorted_parts(self._archive_names(self._tip_root(), program))

    def read_archive(self, program: str, part: str) -> str:
        """The text of archive part ``part`` of ``program``; NotFoundError when there is none."""
        validate_program(program)
        validate_part(part)
        text = self._read_at(self._tip_root(), f"{archive_dir(program)}/{part}")
        if text is None:
            raise NotFoundError(
                f"archive part {part} of {program} is not on branch {self.branch}; list parts with archive_parts()"
            )
        return text

    def read_all(self) -> dict[str, str]:
        """Every text file on the branch: path → text (one ``git ls-tree -r`` and one cat-file read per file)."""
        tip = self.tip()
        if tip is None:
            return {}
        paths: list[str] = []
        shas: list[str] = []
        for record in self._run("ls-tree", "-r", "-z", "--full-tree", tip).split(b"\0"):
            meta, _, raw_path = record.partition(b"\t")
            fields = meta.split()
            if len(fields) != 3:
                continue
            path = raw_path.decode("utf-8", "surrogateescape")
            self._require_file(fields[0], path)
            paths.append(path)
            shas.append(fields[2].decode("ascii"))
        files: dict[str, str] = {}
        for path, data in zip(paths, self._objects(shas, "blob", paths), strict=True):
            try:
                files[path] = data.decode("utf-8")
            except UnicodeDecodeError:
                if path.endswith(".md"):
                    decode_text(data, f"{path} on branch {self.branch}")  # raises InvalidDataError
                # Any other undecodable file is binary, not one of ours: leave it out.
        return files

    def log(self, program: str, limit: int = 50) -> list[LogEntry]:
        """Commits on the branch that changed ``{program}.md``, newest first (one ``git log``)."""
        validate_program(program)
        tip = self.tip()
        if tip is None or limit < 1:
            return []
        out = self._run(
            "-c", "log.showSignature=false", "log", "-z", f"--max-count={int(limit)}",
            "--format=%H%x1f%aI%x1f%an <%ae>%x1f%B", tip, "--", state_path(program),
        )  # fmt: skip
        entries = []
        for record in out.decode("utf-8", "replace").split("\0"):
            fields = record.strip("\n").split("\x1f", 3)
            if len(fields) == 4:
                commit, when, author, message = fields
                entries.append(LogEntry(commit, datetime.fromisoformat(when), author, message.strip()))
        return entries

    # -- writing objects -----------------------------------------------------------------------------------------

    def _store(self, kind: str, data: bytes) -> bytes:
        if self._loose is None:
            # gitdb's loose-object writer, used directly: GitPython's odb.store runs `git hash-object` per object.
            from gitdb.db.loose import LooseObjectDB

            self._loose = LooseObjectDB(str(self._common_dir / "objects"))
        from gitdb.base import IStream

        binsha: bytes = self._loose.store(IStream(kind, len(data), BytesIO(data))).binsha
        return binsha

    def _write_tree(self, tree: bytes | None, changes: Mapping[str, bytes | None], prefix: str) -> bytes | None:
        """Write the tree that is ``tree`` with ``changes`` applied; ``None`` when it ends up empty."""
        entries: Tree = dict(self._tree(tree)) if tree is not None else {}
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
        for name, data in files.items():
            key = name.encode()
            current = entries.get(key)
            if current is not None:
                self._require_file(current[0], prefix + name)
            if data is None:
                entries.pop(key, None)
                continue
            sha = object_sha("blob", data)
            if current is None or current[1] != sha:
                sha = self._store("blob", data)
            entries[key] = (current[0] if current else MODE_FILE, sha)
        for name, sub in folders.items():
            key = name.encode()
            current = entries.get(key)
            if current is not None and current[0] != MODE_TREE:
                raise InvalidDataError(
                    f"{prefix}{name} on branch {self.branch} is a {kind_of(current[0])}, not a folder; "
                    "replace it with a folder"
                )
            new = self._write_tree(current[1] if current else None, sub, f"{prefix}{name}/")
            if new is None:
                entries.pop(key, None)
            else:
                entries[key] = (MODE_TREE, new)
        if not entries:
            return None
        data = encode_tree(entries)
        sha = object_sha("tree", data)
        if sha != tree:
            sha = self._store("tree", data)
        self._remember(sha, entries)  # the next update in this process starts from this tree: skip re-reading it
        return sha

    def _identities(self) -> tuple[str, str]:
        env = os.environ
        if self._author is not None:
            name, email = self._author
        else:
            name = env.get("GIT_AUTHOR_NAME") or BOT_NAME
            email = env.get("GIT_AUTHOR_EMAIL") or BOT_EMAIL
        c_name = env.get("GIT_COMMITTER_NAME") or name
        c_email = env.get("GIT_COMMITTER_EMAIL") or email
        return _identity(name, email), _identity(c_name, c_email)

    def _commit(self, base: str | None, changes: Mapping[str, bytes | None], message: str) -> str | None:
        """Write the objects of a commit on ``base`` with ``changes``; ``None`` when the tree is unchanged."""
        root = self._root(base) if base else None
        new_root = self._write_tree(root, changes, "") or self._store("tree", b"")
        if new_root == root:
            return None
        author, committer = self._identities()
        offset = time.localtime().tm_gmtoff // 60
        stamp = f"{int(time.time())} {'-' if offset < 0 else '+'}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
        head = [f"tree {new_root.hex()}", *([f"parent {base}"] if base else [])]
        body = "\n".join([*head, f"author {author} {stamp}", f"committer {committer} {stamp}", "", message])
        commit = self._store("commit", body.encode("utf-8")).hex()
        self._roots[commit] = new_root
        return commit

    # -- moving refs ---------------------------------------------------------------------------------------------

    def _cas(self, ref: str, new: str, old: str | None, why: str) -> str:
        """``git update-ref ref new old``: "ok", "moved" (someone else moved it) or "locked" (lock held)."""
        args = ("update-ref", "-m", f"statefile: {why}", ref, new, old or ZERO)
        proc = self._git(*args)
        if proc.returncode == 0:
            return "ok"
        if self._ref(ref) != old:
            return "moved"
        if _is_lock_busy(proc.stderr.decode("utf-8", "replace")):
            return "locked"
        raise self._failure(args, proc, f"could not move {ref}")

    def _is_ancestor(self, older: str, newer: str) -> bool:
        args = ("merge-base", "--is-ancestor", older, newer)
        proc = self._git(*args)
        if proc.returncode not in (0, 1):
            raise self._failure(args, proc, "run `git fsck`")
        return proc.returncode == 0

    def _checked_out_in(self) -> str | None:
        """Where ``branch`` is checked out (a work tree path), or ``None``; moving it would desync that tree."""
        target = f"ref: {self._local_ref}"
        heads: list[tuple[Path, str]] = []
        if self._paths.work_tree is not None and self._paths.git_dir == self._common_dir:
            heads.append((self._common_dir / "HEAD", str(self._paths.work_tree)))
        elif not self._paths.bare:
            # Opened from a linked work tree: the main work tree's HEAD is the common dir's.
            main_tree = self._common_dir.parent if self._common_dir.name == ".git" else self._common_dir
            heads.append((self._common_dir / "HEAD", str(main_tree)))
        linked = self._common_dir / "worktrees"
        if linked.is_dir():
            heads.extend((entry / "HEAD", f"linked work tree {entry.name}") for entry in linked.iterdir())
        for head, where in heads:
            try:
                if head.read_text("utf-8", "replace").strip() == target:
                    return where
            except OSError:
                continue
        return None

    def _advance_local(self, local: str | None, target: str, why: str) -> None:
        """Move the local branch forward to ``target`` (which descends from ``local``), if no one moved it."""
        for _ in range(5):
            if local == target or self._checked_out_in() is not None:
                return
            if self._cas(self._local_ref, target, local, why) == "ok":
                return
            local = self._ref(self._local_ref)
            if local is not None and not self._is_ancestor(local, target):
                return  # it moved past target (another writer in this clone): leave it there

    def _fetch(self) -> str | None:
        """Fetch the branch into its remote-tracking ref; the remote's tip, ``None`` if it has no such branch."""
        assert self.remote is not None
        tracking = self._tracking_ref(self.remote)
        args = ("fetch", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--quiet",
                self.remote, f"+{self._local_ref}:{tracking}")  # fmt: skip
        for attempt in range(6):
            proc = self._git(*args)
            if proc.returncode == 0:
                return self._ref(tracking)
            err = proc.stderr.decode("utf-8", "replace")
            if "couldn't find remote ref" in err:
                if self._ref(tracking) is not None:
                    self._run("update-ref", "-d", tracking)
                return None
            if not _is_lock_busy(err) or attempt == 5:
                break
            time.sleep(0.02 * 2**attempt * self._random.uniform(0.5, 1.5))  # another fetch in this clone
        raise self._failure(args, proc, f"check that remote {self.remote!r} is reachable and readable")

    def fetch(self) -> str | None:
        """Fetch the branch from the remote and fast-forward the local branch to it (reads then see it).

        Returns the remote's tip, or ``None`` when the remote has no such branch.  Never moves a local branch
        that has commits the remote lacks, nor one that is checked out.
        """
        if self.remote is None:
            raise UsageError("this store has no remote; open it with remote='origin' to fetch")
        remote_tip = self._fetch()
        local = self._ref(self._local_ref)
        if (
            remote_tip is not None
            and local is not None
            and local != remote_tip
            and self._is_ancestor(local, remote_tip)
        ):
            self._advance_local(local, remote_tip, "fast-forward after fetch")
        return remote_tip

    def _push(self, new: str) -> bool:
        """Push ``new`` to the remote branch (never forced): True when it landed, False when someone beat us."""
        assert self.remote is not None
        # --no-verify: the user's pre-push hooks are about their code, not this bookkeeping branch.
        args = ("push", "--porcelain", "--no-verify", self.remote, f"{new}:{self._local_ref}")
        proc = self._git(*args)
        if proc.returncode == 0:
            return True
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            if line.startswith("!"):
                reason = line.split("\t")[-1]
                if any(word in reason for word in _RETRYABLE_PUSH):
                    return False
                raise GitError(redact(
                    f"the push to {self.remote}/{self.branch} was refused: {reason.strip()}; check branch "
                    f"protection and write permission for {self.branch}"
                ))  # fmt: skip
        raise self._failure(args, proc, f"check that remote {self.remote!r} is reachable and writable")

    def _base(self, local: str | None, remote_tip: str | None) -> str | None:
        """What to build on when writing through the remote: the newer of local and remote, which must agree."""
        if local is None or local == remote_tip:
            return remote_tip
        if remote_tip is None or self._is_ancestor(remote_tip, local):
            return local  # unpushed local commits (written without a remote): they go out with this push
        if self._is_ancestor(local, remote_tip):
            return remote_tip
        raise ConflictError(
            f"{self._local_ref} and {self.remote}/{self.branch} have diverged; nothing was written — reconcile "
            f"them with git (merge or reset the local branch), then retry"
        )

    # -- transactions --------------------------------------------------------------------------------------------

    def _try_local(self, attempt: Callable[[str | None], str | None], why: str) -> tuple[str | None, str]:
        local = self._ref(self._local_ref)
        base = local if local is not None else self._tracking_tip()
        new = attempt(base)
        if new is None:
            return base or "", "ok"
        outcome = self._cas(self._local_ref, new, local, why)
        return (new if outcome == "ok" else None), outcome

    def _try_remote(self, attempt: Callable[[str | None], str | None], why: str) -> tuple[str | None, str]:
        remote_tip = self._fetch()
        local = self._ref(self._local_ref)
        base = self._base(local, remote_tip)
        new = attempt(base)
        if new is None:
            if base is not None:
                self._advance_local(local, base, why)
            return base or "", "ok"
        if not self._push(new):
            return None, "rejected"
        assert self.remote is not None
        tracking = self._tracking_ref(self.remote)
        # The commit has landed: from here on, a failure to move our own refs must not report the write as
        # failed.  A ref left behind is repaired by the next fetch (a local branch behind the remote is followed).
        with contextlib.suppress(GitError):
            if self._ref(tracking) != new:  # git push moves it itself when remote.<name>.fetch maps the branch
                self._run("update-ref", "-m", f"statefile: {why}", tracking, new)
            self._advance_local(local, new, why)
        return new, "ok"

    def _transact(self, attempt: Callable[[str | None], str | None], why: str) -> str:
        """Run ``attempt(base) -> new commit | None`` until its commit lands on the branch; return the tip."""
        where = self._checked_out_in()
        if where is not None:
            raise UsageError(
                f"branch {self.branch} is checked out in {where}; statefile never touches a work tree — switch "
                "that checkout to another branch, or use a folder store on it (--dir)"
            )
        step = self._try_remote if self.remote else self._try_local
        # Remote round trips cost ~100 ms, local ones ~5 ms: back off on the same scale.
        unit, cap = (0.1, 4.0) if self.remote else (0.005, 0.5)
        outcome = "ok"
        for tries in range(self.max_tries):
            if tries:
                delay = min(cap, unit * 2 ** (tries - 1))
                time.sleep(delay / 2 + self._random.uniform(0, delay / 2))
            self.retries = tries
            result, outcome = step(attempt, why)
            if result is not None:
                return result
        if outcome == "locked":
            raise GitError(
                f"cannot lock {self._local_ref} in {self._common_dir}: another git process holds it, or a killed "
                f"one left {self._local_ref}.lock behind — if no git process is running, delete that file"
            )
        where = f"{self.remote}/{self.branch}" if self.remote else self.branch
        raise ConflictError(
            f"gave up after {self.max_tries} tries: {where} kept changing under concurrent writers; nothing was "
            "written and the branch is as the others left it — run the command again"
        )

    # -- the Store writing interface -----------------------------------------------------------------------------

    def update(self, program: str, fn: UpdateFn, message: str) -> str:
        """Apply ``fn`` to ``program``'s state file as one commit (see :meth:`Store.update`); the commit id.

        ``fn`` runs again on the newer document whenever a concurrent write wins the race: keep it pure.
        """
        validate_program(program)
        text = clean_message(message)
        label = first_line(text)

        def attempt(base: str | None) -> str | None:
            root = self._root(base) if base else None
            planned = plan_update(
                program,
                self._read_at(root, state_path(program)),
                fn,
                max_bytes=self.max_bytes,
                last_part=lambda: self._last_part(root, program),
                label=label,
            )
            if planned is None:
                return None
            files, own_message = planned
            message_text = clean_message(own_message) if own_message.strip() else text
            return self._commit(base, {path: checked_bytes(t, path) for path, t in files.items()}, message_text)

        return self._transact(attempt, label)

    def write_files(self, files: Mapping[str, str | None], message: str) -> str:
        """Write ``files`` (path → text, ``None`` deletes) as one commit; each file must fit ``max_bytes``."""
        text = clean_message(message)
        changes: dict[str, bytes | None] = {}
        for path, content in files.items():
            validate_path(path)
            if content is None:
                changes[path] = None
                continue
            data = checked_bytes(content, path)
            if len(data) > self.max_bytes:
                raise BudgetError(
                    f"{path} is {len(data)} bytes, over the budget of {self.max_bytes} bytes; nothing was written "
                    "— run `statefile compact` on it first"
                )
            changes[path] = data
        if not changes:
            return self.tip() or ""
        return self._transact(lambda base: self._commit(base, changes, text), first_line(text))


def _op(args: tuple[str, ...]) -> str:
    """The git subcommand in ``args`` (skipping ``-c key=value`` options) for messages."""
    rest = list(args)
    while rest and rest[0] == "-c":
        rest = rest[2:]
    return rest[0] if rest else "?"


def _identity(name: str, email: str) -> str:
    # Angle brackets and newlines would corrupt the commit header: drop them.
    def strip(value: str) -> str:
        return "".join(ch for ch in value if ch not in "<>\n\r\x00").strip()

    return f"{strip(name) or BOT_NAME} <{strip(email) or BOT_EMAIL}>"


def _ref_component_bad(name: str) -> bool:
    try:
        validate_remote(name)
    except UsageError:
        return True
    return False
