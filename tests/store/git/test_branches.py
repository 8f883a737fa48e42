"""The branch table: from the local branch against its remote-tracking copy to what reads and writes do."""

from __future__ import annotations

import pytest

from statefile.errors import ConflictError, NotFoundError
from statefile.store.git.branches import BranchState, Relation, decide

L, T = "1" * 40, "2" * 40  # a local and a remote-tracking commit


def state(local: str | None, tracking: str | None, ahead: int, behind: int, remote: str | None) -> BranchState:
    name = "origin/memory/autoloop"
    return BranchState(local, tracking, ahead, behind, name, "memory/autoloop", remote)


# local, tracking, ahead, behind, --remote | relation | pin | the note says | a write is refused with
ROWS = [
    (L, T, 0, 0, None, Relation.SAME, None, "", None),
    (L, T, 2, 0, None, Relation.AHEAD, None, "which has 2 commits not on origin/memory/autoloop", None),
    (L, T, 0, 3, None, Relation.BEHIND, None, "has 3 newer commits — pass --remote origin", "3 commits behind"),
    (L, T, 1, 1, None, Relation.DIVERGED, None, "read the local branch; the local branch", "have diverged"),
    (None, T, 0, 0, None, Relation.NO_LOCAL, None, "as last fetched (there is no local branch)", "no local branch"),
    (L, None, 0, 0, None, Relation.NO_TRACKING, None, "", None),
    (L, T, 0, 0, "origin", Relation.SAME, None, "", None),
    (L, T, 2, 0, "origin", Relation.AHEAD, None, "2 commits not yet on origin", None),
    (L, T, 1, 2, "origin", Relation.DIVERGED, T, "read origin/memory/autoloop; the local branch", "have diverged"),
    (L, None, 4, 0, "origin", Relation.NO_TRACKING, None, "origin has no branch memory/autoloop", "pass --create"),
    (None, T, 0, 0, "origin", Relation.NO_LOCAL, None, "", None),
]


@pytest.mark.parametrize(("local", "tracking", "ahead", "behind", "remote", "relation", "pin", "note", "refused"), ROWS)
def test_the_table(
    local: str | None,
    tracking: str | None,
    ahead: int,
    behind: int,
    remote: str | None,
    relation: Relation,
    pin: str | None,
    note: str,
    refused: str | None,
) -> None:
    row = state(local, tracking, ahead, behind, remote)
    verdict = decide(row)
    assert row.relation is relation and row.exists
    assert verdict.pin == pin
    assert note in verdict.note and bool(note) == bool(verdict.note), verdict.note
    if refused is None:
        assert verdict.refusal is None
    else:
        assert verdict.refusal is not None and refused in str(verdict.refusal), verdict.refusal
        forked = "diverged" in refused or "behind" in refused
        assert isinstance(verdict.refusal, ConflictError if forked else NotFoundError)


def test_create_lets_a_write_start_the_branch_on_the_remote() -> None:
    assert decide(state(L, None, 4, 0, "origin"), create=True).refusal is None


def test_a_diverged_refusal_counts_both_sides_and_says_how_to_sync() -> None:
    refusal = str(decide(state(L, T, 1, 2, "origin")).refusal)
    assert "1 local-only commit, 2 commits only on the remote" in refusal
    assert "`statefile --remote origin sync`" in refusal and "nothing was written" in refusal


def test_nothing_anywhere_is_missing() -> None:
    missing = state(None, None, 0, 0, None)
    assert missing.relation is Relation.MISSING and not missing.exists
