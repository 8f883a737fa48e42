"""State files on a git branch, written without a checkout: objects through plumbing, the ref by compare-and-swap.

How a write works (the user's HEAD, index and working tree are never read or written):

1. Read the refs (:mod:`.refs`, one ``git for-each-ref``): the tip is ``refs/heads/{branch}``, else a
   remote-tracking copy of it (a CI checkout that fetched every ref has only that), else nothing (the first write
   makes an orphan commit).  A branch that is a symbolic ref, or is checked out in a work tree, is refused.
   With a remote, fetch the branch first (:mod:`.remote`) and build on the remote's tip.
2. Read the files at the tip (:mod:`.objects`: ``git ls-tree`` and one long-lived ``git cat-file --batch``), call
   the update function, and write blobs, trees and the commit with ``git hash-object``, ``git mktree`` and
   ``git commit-tree``.  Each object is written whole or not at all.
3. Move the ref last, with ``git update-ref REF NEW OLD``: git moves it only if it still points at OLD, so a
   concurrent writer is detected, never overwritten.  With a remote, the push is the compare-and-swap (a plain,
   never forced, push is refused unless it fast-forwards), and the local refs follow after it succeeds.  A push
   that fails without a verdict (the connection dropped after the remote took the commit) is checked against
   the remote before anything is reported: a commit that landed is reported as landed.
4. On a conflict, start again from 1 (``fn`` is applied afresh to the new tip), with jittered exponential backoff
   (:mod:`.retry`), within ``max_tries`` tries and ``max_wait`` seconds.  Objects written by a lost attempt are
   unreferenced garbage that ``git gc`` removes.

A process killed at any moment therefore leaves the branch at the old commit or the new one, never at a commit
whose objects are missing.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import NamedTuple

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
from statefile.numbers import budget_text
from statefile.store.base import (
    BOT_EMAIL,
    BOT_NAME,
    DEFAULT_BRANCH,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_TRIES,
    DEFAULT_MAX_WAIT,
    LogEntry,
    Plan,
    Store,
    T,
    UpdateFn,
    UpdateResult,
    checked_bytes,
    decode_text,
    first_line,
    newest_part,
    plan_update,
    refuse_case_twin,
    sorted_parts,
    state_path,
)
from statefile.store.files import check_lines, read_limit, too_large
from statefile.store.git.objects import (
    MODE_FILE,
    MODE_TREE,
    CatFile,
    Entry,
    IdentityMissing,
    Listing,
    ObjectMissing,
    ObjectTooLarge,
    Trees,
    TreeWriter,
    Writer,
    kind_of,
    missing_object,
)
from statefile.store.git.refs import Refs, RefState, clash_error
from statefile.store.git.remote import Remote, credentials, env_tokens
from statefile.store.git.repo import OBJECT_FORMATS, Repository, discover, git_executable
from statefile.store.git.retry import Backoff, Outcome, Tried, retry
from statefile.store.git.runner import Git, Result, one_line
from statefile.store.names import (
    is_program_name,
    is_remote_url,
    parse_identity,
    validate_branch,
    validate_part,
    validate_path,
    validate_program,
    validate_remote,
    windows_reserved,
)

# One commit of `git log -z --raw --format=%x01%H`: its id, then the file's change line, with the blob ids before
# and after (all zeros where the file did not exist).
_RAW_CHANGE = re.compile(r"^([0-9a-f]+)\0\n?:\d+ \d+ ([0-9a-f]+) ([0-9a-f]+) [A-Z]\d*\0")

# Remote round trips cost ~100 ms, local ones ~5 ms: back off on the same scale.
_LOCAL_BACKOFF = (0.005, 0.5)
_REMOTE_BACKOFF = (0.1, 8.0)
#: Seconds the remote's ref lock may stay held while its tip stays put before the lock is taken for a stale one.
STALE_REMOTE_LOCK = 3.0
# Waiting for another git process in this clone (a fetch racing a fetch, the local branch after a push).
_LOCK_BACKOFF = Backoff(tries=6, first=0.02, cap=0.5, budget=5.0)
# Asking the remote whether a push that ended without a verdict landed.  The connection has just broken, so the
# remote may not answer for a moment (a server restarting, a network blip): keep asking for a few seconds.
_VERIFY_BACKOFF = Backoff(tries=40, first=0.1, cap=1.0, budget=8.0)


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


class BranchState(NamedTuple):
    """Where the branch is, here and on the remote side, for saying where a read comes from and refusing a write
    that would fork the memory (see :meth:`GitStore.branch_state`)."""

    #: The local branch's commit (``refs/heads/<branch>``), or ``None``.
    local: str | None
    #: The remote-tracking ref compared with (the remote's, or origin's/another remote's copy), or "".
    tracking_ref: str
    #: Its commit, or ``None`` (with a remote: the remote has no such branch, as of the fetch).
    tracking: str | None
    #: Commits the local branch has that the tracking copy lacks, and the other way round.
    ahead: int
    behind: int
    #: How messages name the tracking copy: ``origin/memory/autoloop``.
    tracking_name: str

    @property
    def exists(self) -> bool:
        """Whether there is anything to read: the local branch or a remote-tracking copy of it."""
        return self.local is not None or self.tracking is not None

    @property
    def diverged(self) -> bool:
        """Both sides have commits the other lacks."""
        return self.ahead > 0 and self.behind > 0


class GitStore(Store):
    """State files on a branch of a git repository (see the module docstring for how writes work).

    ``path`` is a folder in (or above which is) the repository, or a :class:`Repository` already discovered.
    ``remote`` is a configured remote's name or a URL (see :mod:`.remote`).  Attributes: ``branch``, ``remote``
    (``None`` for local-only), ``repository``, ``max_bytes``, ``max_tries`` and ``max_wait``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | Repository,
        branch: str = DEFAULT_BRANCH,
        remote: str | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        author: str | None = None,
        max_tries: int = DEFAULT_MAX_TRIES,
        max_wait: float = DEFAULT_MAX_WAIT,
    ) -> None:
        self.branch = validate_branch(branch)
        self.remote = None if remote is None else validate_remote(remote)
        if not isinstance(max_bytes, int) or max_bytes < 1:
            raise UsageError(f"max_bytes must be a positive number of bytes, not {max_bytes!r}")
        if not isinstance(max_tries, int) or max_tries < 1:
            raise UsageError(f"max_tries must be at least 1, not {max_tries!r}")
        if not max_wait > 0:
            raise UsageError(f"max_wait must be a positive number of seconds, not {max_wait!r}")
        self.max_bytes = max_bytes
        self.max_tries = max_tries
        self.max_wait = float(max_wait)
        self._author = None if author is None else parse_identity(author)
        self.repository = path if isinstance(path, Repository) else discover(path)
        repo = self.repository
        if repo.object_format not in OBJECT_FORMATS:
            raise InvalidDataError(
                f"{repo.top} stores objects in the {repo.object_format!r} format, which statefile does not know "
                f"(it knows {', '.join(OBJECT_FORMATS)}); nothing was read or written"
            )
        url = None
        config: tuple[tuple[str, str], ...] = ()
        secrets = env_tokens()
        if self.remote is not None and is_remote_url(self.remote):
            creds = credentials(self.remote, os.environ)
            url, config, secrets = creds.url, creds.config, (*secrets, *creds.secrets)
            self.remote = url  # credentials written into the URL live on in the header only, never in an attribute
        # Relative remote URLs (`git remote add x ../memory.git`) are resolved from the work tree's top, as the
        # user's own git commands would; GIT_DIR pins the repository whatever the directory.
        self._git = Git(git_executable(), str(repo.top), Git.environment(str(repo.git_dir), config), secrets=secrets)
        self._remote: Remote | None = None
        tracking: list[str]
        if self.remote is not None:
            if not is_remote_url(self.remote):
                configured = self._git.run("remote").decode("utf-8", "surrogateescape").split()
                if self.remote not in configured:
                    raise NotFoundError(
                        f"remote {self.remote!r} is not configured in {repo.top}; configured remotes: "
                        f"{', '.join(configured) or 'none'} (add one with `git remote add`, or pass a URL)"
                    )
            self._remote = Remote(self._git, self.remote, self.branch, url=url)
            tracking = [self._remote.tracking_ref]
        else:
            # Reads fall back to a remote-tracking copy of the branch: origin's first, then the others by name.
            tracking = [f"refs/remotes/*/{self.branch}"]
        self._refs = Refs(self._git, repo, self.branch, tracking, prefer=("origin",))
        self._preferred_tracking = (
            self._remote.tracking_ref if self._remote is not None else f"refs/remotes/origin/{self.branch}"
        )
        self._local_ref = self._refs.local_ref
        # One long-lived reader; git's answers are cached by object id (objects never change).
        self._cat = CatFile(self._git)
        self._trees = Trees(self._git, self.branch)
        self._writer = Writer(self._git)
        self._identity: dict[str, str] | None = None
        self._name_checked = False
        # A fetched tip the local branch could not be moved to (a stale lock): reads use it, not the stale branch.
        self._pinned: str | None = None
        # Whether reads have asked if the branch is a symbolic ref (see tip(); writes ask on every attempt).
        self._branch_checked = False
        self._random = random.Random()
        # What an interrupt must be told (interrupted_write): the commit being published now (its push or ref update
        # under way, so it may have landed), and every commit of this store that did land, each with its program.
        self._in_flight: tuple[str, str] | None = None
        self._landed_writes: list[tuple[str, str]] = []

    def __repr__(self) -> str:
        where = f" via {self._remote.display}" if self._remote else ""
        return f"<GitStore {self.repository.top} branch {self.branch}{where}>"

    def close(self) -> None:
        """Stop the long-lived ``git cat-file`` process."""
        self._cat.close()

    # -- refs ----------------------------------------------------------------------------------------------------

    def _state(self) -> RefState:
        """The refs now; a symbolic branch is refused here, for reads and writes alike, never followed.

        This is the one place that decides: a read through one would show the other branch's files as the memory
        (its README as a program), a write would move that branch.
        """
        state = self._refs.read()
        self._refs.refuse_symref(state)
        self._branch_checked = True
        return state

    def tip(self) -> str | None:
        """The commit reads see: the local branch, else the remote-tracking branch, else ``None``.

        Resolved in the running ``cat-file`` (no process per read); only when neither the local branch nor the
        preferred remote's copy exists does one ``for-each-ref`` look for another remote's copy.
        """
        if self._pinned is not None:
            return self._pinned
        if not self._branch_checked:
            # cat-file follows a symbolic ref without a word: ask once per store whether the branch is one (a
            # command opens its own store, and the command line's fetch or branch_state has asked already).
            self._state()
        for oid in self._cat.resolve([self._local_ref, self._preferred_tracking]):
            if oid is not None:
                return oid
        return None if self._remote is not None else self._refs.read().tracking_tip

    def branch_state(self) -> BranchState:
        """The local branch against its remote-tracking copy (the remote's, after :meth:`fetch`).

        Two git processes at most (``for-each-ref``, and ``rev-list --count`` when the two differ, or
        ``symbolic-ref`` when there is no local branch); nothing is fetched here.  A branch that is a symbolic ref
        is refused (see :meth:`_state`).
        """
        state = self._state()
        if self._remote is not None:
            ref = self._remote.tracking_ref
            tracking = state.tracking.get(ref)
            name = self._remote.display
        else:
            ref, tracking = next(iter(state.tracking.items()), ("", None))
            name = ref.removeprefix("refs/remotes/")
        ahead = behind = 0
        if state.local is not None and tracking is not None and state.local != tracking:
            out = self._git.run("rev-list", "--left-right", "--count", f"{state.local}...{tracking}")
            left, _, right = out.decode("ascii", "replace").strip().partition("\t")
            ahead, behind = int(left or 0), int(right or 0)
        elif state.local is not None and tracking is None and self._remote is not None:
            out = self._git.run("rev-list", "--count", state.local)
            ahead = int(out.decode("ascii", "replace").strip() or 0)
        return BranchState(state.local, ref, tracking, ahead, behind, name)

    def fetch_for_read(self) -> str | None:
        """Fetch the branch into its remote-tracking ref, and make reads see the remote's tip; unlike :meth:`fetch`
        no local branch moves (a read changes no branch).  The remote's tip, ``None`` when it has no such branch."""
        remote_tip = self._fetch()
        self._pinned = None
        local = self._state().local
        # Behind: the remote's tip (the local branch stays); diverged: the reader pins it and says so.
        if (
            remote_tip is not None
            and local is not None
            and local != remote_tip
            and self._refs.is_ancestor(local, remote_tip)
        ):
            self._pinned = remote_tip
        return remote_tip

    def commit_time(self, commit: str) -> int:
        """When ``commit`` was committed (Unix seconds): how old a copy whose tip it is must be at least."""
        return int(self._git.run("log", "-1", "--format=%ct", commit, "--").decode("ascii", "replace").strip() or 0)

    def pin(self, commit: str) -> None:
        """Make reads see ``commit`` (e.g. the remote's tip when the local branch has diverged from it).

        Writes are unaffected; the next :meth:`fetch` unpins.
        """
        self._pinned = commit

    # -- reconciling a local branch with the remote's (statefile sync) -------------------------------------------

    def local_only_commits(self) -> list[tuple[str, str | None, str, list[str]]]:
        """The local branch's commits the remote-tracking copy lacks, oldest first: ``(commit, first parent or
        None, message, changed paths)``."""
        state = self.branch_state()
        if state.local is None:
            return []
        spec = [state.local] if state.tracking is None else [f"{state.tracking}..{state.local}"]
        out = self._git.run("rev-list", "--reverse", "--first-parent", "--parents", *spec)
        commits = []
        for row in out.decode("ascii", "replace").splitlines():
            ids = row.split()
            if not ids:
                continue
            commit, parent = ids[0], (ids[1] if len(ids) > 1 else None)
            message = self._git.run("log", "-1", "--format=%B", commit).decode("utf-8", "replace").strip()
            diff = ["diff-tree", "-r", "-z", "--name-only", "--no-commit-id"]
            diff += [parent, commit] if parent else ["--root", commit]
            paths = [p for p in self._git.run(*diff).decode("utf-8", "surrogateescape").split("\0") if p]
            commits.append((commit, parent, message, paths))
        return commits

    def file_at(self, commit: str | None, path: str) -> str | None:
        """The text of ``path`` at ``commit`` (``None`` when it does not exist there, or for no commit)."""
        validate_path(path)
        return self._read_at(commit, path)

    def set_aside_local(self, keep_ref: str) -> None:
        """Keep the local branch's commits under ``keep_ref``, then move the local branch to the remote-tracking
        copy (compare-and-swap: refused if the branch moved meanwhile).  Nothing is lost: ``keep_ref`` holds them."""
        state = self._state()
        self._check_writable(state)
        tracking = self.branch_state().tracking
        if state.local is None or tracking is None:
            raise UsageError(f"nothing to set aside: {self.branch} needs a local branch and the remote's copy")
        self._refs.set(keep_ref, state.local, "sync: keep the local-only commits")
        outcome, _ = self._refs.cas(self._local_ref, tracking, state.local, "sync: start from the remote's tip")
        if not outcome.done:
            raise ConflictError(
                f"{self._local_ref} moved while statefile sync was starting; nothing was changed — run it again "
                f"(the local commits are also kept at {keep_ref})"
            )
        self._pinned = None

    def publish(self) -> str | None:
        """Push the local branch to the remote, never forced (the remote's commits must all be in it).

        Returns the remote's tip afterwards.  For a local branch ahead of the remote, or a remote without the
        branch: the local commits (written without ``--remote``) reach the remote unchanged.
        """
        if self._remote is None:
            raise UsageError("publishing needs a remote; open the store with remote='origin'")
        tip, _wrote, _attempts = self._transact(lambda base: base, "publish the local branch")
        return tip or None

    def branch_names(self) -> list[str]:
        """Names of the branches here, local and remote-tracking (``origin/x`` read as ``x``), sorted, once each.

        For "did you mean" when a ``--branch`` does not exist.
        """
        out = self._git.run("for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes")
        names = set()
        for ref in out.decode("utf-8", "surrogateescape").split("\n"):
            if ref.startswith("refs/heads/"):
                names.add(ref.removeprefix("refs/heads/"))
            elif ref.startswith("refs/remotes/") and not ref.endswith("/HEAD"):
                names.add(ref.removeprefix("refs/remotes/").partition("/")[2])
        return sorted(name for name in names if name)

    def remote_names(self) -> list[str]:
        """The remotes configured in this repository (``git remote``)."""
        return self._git.run("remote").decode("utf-8", "surrogateescape").split()

    # -- reading objects -----------------------------------------------------------------------------------------

    def _objects(self, oids: list[str], kind: str, paths: list[str]) -> list[bytes]:
        """The data of objects ``oids`` (all of ``kind``), read in one pipelined batch.

        Blobs larger than :func:`statefile.store.files.read_limit` of the budget are refused unread
        (InvalidDataError naming ``paths``): a state file an agent wrote is never that big, and reading one would
        cost memory without bound.
        """
        limit = read_limit(self.max_bytes) if kind == "blob" else None
        try:
            found = self._cat.read_many(oids, limit)
        except ObjectTooLarge as exc:
            where = paths[exc.index] or f"object {oids[exc.index]}"
            raise too_large(f"{where} on branch {self.branch}", exc.size, self.max_bytes) from None
        out = []
        for oid, path, item in zip(oids, paths, found, strict=True):
            where = f"{path} (object {oid})" if path else f"object {oid}"
            if item is None:
                raise missing_object(path, oid, self.branch)
            if item[0] != kind:
                raise InvalidDataError(f"{where} is a {item[0]}, expected a {kind}; run `git fsck`")
            out.append(check_lines(f"{where} on branch {self.branch}", item[1], self.max_bytes) if limit else item[1])
        return out

    def _lookup(self, commit: str | None, path: str) -> Entry | None:
        """The entry of ``path`` in ``commit``'s tree; folders on the way must be real folders."""
        if commit is None:
            return None
        parts = path.split("/")
        listing = self._trees.listing(commit)
        for index, part in enumerate(parts):
            entry = listing.get(part)
            if entry is None or index == len(parts) - 1:
                return entry
            where = "/".join(parts[: index + 1])
            if not entry.is_tree:
                raise InvalidDataError(
                    f"{where} on branch {self.branch} is a {kind_of(entry.mode)}, not a folder; statefile will not "
                    "follow it — replace it with a folder"
                )
            listing = self._trees.listing(entry.oid, path=where)
        return None

    def _require_file(self, entry: Entry, path: str) -> None:
        if not entry.is_file:
            raise InvalidDataError(
                f"{path} on branch {self.branch} is a {kind_of(entry.mode)}, not a regular file; statefile refuses "
                "to follow it — replace it with a regular file"
            )

    def _read_at(self, commit: str | None, path: str) -> str | None:
        entry = self._lookup(commit, path)
        if entry is None:
            return None
        self._require_file(entry, path)
        return decode_text(self._objects([entry.oid], "blob", [path])[0], f"{path} on branch {self.branch}")

    def _archive_names(self, commit: str | None, program: str) -> list[str]:
        entry = self._lookup(commit, archive_dir(program))
        if entry is None:
            return []
        if not entry.is_tree:
            raise InvalidDataError(
                f"{archive_dir(program)} on branch {self.branch} is a {kind_of(entry.mode)}, not a folder; "
                "replace it with a folder"
            )
        return list(self._trees.listing(entry.oid, path=archive_dir(program)))

    def _last_part(self, commit: str | None, program: str) -> tuple[str, str] | None:
        name = newest_part(self._archive_names(commit, program))
        if name is None:
            return None
        text = self._read_at(commit, f"{archive_dir(program)}/{name}")
        return None if text is None else (name, text)

    # -- the Store reading interface -----------------------------------------------------------------------------

    def read_text(self, program: str) -> str | None:
        """The raw text of ``{program}.md`` at the branch tip, or ``None``."""
        validate_program(program)
        return self._read_at(self.tip(), state_path(program))

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
        files: dict[str, tuple[int, str]] = {}
        for name, entry in self._trees.listing(tip, sizes=True).items():
            if not name.endswith(".md") or not entry.is_file or entry.size is None:
                continue
            program = name[:-3]
            if is_program_name(program):
                files[program] = (entry.size, entry.oid)
        return files

    def unreadable(self) -> dict[str, str]:
        """``{name}.md`` entries at the top of the tip that look like programs but cannot be read: name → why."""
        tip = self.tip()
        if tip is None:
            return {}
        found: dict[str, str] = {}
        for name, entry in self._trees.listing(tip, sizes=True).items():
            program = name[:-3]
            if not name.endswith(".md") or not (is_program_name(program) or windows_reserved(program)):
                continue
            where = f"{name} on branch {self.branch}"
            if not entry.is_file:
                found[program] = f"{where} is a {kind_of(entry.mode)}, not a regular file; replace it with a file"
            elif entry.size is None:
                found[program] = (
                    f"{where}: its object {entry.oid} is missing from the repository; it is damaged — run `git fsck`, "
                    "or fetch the branch again"
                )
            elif not is_program_name(program):
                found[program] = f"{where}: {program!r} is a reserved device name on Windows; rename it"
        return dict(sorted(found.items()))

    def read_texts(
        self, programs: Iterable[str], *, errors: dict[str, StatefileError] | None = None
    ) -> dict[str, str | None]:
        """The raw text of each program's state file at one tip (``None`` when missing), read in one batch.

        One ``git ls-tree`` and one pipelined ``git cat-file`` exchange for all of them: this is what makes
        ``statefile report --all`` over 1000 programs cost tens of milliseconds of git, not seconds.  Files the
        listing cannot vouch for (missing, too large, not a regular file, a reserved name) take the one-by-one
        path, which raises the usual errors; ``errors`` collects per-program errors as in :meth:`Store.read_texts`.
        """
        names = list(programs)
        texts: dict[str, str | None] = {}
        for name in names:
            try:
                validate_program(name)
            except UsageError as exc:
                if errors is None:
                    raise
                errors[name] = exc
        names = [name for name in names if errors is None or name not in errors]
        tip = self.tip()
        files = self._top_files(tip)
        limit = read_limit(self.max_bytes)
        batch = [name for name in names if name in files and files[name][0] <= limit]
        found = self._cat.read_many([files[n][1] for n in batch], limit)
        raw_by_name = {name: item[1] for name, item in zip(batch, found, strict=True) if item and item[0] == "blob"}
        for name in names:
            try:
                raw = raw_by_name.get(name)
                if raw is not None:
                    where = f"{state_path(name)} on branch {self.branch}"
                    texts[name] = decode_text(check_lines(where, raw, self.max_bytes), where)
                else:
                    texts[name] = self._read_at(tip, state_path(name))
            except StatefileError as exc:
                if errors is None:
                    raise
                errors[name] = exc
        return texts

    def archive_parts(self, program: str) -> list[str]:
        """Archive part names of ``program`` at the tip, oldest first."""
        validate_program(program)
        return sorted_parts(self._archive_names(self.tip(), program))

    def read_path(self, path: str) -> str:
        text = self._read_at(self.tip(), path)
        if text is None:
            raise NotFoundError(f"{path} is not on branch {self.branch}")
        return text

    def read_archive(self, program: str, part: str) -> str:
        """The text of archive part ``part`` of ``program``; NotFoundError when there is none."""
        validate_program(program)
        validate_part(part)
        text = self._read_at(self.tip(), f"{archive_dir(program)}/{part}")
        if text is None:
            raise NotFoundError(
                f"archive part {part} of {program} is not on branch {self.branch}; list parts with archive_parts()"
            )
        return text

    def paths(self) -> list[str]:
        """Every path on the branch, sorted, from one ``git ls-tree -r`` (no blob is read)."""
        tip = self.tip()
        return [] if tip is None else sorted(self._trees.everything(tip))

    def read_all(self) -> dict[str, str]:
        """Every text file on the branch: path → text (one ``git ls-tree -r`` and one cat-file batch)."""
        tip = self.tip()
        if tip is None:
            return {}
        paths: list[str] = []
        oids: list[str] = []
        for path, entry in self._trees.everything(tip).items():
            self._require_file(entry, path)
            paths.append(path)
            oids.append(entry.oid)
        files: dict[str, str] = {}
        for path, data in zip(paths, self._objects(oids, "blob", paths), strict=True):
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
        out = self._git.run(
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

    def _log_of(self, program: str, limit: int, *options: str) -> bytes | None:
        """``git log OPTIONS`` of ``{program}.md`` over the newest ``limit`` commits at the tip (signatures off,
        paths unquoted); ``None`` when there is no branch or nothing is asked for."""
        validate_program(program)
        tip = self.tip()
        if tip is None or limit < 1:
            return None
        return self._git.run(
            "-c", "log.showSignature=false", "-c", "core.quotePath=false", "log", *options, f"--max-count={int(limit)}",
            tip, "--", state_path(program),
        )  # fmt: skip

    def log_patches(self, program: str, limit: int = 50) -> dict[str, str]:
        """The unified diff of ``{program}.md`` in each of the commits :meth:`log` lists (one ``git log -p``)."""
        out = self._log_of(program, limit, "-p", "--no-color", "--no-ext-diff", "--no-textconv", "--format=%x00%H")
        if out is None:
            return {}
        patches: dict[str, str] = {}
        for record in out.decode("utf-8", "replace").split("\0")[1:]:
            commit, _, patch = record.partition("\n")
            patches[commit.strip()] = patch.strip("\n") + "\n" if patch.strip() else ""
        return patches

    def log_texts(self, program: str, limit: int = 50) -> dict[str, tuple[str | None, str | None]]:
        """``{program}.md`` before and after each commit :meth:`log` lists: one ``git log --raw`` for the blob ids,
        one batch read of the distinct blobs (a commit's "before" is usually the next one's "after")."""
        out = self._log_of(program, limit, "-z", "--raw", "--no-abbrev", "--no-renames", "--format=%x01%H")
        if out is None:
            return {}
        pairs: dict[str, tuple[str | None, str | None]] = {}
        for record in out.decode("utf-8", "replace").split("\x01")[1:]:
            match = _RAW_CHANGE.match(record)
            if match:  # a merge commit has no --raw line: nothing to say about it
                commit, old, new = match.groups()
                pairs[commit] = (None if not old.strip("0") else old, None if not new.strip("0") else new)
        oids = sorted({oid for pair in pairs.values() for oid in pair if oid is not None})
        try:
            blobs = self._objects(oids, "blob", [state_path(program)] * len(oids))
        except StatefileError:
            return {}  # an oversize or damaged old version: the log still lists the commits, without their texts
        texts = {oid: data.decode("utf-8", "replace") for oid, data in zip(oids, blobs, strict=True)}
        return {
            commit: (texts[old] if old else None, texts[new] if new else None) for commit, (old, new) in pairs.items()
        }

    # -- writing objects -----------------------------------------------------------------------------------------

    def _write_tree(
        self, trees: TreeWriter, listing: Listing | None, changes: Mapping[str, str | None], prefix: str
    ) -> str | None:
        """Write the tree that is ``listing`` with ``changes`` (path → blob id, ``None`` deletes) applied.

        Returns its id, ``None`` when it ends up empty, or ``""`` when nothing changed (the caller keeps the entry
        it has).  Subtrees are written first: the parent needs their ids.
        """
        entries: Listing = dict(listing) if listing is not None else {}
        files: dict[str, str | None] = {}
        folders: dict[str, dict[str, str | None]] = {}
        for path, oid in changes.items():
            head, slash, rest = path.partition("/")
            if slash:
                folders.setdefault(head, {})[rest] = oid
            else:
                files[head] = oid
        for name in files.keys() & folders.keys():
            raise UsageError(f"{prefix}{name} cannot be both a file and a folder in one write")
        changed = False
        for name, oid in files.items():
            current = entries.get(name)
            if current is not None:
                self._require_file(current, prefix + name)
            if oid is None:
                changed |= entries.pop(name, None) is not None
            elif current is None or current.oid != oid:
                entries[name] = Entry(current.mode if current else MODE_FILE, "blob", oid)
                changed = True
        for name, sub in folders.items():
            current = entries.get(name)
            if current is not None and not current.is_tree:
                raise InvalidDataError(
                    f"{prefix}{name} on branch {self.branch} is a {kind_of(current.mode)}, not a folder; "
                    "replace it with a folder"
                )
            below = self._trees.listing(current.oid, path=prefix + name) if current is not None else None
            new = self._write_tree(trees, below, sub, f"{prefix}{name}/")
            if new == "":
                continue
            changed = True
            if new is None:
                entries.pop(name, None)
            else:
                entries[name] = Entry(MODE_TREE, "tree", new)
        if not changed:
            return ""
        if not entries:
            return None
        try:
            oid = trees.write(entries)
        except ObjectMissing as exc:
            # An entry carried over unchanged (an archive folder, another file) whose object is gone: the branch is
            # damaged, which is invalid data like a missing blob read, not a failure of git.
            raise missing_object(prefix + exc.name, exc.oid, self.branch) from None
        self._trees.remember(oid, entries)  # the next update in this process starts from this tree: no ls-tree
        return oid

    def _identity_env(self) -> dict[str, str]:
        """The identity variables for ``git commit-tree``.

        statefile's own author setting when given; else git's identity (``user.name``/``user.email``, the
        ``GIT_AUTHOR_*``/``GIT_COMMITTER_*`` variables); where git has none, statefile's default.  The committer is
        git's, else the author.
        """
        if self._identity is not None:
            return self._identity
        env: dict[str, str] = {}
        if self._author is not None:
            env.update(GIT_AUTHOR_NAME=self._author[0], GIT_AUTHOR_EMAIL=self._author[1])
        return env

    def _fallback_identity(self) -> dict[str, str]:
        # git has no complete identity configured: statefile's default fills what the environment lacks.
        name, email = self._author if self._author is not None else (BOT_NAME, BOT_EMAIL)
        env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email}
        for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"):
            if self._author is None and os.environ.get(key):
                env[key] = os.environ[key]
        env["GIT_COMMITTER_NAME"] = os.environ.get("GIT_COMMITTER_NAME") or env["GIT_AUTHOR_NAME"]
        env["GIT_COMMITTER_EMAIL"] = os.environ.get("GIT_COMMITTER_EMAIL") or env["GIT_AUTHOR_EMAIL"]
        return env

    def _commit(
        self, base: str | None, changes: Mapping[str, bytes | None], message: str, *, fsck: bool = False
    ) -> str | None:
        """Write the objects of a commit on ``base`` with ``changes``; ``None`` when the tree is unchanged.

        With ``fsck``, git's fsck checks the new trees and blobs before any commit refers to them: files from
        elsewhere (an import) must not give the branch a tree that fsck, or a remote, would refuse.
        """
        listing = self._trees.listing(base) if base else None
        written = [path for path, data in changes.items() if data is not None]
        oids = dict(zip(written, self._writer.blobs([changes[path] or b"" for path in written]), strict=True))
        with self._writer.trees() as trees:
            root = self._write_tree(trees, listing, {path: oids.get(path) for path in changes}, "")
            if root == "":
                return None
            if root is None:
                root = trees.write({})
                self._trees.remember(root, {})
        if fsck:
            problem = self._writer.fsck([*trees.written, *oids.values()])
            if problem:
                raise UsageError(
                    f"git's fsck refuses the files to write ({problem}); nothing was written — rename or remove "
                    "the offending file"
                )
        try:
            commit = self._writer.commit(root, base, message, self._identity_env())
        except IdentityMissing:
            self._identity = self._fallback_identity()
            commit = self._writer.commit(root, base, message, self._identity)
        else:
            self._identity = self._identity_env()
        self._trees.remember(commit, self._trees.listing(root))
        return commit

    # -- moving refs ---------------------------------------------------------------------------------------------

    def _check_writable(self, state: RefState) -> None:
        if state.checked_out:
            raise UsageError(
                f"branch {self.branch} is checked out in the work tree at {state.checked_out}; statefile never "
                "touches a work tree — switch that checkout to another branch, or use a folder store on it (--dir)"
            )
        # Before creating the branch, git itself judges the name (a branch that exists was accepted already).
        if state.local is None and not self._name_checked:
            self._refs.check_name()
            # A ref in the way by git's directory/file rule would make the compare-and-swap fail the way a held
            # lock does.  Through a remote the local branch only follows the remote's, so a clash here does not
            # stop the write (the local branch is then left alone, see _advance_local).
            existing = self._refs.in_the_way() if self._remote is None else ""
            if existing:
                raise clash_error(self._local_ref, existing)
            self._name_checked = True

    def _advance_local(self, local: str | None, target: str, why: str) -> bool:
        """Move the local branch forward to ``target`` (which descends from ``local``), if no one moved it.

        True when the local branch is at ``target`` (or beyond it) afterwards.
        """
        if local == target:
            return True

        def attempt(number: int) -> tuple[Outcome, bool]:
            nonlocal local
            if number:  # the compare-and-swap failed: look again (the caller checked the first time)
                state = self._refs.read()
                if state.checked_out or state.symref:
                    return Outcome.DONE, False
                local = state.local
                if local == target or (local is not None and self._refs.is_ancestor(target, local)):
                    return Outcome.DONE, True  # another writer in this clone moved it to or past target
                if local is not None and not self._refs.is_ancestor(local, target):
                    return Outcome.DONE, False  # it diverged: leave it for the next write to report
            try:
                outcome, _result = self._refs.cas(self._local_ref, target, local, why)
            except UsageError:
                return Outcome.DONE, False  # another branch is in its way here: reads use the remote's tip
            return outcome, outcome.done

        return retry(attempt, _LOCK_BACKOFF, rng=self._random).value

    def _fetch(self) -> str | None:
        """Fetch the branch into its remote-tracking ref; the remote's tip, ``None`` if it has no such branch."""
        assert self._remote is not None
        remote = self._remote
        # Before anything is fetched: a symbolic ref there would bring another branch's commit into the
        # remote-tracking ref, and from there onto the local branch (a fast-forward, or sync starting from it).
        remote.refuse_symref()

        def attempt(_: int) -> tuple[Outcome, Result]:
            result = remote.fetch()
            if not result.ok and remote.fetch_locked(result) and not remote.missing_branch(result):
                return Outcome.LOCKED, result  # another fetch in this clone is updating the same ref
            return Outcome.DONE, result

        tried = retry(attempt, _LOCK_BACKOFF, rng=self._random)
        result = tried.value
        if result.ok:
            return self._refs.resolve(remote.tracking_ref)
        if remote.missing_branch(result):
            if self._refs.resolve(remote.tracking_ref) is not None:
                self._refs.delete(remote.tracking_ref)
            return None
        if tried.outcome is Outcome.LOCKED:
            raise GitError(self._git.redact(
                f"fetching {remote.display} could not update {remote.tracking_ref}: its lock is held "
                f"({one_line(result.err, 300)}) — if no git "
                "process is running, a killed one left that .lock file behind: delete it"
            ))  # fmt: skip
        raise remote.fetch_error(result)

    def fetch(self) -> str | None:
        """Fetch the branch from the remote and fast-forward the local branch to it (reads then see it).

        Returns the remote's tip, or ``None`` when the remote has no such branch.  Never moves a local branch
        that has commits the remote lacks, nor one that is checked out.  When the local branch is behind but
        cannot be moved (a stale lock), reads use the fetched tip, never the stale branch.
        """
        if self._remote is None:
            raise UsageError("this store has no remote; open it with remote='origin' to fetch")
        remote_tip = self._fetch()
        self._pinned = None
        state = self._state()
        local = state.local
        if remote_tip is None or local is None or local == remote_tip:
            return remote_tip
        if self._refs.is_ancestor(local, remote_tip):
            moved = not state.checked_out and self._advance_local(local, remote_tip, "fast-forward after fetch")
            if not moved:
                self._pinned = remote_tip
        return remote_tip

    def _base(self, local: str | None, remote_tip: str | None) -> str | None:
        """What to build on when writing through the remote: the newer of local and remote, which must agree."""
        if local is None or local == remote_tip:
            return remote_tip
        if remote_tip is None or self._refs.is_ancestor(remote_tip, local):
            return local  # unpushed local commits (written without a remote): they go out with this push
        if self._refs.is_ancestor(local, remote_tip):
            return remote_tip
        assert self._remote is not None
        raise ConflictError(
            f"{self._local_ref} and {self._remote.display} have diverged; nothing was written — reconcile them "
            "with git (merge or reset the local branch), then retry"
        )

    # -- transactions --------------------------------------------------------------------------------------------

    def _try_local(
        self, attempt: Callable[[str | None], str | None], why: str, program: str
    ) -> tuple[Outcome, tuple[str, Result | None]]:
        state = self._state()
        self._check_writable(state)
        base = state.local if state.local is not None else state.tracking_tip
        new = attempt(base)
        if new is None:
            return Outcome.DONE, (base or "", None)
        with self._publishing(new, program):
            outcome, result = self._refs.cas(self._local_ref, new, state.local, why)
            if outcome is Outcome.DONE:
                self._landed_writes.append((new, program))
        return outcome, (new, result)

    @contextlib.contextmanager
    def _publishing(self, new: str, program: str) -> Iterator[None]:
        """Mark commit ``new`` as possibly landing while the block runs (see :meth:`interrupted_write`).

        A KeyboardInterrupt leaves the mark in place: that is exactly when it must be read.  Any other way out
        clears it — the block either recorded the landing or knows the commit did not land.
        """
        self._in_flight = (new, program)
        try:
            yield
        except KeyboardInterrupt:
            raise
        except BaseException:
            self._in_flight = None
            raise
        self._in_flight = None

    def interrupted_write(self) -> str | None:
        """What a Ctrl-C arriving now must say: ``None`` while no write of this store can have reached the branch.

        Once a push or ref update has started, the write may have landed whatever the interrupt stops, and running
        the command again would record it twice: so the answer says whether it landed, or may have, and how to
        look (``statefile log PROGRAM``)."""
        where = self._remote.display if self._remote is not None else self.branch
        if self._in_flight is not None:
            commit, program = self._in_flight
            return (
                f"interrupted while writing {program or 'the branch'} to {where}: the write may have landed — check "
                f"with `{self._check_command(program)}` before running the command again"
            )
        if self._landed_writes:
            programs = list(dict.fromkeys(program for _, program in self._landed_writes))
            commit, program = self._landed_writes[-1]
            what = ", ".join(p or "the branch" for p in programs)
            return (
                f"interrupted after the write landed: {what} on {where} (commit {commit[:10]}); "
                f"`{self._check_command(program)}` shows it — do not run the command again"
            )
        return None

    def _try_remote(
        self,
        attempt: Callable[[str | None], str | None],
        why: str,
        locked: list[tuple[float, str | None]],
        program: str,
    ) -> tuple[Outcome, tuple[str, Result | None]]:
        assert self._remote is not None
        remote_tip = self._fetch()
        state = self._state()
        self._check_writable(state)
        base = self._base(state.local, remote_tip)
        new = attempt(base)
        if new is None:
            if base is not None and state.local != base:
                self._pinned = None if self._advance_local(state.local, base, why) else base
            return Outcome.DONE, (base or "", None)
        self._remote.refuse_symref()
        with self._publishing(new, program):
            return self._pushed(new, program, why, locked, state, remote_tip)

    def _pushed(
        self,
        new: str,
        program: str,
        why: str,
        locked: list[tuple[float, str | None]],
        state: RefState,
        remote_tip: str | None,
    ) -> tuple[Outcome, tuple[str, Result | None]]:
        """Push ``new`` and settle what became of it (the second half of :meth:`_try_remote`)."""
        assert self._remote is not None
        outcome, result = self._remote.push(new)
        if outcome is Outcome.REMOTE_LOCKED:
            # A concurrent push holds the remote's ref lock for milliseconds and then moves the tip; a lock that
            # stays while the tip does not is a stale .lock a killed push left there: retrying cannot help.
            if not locked or locked[0][1] != remote_tip:
                locked[:] = [(time.monotonic(), remote_tip)]
            elif time.monotonic() - locked[0][0] >= STALE_REMOTE_LOCK:
                raise self._remote.locked_error(result)
        else:
            locked.clear()
        if outcome is Outcome.MOVED:
            # The push failed without a verdict: the remote may have taken the commit before the connection
            # dropped.  Look before reporting, so a caller that retries does not record the same thing twice.
            landed = self._landed(new)
            if landed is None:
                raise self._remote.unverified_error(_VERIFY_BACKOFF.budget, self._check_command(program))
            if not landed:
                raise self._remote.push_error(result)
            outcome = Outcome.DONE
        if outcome is Outcome.DONE:
            self._landed_writes.append((new, program))
            # The commit has landed: from here on, a failure to move our own refs (whatever the error: a full or
            # read-only disk here too) must not report the write as failed.  A ref left behind is repaired by the
            # next fetch (a local branch behind the remote follows).
            with contextlib.suppress(StatefileError):
                self._refs.set(self._remote.tracking_ref, new, why)
            with contextlib.suppress(StatefileError):
                self._pinned = None if self._advance_local(state.local, new, why) else new
        return outcome, (new, result)

    def _landed(self, new: str) -> bool | None:
        """Whether commit ``new`` is on the remote branch now (after a push that failed without a verdict);
        ``None`` when the remote could not be read within :data:`_VERIFY_BACKOFF`'s time.

        A failed read is no answer: the connection just broke, and the remote may be back a moment later.
        """

        def attempt(_: int) -> tuple[Outcome, bool | None]:
            try:
                tip = self._fetch()
                return Outcome.DONE, tip is not None and (tip == new or self._refs.is_ancestor(new, tip))
            except (UsageError, InvalidDataError):
                raise  # an answer, and a final one (a clash, a symbolic ref): asking again will not change it
            except StatefileError:
                return Outcome.UNANSWERED, None

        return retry(attempt, _VERIFY_BACKOFF, rng=self._random).value

    def _check_command(self, program: str) -> str:
        """The command that shows whether a write to ``program`` is on the branch (or the remote's)."""
        remote = f" --remote {self._remote.name}" if self._remote is not None else ""
        branch = "" if self.branch == DEFAULT_BRANCH else f" --branch {self.branch}"
        return f"statefile{remote}{branch} log {program or 'PROGRAM'}"

    def _transact(
        self, attempt: Callable[[str | None], str | None], why: str, program: str = ""
    ) -> tuple[str, bool, int]:
        """Run ``attempt(base) -> new commit | None`` until its commit lands on the branch.

        Returns the tip afterwards, whether a commit was written, and the number of attempts.  ``program`` (the
        one written, when one is) names it in what an unverified push says to check.
        """
        locked: list[tuple[float, str | None]] = []  # since when the remote's ref lock has been held, at which tip

        def step(_: int) -> tuple[Outcome, tuple[str, Result | None]]:
            if self._remote is not None:
                return self._try_remote(attempt, why, locked, program)
            return self._try_local(attempt, why, program)

        first, cap = _REMOTE_BACKOFF if self._remote is not None else _LOCAL_BACKOFF
        backoff = Backoff(tries=self.max_tries, first=first, cap=cap, budget=self.max_wait)
        tried: Tried[tuple[str, Result | None]] = retry(step, backoff, rng=self._random)
        commit, result = tried.value
        if tried.outcome.done:
            return commit, result is not None, tried.attempts
        if tried.outcome is Outcome.LOCKED and result is not None:
            raise GitError(self._git.redact(
                f"cannot lock {self._local_ref} in {self.repository.common_dir} ({one_line(result.err, 300)}): "
                f"another git process holds it, or a killed one left {self._local_ref}.lock behind — if no git "
                "process is running, delete that file"
            ))  # fmt: skip
        if tried.outcome is Outcome.REMOTE_LOCKED and result is not None and self._remote is not None:
            raise self._remote.locked_error(result)
        where = self._remote.display if self._remote is not None else self.branch
        raise ConflictError(
            f"gave up after {tried.attempts} tries: {where} kept changing under concurrent writers; nothing was "
            "written and the branch is as the others left it — run the command again"
        )

    # -- the Store writing interface -----------------------------------------------------------------------------

    def update(self, program: str, fn: UpdateFn[T], message: str) -> UpdateResult[T]:
        """Apply ``fn`` to ``program``'s state file as one commit (see :meth:`Store.update`).

        ``fn`` runs again on the newer document whenever a concurrent write wins the race: keep it pure.
        """
        validate_program(program)
        text = clean_message(message)
        label = first_line(text)
        plans: list[Plan[T]] = []

        def attempt(base: str | None) -> str | None:
            current = self._read_at(base, state_path(program))
            if current is None and base is not None:
                refuse_case_twin(program, self._trees.listing(base))
            plan = plan_update(
                program,
                current,
                fn,
                max_bytes=self.max_bytes,
                last_part=lambda: self._last_part(base, program),
                label=label,
            )
            plans.append(plan)  # the last plan is the one that landed: the loop ends with its attempt
            if not plan.files:
                return None
            message_text = clean_message(plan.message) if plan.message.strip() else text
            changes = {path: checked_bytes(t, path) for path, t in plan.files.items()}
            return self._commit(base, changes, message_text)

        tip, wrote, attempts = self._transact(attempt, label, program)
        plan = plans[-1]
        return UpdateResult(
            tip or None, wrote, tuple(plan.files) if wrote else (), plan.document, plan.detail, attempts
        )

    def write_files(self, files: Mapping[str, str | None], message: str) -> UpdateResult[None]:
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
                    f"{path} is over the budget at {budget_text(len(data), self.max_bytes)}; nothing was written "
                    "— run `statefile compact` on it first"
                )
            changes[path] = data
        if not changes:
            return UpdateResult(self.tip(), False)
        tip, wrote, attempts = self._transact(
            lambda base: self._commit(base, changes, text, fsck=True), first_line(text)
        )
        return UpdateResult(tip or None, wrote, tuple(changes) if wrote else (), attempts=attempts)


Store.git_store = GitStore
