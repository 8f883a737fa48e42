"""State files on a git branch, without a checkout: a write is one transaction (read the tip, build on it,
compare-and-swap the ref or push, retry with backoff; a push without a verdict is checked before anything is
reported); reads, logs and ``sync``'s branch operations."""

from __future__ import annotations

import contextlib
import os
import random
import re
import time
from collections.abc import Callable, Mapping
from datetime import datetime

from statefile.defaults import DEFAULT_BRANCH, DEFAULT_MAX_BYTES
from statefile.errors import ConflictError, GitError, InvalidDataError, StatefileError, UsageError
from statefile.model.archive import NESTED
from statefile.store.atomic import read_limit
from statefile.store.base import (
    Change,
    LogEntry,
    Store,
    T,
    UpdateFn,
    UpdateResult,
    decode_text,
    encoded_files,
    first_line,
    state_path,
)
from statefile.store.git.branches import BranchState, decide
from statefile.store.git.objects import Objects, kind_of, missing_object
from statefile.store.git.refs import Backoff, Outcome, Refs, RefState, clash_error, lock_busy, lock_held, retry
from statefile.store.git.remote import Remote, credentials, env_tokens
from statefile.store.git.runner import OBJECT_FORMATS, Git, Repository, Result, discover, git_executable
from statefile.store.names import parse_identity, validate_branch, validate_path, validate_remote

# One commit of `git log -z --raw --format=%x01%H`: its id, then the blob ids before and after (zeros: no file).
_RAW_CHANGE = re.compile(r"^([0-9a-f]+)\0\n?:\d+ \d+ ([0-9a-f]+) ([0-9a-f]+) [A-Z]\d*\0")
DEFAULT_MAX_TRIES = 100  # how many times a write may start again after a concurrent writer got in first
DEFAULT_MAX_WAIT = 300.0  # and for how many seconds
_LOCAL_BACKOFF, _REMOTE_BACKOFF = (0.005, 0.5), (0.1, 8.0)  # round trips of ~5 ms here, ~100 ms to a remote
#: Seconds the remote's ref lock may stay held while its tip stays put before the lock is taken for a stale one.
STALE_REMOTE_LOCK = 3.0
_LOCK_BACKOFF = Backoff(tries=6, first=0.02, cap=0.5, budget=5.0)  # another git process in this clone
_VERIFY_BACKOFF = Backoff(tries=40, first=0.1, cap=1.0, budget=8.0)  # reading back a remote whose connection broke
_MISSING = "couldn't find remote ref"  # a fetch of a branch the remote does not have


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


class GitStore(Store):
    """State files on a branch of a git repository, without a checkout: reads, logs, ``sync``'s branch operations,
    and every write as one transaction (read the tip, build on it, compare-and-swap the ref or push, retry)."""

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
        self.where = f"on branch {self.branch}"
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
        self.repository = repo = path if isinstance(path, Repository) else discover(path)
        if repo.object_format not in OBJECT_FORMATS:
            raise InvalidDataError(
                f"{repo.top} stores objects in the {repo.object_format!r} format, which statefile does not know "
                f"(it knows {', '.join(OBJECT_FORMATS)}); nothing was read or written"
            )
        creds = credentials(self.remote or "", os.environ)  # a remote's name comes back as it is
        self.remote = None if self.remote is None else creds.url  # credentials in a URL live on in the header only
        # Relative remote URLs resolve from the work tree's top, as the user's git would.
        env, secrets = Git.environment(str(repo.git_dir), creds.config), (*env_tokens(), *creds.secrets)
        self._git = Git(git_executable(), str(repo.top), env, secrets=secrets)
        self._remote = None if self.remote is None else Remote(self._git, self.remote, self.branch)
        # Reads fall back to a remote-tracking copy of the branch: origin's first, then the others by name.
        tracking = self._remote.tracking_ref if self._remote else f"refs/remotes/*/{self.branch}"
        self._refs = Refs(self._git, repo, self.branch, tracking)
        self._preferred_tracking = self._remote.tracking_ref if self._remote else f"refs/remotes/origin/{self.branch}"
        self._local_ref = self._refs.local_ref
        self._objects = Objects(self._git, self.branch, max_bytes)  # one long-lived reader; listings cached by id
        self._name_checked = self._symref_checked = False
        self._pinned: str | None = None  # a fetched tip reads use instead of a local branch that could not follow
        self._known: RefState | None = None  # the refs as last read, passed forward until a ref may have moved
        self._fetched: tuple[str | None] | None = None  # the remote's tip as last asked, likewise
        self._random = random.Random()
        self._in_flight: tuple[str, str] | None = None  # the commit being published now (see interrupted_write)
        self._landed_writes: list[tuple[str, str]] = []

    def close(self) -> None:
        self._objects.close()

    def __repr__(self) -> str:
        where = f" via {self._remote.display}" if self._remote else ""
        return f"<GitStore {self.repository.top} branch {self.branch}{where}>"

    def _state(self) -> RefState:
        """The refs, read once and passed forward; a symbolic branch is refused here."""
        if self._known is None:
            state = self._refs.read()
            self._refs.refuse_symref(state)
            self._known, self._symref_checked = state, True
        return self._known

    def _forget(self) -> None:
        self._known = self._fetched = None

    def branch_state(self) -> BranchState:
        """The local branch against its remote-tracking copy; nothing is fetched."""
        state = self._state()
        if self._remote is not None:
            tracking, name = state.tracking.get(self._remote.tracking_ref), self._remote.display
        else:
            ref, tracking = next(iter(state.tracking.items()), ("", None))
            name = ref.removeprefix("refs/remotes/")
        ahead = behind = 0
        if state.local is not None and tracking is not None and state.local != tracking:
            out = self._git.run("rev-list", "--left-right", "--count", f"{state.local}...{tracking}")
            left, _, right = out.decode("ascii", "replace").strip().partition("\t")
            ahead, behind = int(left or 0), int(right or 0)
        elif state.local is not None and tracking is None and self._remote is not None:
            ahead = int(self._git.run("rev-list", "--count", state.local).decode("ascii", "replace").strip() or 0)
        return BranchState(state.local, tracking, ahead, behind, name, self.branch, self.remote)

    def tip(self) -> str | None:
        """The commit reads see: the local branch, else the remote-tracking branch, else ``None``."""
        if self._pinned is not None:
            return self._pinned
        if not self._symref_checked:
            self._state()  # cat-file follows a symbolic ref without a word: the refs' listing refuses one, once
        found = [oid for oid in self._objects.resolve([self._local_ref, self._preferred_tracking]) if oid is not None]
        return found[0] if found else None if self._remote is not None else self._state().tracking_tip

    _head = tip

    def _check_writable(self, state: RefState) -> None:
        if state.checked_out:
            raise UsageError(
                f"branch {self.branch} is checked out in the work tree at {state.checked_out}; statefile never "
                "touches a work tree — switch that checkout to another branch, or use a folder store on it (--dir)"
            )
        # Before creating the branch, git itself judges the name (a branch that exists was accepted already).
        if state.local is None and not self._name_checked:
            self._refs.check_name()
            # A ref in the way fails the compare-and-swap like a held lock; through a remote the local ref only follows.
            if self._remote is None and (existing := self._refs.in_the_way()):
                raise clash_error(self._local_ref, existing)
            self._name_checked = True

    def _advance_local(self, local: str | None, target: str, why: str) -> bool:
        """Fast-forward the local branch to ``target`` unless moved; whether it is at or past it."""
        if local == target:
            return True
        self._forget()

        def attempt(number: int) -> tuple[Outcome, bool]:
            nonlocal local
            if number:  # the compare-and-swap failed: look again
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
            return outcome, outcome is Outcome.DONE

        return retry(attempt, _LOCK_BACKOFF, rng=self._random)[1]

    def _fetch(self) -> str | None:
        """The remote's tip (``None``: no such branch), fetched into the remote-tracking ref when new."""
        assert self._remote is not None
        if self._fetched is not None:
            return self._fetched[0]
        remote = self._remote
        tip = remote.advertised()  # before anything is fetched: a symbolic ref there is refused
        state = self._state()
        have = state.tracking.get(remote.tracking_ref)
        if tip is None and have is not None:
            self._git.run("update-ref", "--no-deref", "-d", remote.tracking_ref)  # the branch is gone there
            self._known = state._replace(tracking={})
        elif tip is not None and have != tip:

            def attempt(_: int) -> tuple[Outcome, Result]:
                result = remote.fetch()  # LOCKED: another fetch in this clone is updating the same ref
                busy = not result.ok and lock_busy(result.err) and _MISSING not in result.err
                return Outcome.LOCKED if busy else Outcome.DONE, result

            outcome, result, _ = retry(attempt, _LOCK_BACKOFF, rng=self._random)
            if _MISSING in result.err:
                tip = None  # deleted since it was advertised
                self._forget()
            elif outcome is Outcome.LOCKED:
                raise lock_held(remote.tracking_ref, f"to fetch {remote.display}", result.err)
            elif not result.ok:
                raise remote.fetch_error(result)
            else:  # the fetched ref holds the advertised tip (or a newer one, which a push would then learn of)
                self._known = state._replace(tracking={remote.tracking_ref: tip})
        self._fetched = (tip,)
        return tip

    def _base(self, state: RefState, remote_tip: str | None) -> str | None:
        """What to build on: the branch (or its remote-tracking copy); through a remote the newer of the two."""
        local = state.local
        if self._remote is None:
            return local if local is not None else state.tracking_tip
        if local is None or local == remote_tip:
            return remote_tip
        if remote_tip is None or self._refs.is_ancestor(remote_tip, local):
            return local  # unpushed local commits (written without a remote): they go out with this push
        if self._refs.is_ancestor(local, remote_tip):
            return remote_tip
        branches = self.branch_state()
        refusal = decide(branches).refusal if branches.diverged else None
        raise refusal or ConflictError(f"{self._local_ref} and {branches.tracking_name} have diverged")

    def _landed(self, new: str) -> bool | None:
        """Whether ``new`` is on the remote after a push without a verdict; ``None``: the remote could not be read."""

        def attempt(_: int) -> tuple[Outcome, bool | None]:
            try:
                self._forget()
                tip = self._fetch()
                return Outcome.DONE, tip is not None and (tip == new or self._refs.is_ancestor(new, tip))
            except (UsageError, InvalidDataError):
                raise  # an answer, and a final one (a clash, a symbolic ref): asking again will not change it
            except StatefileError:
                return Outcome.UNANSWERED, None

        return retry(attempt, _VERIFY_BACKOFF, rng=self._random)[1]

    def interrupted_write(self) -> str | None:
        """Whether a write landed, or may have, and how to look."""
        where = self._remote.display if self._remote is not None else self.branch
        if self._in_flight is not None:
            commit, program = self._in_flight
            return (
                f"interrupted while writing {program or 'the branch'} to {where}: the write may have landed — check "
                f"with `{self._check_command(program)}` before running the command again"
            )
        if self._landed_writes:
            what = ", ".join(dict.fromkeys(p or "the branch" for _, p in self._landed_writes))
            commit, program = self._landed_writes[-1]
            return (
                f"interrupted after the write landed: {what} on {where} (commit {commit[:10]}); "
                f"`{self._check_command(program)}` shows it — do not run the command again"
            )
        return None

    def _check_command(self, program: str) -> str:
        remote = f" --remote {self._remote.name}" if self._remote is not None else ""
        branch = "" if self.branch == DEFAULT_BRANCH else f" --branch {self.branch}"
        return f"statefile{remote}{branch} log {program or 'PROGRAM'}"

    def _follow(self, remote: Remote, state: RefState, new: str, why: str) -> None:
        """Move both refs to ``new``, which landed; a failure here fails no write (the next fetch repairs it)."""
        with contextlib.suppress(StatefileError):
            if self._refs.move_both(remote.tracking_ref, self._local_ref, new, state.local, why):
                self._fetched = (new,)
                self._known = state._replace(local=new, tracking={remote.tracking_ref: new})
                return
        with contextlib.suppress(StatefileError):
            self._refs.set(remote.tracking_ref, new, why)
        with contextlib.suppress(StatefileError):
            self._pinned = None if self._advance_local(state.local, new, why) else new

    def _transact(
        self, attempt: Callable[[str | None], str | None], why: str, program: str = ""
    ) -> tuple[str, bool, int]:
        """Run ``attempt(base) -> commit | None`` until it lands: (tip, whether a commit was written, attempts)."""
        locked: list[tuple[float, str | None]] = []  # since when the remote's ref lock has been held, at which tip

        def step(number: int) -> tuple[Outcome, tuple[str, Result | None]]:
            if number:
                self._forget()  # the last attempt lost a race: read everything again
            remote = self._remote
            remote_tip = self._fetch() if remote is not None else None
            state = self._state()
            self._check_writable(state)
            base = self._base(state, remote_tip)
            new = attempt(base)
            if new is None:
                if remote is not None and base is not None and state.local != base:
                    self._pinned = None if self._advance_local(state.local, base, why) else base
                return Outcome.DONE, (base or "", None)
            self._in_flight = (new, program)  # possibly landing: only a KeyboardInterrupt leaves it (interrupted_write)
            try:
                self._forget()
                if remote is None:
                    outcome, result = self._refs.cas(self._local_ref, new, state.local, why)
                else:
                    outcome, result = remote.push(new)
                    if outcome is not Outcome.REMOTE_LOCKED:
                        locked.clear()
                    # A lock held while the tip stays put is a stale .lock a killed push left: retrying cannot help.
                    elif not locked or locked[0][1] != remote_tip:
                        locked[:] = [(time.monotonic(), remote_tip)]
                    elif time.monotonic() - locked[0][0] >= STALE_REMOTE_LOCK:
                        raise remote.locked_error(result)
                    if outcome is Outcome.MOVED:
                        # No verdict: look before reporting, or a caller that retries records it twice.
                        landed = self._landed(new)
                        if landed is None:
                            raise GitError(  # not "failed": it may be there, and a retry would record it twice
                                f"the push to {remote.display} may have landed, but it could not be verified: the "
                                f"connection broke before git reported the outcome, and {remote.display} could not "
                                f"be read back for {_VERIFY_BACKOFF.budget:.0f} s; check with "
                                f"`{self._check_command(program)}` before recording again, or the same change may be "
                                "recorded twice"
                            )
                        if not landed:
                            raise remote.push_error(result)
                        outcome = Outcome.DONE
                if outcome is Outcome.DONE:
                    self._landed_writes.append((new, program))
                    if remote is not None:
                        self._follow(remote, state, new, why)
            except (Exception, SystemExit):  # not KeyboardInterrupt: interrupted_write says what may have landed
                self._in_flight = None
                raise
            self._in_flight = None
            return outcome, (new, result)

        first, cap = _REMOTE_BACKOFF if self._remote is not None else _LOCAL_BACKOFF
        backoff = Backoff(tries=self.max_tries, first=first, cap=cap, budget=self.max_wait)
        try:
            outcome, (commit, result), attempts = retry(step, backoff, rng=self._random)
        finally:
            self._forget()  # what this write read is passed to no later call: the refs may change between calls
        if outcome is Outcome.DONE:
            return commit, result is not None, attempts
        if outcome is Outcome.LOCKED and result is not None:
            raise lock_held(self._local_ref, f"in {self.repository.common_dir}", result.err)
        if outcome is Outcome.REMOTE_LOCKED and result is not None and self._remote is not None:
            raise self._remote.locked_error(result)
        where = self._remote.display if self._remote is not None else self.branch
        raise ConflictError(
            f"gave up after {attempts} tries: {where} kept changing under concurrent writers; nothing was "
            "written and the branch is as the others left it — run the command again"
        )

    def update(self, program: str, fn: UpdateFn[T], message: str = "") -> UpdateResult[T]:
        """Apply ``fn`` to ``program``'s state file as one commit (see :meth:`Store.update`)."""
        text = clean_message(message) if message else ""
        plans: list[tuple[dict[str, bytes], Change[T]]] = []

        def attempt(base: str | None) -> str | None:
            files, change = plan = self._plan(program, base, fn, text)
            plans.append(plan)  # the last plan is the one that landed: the loop ends with its attempt
            if not files:
                return None
            return self._commit(base, files, clean_message(change.message if change.message.strip() else text))

        tip, wrote, attempts = self._transact(attempt, first_line(text), program)
        files, change = plans[-1]
        return UpdateResult(tip or None, wrote, tuple(files) if wrote else (), change.document, change.detail, attempts)

    def write_files(self, files: Mapping[str, str | None], message: str) -> UpdateResult[None]:
        """Write ``files`` (path → text, ``None`` deletes) as one commit; each file must fit ``max_bytes``."""
        text = clean_message(message)
        changes = encoded_files(files, self.max_bytes)
        if not changes:
            return UpdateResult(self.tip(), False)
        tip, wrote, attempts = self._transact(
            lambda base: self._commit(base, changes, text, fsck=True), first_line(text)
        )
        return UpdateResult(tip or None, wrote, tuple(changes) if wrote else (), attempts=attempts)

    def _same(self, base: str, path: str, data: bytes | None) -> bool:
        try:
            entry = self._objects.lookup(base, path)
            if data is None or entry is None:
                return data is None and entry is None
            if entry.size is not None and entry.size != len(data):
                return False
            return self._objects.blobs([entry.oid], [path])[0] == data
        except StatefileError:  # damaged or too large to read: the write itself says what is wrong
            return False

    def _commit(
        self, base: str | None, changes: Mapping[str, bytes | None], message: str, *, fsck: bool = False
    ) -> str | None:
        """The commit of ``changes`` on ``base`` (``None``: tree unchanged); ``fsck`` checks files from elsewhere."""
        if base is None and all(data is None for data in changes.values()):
            return None
        if base is not None and all(self._same(base, path, data) for path, data in changes.items()):
            # Checked first: a rewritten tree would differ where git canonicalises an old mode (100664 → 100644).
            return None
        root = self._objects.write(base, changes)
        old = self._objects.root(base) if base else ""
        if root == old:
            return None
        if fsck and (problem := self._objects.fsck(root, old or None)):
            raise UsageError(
                f"git's fsck refuses the files to write ({problem}); nothing was written — rename or remove the "
                "offending file"
            )
        return self._objects.commit(root, base, message, self._author)

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
        entry = self._objects.lookup(at, path)
        data = None if entry is None else self._objects.blobs([entry.oid], [path])[0]
        return None if data is None else decode_text(data, f"{path} {self.where}")

    def _read_together(self, at: str | None, programs: list[str]) -> dict[str, str]:
        # One cat-file batch for every plain file within the read limit: the scheduler's view of 1,000 programs.
        listing = {} if at is None else self._objects.listing(at, sizes=True)
        limit = read_limit(self.max_bytes)
        entries = {name: e for name in programs if (e := listing.get(state_path(name))) and e.is_file}
        batch = [name for name, e in entries.items() if e.size is not None and e.size <= limit]
        try:
            data = self._objects.blobs([entries[n].oid for n in batch], [state_path(n) for n in batch])
            return {n: decode_text(raw, f"{state_path(n)} {self.where}") for n, raw in zip(batch, data, strict=True)}
        except StatefileError:  # one bad file: each is read alone, for its own error
            return {}

    def _names(self, at: str | None, program: str = "") -> list[str]:
        if not program:
            return [] if at is None else list(self._objects.listing(at))
        entry = self._objects.lookup(at, NESTED.folder(program), folder=True)
        return [] if entry is None else list(self._objects.listing(entry.oid, path=NESTED.folder(program)))

    def _top_md(self) -> dict[str, tuple[int, str]]:
        tip = self.tip()
        found: dict[str, tuple[int, str]] = {}
        for name, entry in ({} if tip is None else self._objects.listing(tip, sizes=True)).items():
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
        return [] if tip is None else sorted(self._objects.everything(tip))

    def read_all(self) -> dict[str, str]:
        """Every text file on the branch: path → text (one ``git ls-tree -r`` and one cat-file batch)."""
        tip = self.tip()
        entries = {} if tip is None else self._objects.everything(tip)
        for path, entry in entries.items():
            self._objects.require(entry, path)
        blobs = self._objects.blobs([entry.oid for entry in entries.values()], list(entries))
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
            blobs = self._objects.blobs(oids, [state_path(program)] * len(oids))
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
        if outcome is not Outcome.DONE:
            raise ConflictError(
                f"{self._local_ref} moved while statefile sync was starting; nothing was changed — run it again "
                f"(the local commits are also kept at {keep_ref})"
            )
        self._pinned = None

    def publish(self) -> str | None:
        """Push the local branch to the remote, never forced (the remote's commits must all be in it)."""
        if self._remote is None:
            raise UsageError("publishing needs a remote; open the store with remote='origin'")
        return self._transact(lambda base: base, "publish the local branch")[0] or None

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
