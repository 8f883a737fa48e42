"""Refs: read with one ``git for-each-ref``, moved only by ``git update-ref REF NEW OLD``; and the one retry loop
(jittered exponential backoff, bounded in tries and in time)."""

from __future__ import annotations

import enum
import random
import re
import time
from collections.abc import Callable
from typing import NamedTuple, TypeVar

from statefile.errors import GitError, InvalidDataError, UsageError
from statefile.store.git.runner import Git, Repository, Result, is_oid, one_line

T = TypeVar("T")


class Outcome(enum.Enum):
    """How one attempt ended: DONE stops the loop; every other outcome waits and tries again."""

    DONE = "done"  # the commit landed, or there was nothing to do
    MOVED = "moved"  # a concurrent writer moved the ref between our read and our compare-and-swap
    LOCKED = "locked"  # a ref lock is held, by another git process or left by a killed one
    REJECTED = "rejected"  # the remote refused a non-fast-forward push: fetch, re-apply, push again
    REMOTE_LOCKED = "remote locked"  # the remote could not lock its ref (a concurrent push, or a stale lock there)
    UNANSWERED = "unanswered"  # the remote could not be read (the connection just broke)


class Backoff(NamedTuple):
    """How long to wait between tries: "full jitter" exponential backoff, bounded in tries and total time."""

    tries: int
    first: float
    cap: float
    budget: float

    def delay(self, attempt: int, rng: random.Random) -> float:
        """The wait before try number ``attempt`` (0-based; 0 for the first)."""
        return 0.0 if attempt < 1 else rng.uniform(0.0, min(self.cap, self.first * 2 ** min(attempt - 1, 30)))


def retry(
    attempt: Callable[[int], tuple[Outcome, T]],
    backoff: Backoff,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[Outcome, T, int]:
    """Call ``attempt(n)`` until its outcome is :attr:`Outcome.DONE`, or the tries or the time run out: the last
    attempt's outcome and value, and how many attempts ran."""
    rng = rng or random.Random()
    start = clock()
    outcome, value = attempt(0)
    count = 1
    while outcome is not Outcome.DONE and count < backoff.tries:
        wait = backoff.delay(count, rng)
        if clock() - start + wait > backoff.budget:
            break
        sleep(wait)
        outcome, value = attempt(count)
        count += 1
    return outcome, value, count


_FORMAT = "%(objectname)%00%(refname)%00%(symref)%00%(worktreepath)"

# A ref in the way by the directory/file rule: git says "cannot lock ref" as for a lock, but no wait frees it.
_CLASH = re.compile(
    r"'(?P<ref>[^'\n]+)' exists; cannot create '[^'\n]+'|there is a non-empty directory '(?P<folder>[^'\n]+)' "
    r"blocking reference '[^'\n]+'"
)


def ref_clash(stderr: str) -> str | None:
    """The ref (or folder of refs) in the way when git's directory/file rule refused a ref, else ``None``."""
    found = _CLASH.search(stderr)
    return None if found is None else found["ref"] or found["folder"]


def clash_error(ref: str, existing: str, *, where: str = "", fix: str = "") -> UsageError:
    """The error for ``ref``, which ``existing`` keeps from being created (``where``: " on origin", or "" here)."""
    there = " there" if where else ""
    fix = fix or f"use another --branch, one that neither contains nor extends that name, or rename {existing}"
    return UsageError(
        f"{ref} cannot be created{where}: {existing} exists{there}, and git cannot keep both a ref and another "
        f"below it (one name would be a folder of the other) — {fix}; nothing was written"
    )


def lock_held(ref: str, where: str, stderr: str) -> GitError:
    """The error for a ref whose lock stayed held through every try."""
    return GitError(
        f"cannot lock {ref} {where} ({one_line(stderr, 300)}): another git process holds it, or a killed one left "
        f"{ref}.lock behind — if no git process is running, delete that file"
    )


def lock_busy(stderr: str) -> bool:
    """Whether a ref update failed because a lock is held, or a concurrent update moved the ref first."""
    signs = ("File exists", "Unable to create", "cannot lock ref", "but expected")
    return ref_clash(stderr) is None and any(sign in stderr for sign in signs)


class RefState(NamedTuple):
    """A snapshot of the refs a store uses, from one ``git for-each-ref``."""

    local: str | None  # where refs/heads/<branch> points (through a symbolic ref, if it is one)
    symref: str  # the ref refs/heads/<branch> points to when it is a symbolic ref, else ""
    checked_out: str  # the work tree the branch is checked out in, else ""
    tracking: dict[str, str]  # remote-tracking ref → commit, preferred first

    @property
    def tracking_tip(self) -> str | None:
        """The first remote-tracking copy of the branch (the preferred remote's), or ``None``."""
        return next(iter(self.tracking.values()), None)


class Refs:
    """The refs of one branch in one repository: ``refs/heads/<branch>`` and its remote-tracking copies."""

    def __init__(self, git: Git, repo: Repository, branch: str, tracking: str):
        self._git = git
        self._repo = repo
        self.branch = branch
        self.local_ref = f"refs/heads/{branch}"
        self._tracking = tracking  # the remote-tracking copies: one ref, or a pattern with `*` for the remote

    def read(self) -> RefState:
        """The current :class:`RefState` (one git process)."""
        out = self._git.run("for-each-ref", f"--format={_FORMAT}", self.local_ref, self._tracking)
        local: str | None = None
        symref = checked_out = ""
        tracking: list[tuple[bool, str, str, str]] = []
        pattern = re.escape(self._tracking).replace(r"\*", "[^/]+")
        for line in out.decode("utf-8", "surrogateescape").split("\n"):
            fields = line.split("\0")
            if len(fields) != 4 or not is_oid(fields[0]):
                continue
            oid, name, target, worktree = fields
            if name == self.local_ref:
                local, symref = oid, target
                # A bare repository reports itself as where its HEAD's branch is "checked out": no work tree there.
                if worktree and worktree != str(self._repo.common_dir):
                    checked_out = worktree
            # for-each-ref also lists refs *below* a literal pattern; as in git's glob, `*` never spans a slash.
            elif not target and re.fullmatch(pattern, name):
                remote = name.removeprefix("refs/remotes/").removesuffix(f"/{self.branch}")
                tracking.append((remote != "origin", remote, name, oid))  # origin's first, then the others by name
        return RefState(local, symref, checked_out, {name: oid for *_, name, oid in sorted(tracking)})

    def in_the_way(self) -> str:
        """A ref of this repository that keeps ``refs/heads/<branch>`` from being created, else ""."""
        top = "refs/heads/" + self.branch.partition("/")[0]
        out = self._git.run("for-each-ref", "--format=%(refname)", top)
        for name in out.decode("utf-8", "surrogateescape").split("\n"):
            if name and (self.local_ref.startswith(name + "/") or name.startswith(self.local_ref + "/")):
                return name
        return ""

    def check_name(self) -> None:
        """Ask git whether ``refs/heads/<branch>`` is a valid ref name (the pure checks ran before)."""
        result = self._git.call("check-ref-format", self.local_ref)
        if not result.ok:
            raise UsageError(f"invalid branch name {self.branch!r}: git refuses it as a ref name; use a name such "
                             "as memory/autoloop")  # fmt: skip

    def cas(self, ref: str, new: str, old: str | None, why: str) -> tuple[Outcome, Result]:
        """Move ``ref`` to ``new`` only if it still points at ``old`` (``None``: only if it does not exist)."""
        result = self._git.call("update-ref", "--no-deref", "-m", f"statefile: {why}", ref, new, old or "")
        if result.ok:
            return Outcome.DONE, result
        args = ("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        now = self._git.call(*args).stdout.decode("ascii", "replace").strip()
        if (now if is_oid(now) else None) != old:  # moved (or deleted) since it was read: not a failure
            return Outcome.MOVED, result
        if (clash := ref_clash(result.err)) is not None:
            raise clash_error(ref, clash)
        if lock_busy(result.err):
            return Outcome.LOCKED, result
        raise self._git.failure(result, f"could not move {ref}")

    def move_both(self, tracking: str, local: str, new: str, old: str | None, why: str) -> bool:
        """Move ``tracking`` and ``local`` (from ``old``) to ``new`` in one transaction; whether both moved."""
        zero = "0" * len(new)
        script = f"update {tracking} {new}\nupdate {local} {new} {old or zero}\n".encode("ascii")
        args = ("update-ref", "--no-deref", "-m", f"statefile: {why}", "--stdin")
        return self._git.call(*args, input=script).ok

    def set(self, ref: str, new: str, why: str) -> None:
        """Point ``ref`` at ``new`` whatever it points at now (for remote-tracking refs only)."""
        self._git.run("update-ref", "--no-deref", "-m", f"statefile: {why}", ref, new)

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether commit ``older`` is ``newer`` or one of its ancestors."""
        result = self._git.call("merge-base", "--is-ancestor", older, newer)
        if result.returncode not in (0, 1):
            raise self._git.failure(result, "run `git fsck`")
        return result.returncode == 0

    def refuse_symref(self, state: RefState) -> None:
        """InvalidDataError when the branch is a symbolic ref: statefile never writes through one."""
        target = state.symref
        if state.local is None and not target:  # a dangling symbolic ref is not listed: git symbolic-ref tells
            found = self._git.call("symbolic-ref", "--quiet", self.local_ref)
            target = found.stdout.decode("utf-8", "replace").strip() if found.ok else ""
        if target:
            raise InvalidDataError(
                f"{self.local_ref} is a symbolic ref to {target}; statefile never follows it onto another branch "
                f"— delete it (`git symbolic-ref --delete {self.local_ref}`) or use another --branch"
            )
