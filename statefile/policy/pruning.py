"""Decide which Lessons Learned and Foreclosed Avenues bullets leave the file, and why.

Pure decisions over bullet texts; :mod:`statefile.policy.compaction` applies them and archives what leaves.

- Pinned bullets (a 📌, or an HTML comment such as ``<!-- pin -->``) are never removed or rewritten.
- Bullets marked important (``IMPORTANT`` or ``CRITICAL`` in capitals, or ``**Important**``) go last: a limit
  removes every unmarked bullet, oldest first, before the oldest marked one.
- A lesson with ``(expires YYYY-MM-DD)`` whose date is before ``today`` expires.
- Exact and near-duplicate bullets (word-set Jaccard similarity at or above a threshold) collapse to the newest
  wording; when a pinned bullet is among them, the pinned ones stay and the unpinned go.
- Beyond a count limit the oldest unpinned bullets go.
- Foreclosed avenues consolidate: similar bullets collapse into the newest, marked ``*(+N similar in archive)*``.

"Oldest" needs the list's order.  statefile appends new bullets at the end, but some agents prepend; when the
iteration numbers bullets mention mostly go down the list, the list is read as newest first.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from itertools import pairwise

from statefile.model import patterns
from statefile.model.patterns import EXPIRES_PATTERN, ITERATION_MENTION, PIN_PATTERN

#: What marks a bullet important: it is pruned only after every unmarked one.
IMPORTANT_PATTERN = r"\b(?:IMPORTANT|CRITICAL)\b|\*\*\s*(?i:important|critical)\b"
_PIN = re.compile(PIN_PATTERN, re.I)
_IMPORTANT = re.compile(IMPORTANT_PATTERN)
_EXPIRES = re.compile(EXPIRES_PATTERN, re.I)
_CONSOLIDATED = re.compile(r"\s*\*\(\+(\d+) similar in archive\)\*")
_WORD = re.compile(r"[^\W_]+")


@dataclass
class ListPlan:
    """What to do with a bullet list: bullets to remove (index → reason) and bullets to rewrite (index → text)."""

    remove: dict[int, str] = field(default_factory=dict)
    rewrite: dict[int, str] = field(default_factory=dict)


def is_pinned(text: str) -> bool:
    """Whether a bullet is pinned (📌 or ``<!-- pin -->``)."""
    return bool(_PIN.search(text))


def is_important(text: str) -> bool:
    """Whether a bullet is marked important (``**CRITICAL**: …``, ``IMPORTANT``, ``**Important**``)."""
    return bool(_IMPORTANT.search(text))


def expiry(text: str) -> date | None:
    """The date in ``(expires YYYY-MM-DD)``, or ``None`` (also for an impossible date)."""
    match = _EXPIRES.search(text)
    if not match:
        return None
    try:
        return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None


def tokens(text: str) -> frozenset[str]:
    """The word set a bullet is compared by: markers, markdown and case removed."""
    text = _CONSOLIDATED.sub(" ", _EXPIRES.sub(" ", _PIN.sub(" ", patterns.without_agent_mark(text))))
    return frozenset(w.lower() for w in _WORD.findall(text))


def newest_last(texts: Sequence[str]) -> bool:
    """Whether the list reads oldest to newest (the default, and statefile's own order)."""
    refs = [max(int(n) for n in found) for t in texts if (found := ITERATION_MENTION.findall(t))]
    ups = sum(1 for a, b in pairwise(refs) if b > a)
    downs = sum(1 for a, b in pairwise(refs) if b < a)
    return downs <= ups


def similar_groups(sets: Sequence[frozenset[str]], threshold: float) -> list[list[int]]:
    """Groups (of 2 or more indexes) of sets linked by Jaccard similarity >= ``threshold``, transitively.

    Candidate pairs come from a prefix filter (two sets that similar must share one of their rarest
    ``|s| - ceil(t·|s|) + 1`` tokens), so unrelated bullets are never compared and cost stays near linear.
    """
    parent = list(range(len(sets)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    frequency: dict[str, int] = defaultdict(int)
    for s in sets:
        for token in s:
            frequency[token] += 1
    index: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(sets):
        if not s:
            continue
        ordered = sorted(s, key=lambda t: (frequency[t], t))
        prefix = len(s) - math.ceil(threshold * len(s)) + 1
        seen: set[int] = set()
        for token in ordered[: max(prefix, 1)]:
            for j in index[token]:
                if j in seen:
                    continue
                seen.add(j)
                other = sets[j]
                if len(s & other) >= threshold * len(s | other):
                    parent[find(i)] = find(j)
            index[token].append(i)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(sets)):
        groups[find(i)].append(i)
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: g[0])


def plan_lessons(
    texts: Sequence[str],
    *,
    limit: int | None,
    similarity: float,
    today: date | None,
    order_newest_last: bool,
    collapse: bool = True,
    why: str = "",
) -> ListPlan:
    """Which lessons leave: expired ones; with ``collapse``, older duplicates; then beyond ``limit`` (``None``: no
    limit) the oldest unpinned ones, those marked important last."""
    plan = ListPlan()
    live = [i for i, t in enumerate(texts) if not patterns.is_placeholder(t)]
    age = _age_rank(len(texts), order_newest_last)
    for i in live:
        when = expiry(texts[i])
        if today is not None and when is not None and when < today and not is_pinned(texts[i]):
            plan.remove[i] = f"expired {when.isoformat()}"
    live = [i for i in live if i not in plan.remove]
    if collapse:
        _collapse_duplicates(texts, live, similarity, age, plan, "lesson")
    if limit is not None:
        _apply_limit(texts, [i for i in live if i not in plan.remove], limit, age, plan, "lessons", why)
    return plan


def plan_foreclosed(
    texts: Sequence[str],
    *,
    consolidate: bool,
    similarity: float,
    limit: int | None,
    order_newest_last: bool,
    why: str = "",
) -> ListPlan:
    """Which foreclosed avenues consolidate (when ``consolidate``) and which leave beyond ``limit``."""
    plan = ListPlan()
    live = [i for i, t in enumerate(texts) if not patterns.is_placeholder(t)]
    age = _age_rank(len(texts), order_newest_last)
    if consolidate:
        _collapse_duplicates(texts, live, similarity, age, plan, "avenue", mark=True)
    if limit is not None:
        _apply_limit(texts, [i for i in live if i not in plan.remove], limit, age, plan, "avenues", why)
    return plan


def _age_rank(count: int, order_newest_last: bool) -> list[int]:
    # Higher rank = newer.
    return list(range(count)) if order_newest_last else list(range(count, 0, -1))


def _collapse_duplicates(
    texts: Sequence[str],
    live: list[int],
    similarity: float,
    age: list[int],
    plan: ListPlan,
    noun: str,
    *,
    mark: bool = False,
) -> None:
    groups = similar_groups([tokens(texts[i]) for i in live], similarity)
    for group in groups:
        members = [live[k] for k in group]
        pinned = [i for i in members if is_pinned(texts[i])]
        if pinned:
            for i in members:
                if i not in pinned:
                    plan.remove[i] = f"duplicate of a pinned {noun}"
            continue
        # The newest maintainer bullet of the group stands for it: an agent's report (marked, and always the newest)
        # never replaces the maintainer's words it resembles; among agent bullets only, the newest.
        keep = max(members, key=lambda i: (not patterns.is_agent_bullet(texts[i]), age[i]))
        folded = 0
        for i in members:
            if i != keep:
                kept = "a newer" if age[i] < age[keep] else "a maintainer's"
                plan.remove[i] = f"similar to {kept} {noun}" if mark else f"duplicate of {kept} {noun}"
                folded += 1 + _consolidated_count(texts[i])
        if mark:
            plan.rewrite[keep] = _with_marker(texts[keep], folded + _consolidated_count(texts[keep]))


def _apply_limit(
    texts: Sequence[str], live: list[int], limit: int, age: list[int], plan: ListPlan, noun: str, why: str = ""
) -> None:
    excess = len(live) - limit
    if excess <= 0:
        return

    # Agent-reported bullets first (statefile apply marks them: they never push a maintainer's out), then oldest
    # first, every unmarked bullet before any marked important one.
    def order(i: int) -> tuple[bool, bool, int]:
        return (not patterns.is_agent_bullet(texts[i]), is_important(texts[i]), age[i])

    for i in sorted((i for i in live if not is_pinned(texts[i])), key=order):
        if excess <= 0:
            break
        reason = f"beyond the newest {limit} {noun}" + (f" {why}" if why else "")
        plan.remove[i] = reason + (" (marked important: pruned last)" if is_important(texts[i]) else "")
        excess -= 1


def _consolidated_count(text: str) -> int:
    match = _CONSOLIDATED.search(text)
    return int(match.group(1)) if match else 0


def _with_marker(text: str, count: int) -> str:
    """``text`` with its consolidation marker set to ``count`` (before the trailing line ending)."""
    body = text.rstrip("\r\n")
    ending = text[len(body) :]
    body = _CONSOLIDATED.sub("", body).rstrip()
    return f"{body} *(+{count} similar in archive)*{ending}"
