"""A write to the branch as one transaction: read the tip, compare-and-swap, push, retry.

1. Read the refs once (:mod:`.refs`); with a remote, ask it for its tip (``ls-remote``, which also refuses a
   symbolic ref there) and fetch only when that tip is new here.  The refs read and the tip fetched are passed
   forward: a command's first attempt reuses what opening the store read.
2. Read the files at the base, call the update function, and write blobs, trees and the commit with plumbing.
3. Move the ref last with ``git update-ref REF NEW OLD`` (git moves it only if it still points at OLD); with a
   remote the push (never forced) is the compare-and-swap, and the local refs follow it in one ``update-ref``.  A
   push that fails without a verdict is checked against the remote before anything is reported.
4. On a conflict, start again from 1 with jittered exponential backoff (:mod:`.retry`).  Objects of a lost attempt
   are garbage ``git gc`` removes; a process killed at any moment leaves the old commit or the new one.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping

from statefile.errors import ConflictError, GitError, InvalidDataError, StatefileError, UsageError
from statefile.model.archive import archive_dir
from statefile.store.base import (
    DEFAULT_BRANCH,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_TRIES,
    DEFAULT_MAX_WAIT,
    Plan,
    Store,
    T,
    UpdateFn,
    UpdateResult,
    checked_bytes,
    decode_text,
    encoded_files,
    first_line,
    newest_part,
    plan_update,
    refuse_case_twin,
    state_path,
)
from statefile.store.files import check_lines, read_limit, too_large
from statefile.store.git.branches import BranchState, Relation, decide
from statefile.store.git.objects import (
    MODE_FILE,
    CatFile,
    Entry,
    Listing,
    ObjectMissing,
    ObjectTooLarge,
    Trees,
    Writer,
    canonical_mode,
    kind_of,
    missing_object,
)
from statefile.store.git.refs import Refs, RefState, clash_error, lock_busy
from statefile.store.git.remote import Remote, credentials, env_tokens
from statefile.store.git.repo import OBJECT_FORMATS, Repository, discover, git_executable
from statefile.store.git.retry import Backoff, Outcome, Tried, retry
from statefile.store.git.runner import Git, Result, one_line
from statefile.store.names import is_remote_url, parse_identity, validate_branch, validate_remote

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


class GitTransactions(Store):
    """The writing half of :class:`~statefile.store.git.store.GitStore`: opening, refs, fetch and transactions."""

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
        url = None
        config: tuple[tuple[str, str], ...] = ()
        secrets = env_tokens()
        if self.remote is not None and is_remote_url(self.remote):
            creds = credentials(self.remote, os.environ)
            url, config, secrets = creds.url, creds.config, (*secrets, *creds.secrets)
            self.remote = url  # credentials written into the URL live on in the header only, never in an attribute
        # Relative remote URLs resolve from the work tree's top, as the user's git would; GIT_DIR pins the repository.
        self._git = Git(git_executable(), str(repo.top), Git.environment(str(repo.git_dir), config), secrets=secrets)
        self._remote = None if self.remote is None else Remote(self._git, self.remote, self.branch, url=url)
        # Reads fall back to a remote-tracking copy of the branch: origin's first, then the others by name.
        tracking = [self._remote.tracking_ref] if self._remote else [f"refs/remotes/*/{self.branch}"]
        self._refs = Refs(self._git, repo, self.branch, tracking, prefer=("origin",))
        self._preferred_tracking = self._remote.tracking_ref if self._remote else f"refs/remotes/origin/{self.branch}"
        self._local_ref = self._refs.local_ref
        self._cat = CatFile(self._git)  # one long-lived reader; answers cached by object id
        self._trees = Trees(self._git, self._cat, self.branch)
        self._writer = Writer(self._git)
        self._name_checked = self._symref_checked = False
        self._pinned: str | None = None  # a fetched tip reads use instead of a local branch that could not follow
        self._known: RefState | None = None  # the refs as last read, passed forward until a ref may have moved
        self._fetched: tuple[str | None] | None = None  # the remote's tip as last asked, likewise
        self._random = random.Random()
        self._in_flight: tuple[str, str] | None = None  # the commit being published now (see interrupted_write)
        self._landed_writes: list[tuple[str, str]] = []

    def __repr__(self) -> str:
        where = f" via {self._remote.display}" if self._remote else ""
        return f"<GitStore {self.repository.top} branch {self.branch}{where}>"

    def close(self) -> None:
        """Stop the long-lived ``git cat-file`` process."""
        self._cat.close()

    def _state(self) -> RefState:
        """The refs (read once and passed forward); a symbolic branch is refused here, for reads and writes alike."""
        if self._known is None:
            state = self._refs.read()
            self._refs.refuse_symref(state)
            self._known, self._symref_checked = state, True
        return self._known

    def _forget(self) -> None:
        """A ref may have moved: the next question reads the refs (and asks the remote) again."""
        self._known = None
        self._fetched = None

    def branch_state(self) -> BranchState:
        """The local branch against its remote-tracking copy (the remote's, after :meth:`fetch`); nothing is fetched,
        and ``rev-list --count`` runs only when the two differ."""
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
            ahead = int(self._git.run("rev-list", "--count", state.local).decode("ascii", "replace").strip() or 0)
        return BranchState(state.local, ref, tracking, ahead, behind, name, self.branch, self.remote)

    def tip(self) -> str | None:
        """The commit reads see: the local branch, else the remote-tracking branch (resolved in the running
        ``cat-file``), else ``None``."""
        if self._pinned is not None:
            return self._pinned
        if not self._symref_checked:
            self._state()  # cat-file follows a symbolic ref without a word: the refs' listing refuses one, once
        for oid in self._cat.resolve([self._local_ref, self._preferred_tracking]):
            if oid is not None:
                return oid
        return None if self._remote is not None else self._state().tracking_tip

    def _check_writable(self, state: RefState) -> None:
        if state.checked_out:
            raise UsageError(
                f"branch {self.branch} is checked out in the work tree at {state.checked_out}; statefile never "
                "touches a work tree — switch that checkout to another branch, or use a folder store on it (--dir)"
            )
        # Before creating the branch, git itself judges the name (a branch that exists was accepted already).
        if state.local is None and not self._name_checked:
            self._refs.check_name()
            # A ref in the way by git's directory/file rule fails the compare-and-swap the way a held lock does.
            # Through a remote the local branch only follows the remote's: a clash there does not stop the write.
            existing = self._refs.in_the_way() if self._remote is None else ""
            if existing:
                raise clash_error(self._local_ref, existing)
            self._name_checked = True

    def _advance_local(self, local: str | None, target: str, why: str) -> bool:
        """Fast-forward the local branch from ``local`` to ``target`` unless moved; whether it is at or past it."""
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
            return outcome, outcome.done

        return retry(attempt, _LOCK_BACKOFF, rng=self._random).value

    def _fetch(self) -> str | None:
        """The remote's tip (``None``: it has no such branch), fetched into the remote-tracking ref when new here."""
        assert self._remote is not None
        if self._fetched is not None:
            return self._fetched[0]
        remote = self._remote
        tip = remote.advertised()  # before anything is fetched: a symbolic ref there is refused
        state = self._state()
        have = state.tracking.get(remote.tracking_ref)
        if tip is None:
            if have is not None:
                self._refs.delete(remote.tracking_ref)
                self._known = state._replace(tracking={})
        elif have != tip:

            def attempt(_: int) -> tuple[Outcome, Result]:
                result = remote.fetch()
                if not result.ok and lock_busy(result.err) and _MISSING not in result.err:
                    return Outcome.LOCKED, result  # another fetch in this clone is updating the same ref
                return Outcome.DONE, result

            tried = retry(attempt, _LOCK_BACKOFF, rng=self._random)
            result = tried.value
            if _MISSING in result.err:
                tip = None  # deleted since it was advertised
                self._forget()
            elif tried.outcome is Outcome.LOCKED:
                raise GitError(
                    f"fetching {remote.display} could not update {remote.tracking_ref}: its lock is held "
                    f"({one_line(result.err, 300)}) — if no git process is running, a killed one left that .lock "
                    "file behind: delete it"
                )
            elif not result.ok:
                raise remote.fetch_error(result)
            else:  # the fetched ref holds the advertised tip (or a newer one, which a push would then learn of)
                self._known = state._replace(tracking={remote.tracking_ref: tip})
        self._fetched = (tip,)
        return tip

    def fetch(self, *, read_only: bool = False) -> str | None:
        """Fetch the branch and fast-forward the local branch to it; the remote's tip (``None``: no such branch).
        With ``read_only`` no local branch moves (a read changes no branch): reads see the remote's tip."""
        if self._remote is None:
            raise UsageError("this store has no remote; open it with remote='origin' to fetch")
        self._forget()
        remote_tip = self._fetch()
        self._pinned = None
        state = self._state()
        local = state.local
        behind = remote_tip is not None and local not in (None, remote_tip)
        if behind and self._refs.is_ancestor(local or "", remote_tip or ""):
            why = "fast-forward after fetch"
            moved = not read_only and not state.checked_out and self._advance_local(local, remote_tip or "", why)
            self._pinned = None if moved else remote_tip
            self._fetched = (remote_tip,)
        return remote_tip

    def _base(self, local: str | None, remote_tip: str | None) -> str | None:
        """What to build on when writing through the remote: the newer of local and remote, which must agree."""
        if local is None or local == remote_tip:
            return remote_tip
        if remote_tip is None or self._refs.is_ancestor(remote_tip, local):
            return local  # unpushed local commits (written without a remote): they go out with this push
        if self._refs.is_ancestor(local, remote_tip):
            return remote_tip
        state = self.branch_state()
        refusal = decide(state).refusal if state.relation is Relation.DIVERGED else None
        raise refusal or ConflictError(f"{self._local_ref} and {state.tracking_name} have diverged")

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

        return retry(attempt, _VERIFY_BACKOFF, rng=self._random).value

    @contextlib.contextmanager
    def _publishing(self, new: str, program: str) -> Iterator[None]:
        """Mark ``new`` as possibly landing (:meth:`interrupted_write`); only a KeyboardInterrupt leaves the mark."""
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
        """What a Ctrl-C arriving now must say: ``None`` while no write of this store can have reached the branch;
        else whether it landed, or may have, and how to look (running the command again would record it twice)."""
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

    def _check_command(self, program: str) -> str:
        remote = f" --remote {self._remote.name}" if self._remote is not None else ""
        branch = "" if self.branch == DEFAULT_BRANCH else f" --branch {self.branch}"
        return f"statefile{remote}{branch} log {program or 'PROGRAM'}"

    def _try(
        self,
        attempt: Callable[[str | None], str | None],
        why: str,
        locked: list[tuple[float, str | None]],
        program: str,
    ) -> tuple[Outcome, tuple[str, Result | None]]:
        remote_tip = self._fetch() if self._remote is not None else None
        state = self._state()
        self._check_writable(state)
        if self._remote is None:
            base = state.local if state.local is not None else state.tracking_tip
        else:
            base = self._base(state.local, remote_tip)
        new = attempt(base)
        if new is None:
            if self._remote is not None and base is not None and state.local != base:
                self._pinned = None if self._advance_local(state.local, base, why) else base
            return Outcome.DONE, (base or "", None)
        with self._publishing(new, program):
            self._forget()
            if self._remote is None:
                outcome, result = self._refs.cas(self._local_ref, new, state.local, why)
                if outcome is Outcome.DONE:
                    self._landed_writes.append((new, program))
                return outcome, (new, result)
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
                # No verdict: the remote may have taken the commit before the connection dropped.  Look before
                # reporting, so a caller that retries does not record the same thing twice.
                landed = self._landed(new)
                if landed is None:
                    raise self._remote.unverified_error(_VERIFY_BACKOFF.budget, self._check_command(program))
                if not landed:
                    raise self._remote.push_error(result)
                outcome = Outcome.DONE
            if outcome is Outcome.DONE:
                self._landed_writes.append((new, program))
                self._follow(state, new, why)
        return outcome, (new, result)

    def _follow(self, state: RefState, new: str, why: str) -> None:
        """Move both refs to ``new``, which landed; no failure fails the write (the next fetch repairs a ref)."""
        assert self._remote is not None
        tracking = self._remote.tracking_ref
        with contextlib.suppress(StatefileError):
            if self._refs.move_both(tracking, self._local_ref, new, state.local, why):
                self._fetched = (new,)
                self._known = state._replace(local=new, tracking={tracking: new})
                return
        with contextlib.suppress(StatefileError):
            self._refs.set(tracking, new, why)
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
            return self._try(attempt, why, locked, program)

        first, cap = _REMOTE_BACKOFF if self._remote is not None else _LOCAL_BACKOFF
        backoff = Backoff(tries=self.max_tries, first=first, cap=cap, budget=self.max_wait)
        try:
            tried: Tried[tuple[str, Result | None]] = retry(step, backoff, rng=self._random)
        finally:
            self._forget()  # what this write read is passed to no later call: the refs may change between calls
        commit, result = tried.value
        if tried.outcome.done:
            return commit, result is not None, tried.attempts
        if tried.outcome is Outcome.LOCKED and result is not None:
            raise GitError(
                f"cannot lock {self._local_ref} in {self.repository.common_dir} ({one_line(result.err, 300)}): "
                f"another git process holds it, or a killed one left {self._local_ref}.lock behind — if no git "
                "process is running, delete that file"
            )
        if tried.outcome is Outcome.REMOTE_LOCKED and result is not None and self._remote is not None:
            raise self._remote.locked_error(result)
        where = self._remote.display if self._remote is not None else self.branch
        raise ConflictError(
            f"gave up after {tried.attempts} tries: {where} kept changing under concurrent writers; nothing was "
            "written and the branch is as the others left it — run the command again"
        )

    def update(self, program: str, fn: UpdateFn[T], message: str = "") -> UpdateResult[T]:
        """Apply ``fn`` to ``program``'s state file as one commit (see :meth:`Store.update`); ``fn`` runs again on
        the newer document whenever a concurrent write wins the race: keep it pure."""
        path = state_path(program)
        text = clean_message(message) if message else ""
        label = first_line(text)
        plans: list[Plan[T]] = []

        def attempt(base: str | None) -> str | None:
            current = self._read_at(base, path)
            if current is None and base is not None:
                refuse_case_twin(program, self._trees.listing(base))
            last_part = lambda: self._last_part(base, program)  # noqa: E731 - read only when there is archive text
            plan = plan_update(program, current, fn, max_bytes=self.max_bytes, last_part=last_part, label=label)
            plans.append(plan)  # the last plan is the one that landed: the loop ends with its attempt
            if not plan.files:
                return None
            message_text = clean_message(plan.message if plan.message.strip() else text)
            return self._commit(base, {path: checked_bytes(t, path) for path, t in plan.files.items()}, message_text)

        tip, wrote, attempts = self._transact(attempt, label, program)
        plan = plans[-1]
        files = tuple(plan.files) if wrote else ()
        return UpdateResult(tip or None, wrote, files, plan.document, plan.detail, attempts)

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

    def _objects(self, oids: list[str], kind: str, paths: list[str]) -> list[bytes]:
        """The data of ``oids`` (all of ``kind``) in one batch; blobs over the read limit are refused unread."""
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
            self._require(entry, where, folder=True)
            listing = self._trees.listing(entry.oid, path=where)
        return None

    def _require(self, entry: Entry, path: str, *, folder: bool = False) -> None:
        """InvalidDataError unless ``entry`` is a regular file (a folder, with ``folder``): nothing else is followed."""
        if not (entry.is_tree if folder else entry.is_file):
            what = "a folder" if folder else "a regular file"
            raise InvalidDataError(f"{path} on branch {self.branch} is {kind_of(entry.mode)}, not {what}; statefile "
                                   f"will not follow it — replace it with {what}")  # fmt: skip

    def _read_at(self, commit: str | None, path: str) -> str | None:
        entry = self._lookup(commit, path)
        if entry is None:
            return None
        self._require(entry, path)
        return decode_text(self._objects([entry.oid], "blob", [path])[0], f"{path} on branch {self.branch}")

    def _archive_names(self, commit: str | None, program: str) -> list[str]:
        entry = self._lookup(commit, archive_dir(program))
        if entry is None:
            return []
        self._require(entry, archive_dir(program), folder=True)
        return list(self._trees.listing(entry.oid, path=archive_dir(program)))

    def _last_part(self, commit: str | None, program: str) -> tuple[str, str] | None:
        name = newest_part(self._archive_names(commit, program))
        text = None if name is None else self._read_at(commit, f"{archive_dir(program)}/{name}")
        return None if name is None or text is None else (name, text)

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
            current = entries.get(name)
            if current is not None:
                self._require(current, prefix + name)
            if data is not None:
                mode = canonical_mode(current.mode) if current else MODE_FILE
                edits.append(f"M {mode} inline ".encode() + _quoted(prefix + name) + b"\ndata %d\n" % len(data) + data)
            elif current is not None:
                edits.append(b"D " + _quoted(prefix + name))
        for name, sub in folders.items():
            current = entries.get(name)
            if current is not None:
                self._require(current, prefix + name, folder=True)
            below = self._trees.listing(current.oid, path=prefix + name) if current is not None else None
            edits += self._edits(below, sub, f"{prefix}{name}/", kept)
        return edits

    def _same(self, base: str, path: str, data: bytes | None) -> bool:
        """Whether ``base`` already holds ``data`` at ``path`` (``None``: holds nothing there)."""
        try:
            entry = self._lookup(base, path)
            if data is None or entry is None:
                return data is None and entry is None
            if not entry.is_file or (entry.size is not None and entry.size != len(data)):
                return False
            return self._objects([entry.oid], "blob", [path])[0] == data
        except StatefileError:  # damaged or too large to read: the write itself says what is wrong
            return False

    def _commit(
        self, base: str | None, changes: Mapping[str, bytes | None], message: str, *, fsck: bool = False
    ) -> str | None:
        """The commit of ``changes`` on ``base`` (``None``: tree unchanged); ``fsck`` checks files from elsewhere."""
        if base is None and all(data is None for data in changes.values()):
            return None
        if base is not None and all(self._same(base, path, data) for path, data in changes.items()):
            # Checked before writing: the new tree would still differ from the old one where git writes an old
            # entry's mode anew (100664, 100600 become 100644), and that alone is no change to commit.
            return None
        kept: dict[str, str] = {}
        edits = self._edits(self._trees.listing(base) if base else None, changes, "", kept)
        try:
            root = self._writer.tree(base, edits)
        except ObjectMissing as exc:  # an entry carried over whose object is gone: the branch is damaged
            raise missing_object(kept.get(exc.oid, ""), exc.oid, self.branch) from None
        old = self._trees.root(base) if base else ""
        if root == old:
            return None
        if fsck and (problem := self._writer.fsck(root, old or None)):
            raise UsageError(
                f"git's fsck refuses the files to write ({problem}); nothing was written — rename or remove the "
                "offending file"
            )
        return self._writer.commit(root, base, message, self._author)


def _quoted(path: str) -> bytes:
    """``path`` as fast-import reads a quoted path (any name a tree can hold)."""
    raw = path.encode("utf-8", "surrogateescape").replace(b"\\", b"\\\\").replace(b'"', b'\\"')
    return b'"' + raw.replace(b"\n", b"\\n") + b'"'
