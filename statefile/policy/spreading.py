"""Compaction under a per-write cap on what may be added: spread a large compaction over several writes.

gh-aw's repo-memory push refuses a push whose added lines exceed ``floor(max-patch-size × 1.2)`` bytes (10240 →
12288).  Folding 23 KB of old history into the archive in one run would add 23 KB of archive lines, and that run's
push — everything it recorded — would be lost, every run.  :func:`compact_within` picks, among compactions of the
same document, the most thorough one whose cost (given by the caller: the bytes the push would add) fits:

1. the compaction the policy asks for, when it fits under ``soft_limit``;
2. otherwise the gentlest compaction that still brings the file under ``max_bytes`` — keeping more detailed
   entries (no aggressive mode, entries only given up as far as the budget requires) — made as thorough as
   ``soft_limit`` allows: more entries kept means less moved;
3. when even the gentlest one costs more than ``hard_limit``, :class:`PatchBudgetError` before anything is
   written: the file cannot be within ``max_bytes`` *and* the push within its limit this run.

What is not folded this run stays in the file (within ``max_bytes``) and moves on a later run: nothing is dropped.
Pure: the cost function is the only window on the outside, and it must not write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from statefile.errors import BudgetError
from statefile.model.document import StateDocument
from statefile.numbers import number_text, size_text
from statefile.policy.compaction import CompactionPolicy, CompactionResult, compact

CostFn = Callable[[CompactionResult], int]


class PatchBudgetError(BudgetError):
    """No compaction keeps the file within its budget and the write within the added-bytes limit."""


def gentle_policy(policy: CompactionPolicy, keep: int) -> CompactionPolicy:
    """``policy`` keeping ``keep`` detailed entries and folding more only when the file is over ``max_bytes``."""
    return replace(
        policy,
        keep_recent=keep,
        keep_recent_aggressive=keep,
        aggressive_at=1.0,
        low_water=1.0,
        force_aggressive=False,
    )


def compact_within(
    doc: StateDocument,
    policy: CompactionPolicy,
    cost: CostFn,
    *,
    soft_limit: int,
    hard_limit: int,
    what: str = "the write",
) -> CompactionResult:
    """The most thorough compaction of ``doc`` whose ``cost`` fits (see the module docstring).

    ``soft_limit`` is what a write should stay within (repo-memory's max-patch-size); ``hard_limit`` what it
    must stay within (1.2 × that), used only when the gentlest compaction cannot meet ``soft_limit``.
    """
    full = compact(doc, policy)
    full_cost = cost(full)
    if full_cost <= soft_limit:
        return full
    entries = len(doc.iterations)
    low, high = policy.keep_recent, max(policy.keep_recent, entries)
    gentlest = compact(doc, gentle_policy(policy, high))
    gentlest_cost = cost(gentlest)
    if gentlest_cost > soft_limit:
        if gentlest_cost <= hard_limit:
            return gentlest
        raise PatchBudgetError(
            f"{what} would add {size_text(gentlest_cost)} even with the least compaction that keeps the file within "
            f"{size_text(policy.max_bytes)}, over the push limit of {size_text(hard_limit)} (1.2 × max-patch-size "
            f"{number_text(soft_limit)}); "
            "nothing was written — raise max-patch-size (at least for one run), or compact once through the branch "
            "where no patch limit applies: statefile --remote origin compact --all"
        )
    # Binary search for the fewest kept entries (the most moved) that still fits: more kept, less moved.
    best = gentlest
    while low < high:
        middle = (low + high) // 2
        candidate = compact(doc, gentle_policy(policy, middle))
        if cost(candidate) <= soft_limit:
            best, high = candidate, middle
        else:
            low = middle + 1
    return best


__all__ = ["CostFn", "PatchBudgetError", "compact_within", "gentle_policy"]
