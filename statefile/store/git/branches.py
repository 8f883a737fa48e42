"""One pure table: from where the memory branch stands against its remote-tracking copy (and whether the command
goes through a remote) to the commit reads must pin, what a read says, and what a write refuses.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from statefile.errors import ConflictError, NotFoundError, StatefileError
from statefile.numbers import plural


class Relation(enum.Enum):
    """The local branch against its remote-tracking copy."""

    MISSING = "missing"  # neither exists
    NO_LOCAL = "no local branch"
    NO_TRACKING = "no remote-tracking copy"
    SAME = "same"
    AHEAD = "ahead"
    BEHIND = "behind"
    DIVERGED = "diverged"


class BranchState(NamedTuple):
    """The local branch against its remote-tracking copy (the remote's, as of the last fetch)."""

    local: str | None  # refs/heads/<branch>'s commit
    tracking: str | None  # its commit (with a remote: None when the remote has no such branch)
    ahead: int  # commits the local branch has that the tracking copy lacks
    behind: int  # and the other way round
    tracking_name: str  # how messages name the tracking copy: origin/memory/autoloop
    branch: str = ""
    remote: str | None = None  # the remote the command goes through (--remote), else None

    @property
    def exists(self) -> bool:
        """Whether there is anything to read: the local branch or a remote-tracking copy of it."""
        return self.local is not None or self.tracking is not None

    @property
    def diverged(self) -> bool:
        """Both sides have commits the other lacks."""
        return self.relation is Relation.DIVERGED

    @property
    def relation(self) -> Relation:
        """How the two refs relate."""
        if self.local is None:
            return Relation.MISSING if self.tracking is None else Relation.NO_LOCAL
        if self.tracking is None:
            return Relation.NO_TRACKING
        if self.ahead and self.behind:
            return Relation.DIVERGED
        return Relation.AHEAD if self.ahead else Relation.BEHIND if self.behind else Relation.SAME


class Verdict(NamedTuple):
    """What the table says: the commit reads must see (``None``: the store's own tip), a note for people, and
    the error a write must stop with (``None``: go ahead)."""

    pin: str | None = None
    note: str = ""
    refusal: StatefileError | None = None


def decide(state: BranchState, *, create: bool = False) -> Verdict:
    """The table, for a branch that exists somewhere (:attr:`BranchState.exists`)."""
    relation, branch, tracked = state.relation, state.branch, state.tracking_name
    remote = state.remote or tracked.partition("/")[0]
    ahead, behind = plural(state.ahead, "commit"), plural(state.behind, "commit")
    sync = f"`statefile --remote {remote} sync`"
    if relation is Relation.DIVERGED:
        # --remote asks for the remote's memory: reads see it and say the local branch forked; writes stop.
        fork = (
            f"the local branch {branch} and {tracked} have diverged ({plural(state.ahead, 'local-only commit')}, "
            f"{behind} only on the remote)"
        )
        advice = (
            f"{sync} replays the local-only commits onto {remote}'s tip (nothing is lost), or keep them aside with "
            f"`git branch -m {branch} {branch}-local` and run the command again"
        )
        note = f"read {tracked}; {fork} — {advice}"
        if state.remote is None:
            note = f"read the local branch; {fork} — pass --remote {remote} to read {remote}'s"
        return Verdict(
            state.tracking if state.remote else None, note, ConflictError(f"{fork}; nothing was written — {advice}")
        )
    through = f"nothing was written — pass --remote {remote} to write through {remote}"
    rows: dict[tuple[Relation, bool], tuple[str, StatefileError | None]] = {  # (relation, --remote) → note, refusal
        (Relation.NO_LOCAL, False): (
            f"read {tracked} as last fetched (there is no local branch); pass --remote {remote} for {remote}'s "
            "current tip",
            NotFoundError(
                f"there is no local branch {branch}, only {tracked} as last fetched; {through} (or `git branch "
                f"{branch} {tracked}` to write locally)"
            ),
        ),
        (Relation.BEHIND, False): (
            f"read the local branch {branch}; {tracked} has {plural(state.behind, 'newer commit')} — pass --remote "
            f"{remote}",
            ConflictError(
                f"the local branch {branch} is {behind} behind {tracked}; {through} (or `git fetch {remote} "
                f"{branch}:{branch}` to bring the local branch up to date)"
            ),
        ),
        (Relation.AHEAD, False): (f"read the local branch {branch}, which has {ahead} not on {tracked}", None),
        (Relation.NO_TRACKING, True): (
            f"{remote} has no branch {branch}: read the local one ({ahead}) — {sync} publishes it",
            None
            if create
            else NotFoundError(
                f"{remote} has no branch {branch}; nothing was written — {sync} publishes the local one ({ahead}), "
                "or pass --create"
            ),
        ),
        (Relation.AHEAD, True): (
            f"read the local branch {branch}: {ahead} not yet on {remote} — {sync} pushes them",
            None,
        ),
    }
    note, refusal = rows.get((relation, state.remote is not None), ("", None))
    return Verdict(None, note, refusal)
