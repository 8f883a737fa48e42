"""Compaction: keep a state file under its byte budget by policy, deterministically, losing nothing.

``compact(doc, policy)`` resolves the history into disjoint parts (overlapping ranges merge, duplicates keep the
complete entry), folds detailed entries beyond the newest ``keep_recent`` into range lines (each older band
broader), merges range lines beyond ``max_ranges``, and prunes Lessons Learned and Foreclosed Avenues
(:func:`plan_list`: pinned bullets never leave); whatever leaves the file is in ``CompactionResult.archive``
verbatim.  Machine State and maintainer-owned sections are never touched; every iteration is covered exactly once.

Over ``aggressive_at`` of the budget, aggressive steps keep fewer entries and ranges and consolidate avenues down
to ``low_water``; over ``max_bytes``, the last resort gives up, one at a time: older entries, range lines and their
summaries, duplicate then oldest unpinned lessons, oldest avenues, and last the newest entry (kept as a range line).
If even that does not fit, :class:`CompactionBudgetError` says which sections take the bytes.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, field, replace
from datetime import date, datetime
from functools import cache
from itertools import accumulate, groupby, pairwise
from typing import Any

from statefile import defaults
from statefile.errors import BudgetError, UsageError
from statefile.model import patterns
from statefile.model.blocks import RULE, content_end, outline
from statefile.model.document import StateDocument, parse
from statefile.model.history import Entry, Iteration, IterationRange, OpaqueEntry, of_numbers, spans_text
from statefile.model.machine_state import table_rows
from statefile.model.patterns import is_bullet_entry, is_placeholder, state_direction
from statefile.model.template import MAINTAINER_OWNED
from statefile.model.text import clip, detect_newline, line_body, split_lines, utf8_size
from statefile.numbers import budget_text, number_text, plural, size_text
from statefile.policy import ranges

_BLANK_END = re.compile(r"(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r)\Z")  # two line ends, "\r\n" never split
_Cost = Callable[["CompactionResult"], int]  # the bytes a write with this result adds
# The policy's counts and sizes and the least each may be (``max_lessons`` ``None`` is no cap).
_AT_LEAST = dict.fromkeys(["max_bytes", "max_ranges", "max_ranges_aggressive", "band_span", "summary_cap"], 1)
_AT_LEAST |= dict.fromkeys(["keep_recent", "keep_recent_aggressive", "max_lessons", "max_foreclosed_aggressive"], 0)
_AT_LEAST |= dict.fromkeys(("range_text_cap", "foreclosed_page_bytes"), 0)


@dataclass(frozen=True)
class CompactionPolicy:
    """How small a state file must be and what compaction may move to get there (sizes in UTF-8 bytes).

    ``aggressive_at`` and ``low_water`` are fractions of ``max_bytes``; ``today`` enables lesson expiry; ``program``
    names the archive folder range lines point to (default: from the title); ``band_span`` is how many iterations
    the newest range line gathers (older bands twice as many each)."""

    max_bytes: int = defaults.DEFAULT_MAX_BYTES
    keep_recent: int = defaults.KEEP_RECENT
    keep_recent_aggressive: int = defaults.AGGRESSIVE_KEEP
    aggressive_at: float = defaults.AGGRESSIVE_AT
    low_water: float = 0.6
    max_ranges: int = 5
    max_ranges_aggressive: int = 3
    band_span: int = 10
    #: A hard cap on lessons; ``None``: pruned only when the file does not fit otherwise.
    max_lessons: int | None = None
    lesson_similarity: float = 0.8
    foreclosed_page_bytes: int = 3072
    foreclosed_similarity: float = 0.6
    max_foreclosed_aggressive: int = 15
    summary_cap: int = defaults.SUMMARY_CAP
    range_text_cap: int = defaults.RANGE_TEXT_CAP
    today: date | None = None
    summarizer: Callable[[list[dict[str, Any]]], str | None] | None = None
    program: str | None = None
    #: Where range lines say the folded text is (``Store.archive_hint``); ``None``: ``archive/{program}/``.
    archive_hint: str | None = None
    #: Run the aggressive steps whatever the size (``statefile compact --aggressive``).
    force_aggressive: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.today, datetime):  # a datetime does not compare with dates
            object.__setattr__(self, "today", self.today.date())
        problems = [f"{name} must be >= {low}" for name, low in _AT_LEAST.items() if (getattr(self, name) or 0) < low]
        if not 0 < self.low_water <= self.aggressive_at <= 1:
            problems.append("need 0 < low_water <= aggressive_at <= 1 (fractions of max_bytes)")
        if not (0 < self.lesson_similarity <= 1 and 0 < self.foreclosed_similarity <= 1):
            problems.append("similarity thresholds must be in (0, 1]")
        if problems:
            raise UsageError(f"invalid compaction policy: {'; '.join(problems)}; fix the settings")

    @property
    def aggressive_bytes(self) -> int:
        """Size above which aggressive mode runs."""
        return int(self.max_bytes * self.aggressive_at)

    @property
    def low_water_bytes(self) -> int:
        """Size aggressive mode aims for."""
        return int(self.max_bytes * self.low_water)


@dataclass(frozen=True)
class MovedItem:
    """One thing that left the file (or was rewritten): its kind, a short label and why."""

    kind: str  # "iteration", "range", "lesson" or "foreclosed"
    label: str
    reason: str


_NOUNS = {"iteration": "iteration", "range": "range line", "lesson": "lesson", "foreclosed": "avenue"}


@dataclass(frozen=True)
class CompactionReport:
    """What a compaction did."""

    bytes_before: int
    bytes_after: int
    max_bytes: int
    changed: bool = False
    aggressive: bool = False
    last_resort: bool = False
    moved: tuple[MovedItem, ...] = ()
    ranges_written: tuple[str, ...] = ()

    def count(self, kind: str) -> int:
        """How many moved items are of ``kind``."""
        return sum(1 for m in self.moved if m.kind == kind)

    def summary(self) -> str:
        """One line for humans: sizes, mode and counts."""
        if not self.changed:
            return f"nothing to compact at {budget_text(self.bytes_after, self.max_bytes)}"
        mode = " (last resort)" if self.last_resort else " (aggressive)" if self.aggressive else ""
        counts = ", ".join(plural(self.count(kind), noun) for kind, noun in _NOUNS.items() if self.count(kind))
        return (
            f"compacted{mode}: {number_text(self.bytes_before)} → {budget_text(self.bytes_after, self.max_bytes)}; "
            f"moved {counts or 'nothing'}; wrote {plural(len(self.ranges_written), 'range line')}"
        )

    def details(self, folded: tuple[int, ...]) -> list[str]:
        """What the compaction does, a line per kind (``fold 230 iterations (#1–230) into 5 range lines: …``);
        ``folded`` are the folded iterations' numbers."""
        out: list[str] = []
        by_kind: dict[str, list[MovedItem]] = defaultdict(list)
        for item in self.moved:  # only iterations are "folded into" a range line
            by_kind["folded" if item.reason.startswith("folded into") else item.kind].append(item)
        if "folded" in by_kind:
            heads = [line.split(" — ", 1)[0].lstrip("# ") for line in self.ranges_written]
            shown = ", ".join(heads[:5]) + (f", … ({number_text(len(heads) - 5)} more)" if len(heads) > 5 else "")
            runs = of_numbers(folded)
            more = f" ({plural(len(runs) - 4, 'more run')})" if len(runs) > 4 else ""
            out.append(f"fold {plural(len(by_kind.pop('folded')), 'iteration')} ({spans_text(runs, mark='#', limit=4)}"
                       f"{more}) into {plural(len(heads), 'range line')}: {shown}")  # fmt: skip
        for kind, items in sorted(by_kind.items(), key=lambda pair: pair[0] != "iteration"):
            reasons = Counter(" ".join(item.reason.split()) for item in items)
            why = "; ".join(f"{number_text(count)}: {clip(reason, 60)}" for reason, count in reasons.most_common(3))
            more = f"; {plural(len(reasons) - 3, 'other reason')}" if len(reasons) > 3 else ""
            noun = {"range": "range line", "foreclosed": "foreclosed avenue"}.get(kind, kind)
            out.append(f"archive {plural(len(items), noun)} ({why}{more})")
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self) | {"moved": [asdict(m) for m in self.moved], "ranges_written": list(self.ranges_written)}


@dataclass(frozen=True)
class CompactionResult:
    """The compacted document (the input itself when nothing changed), everything removed verbatim, a report."""

    document: StateDocument
    archive: str
    report: CompactionReport


class CompactionBudgetError(BudgetError):
    """The file does not fit ``max_bytes`` even with everything movable moved.  ``sections`` has the byte table."""

    def __init__(self, message: str, *, size: int, max_bytes: int, sections: tuple[tuple[str, int, bool], ...]):
        super().__init__(message)
        self.size, self.max_bytes, self.sections = size, max_bytes, sections


@dataclass(frozen=True)
class Detail:
    """A detailed entry: its position in the file, the entry, and its lowest and highest iteration numbers."""

    pos: int
    entry: Iteration
    first: int
    last: int


@dataclass
class Group:
    """Iterations ``first``–``last`` as one range line: range lines and the entries resolved into them (a band of the
    history as read), and entries folded in."""

    first: int
    last: int
    ranges: list[tuple[int, IterationRange]] = field(default_factory=list)
    entries: list[Detail] = field(default_factory=list)
    folded: list[Detail] = field(default_factory=list)

    def join(self, newer: Group) -> Group:
        """This group and the ``newer`` one as one."""
        first, last = min(self.first, newer.first), max(self.last, newer.last)
        return Group(first, last, self.ranges + newer.ranges, self.entries + newer.entries, self.folded + newer.folded)


@dataclass(frozen=True)
class History:
    """The Iteration History as disjoint parts covering every iteration number exactly once."""

    region: tuple[int, int]  # absolute line span of the entries
    raws: tuple[str, ...]  # entry texts in file order, the last without the trailing rule/blank lines
    tail: str
    bands: tuple[Group, ...]
    free: tuple[Detail, ...]  # detailed entries not inside a band, newest (highest number) first
    dropped: tuple[tuple[Detail, int], ...]  # duplicate entries and the position of the one that stays
    anchor: dict[int, int]  # opaque entry's position -> position of the entry above it (-1: top), in file order


def resolve_history(doc: StateDocument) -> History | None:
    """The history as disjoint parts (``None`` without entries): overlaps merge, duplicates keep the complete one."""
    located = doc.located_history
    if not located:
        return None
    entries = doc.history
    raws = [e.raw for e in entries]
    raws[-1], tail = split_tail(raws[-1])
    details = [Detail(p, e, min(e.covers), max(e.covers)) for p, e in enumerate(entries) if isinstance(e, Iteration)]
    bands = [Group(e.first, e.last, ranges=[(p, e)]) for p, e in enumerate(entries) if isinstance(e, IterationRange)]
    owner: dict[int, int] = {}  # entries sharing a number are linked to the first that has it
    links = ((i, owner.setdefault(n, i)) for i, detail in enumerate(details) for n in detail.entry.covers)
    dropped: list[tuple[Detail, int]] = []
    free: list[Detail] = []
    for group in connected(len(details), links):
        members = [details[i] for i in group]
        union = {n for d in members for n in d.entry.covers}
        if complete := [d for d in members if set(d.entry.covers) >= union]:
            primary = min(complete, key=lambda d: (d.entry.partial, d.pos))
            free.append(primary)
            dropped.extend((d, primary.pos) for d in members if d is not primary)
        else:
            bands.append(Group(min(union), max(union), entries=members))
    widened = True
    while widened:  # every detailed entry whose number a band covers joins that band, which may then overlap others
        merged: list[Group] = []
        for band in sorted(bands, key=lambda b: (b.first, b.last)):
            if merged and band.first <= (top := merged[-1]).last:
                top.last = max(top.last, band.last)
                top.ranges.extend(band.ranges)
                top.entries.extend(band.entries)
            else:
                merged.append(band)
        bands = merged
        starts = [b.first for b in bands]
        remaining: list[Detail] = []
        widened = False
        for d in free:
            hits = (bands[k] for n in d.entry.covers if (k := bisect_right(starts, n) - 1) >= 0 and bands[k].last >= n)
            if (hit := next(hits, None)) is None:
                remaining.append(d)
                continue
            hit.entries.append(d)
            if d.first < hit.first or d.last > hit.last:
                hit.first, hit.last = min(hit.first, d.first), max(hit.last, d.last)
                widened = True
        free = remaining
    free.sort(key=lambda d: (-d.last, d.pos))
    opaque = [isinstance(e, OpaqueEntry) for e in entries]
    above = list(accumulate(range(len(entries)), lambda a, p: a if opaque[p] else p, initial=-1))
    anchor = {pos: above[pos] for pos in range(len(entries)) if opaque[pos]}
    region = located[0].start, located[-1].end  # entries run to the end of the section that holds them
    return History(region, tuple(raws), tail, tuple(bands), tuple(free), tuple(dropped), anchor)


def split_tail(raw: str) -> tuple[str, str]:
    """Split the trailing blank lines and rules (``---``, ``***``, ``___``: section separators) off the last entry."""
    lines = split_lines(raw)
    cut = content_end(lines)
    return "".join(lines[:cut]), "".join(lines[cut:])


def plan_sequence(history: History, keep: int, max_ranges: int, band_span: int) -> list[Detail | Group]:
    """The output history, newest first: the newest ``keep`` free entries, the rest in at most ``max_ranges`` groups."""
    kept = {d.pos for d in history.free[:keep]}
    items: list[Detail | Group] = sorted([*history.bands, *history.free], key=lambda item: -item.last)
    sequence: list[Detail | Group] = []
    for fold, run in groupby(items, key=lambda i: isinstance(i, Detail) and i.pos not in kept):
        if not fold:
            sequence.extend(run)
            continue
        # A run to fold as groups whose spans double going back from ``band_span``, never interleaved.
        details = [d for d in run if isinstance(d, Detail)]
        low, size, start = min(d.first for d in details), band_span, 0
        while start < len(details):
            top, end = details[start].last, len(details)
            if top - low + 1 >= 2 * size:
                bottom, end = details[start].first, start + 1
                while end < len(details) and (top - details[end].first < size or details[end].last >= bottom):
                    bottom = min(bottom, details[end].first)
                    end += 1
            part = details[start:end]  # newest first
            sequence.append(Group(min(d.first for d in part), top, folded=part))
            start, size = end, size * 2
    index = 0
    while index < len(sequence) - 1:  # a new run joins a young range line of ours just older than it
        newer, older = sequence[index], sequence[index + 1]
        if isinstance(newer, Group) and isinstance(older, Group) and newer.folded and not older.folded:
            young = older.last - older.first + 1 < band_span
            if young and all(ranges.parse_canonical(entry.heading) is not None for _, entry in older.ranges):
                sequence[index : index + 2] = [older.join(newer)]
        index += 1
    # Merge the pair covering the fewest numbers whose band is no broader than the group older than it (a binary
    # counter: the newest band stays narrow).
    groups = sum(isinstance(s, Group) for s in sequence)

    def score(i: int) -> tuple[bool, int, int, int]:
        merged = sequence[i].last - sequence[i + 1].first + 1
        behind = i + 2 < len(sequence) and isinstance(sequence[i + 2], Group)
        return behind and merged > sequence[i + 2].last - sequence[i + 2].first + 1, merged, sequence[i + 1].first, i

    while groups > max_ranges:
        pairs = [i for i, (a, b) in enumerate(pairwise(sequence)) if isinstance(a, Group) and isinstance(b, Group)]
        if not pairs:
            break
        i = min(pairs, key=score)
        newer, older = sequence[i], sequence[i + 1]
        assert isinstance(newer, Group) and isinstance(older, Group)
        sequence[i : i + 2] = [older.join(newer)]
        groups -= 1
    return sequence


def ends_blank(text: str) -> bool:
    """Whether ``text`` ends with a blank line (or is only whitespace).  Looks at the last bytes only."""
    return not text.strip() or _BLANK_END.search(text[-4:]) is not None


def join_entries(texts: list[tuple[str, bool]], tail: str, newline: str) -> str:
    """Entries in order, then the section's tail; a ``spaced`` text gets a blank line after it when one follows."""
    out = ""
    for index, (text, spaced) in enumerate(texts):
        out += text
        follows = index < len(texts) - 1 or bool(tail)
        if follows and not text.endswith(("\n", "\r")):
            out += newline
        if follows and spaced and index < len(texts) - 1 and not ends_blank(out):
            out += newline
    blocks = outline(tail, lists=False) if tail and out and not ends_blank(out) else []
    if blocks and blocks[0].kind == RULE and blocks[0].start == 0:
        out += newline  # "text\n---" would be a setext heading
    return out + tail


# What marks a bullet important: it is pruned only after every unmarked one.
_IMPORTANT = re.compile(r"\b(?:IMPORTANT|CRITICAL)\b|\*\*\s*(?i:important|critical)\b")
_EXPIRES = re.compile(patterns.EXPIRES_PATTERN, re.I)
_CONSOLIDATED = re.compile(r"\s*\*\(\+(\d+) similar in archive\)\*")
_WORD = re.compile(r"[^\W_]+")


@dataclass
class ListPlan:
    """What to do with a bullet list: bullets to remove (index → reason) and bullets to rewrite (index → text)."""

    remove: dict[int, str] = field(default_factory=dict)
    rewrite: dict[int, str] = field(default_factory=dict)


def is_pinned(text: str) -> bool:
    """Whether a bullet is pinned (📌 or ``<!-- pin -->``)."""
    return bool(patterns.PIN_MARK.search(text))


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
    text = _CONSOLIDATED.sub(" ", _EXPIRES.sub(" ", patterns.PIN_MARK.sub(" ", patterns.without_agent_mark(text))))
    return frozenset(w.lower() for w in _WORD.findall(text))


def newest_last(texts: Sequence[str]) -> bool:
    """Whether the list reads oldest to newest (the default, and statefile's own order)."""
    refs = [max(int(n) for n in found) for t in texts if (found := patterns.ITERATION_MENTION.findall(t))]
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
        if today and not is_pinned(text) and not is_placeholder(text) and (when := expiry(text)) and when < today:
            plan.remove[i] = f"expired {when.isoformat()}"
    live = [i for i, text in enumerate(texts) if not is_placeholder(text) and i not in plan.remove]
    age = list(range(len(texts))) if newest_last else list(range(len(texts), 0, -1))  # higher is newer
    mark = noun == "avenue"  # an avenue stands for the ones folded into it, marked so
    for group in similar_groups([tokens(texts[i]) for i in live], similarity) if collapse else []:
        members = [live[k] for k in group]
        if pinned := [i for i in members if is_pinned(texts[i])]:
            plan.remove.update({i: f"duplicate of a pinned {noun}" for i in members if i not in pinned})
            continue
        # The newest maintainer bullet stands for the group: an agent's never replaces a maintainer's words.
        keep = max(members, key=lambda i: (not patterns.is_agent_bullet(texts[i]), age[i]))
        for i in (i for i in members if i != keep):
            kept = "a newer" if age[i] < age[keep] else "a maintainer's"
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


@dataclass(frozen=True)
class _Params:
    keep: int
    max_ranges: int
    text_cap: int
    max_lessons: int | None = None  # None: no limit
    collapse_lessons: bool = False  # duplicate lessons collapse (always with a max_lessons limit)
    consolidate_always: bool = False  # a Foreclosed Avenues list beyond a page consolidates (aggressive)
    max_foreclosed: int | None = None
    force_render: bool = False
    why: str = ""  # why a limit removes bullets, for the archive and the report


@dataclass
class _Candidate:
    text: str
    size: int
    archive: list[tuple[tuple[int, int], str]]  # (sort key, verbatim text) of history pieces
    list_archive: list[str]
    moved: list[MovedItem]
    ranges_written: list[str]
    groups: int = 0
    # "lesson" and "avenue": how many bullets the list keeps and how many of those are unpinned
    kept: dict[str, tuple[int, int]] = field(default_factory=lambda: {"lesson": (0, 0), "avenue": (0, 0)})


_Rendered = tuple[str, list[tuple[tuple[int, int], str]], list[MovedItem]]  # a range line, its archive, its moves


class _Compactor:
    """Everything computed once per ``compact`` call; :meth:`build` renders one candidate for given limits."""

    def __init__(self, doc: StateDocument, policy: CompactionPolicy, program: str | None) -> None:
        self.doc, self.policy, self.program = doc, policy, program
        self.newline = detect_newline(doc.render())
        self.direction = state_direction(doc.machine_state)
        self.lines = split_lines(doc.render())
        self.history = resolve_history(doc)
        self.lessons = self._list_info("lessons")
        self.foreclosed = self._list_info("foreclosed")
        avenues = self.foreclosed[2] if self.foreclosed else []
        self.page = sum(utf8_size(t) for t in avenues) > policy.foreclosed_page_bytes  # consolidate when aggressive
        self._histories: dict[tuple[int, int, int, bool, bool], tuple[tuple[int, int, str] | None, _Candidate]] = {}
        self._rendered: dict[tuple[tuple[int, ...], tuple[int, ...], int, bool], _Rendered] = {}

    def _list_info(self, kind: str) -> tuple[int, list[Any], list[str], bool] | None:
        if (section := self.doc.section(kind)) is None or not (items := self.doc.list_items(kind)):
            return None
        start, end = section.start + items[0].start, section.start + items[-1].end
        if self.history is not None and start < self.history.region[1] and self.history.region[0] < end:
            return None  # never edit across the history's entries
        texts = [item.text for item in items]
        return section.start, items, texts, newest_last(texts)

    def _history_edit(self, params: _Params, candidate: _Candidate, summarize: bool) -> tuple[int, int, str] | None:
        if (history := self.history) is None:
            return None
        sequence = plan_sequence(history, params.keep, params.max_ranges, self.policy.band_span)
        # (member positions, text, wants a blank line after it when something follows)
        texts: list[tuple[list[int], str, bool]] = []
        last_pos = len(history.raws) - 1
        for item in sequence:
            if isinstance(item, Detail):
                texts.append(([item.pos], history.raws[item.pos], item.pos == last_pos))
                continue
            members = [pos for pos, _ in item.ranges] + [d.pos for d in item.entries + item.folded]
            if len(members) == 1 and item.ranges and not params.force_render:
                texts.append((members, history.raws[members[0]], members[0] == last_pos))  # the range line as it is
            else:
                texts.append((members, self._render_group(item, params, candidate, summarize), True))
        for detail, _ in history.dropped:
            why = f"duplicate of the entry kept for {detail.last}"
            candidate.archive.append(((detail.first, detail.pos), history.raws[detail.pos]))
            candidate.moved.append(MovedItem("iteration", _label(detail.entry), why))
        candidate.groups = sum(isinstance(s, Group) for s in sequence)
        # Bullet-form entries stay in front (below a heading they would read as its body), whatever their numbers.
        texts.sort(key=lambda item: not is_bullet_entry(item[1]))
        # Opaque entries follow the entry that was above them in the file, wherever that went.
        where = {pos: index for index, (members, _, _) in enumerate(texts) for pos in members}
        primary_of = {detail.pos: primary for detail, primary in history.dropped}
        after: dict[int, list[tuple[str, bool]]] = defaultdict(list)
        for pos, above in history.anchor.items():
            after[where.get(primary_of.get(above, above), -1)].append((history.raws[pos], pos == last_pos))
        ordered = [*after[-1]]
        for index, (_, text, spaced) in enumerate(texts):
            ordered += [(text, spaced), *after[index]]
        text = join_entries(ordered, history.tail, self.newline)
        return None if text == "".join(history.raws) + history.tail else (*history.region, text)

    def _render_group(self, group: Group, params: _Params, candidate: _Candidate, summarize: bool) -> str:
        lines, details = group.ranges, group.entries + group.folded
        key = (tuple(pos for pos, _ in lines), tuple(d.pos for d in details), params.text_cap, summarize)
        if key not in self._rendered:  # stages re-plan the same groups: a 10,000-entry group is rendered once
            raws = self.history.raws if self.history is not None else ()
            bands = [ranges.band_from_range(entry) for _, entry in lines]
            archive = [((entry.first, pos), raws[pos]) for pos, entry in lines]
            moved = [MovedItem("range", _label(entry), "merged into a new range line") for _, entry in lines]
            if details:
                entries = [d.entry for d in details]
                summary = ranges.entries_summary(entries, self.policy.summary_cap)
                if summarize:
                    summary = self._summarize(entries, summary)
                bands.append(ranges.band_from_entries(entries, self.direction, summary))
                archive.extend(((detail.first, detail.pos), raws[detail.pos]) for detail in details)
            band, hint, cap = ranges.merge_bands(bands, self.direction), self.policy.archive_hint, params.text_cap
            line = ranges.render_band(band, program=self.program, text_cap=cap, newline=self.newline, archive=hint)
            reason = f"folded into {line_body(line)[4:].split(' — ', 1)[0]}"  # "Iters 11–40"
            moved.extend(MovedItem("iteration", _label(detail.entry), reason) for detail in details)
            self._rendered[key] = line, archive, moved
        line, archive, moved = self._rendered[key]
        candidate.archive.extend(archive)
        candidate.moved.extend(moved)
        candidate.ranges_written.append(line_body(line))
        return line

    def _summarize(self, entries: list[Iteration], deterministic: str) -> str:
        """The summarizer's line when it is usable (one line, under the cap, shorter than ours), else ours."""
        fields, summarizer = ("number", "when", "status", "metric", "change", "notes"), self.policy.summarizer
        try:  # one call per new range line: the summarizing build is the last and renders each once
            ordered = sorted(entries, key=lambda e: e.covers[0])
            offered = summarizer([{name: getattr(e, name) for name in fields} for e in ordered]) if summarizer else None
        except Exception:  # a summarizer is outside code (often an LLM call): any failure means "use ours"
            offered = None
        text = offered.strip() if isinstance(offered, str) else ""
        short = 0 < len(text) < min(self.policy.summary_cap, len(deterministic))
        return text if short and not re.search("[\r\n]", text) else deterministic

    def _list_edit(
        self, noun: str, info: tuple[int, list[Any], list[str], bool], params: _Params, candidate: _Candidate
    ) -> tuple[int, int, str] | None:
        """The list's edit under ``params`` (first line, end line, text), or ``None``; notes what it keeps."""
        start, items, texts, newest_last = info
        lesson, policy = noun == "lesson", self.policy
        if lesson:  # (collapse, similarity, limit)
            limit = params.max_lessons
            args = (params.collapse_lessons or limit is not None, policy.lesson_similarity, limit)
        else:
            args = (self.page and params.consolidate_always, policy.foreclosed_similarity, params.max_foreclosed)
        plan = plan_list(texts, noun, *args, newest_last, policy.today if lesson else None, params.why)
        left = [t for k, t in enumerate(texts) if k not in plan.remove and not is_placeholder(t)]
        candidate.kept[noun] = len(left), sum(1 for t in left if not is_pinned(t))
        if not (plan.remove or plan.rewrite):
            return None
        first, last = start + items[0].start, start + items[-1].end
        out: list[str] = []
        for k, item in enumerate(items):
            for text in self.lines[start + items[k - 1].end : start + item.start] if k else []:
                if line_body(text).strip() or (out and line_body(out[-1]).strip()):  # no blank line doubled
                    out.append(text)
            if k not in plan.remove:
                out.extend(split_lines(plan.rewrite.get(k, texts[k])))
        while out and not line_body(out[-1]).strip():
            out.pop()
        if all(k in plan.remove for k in range(len(items))):
            out.insert(0, f"- *(none yet)*{self.newline}")
        if out and not out[-1].endswith(("\n", "\r")) and last < len(self.lines):
            out[-1] += self.newline
        heading = "📚 Lessons Learned" if lesson else "🚧 Foreclosed Avenues"
        pieces = [f"### {heading} — moved out by compaction{self.newline}"]
        for k, reason in sorted(plan.remove.items()):
            ended = texts[k] if texts[k].endswith(("\n", "\r")) else texts[k] + self.newline
            pieces += [f"{self.newline}*({reason})*{self.newline}", ended]
            candidate.moved.append(MovedItem("lesson" if lesson else "foreclosed", _clip(texts[k]), reason))
        if len(pieces) > 1:
            candidate.list_archive.append("".join(pieces))
        return first, last, "".join(out)

    def build(self, params: _Params, *, summarize: bool = False) -> _Candidate:
        # The history depends on these limits only: a last-resort step on the lists does not re-plan it.
        key = (params.keep, params.max_ranges, params.text_cap, params.force_render, summarize)
        if (planned := self._histories.get(key)) is None:
            part = _Candidate("", 0, [], [], [], [])
            planned = self._histories[key] = (self._history_edit(params, part, summarize), part)
        history_edit, part = planned
        candidate = _Candidate("", 0, [*part.archive], [], [*part.moved], [*part.ranges_written], part.groups)
        edits = [history_edit] if history_edit else []
        lists = (("lesson", self.lessons), ("avenue", self.foreclosed))
        edits += [edit for noun, info in lists if info and (edit := self._list_edit(noun, info, params, candidate))]
        lines = list(self.lines)
        for start, end, text in sorted(edits, reverse=True):  # disjoint: a list never spans the history
            lines[start:end] = [text]
        candidate.text = "".join(lines)
        if self.lines and not self.lines[-1].endswith(("\n", "\r")):  # the file had no final newline
            candidate.text = re.sub(r"(?:\r\n|\r|\n)\Z", "", candidate.text)
        candidate.size = utf8_size(candidate.text)
        return candidate

    def archive_text(self, candidate: _Candidate) -> str:
        """Everything the candidate removed, verbatim: bullet-form entries, other entries oldest first, the lists."""
        ordered = sorted(candidate.archive, key=lambda item: (not is_bullet_entry(item[1]), item[0]))
        out: list[str] = []
        for text in [text for _, text in ordered] + candidate.list_archive:
            if out and not ends_blank(out[-1]):
                out.append(self.newline)
            out.append(text if text.endswith(("\n", "\r")) else text + self.newline)
        return "".join(out)


def _label(entry: Entry) -> str:
    if isinstance(entry, Iteration):
        numbers = " & ".join(str(n) for n in entry.covers)
        return f"Iteration {numbers}" + (" (partial)" if entry.partial else "")
    return _clip(entry.heading.lstrip("#-*+ ").strip())


def _clip(text: str) -> str:
    return clip(line_body(text.split("\n", 1)[0]).lstrip("-*+ "), 80)


def program_name(doc: StateDocument) -> str | None:
    """The program named by the ``# Autoloop: {program}`` title, or ``None``."""
    title = doc.section("title")
    match = re.match(r"Autoloop:\s*(\S+)", title.title or "") if title is not None else None
    return match.group(1) if match else None


def compact(
    doc: StateDocument, policy: CompactionPolicy | None = None, *, program: str | None = None
) -> CompactionResult:
    """Compact ``doc`` under ``policy`` (default :class:`CompactionPolicy`), purely, to at most ``max_bytes`` (else
    :class:`CompactionBudgetError`); compacting the result again changes nothing; an unclosed fence is refused.  A
    ``policy.summarizer`` gets each new range line's folded entries as dicts; its answer is used only when it is one
    line, shorter than ``summary_cap`` and than ours (decisions are made with ours, so it can only shrink the file).
    """
    policy = policy or CompactionPolicy()
    doc.require_closed_blocks("compact this file")
    name = program or policy.program or program_name(doc)
    work = _Compactor(doc, policy, name)
    params = _Params(policy.keep_recent, policy.max_ranges, policy.range_text_cap, policy.max_lessons)
    candidate = work.build(params)
    if aggressive := policy.force_aggressive or candidate.size > policy.aggressive_bytes:
        params = replace(
            params,
            keep=min(policy.keep_recent_aggressive, policy.keep_recent),
            max_ranges=min(policy.max_ranges_aggressive, policy.max_ranges),
            text_cap=min(policy.range_text_cap, policy.summary_cap),
        )
        candidate = work.build(params)
        if candidate.size > policy.low_water_bytes:  # avenues consolidate, then the oldest go (as few as needed)
            params = replace(
                params, consolidate_always=True, why="(the file was above the aggressive threshold of its budget)"
            )
            candidate, threshold = work.build(params), policy.aggressive_bytes
            avenues = candidate.kept["avenue"][0]
            if candidate.size > threshold and avenues > policy.max_foreclosed_aggressive:
                params = replace(params, max_foreclosed=policy.max_foreclosed_aggressive)
                candidate = work.build(params)
                if candidate.size <= threshold:
                    params, candidate = _largest(work, "max_foreclosed", avenues, threshold, (params, candidate))
    ceiling, folded_newest = params, False
    while candidate.size > policy.max_bytes and (step := _last_resort_step(work, params, candidate)) is not None:
        folded_newest = folded_newest or (params.keep > 0 and step.keep == 0)
        params, candidate = step, work.build(step)
    last_resort = params is not ceiling
    if folded_newest and candidate.size <= policy.max_bytes:  # take back what went before it, as the budget allows
        for limit, info in (("max_foreclosed", work.foreclosed), ("max_lessons", work.lessons)):
            total, cap = len(info[1]) if info is not None else 0, getattr(ceiling, limit)
            high = total if cap is None else min(cap, total)
            if getattr(params, limit) is not None and getattr(params, limit) < high:
                params, candidate = _largest(work, limit, high, policy.max_bytes, (params, candidate))
        if params.force_render and not ceiling.force_render:
            trial_params = replace(params, force_render=False, text_cap=ceiling.text_cap)
            if (trial := work.build(trial_params)).size <= policy.max_bytes:
                params, candidate = trial_params, trial
    if candidate.size > policy.max_bytes:
        raise _budget_error(candidate, policy, name)
    if policy.summarizer is not None and candidate.ranges_written:
        summarized = work.build(params, summarize=True)
        if summarized.size <= policy.max_bytes:  # never trade the budget for a summary
            candidate = summarized
    changed = candidate.text != doc.render()
    moved, written = tuple(candidate.moved), tuple(candidate.ranges_written)
    report = CompactionReport(
        doc.size, candidate.size, policy.max_bytes, changed, aggressive, last_resort, moved, written
    )
    return CompactionResult(parse(candidate.text) if changed else doc, work.archive_text(candidate), report)


def _largest(
    work: _Compactor, name: str, high: int, limit: int, found: tuple[_Params, _Candidate]
) -> tuple[_Params, _Candidate]:
    """The largest value of limit ``name`` in ``[found's, high]`` whose candidate fits ``limit`` bytes, by bisection."""
    base, low = found[0], getattr(found[0], name)
    while low < high:
        middle = (low + high + 1) // 2
        params = replace(base, **{name: middle})
        trial = work.build(params)
        if trial.size <= limit:
            low, found = middle, (params, trial)
        else:
            high = middle - 1
    return found


def _last_resort_step(work: _Compactor, params: _Params, candidate: _Candidate) -> _Params | None:
    """The next smallest thing to give up over budget (in the module docstring's order), or ``None``."""
    params = replace(params, why="(the file was over its byte budget)")
    free = min(params.keep, len(work.history.free) if work.history is not None else 0)
    (lessons, unpinned_lessons), (avenues, unpinned_avenues) = candidate.kept["lesson"], candidate.kept["avenue"]
    steps = (
        (free > 1, {"keep": free - 1}),
        (candidate.groups > 1 and params.max_ranges > 1, {"max_ranges": min(params.max_ranges, candidate.groups) - 1}),
        (not params.force_render and candidate.groups, {"force_render": True, "text_cap": 0}),
        (not params.collapse_lessons and unpinned_lessons > 0, {"collapse_lessons": True}),  # duplicates go first
        (unpinned_lessons > 0, {"max_lessons": lessons - 1}),
        (unpinned_avenues > 0, {"max_foreclosed": avenues - 1}),
        (free == 1, {"keep": 0}),  # the newest entry becomes a range line, which the next steps merge and shorten
    )
    return next((replace(params, **change) for ok, change in steps if ok), None)


def _budget_error(candidate: _Candidate, policy: CompactionPolicy, program: str | None) -> CompactionBudgetError:
    """The error for a file that cannot fit: its size, a per-section byte table and what to do."""
    result = parse(candidate.text)
    untitled = {"preamble": "(text before the first heading)"}
    rows = [(s.title or untitled.get(s.kind, s.kind), s.size, s.kind in MAINTAINER_OWNED) for s in result.sections]
    table = "; ".join(f"{label} {number_text(size)}{' [maintainer-owned]' * owned}" for label, size, owned in rows)
    over = candidate.size - policy.max_bytes
    fix = f"statefile edit {program or 'PROGRAM'}"
    state = result.section("machine_state")
    longest = max(table_rows(list(state.lines)) if state else [], key=lambda r: utf8_size(r.value), default=None)
    # Entries compaction cannot fold (opaque headings): when they are what stands in the way, name them.
    opaque = sorted((e for e in result.history if isinstance(e, OpaqueEntry)), key=lambda e: -utf8_size(e.raw))
    if opaque and sum(utf8_size(e.raw) for e in opaque) >= over:
        heads = [(clip(e.heading, 60), size_text(utf8_size(e.raw)), e.implausible) for e in opaque[:3]]
        named = ", ".join(f"'{h}' ({s}{f'; {n} is no plausible iteration number' if n else ''})" for h, s, n in heads)
        advice = (
            f"the history holds {plural(len(opaque), 'entry', 'entries')} compaction cannot fold, largest {named}; "
            f"fix their headings (or remove them) with `{fix}`, or raise max_bytes"
        )
    elif state and longest and utf8_size(longest.value) >= over:  # a pasted log as a value
        advice = (
            f"the Machine State table is {size_text(state.size)}, its '{longest.label}' value alone "
            f"{size_text(utf8_size(longest.value))}; shorten that value where it was written (the record's options, "
            f"or `{fix}`), or raise max_bytes"
        )
    else:
        owned = sorted(((size, label) for label, size, owned in rows if owned), reverse=True)
        biggest = ", ".join(f"'{label}' ({size_text(size)})" for size, label in owned[:3]) or "the Machine State table"
        advice = f"shorten maintainer-owned text such as {biggest}, or raise max_bytes"
    message = (
        f"{f'{program}.md' if program else 'the state file'} is still {size_text(candidate.size)} after moving "
        f"everything compaction may move, over max_bytes {number_text(policy.max_bytes)} by {number_text(over)} "
        f"(bytes per section: {table}); {advice}"
    )
    return CompactionBudgetError(message, size=candidate.size, max_bytes=policy.max_bytes, sections=tuple(rows))


def compact_within(
    doc: StateDocument, policy: CompactionPolicy, cost: _Cost, *, soft_limit: int, hard_limit: int, what: str
) -> CompactionResult:
    """The most thorough compaction of ``doc`` whose ``cost`` (the bytes the write adds) fits ``soft_limit``
    (max-patch-size); else the gentlest that keeps the file within ``max_bytes``, if within ``hard_limit`` (1.2 ×
    that), else :class:`PatchBudgetError` before anything is written.  What is not folded moves on a later run."""
    full = compact(doc, policy)
    if cost(full) <= soft_limit:
        return full

    @cache
    def gentle(keep: int) -> CompactionResult:  # keeps ``keep`` entries, folds more only over max_bytes
        gentler = replace(policy, aggressive_at=1.0, low_water=1.0, force_aggressive=False, keep_recent=keep)
        return compact(doc, replace(gentler, keep_recent_aggressive=keep))

    low, high = policy.keep_recent, max(policy.keep_recent, len(doc.iterations))
    if (least := cost(best := gentle(high))) > soft_limit:
        if least <= hard_limit:
            return best
        raise BudgetError(
            f"{what} would add {size_text(least)} even with the least compaction that keeps the file within "
            f"{size_text(policy.max_bytes)}, over the push limit of {size_text(hard_limit)} (1.2 × max-patch-size "
            f"{number_text(soft_limit)}); nothing was written — raise max-patch-size (at least for one run), or "
            "compact once through the branch where no patch limit applies: statefile --remote origin compact --all"
        )
    # The fewest kept entries (the most moved) that still fits.
    return gentle(bisect_left(range(high), True, low, high, key=lambda keep: cost(gentle(keep)) <= soft_limit))
