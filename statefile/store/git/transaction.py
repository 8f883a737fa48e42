"""A write to the branch as one transaction: read the tip, build on it, compare-and-swap the ref (or push), retry
with backoff; a push without a verdict is checked before anything is reported.  No work tree is touched."""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable, Mapping

from statefile.defaults import DEFAULT_BRANCH, DEFAULT_MAX_BYTES
from statefile.errors import ConflictError, InvalidDataError, StatefileError, UsageError
from statefile.store.base import Plan, Store, T, UpdateFn, UpdateResult, encoded_files, first_line
from statefile.store.git.branches import BranchState, Relation, decide
from statefile.store.git.objects import CatFile, ObjectMissing, Trees, Writer, missing_object
from statefile.store.git.refs import Backoff, Outcome, Refs, RefState, Tried, clash_error, lock_busy, lock_held, retry
from statefile.store.git.remote import Remote, credentials, env_tokens
from statefile.store.git.runner import OBJECT_FORMATS, Git, Repository, Result, discover, git_executable
from statefile.store.names import parse_identity, validate_branch, validate_remote

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


class GitTransactions(Store):
    """The git store's state and write path; :class:`.store.GitStore` adds the reads."""

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
        tracking = [self._remote.tracking_ref] if self._remote else [f"refs/remotes/*/{self.branch}"]
        self._refs = Refs(self._git, repo, self.branch, tracking, prefer=("origin",))
        self._preferred_tracking = self._remote.tracking_ref if self._remote else f"refs/remotes/origin/{self.branch}"
        self._local_ref = self._refs.local_ref
        self._cat = CatFile(self._git)  # one long-lived reader; answers cached by object id
        self._trees = Trees(self._git, self._cat, self.branch, max_bytes)
        self._writer = Writer(self._git)
        self._name_checked = self._symref_checked = False
        self._pinned: str | None = None  # a fetched tip reads use instead of a local branch that could not follow
        self._known: RefState | None = None  # the refs as last read, passed forward until a ref may have moved
        self._fetched: tuple[str | None] | None = None  # the remote's tip as last asked, likewise
        self._random = random.Random()
        self._in_flight: tuple[str, str] | None = None  # the commit being published now (see interrupted_write)
        self._landed_writes: list[tuple[str, str]] = []

    def close(self) -> None:
        self._cat.close()

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
            ref, name = self._remote.tracking_ref, self._remote.display
            tracking = state.tracking.get(ref)
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
        """The commit reads see: the local branch, else the remote-tracking branch, else ``None``."""
        if self._pinned is not None:
            return self._pinned
        if not self._symref_checked:
            self._state()  # cat-file follows a symbolic ref without a word: the refs' listing refuses one, once
        found = [oid for oid in self._cat.resolve([self._local_ref, self._preferred_tracking]) if oid is not None]
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
            existing = self._refs.in_the_way() if self._remote is None else ""
            if existing:
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
            return outcome, outcome.done

        return retry(attempt, _LOCK_BACKOFF, rng=self._random).value

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
        refusal = decide(branches).refusal if branches.relation is Relation.DIVERGED else None
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

        return retry(attempt, _VERIFY_BACKOFF, rng=self._random).value

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
                            raise remote.unverified_error(_VERIFY_BACKOFF.budget, self._check_command(program))
                        if not landed:
                            raise remote.push_error(result)
                        outcome = Outcome.DONE
                if outcome is Outcome.DONE:
                    self._landed_writes.append((new, program))
                    if remote is not None:
                        self._follow(remote, state, new, why)
            except KeyboardInterrupt:
                raise
            except BaseException:
                self._in_flight = None
                raise
            self._in_flight = None
            return outcome, (new, result)

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
            raise lock_held(self._local_ref, f"in {self.repository.common_dir}", result.err)
        if tried.outcome is Outcome.REMOTE_LOCKED and result is not None and self._remote is not None:
            raise self._remote.locked_error(result)
        where = self._remote.display if self._remote is not None else self.branch
        raise ConflictError(
            f"gave up after {tried.attempts} tries: {where} kept changing under concurrent writers; nothing was "
            "written and the branch is as the others left it — run the command again"
        )

    def update(self, program: str, fn: UpdateFn[T], message: str = "") -> UpdateResult[T]:
        """Apply ``fn`` to ``program``'s state file as one commit (see :meth:`Store.update`)."""
        text = clean_message(message) if message else ""
        plans: list[Plan[T]] = []

        def attempt(base: str | None) -> str | None:
            plan = self._plan(program, base, fn, text)
            plans.append(plan)  # the last plan is the one that landed: the loop ends with its attempt
            if not plan.files:
                return None
            return self._commit(base, plan.files, clean_message(plan.message if plan.message.strip() else text))

        tip, wrote, attempts = self._transact(attempt, first_line(text), program)
        plan = plans[-1]
        return UpdateResult(
            tip or None, wrote, tuple(plan.files) if wrote else (), plan.document, plan.detail, attempts
        )

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
            entry = self._trees.lookup(base, path)
            if data is None or entry is None:
                return data is None and entry is None
            if entry.size is not None and entry.size != len(data):
                return False
            return self._trees.objects([entry.oid], "blob", [path])[0] == data
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
        kept: dict[str, str] = {}
        edits = self._trees.edits(self._trees.listing(base) if base else None, changes, "", kept)
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
