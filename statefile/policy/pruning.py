"""Which Lessons Learned and Foreclosed Avenues bullets leave the file, and why (compaction applies it).

Pinned bullets (📌, ``<!-- pin -->``) never leave; "oldest" reads the list newest first when the iteration numbers
its bullets mention mostly go down.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import date
from itertools import pairwise

from statefile.model import patterns
from statefile.model.patterns import EXPIRES_PATTERN, ITERATION_MENTION, PIN_PATTERN

_PIN = re.compile(PIN_PATTERN, re.I)
# What marks a bullet important: it is pruned only after every unmarked one.
_IMPORTANT = re.compile(r"\b(?:IMPORTANT|CRITICAL)\b|\*\*\s*(?i:important|critical)\b")
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
    with suppress(ValueError):
        if match := _EXPIRES.search(text):
            return date(*map(int, match.group(1, 2, 3)))
    return None


def tokens(text: str) -> frozenset[str]:
    """The word set a bullet is compared by: markers, markdown and case removed."""
    text = _CONSOLIDATED.sub(" ", _EXPIRES.sub(" ", _PIN.sub(" ", patterns.without_agent_mark(text))))
    return frozenset(w.lower() for w in _WORD.findall(text))


def newest_last(texts: Sequence[str]) -> bool:
    """Whether the list reads oldest to newest (the default, and statefile's own order)."""
    refs = [max(int(n) for n in found) for t in texts if (found := ITERATION_MENTION.findall(t))]
    return sum((b < a) - (b > a) for a, b in pairwise(refs)) <= 0  # no more steps down than up


def connected(count: int, links: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Indexes ``0…count-1`` grouped by ``links`` (transitively), each group ascending, ordered by first member."""
    parent = list(range(count))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in links:
        parent[find(a)] = find(b)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(count):
        groups[find(i)].append(i)
    return list(groups.values())


def similar_groups(sets: Sequence[frozenset[str]], threshold: float) -> list[list[int]]:
    """Groups (of 2 or more indexes) of sets linked by Jaccard similarity >= ``threshold``, transitively; a prefix
    filter (similar sets share one of their rarest ``|s| - ceil(t·|s|) + 1`` tokens) keeps the cost near linear."""
    frequency = Counter(token for s in sets for token in s)

    def links() -> Iterator[tuple[int, int]]:
        index: dict[str, list[int]] = defaultdict(list)
        for i, s in enumerate(sets):
            prefix = len(s) - math.ceil(threshold * len(s)) + 1
            seen: set[int] = set()
            for token in sorted(s, key=lambda t: (frequency[t], t))[: max(prefix, 1)]:
                for j in index[token]:
                    if j not in seen and len(s & sets[j]) >= threshold * len(s | sets[j]):
                        yield i, j
                    seen.add(j)
                index[token].append(i)

    return [group for group in connected(len(sets), links()) if len(group) > 1]


def plan_list(
    texts: Sequence[str],
    noun: str,
    *,
    collapse: bool,
    similarity: float,
    limit: int | None,
    newest_last: bool,
    today: date | None = None,
    why: str = "",
) -> ListPlan:
    """Which bullets of a list (``noun`` ``"lesson"`` or ``"avenue"``) leave: expired ones when ``today`` is given;
    with ``collapse``, older duplicates (avenues consolidate into one marked bullet); then beyond ``limit``
    (``None``: no limit) the oldest unpinned ones, agents' first (they never push a maintainer's out), those marked
    important last."""
    plan = ListPlan()
    for i, text in enumerate(texts):
        when = expiry(text) if today is not None and not is_pinned(text) else None
        if when is not None and today is not None and when < today and not patterns.is_placeholder(text):
            plan.remove[i] = f"expired {when.isoformat()}"
    live = [i for i, text in enumerate(texts) if not patterns.is_placeholder(text) and i not in plan.remove]
    age = list(range(len(texts))) if newest_last else list(range(len(texts), 0, -1))  # higher is newer
    mark = noun == "avenue"  # an avenue stands for the ones folded into it, marked so
    for group in similar_groups([tokens(texts[i]) for i in live], similarity) if collapse else []:
        members = [live[k] for k in group]
        pinned = [i for i in members if is_pinned(texts[i])]
        if pinned:
            plan.remove.update({i: f"duplicate of a pinned {noun}" for i in members if i not in pinned})
            continue
        # The newest maintainer bullet stands for the group: an agent's never replaces a maintainer's words.
        keep = max(members, key=lambda i: (not patterns.is_agent_bullet(texts[i]), age[i]))
        for i in members:
            kept = "a newer" if age[i] < age[keep] else "a maintainer's"
            if i != keep:
                plan.remove[i] = f"similar to {kept} {noun}" if mark else f"duplicate of {kept} {noun}"
        if mark:  # the marker goes before the line ending
            body = texts[keep].rstrip("\r\n")
            marks = (_CONSOLIDATED.search(texts[i]) for i in members)  # each already stands for some
            count = len(members) - 1 + sum(int(mark.group(1)) for mark in marks if mark)
            marked = f"{_CONSOLIDATED.sub('', body).rstrip()} *(+{count} similar in archive)*"
            plan.rewrite[keep] = marked + texts[keep][len(body) :]
    live = [i for i in live if i not in plan.remove]
    if limit is not None and len(live) > limit:
        unpinned = (i for i in live if not is_pinned(texts[i]))
        order = sorted(unpinned, key=lambda i: (not patterns.is_agent_bullet(texts[i]), is_important(texts[i]), age[i]))
        for i in order[: len(live) - limit]:
            reason = f"beyond the newest {limit} {noun}s" + (f" {why}" if why else "")
            plan.remove[i] = reason + (" (marked important: pruned last)" if is_important(texts[i]) else "")
    return plan
