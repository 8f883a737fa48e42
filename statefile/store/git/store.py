"""State files on a branch of a git repository, written without a checkout (the user's HEAD, index and working
tree are never read or written): :mod:`.transaction` writes, this module reads and relates the branch to its
remote-tracking copy (the table in :mod:`.branches` says what that means for reads and writes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from statefile.errors import ConflictError, StatefileError, UsageError
from statefile.store.base import LogEntry, Store, decode_text, read_each, sorted_parts, state_path
from statefile.store.files import check_lines, read_limit
from statefile.store.git.objects import kind_of
from statefile.store.git.transaction import GitTransactions
from statefile.store.names import is_program_name, validate_path, validate_program, windows_reserved

# One commit of `git log -z --raw --format=%x01%H`: its id, then the blob ids before and after (zeros: no file).
_RAW_CHANGE = re.compile(r"^([0-9a-f]+)\0\n?:\d+ \d+ ([0-9a-f]+) ([0-9a-f]+) [A-Z]\d*\0")


class GitStore(GitTransactions):
    """State files on a branch of a git repository (see :mod:`.transaction` for how writes work)."""

    def commit_time(self, commit: str) -> int:
        """When ``commit`` was committed (Unix seconds): how old a copy whose tip it is must be at least."""
        return int(self._git.run("log", "-1", "--format=%ct", commit, "--").decode("ascii", "replace").strip() or 0)

    def pin(self, commit: str) -> None:
        """Make reads see ``commit`` (the remote's tip when the local branch has diverged); writes are unaffected,
        the next :meth:`fetch` unpins."""
        self._pinned = commit

    # -- reconciling a local branch with the remote's (statefile sync) -------------------------------------------

    def local_only_commits(self) -> list[tuple[str, str | None, str, list[str]]]:
        """The local branch's commits the remote-tracking copy lacks, oldest first: ``(commit, first parent or
        None, message, changed paths)``."""
        state = self.branch_state()
        if state.local is None:
            return []
        spec = state.local if state.tracking is None else f"{state.tracking}..{state.local}"
        out = self._git.run(
            "-c", "log.showRoot=true", "-c", "log.showSignature=false", "log", "--reverse", "--first-parent",
            "--no-renames", "--name-only", "-z", "--format=%x01%H%x02%P%x02%B%x02", spec, "--",
        )  # fmt: skip
        commits = []
        for record in out.split(b"\x01")[1:]:
            commit, parents, message, names = record.split(b"\x02", 3)
            parent = parents.decode("ascii").split()[0] if parents.strip() else None
            paths = names.lstrip(b"\0").removeprefix(b"\n").decode("utf-8", "surrogateescape").split("\0")
            text = message.decode("utf-8", "replace").strip()
            commits.append((commit.decode("ascii"), parent, text, [path for path in paths if path]))
        return commits

    def trailers(self, commit: str, key: str) -> list[str]:
        """The values of ``commit``'s ``key`` trailers, as git parses the message's trailer block."""
        out = self._git.run(
            "-c", "log.showSignature=false", "log", "-1", f"--format=%(trailers:key={key},valueonly,unfold)", commit
        )
        return [line.strip() for line in out.decode("utf-8", "replace").splitlines() if line.strip()]

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
        self._forget()
        outcome, _ = self._refs.cas(self._local_ref, tracking, state.local, "sync: start from the remote's tip")
        if not outcome.done:
            raise ConflictError(
                f"{self._local_ref} moved while statefile sync was starting; nothing was changed — run it again "
                f"(the local commits are also kept at {keep_ref})"
            )
        self._pinned = None

    def publish(self) -> str | None:
        """Push the local branch to the remote, never forced (the remote's commits must all be in it)."""
        if self._remote is None:
            raise UsageError("publishing needs a remote; open the store with remote='origin'")
        tip, _wrote, _attempts = self._transact(lambda base: base, "publish the local branch")
        return tip or None

    def branch_names(self) -> list[str]:
        """Names of the branches here, local and remote-tracking (``origin/x`` read as ``x``), sorted, once each."""
        out = self._git.run("for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes")
        refs = out.decode("utf-8", "surrogateescape").split("\n")
        names = {ref.removeprefix("refs/heads/") for ref in refs if ref.startswith("refs/heads/")}
        tracking = [ref for ref in refs if ref.startswith("refs/remotes/") and not ref.endswith("/HEAD")]
        names |= {ref.removeprefix("refs/remotes/").partition("/")[2] for ref in tracking}
        return sorted(name for name in names if name)

    def remote_names(self) -> list[str]:
        """The remotes configured in this repository (``git remote``)."""
        return self._git.run("remote").decode("utf-8", "surrogateescape").split()

    # -- the Store reading interface -----------------------------------------------------------------------------

    def _read_file(self, path: str) -> str | None:
        return self._read_at(self.tip(), path)

    def programs(self) -> dict[str, int]:
        """Program name → size in bytes, from one ``git ls-tree -l`` of the tip (no blob is read)."""
        return {name: size for name, (size, _) in self._top_files(self.tip()).items()}

    def _top_files(self, tip: str | None) -> dict[str, tuple[int, str]]:
        """Program name → (size, blob id) of every regular ``*.md`` file at the top of ``tip``'s tree."""
        listing = {} if tip is None else self._trees.listing(tip, sizes=True)
        return {
            name[:-3]: (entry.size, entry.oid)
            for name, entry in listing.items()
            if name.endswith(".md") and entry.is_file and entry.size is not None and is_program_name(name[:-3])
        }

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
                found[program] = f"{where} is {kind_of(entry.mode)}, not a regular file; replace it with a file"
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
        """The raw text of each program's state file at one tip (``None`` when missing), read in one batch."""
        names = list(programs)
        tip = self.tip()
        files = self._top_files(tip)
        limit = read_limit(self.max_bytes)
        batch = [name for name in names if name in files and files[name][0] <= limit]
        found = self._cat.read_many([files[n][1] for n in batch], limit)
        raw_by_name = {name: item[1] for name, item in zip(batch, found, strict=True) if item and item[0] == "blob"}

        def read(name: str) -> str | None:
            path = state_path(name)  # a name that is no program's is an error like any other here
            if (raw := raw_by_name.get(name)) is None:
                return self._read_at(tip, path)
            where = f"{path} {self.where}"
            return decode_text(check_lines(where, raw, self.max_bytes), where)

        return read_each(names, read, errors)

    def archive_parts(self, program: str) -> list[str]:
        """Archive part names of ``program`` at the tip, oldest first."""
        return sorted_parts(self._archive_names(self.tip(), validate_program(program)))

    def paths(self) -> list[str]:
        """Every path on the branch, sorted, from one ``git ls-tree -r`` (no blob is read)."""
        tip = self.tip()
        return [] if tip is None else sorted(self._trees.everything(tip))

    def read_all(self) -> dict[str, str]:
        """Every text file on the branch: path → text (one ``git ls-tree -r`` and one cat-file batch)."""
        tip = self.tip()
        if tip is None:
            return {}
        entries = self._trees.everything(tip)
        for path, entry in entries.items():
            self._require(entry, path)
        paths = list(entries)
        blobs = self._objects([entry.oid for entry in entries.values()], "blob", paths)
        texts = {path: self._text(path, data) for path, data in zip(paths, blobs, strict=True)}
        return {path: text for path, text in texts.items() if text is not None}

    def log(self, program: str, limit: int = 50) -> list[LogEntry]:
        """Commits on the branch that changed ``{program}.md``, newest first (one ``git log``)."""
        out = self._log_of(program, limit, "-z", "--format=%H%x1f%aI%x1f%an <%ae>%x1f%B")
        records = (out or b"").decode("utf-8", "replace").split("\0")
        found = [fields for record in records if len(fields := record.strip("\n").split("\x1f", 3)) == 4]
        return [LogEntry(commit, datetime.fromisoformat(when), by, text.strip()) for commit, when, by, text in found]

    def _log_of(self, program: str, limit: int, *options: str) -> bytes | None:
        """``git log OPTIONS`` of ``{program}.md`` at the tip; ``None`` for no branch or ``limit`` < 1."""
        path = state_path(program)
        tip = self.tip()
        if tip is None or limit < 1:
            return None
        return self._git.run(
            "-c", "log.showSignature=false", "-c", "core.quotePath=false", "log", *options, f"--max-count={int(limit)}",
            tip, "--", path,
        )  # fmt: skip

    def log_patches(self, program: str, limit: int = 50) -> dict[str, str]:
        """The unified diff of ``{program}.md`` in each of the commits :meth:`log` lists (one ``git log -p``)."""
        out = self._log_of(program, limit, "-p", "--no-color", "--no-ext-diff", "--no-textconv", "--format=%x00%H")
        if out is None:
            return {}
        records = (record.partition("\n") for record in out.decode("utf-8", "replace").split("\0")[1:])
        return {commit.strip(): patch.strip("\n") + "\n" if patch.strip() else "" for commit, _, patch in records}

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


Store.git_store = GitStore
