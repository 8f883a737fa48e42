"""Compaction under a per-write cap on what may be added: spread a large compaction over several writes.

gh-aw's repo-memory refuses a push adding more than ``floor(max-patch-size × 1.2)`` bytes, so folding 23 KB of
history in one run would lose that run's push, every run.  :func:`compact_within` takes the policy's compaction
when its cost (the bytes the push would add, from the caller) fits ``soft_limit``; else the gentlest one that brings
the file under ``max_bytes``, made as thorough as ``soft_limit`` allows; else, over ``hard_limit``,
:class:`PatchBudgetError` before anything is written.  What is not folded moves on a later run.
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
    gentle = replace(policy, aggressive_at=1.0, low_water=1.0, force_aggressive=False)
    return replace(gentle, keep_recent=keep, keep_recent_aggressive=keep)


def compact_within(
    doc: StateDocument,
    policy: CompactionPolicy,
    cost: CostFn,
    *,
    soft_limit: int,
    hard_limit: int,
    what: str = "the write",
) -> CompactionResult:
    """The most thorough compaction of ``doc`` whose ``cost`` fits ``soft_limit`` (max-patch-size), or the gentlest
    within ``hard_limit`` (1.2 × that); see the module docstring."""
    full = compact(doc, policy)
    if cost(full) <= soft_limit:
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
    best = gentlest
    while low < high:  # the fewest kept entries (the most moved) that still fits
        middle = (low + high) // 2
        candidate = compact(doc, gentle_policy(policy, middle))
        if cost(candidate) <= soft_limit:
            best, high = candidate, middle
        else:
            low = middle + 1
    return best


__all__ = ["CostFn", "PatchBudgetError", "compact_within", "gentle_policy"]
