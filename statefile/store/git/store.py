"""State files on a git branch, without a checkout: :class:`GitStore`'s reads, logs and ``sync``'s branch operations."""

from __future__ import annotations

import re
from datetime import datetime

from statefile.errors import ConflictError, StatefileError, UsageError
from statefile.model.archive import archive_dir
from statefile.store.atomic import read_limit
from statefile.store.base import LogEntry, Store, decode_text, state_path
from statefile.store.git.objects import kind_of, missing_object
from statefile.store.git.transaction import GitTransactions
from statefile.store.names import validate_path

# One commit of `git log -z --raw --format=%x01%H`: its id, then the blob ids before and after (zeros: no file).
_RAW_CHANGE = re.compile(r"^([0-9a-f]+)\0\n?:\d+ \d+ ([0-9a-f]+) ([0-9a-f]+) [A-Z]\d*\0")


class GitStore(GitTransactions):
    """State files on a branch of a git repository; writes as :mod:`.transaction` says."""

    def __repr__(self) -> str:
        where = f" via {self._remote.display}" if self._remote else ""
        return f"<GitStore {self.repository.top} branch {self.branch}{where}>"

    def pin(self, commit: str) -> None:
        """Make reads (not writes) see ``commit`` until the next :meth:`fetch` (the remote's tip, after a fork)."""
        self._pinned = commit

    def fetch(self, *, read_only: bool = False) -> str | None:
        """Fetch the branch and fast-forward the local one (``read_only``: no branch moves); the remote's tip."""
        if self._remote is None:
            raise UsageError("this store has no remote; open it with remote='origin' to fetch")
        self._forget()
        remote_tip = self._fetch()
        self._pinned = None
        state = self._state()
        local = state.local
        if remote_tip is not None and local not in (None, remote_tip) and self._refs.is_ancestor(local, remote_tip):
            why = "fast-forward after fetch"
            moved = not read_only and not state.checked_out and self._advance_local(local, remote_tip, why)
            self._pinned = None if moved else remote_tip
            self._fetched = (remote_tip,)
        return remote_tip

    def _read_at(self, at: str | None, path: str) -> str | None:
        entry = self._trees.lookup(at, path)
        if entry is None:
            return None
        return decode_text(self._trees.objects([entry.oid], "blob", [path])[0], f"{path} on branch {self.branch}")

    def _read_together(self, at: str | None, programs: list[str]) -> dict[str, str]:
        # One cat-file batch for every plain file within the read limit: the scheduler's view of 1,000 programs.
        listing = {} if at is None else self._trees.listing(at, sizes=True)
        limit = read_limit(self.max_bytes)
        entries = {name: e for name in programs if (e := listing.get(state_path(name))) and e.is_file}
        batch = [name for name, e in entries.items() if e.size is not None and e.size <= limit]
        try:
            data = self._trees.objects([entries[n].oid for n in batch], "blob", [state_path(n) for n in batch])
            return {n: decode_text(raw, f"{state_path(n)} {self.where}") for n, raw in zip(batch, data, strict=True)}
        except StatefileError:  # one bad file: each is read alone, for its own error
            return {}

    def _names(self, at: str | None, program: str = "") -> list[str]:
        if not program:
            return [] if at is None else list(self._trees.listing(at))
        entry = self._trees.lookup(at, archive_dir(program), folder=True)
        return [] if entry is None else list(self._trees.listing(entry.oid, path=archive_dir(program)))

    def _top_md(self) -> dict[str, tuple[int, str]]:
        tip = self.tip()
        found: dict[str, tuple[int, str]] = {}
        for name, entry in ({} if tip is None else self._trees.listing(tip, sizes=True)).items():
            why = ""
            if not entry.is_file:
                why = f"{name} {self.where} is {kind_of(entry.mode)}, not a regular file; replace it with a file"
            elif entry.size is None:
                why = str(missing_object(name, entry.oid, self.branch))
            if name.endswith(".md"):
                found[name[:-3]] = (entry.size or 0, why)
        return found

    def paths(self) -> list[str]:
        """Every path on the branch, sorted, from one ``git ls-tree -r`` (no blob is read)."""
        tip = self.tip()
        return [] if tip is None else sorted(self._trees.everything(tip))

    def read_all(self) -> dict[str, str]:
        """Every text file on the branch: path → text (one ``git ls-tree -r`` and one cat-file batch)."""
        tip = self.tip()
        entries = {} if tip is None else self._trees.everything(tip)
        for path, entry in entries.items():
            self._trees.require(entry, path)
        blobs = self._trees.objects([entry.oid for entry in entries.values()], "blob", list(entries))
        texts = {path: self._text(path, data) for path, data in zip(entries, blobs, strict=True)}
        return {path: text for path, text in texts.items() if text is not None}

    def file_at(self, commit: str | None, path: str) -> str | None:
        """The text of ``path`` at ``commit`` (``None`` when it does not exist there, or for no commit)."""
        return self._read_at(commit, validate_path(path))

    def commit_time(self, commit: str) -> int:
        """When ``commit`` was committed (Unix seconds): how old a copy whose tip it is must be at least."""
        return int(self._git.run("log", "-1", "--format=%ct", commit, "--").decode("ascii", "replace").strip() or 0)

    def trailers(self, commit: str, key: str) -> list[str]:
        """The values of ``commit``'s ``key`` trailers, as git parses the message's trailer block."""
        out = self._git.run(
            "-c", "log.showSignature=false", "log", "-1", f"--format=%(trailers:key={key},valueonly,unfold)", commit
        )
        return [line.strip() for line in out.decode("utf-8", "replace").splitlines() if line.strip()]

    def log(self, program: str, limit: int = 50) -> list[LogEntry]:
        """Commits on the branch that changed ``{program}.md``, newest first (one ``git log``)."""
        out = self._log_of(program, limit, "-z", "--format=%H%x1f%aI%x1f%an <%ae>%x1f%B")
        records = (out or b"").decode("utf-8", "replace").split("\0")
        found = [fields for record in records if len(fields := record.strip("\n").split("\x1f", 3)) == 4]
        return [LogEntry(commit, datetime.fromisoformat(when), by, text.strip()) for commit, when, by, text in found]

    def _log_of(self, program: str, limit: int, *options: str) -> bytes | None:
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
        records = (record.partition("\n") for record in (out or b"").decode("utf-8", "replace").split("\0")[1:])
        return {commit.strip(): patch.strip("\n") + "\n" if patch.strip() else "" for commit, _, patch in records}

    def log_texts(self, program: str, limit: int = 50) -> dict[str, tuple[str | None, str | None]]:
        """``{program}.md`` before and after each commit :meth:`log` lists (one ``git log --raw``, one batch read)."""
        out = self._log_of(program, limit, "-z", "--raw", "--no-abbrev", "--no-renames", "--format=%x01%H")
        pairs: dict[str, tuple[str | None, str | None]] = {}
        for record in (out or b"").decode("utf-8", "replace").split("\x01")[1:]:
            match = _RAW_CHANGE.match(record)
            if match:  # a merge commit has no --raw line: nothing to say about it
                commit, old, new = match.groups()
                pairs[commit] = (old if old.strip("0") else None, new if new.strip("0") else None)
        oids = sorted({oid for pair in pairs.values() for oid in pair if oid is not None})
        try:
            blobs = self._trees.objects(oids, "blob", [state_path(program)] * len(oids))
        except StatefileError:
            return {}  # an oversize or damaged old version: the log still lists the commits, without their texts
        texts = {oid: data.decode("utf-8", "replace") for oid, data in zip(oids, blobs, strict=True)}
        return {commit: (old and texts[old], new and texts[new]) for commit, (old, new) in pairs.items()}

    # -- reconciling a local branch with the remote's (statefile sync) -------------------------------------------

    def local_only_commits(self) -> list[tuple[str, str | None, str, list[str]]]:
        """The local-only commits, oldest first: ``(commit, first parent or None, message, changed paths)``."""
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

    def set_aside_local(self, keep_ref: str) -> None:
        """Keep the local commits under ``keep_ref``, then compare-and-swap the branch to the remote-tracking copy."""
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


Store.open = GitStore
