"""The Iteration History as compaction sees it: disjoint parts covering every iteration number exactly once.

:func:`resolve_history` reads a document's entries once and resolves agents' overlaps: overlapping range lines
merge into one band; a detailed entry whose number a band covers joins that band (widening it if the entry
reaches past it); of several entries sharing a number, the one covering all of them stays and the others are
"dropped" (archived), or, when none does, they all fold into one band.  :func:`plan_sequence` then lays out one
candidate output (kept entries and groups, newest first) for given limits, and :func:`join_entries` joins the
texts back into the section.  Pure functions; :mod:`statefile.policy.compaction` renders and archives.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from statefile.model.blocks import RULE, content_end, outline
from statefile.model.document import StateDocument
from statefile.model.history import Entry, Iteration, IterationRange, OpaqueEntry
from statefile.model.text import split_lines
from statefile.policy import ranges


@dataclass(frozen=True)
class Detail:
    """A detailed entry: its position in the file, the entry, and its highest and lowest iteration numbers."""

    pos: int
    entry: Iteration
    high: int
    low: int  # stored, not derived: planning reads it for every entry several times per compaction


@dataclass
class BaseBand:
    """Numbers ``first``–``last`` claimed by existing range lines (and entries resolved into them)."""

    first: int
    last: int
    ranges: list[tuple[int, IterationRange]] = field(default_factory=list)
    entries: list[Detail] = field(default_factory=list)

    @property
    def pristine(self) -> bool:
        return len(self.ranges) == 1 and not self.entries


@dataclass
class Group:
    """One range line of the output: existing bands and detailed entries folded together."""

    bases: list[BaseBand] = field(default_factory=list)
    folded: list[Detail] = field(default_factory=list)

    @property
    def first(self) -> int:
        return min([b.first for b in self.bases] + [d.low for d in self.folded])

    @property
    def last(self) -> int:
        return max([b.last for b in self.bases] + [d.high for d in self.folded])


@dataclass(frozen=True)
class History:
    region: tuple[int, int]  # absolute line span of the entries
    raws: tuple[str, ...]  # entry texts in file order, the last without the trailing rule/blank lines
    tail: str
    original: str
    bands: tuple[BaseBand, ...]
    free: tuple[Detail, ...]  # detailed entries not inside a band, newest (highest number) first
    dropped: tuple[tuple[Detail, int], ...]  # duplicate entries and the position of the one that stays
    opaque: tuple[tuple[int, OpaqueEntry], ...]
    anchor: dict[int, int]  # opaque position -> position of the entry above it (-1: top)


def resolve_history(doc: StateDocument, lines: Sequence[str]) -> History | None:
    entries = doc.history
    if not entries:
        return None
    region = _entries_region(doc, entries)
    if region is None:
        return None
    raws = [e.raw for e in entries]
    body, tail = split_tail(raws[-1])
    raws[-1] = body
    details = [
        Detail(pos, e, max(e.covers), min(e.covers)) for pos, e in enumerate(entries) if isinstance(e, Iteration)
    ]
    dropped, forced, free = _resolve_duplicates(details)
    bands = [
        BaseBand(e.first, e.last, ranges=[(pos, e)]) for pos, e in enumerate(entries) if isinstance(e, IterationRange)
    ]
    bands.extend(forced)
    bands, free = _absorb(bands, free)
    free.sort(key=lambda d: (-d.high, d.pos))
    opaque = [(pos, e) for pos, e in enumerate(entries) if isinstance(e, OpaqueEntry)]
    anchor: dict[int, int] = {}
    previous = -1
    for pos, e in enumerate(entries):
        if isinstance(e, OpaqueEntry):
            anchor[pos] = previous
        else:
            previous = pos
    return History(
        region=region,
        raws=tuple(raws),
        tail=tail,
        original="".join(lines[region[0] : region[1]]),
        bands=tuple(bands),
        free=tuple(free),
        dropped=tuple(dropped),
        opaque=tuple(opaque),
        anchor=anchor,
    )


def _entries_region(doc: StateDocument, entries: Sequence[Entry]) -> tuple[int, int] | None:
    """Absolute line span of the history entries (they run to the end of the section that holds them)."""
    joined = "".join(e.raw for e in entries)
    # Line count as split_lines counts: \r\n, \r and \n each end a line; a last line may lack an ending.
    count = joined.count("\n") + joined.count("\r") - joined.count("\r\n") + (not joined.endswith(("\n", "\r")))
    history = doc.section("history")
    candidates = (
        [history]
        if history is not None
        else [s for s in doc.sections if s.kind not in ("title", "preamble", "machine_state")]
    )
    for section in candidates:
        if len(section.lines) > count and section.text.endswith(joined):
            end = section.start + len(section.lines)
            return end - count, end
    return None


def split_tail(raw: str) -> tuple[str, str]:
    """Split the trailing blank lines and rules (``---``, ``***``, ``___``: section separators) off the last entry."""
    lines = split_lines(raw)
    cut = content_end(lines)
    return "".join(lines[:cut]), "".join(lines[cut:])


def _resolve_duplicates(
    details: list[Detail],
) -> tuple[list[tuple[Detail, int]], list[BaseBand], list[Detail]]:
    """Entries sharing iteration numbers: keep the complete one, or fold them all into one band."""
    parent = list(range(len(details)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[int, int] = {}
    for index, detail in enumerate(details):
        for n in detail.entry.covers:
            if n in owner:
                parent[find(index)] = find(owner[n])
            else:
                owner[n] = index
    groups: dict[int, list[Detail]] = defaultdict(list)
    for index, detail in enumerate(details):
        groups[find(index)].append(detail)
    dropped: list[tuple[Detail, int]] = []
    forced: list[BaseBand] = []
    free: list[Detail] = []
    for group in groups.values():
        if len(group) == 1:
            free.append(group[0])
            continue
        union = {n for d in group for n in d.entry.covers}
        complete = [d for d in group if set(d.entry.covers) >= union]
        if complete:
            primary = min(complete, key=lambda d: (d.entry.partial, d.pos))
            free.append(primary)
            dropped.extend((d, primary.pos) for d in group if d is not primary)
        else:
            forced.append(BaseBand(min(union), max(union), entries=list(group)))
    return dropped, forced, free


def _merge_overlapping(bands: list[BaseBand]) -> list[BaseBand]:
    merged: list[BaseBand] = []
    for band in sorted(bands, key=lambda b: (b.first, b.last)):
        if merged and band.first <= merged[-1].last:
            top = merged[-1]
            top.last = max(top.last, band.last)
            top.ranges.extend(band.ranges)
            top.entries.extend(band.entries)
        else:
            merged.append(BaseBand(band.first, band.last, list(band.ranges), list(band.entries)))
    return merged


def _absorb(bands: list[BaseBand], free: list[Detail]) -> tuple[list[BaseBand], list[Detail]]:
    """Fold every detailed entry whose number a band covers into that band (widening it if needed)."""
    bands = _merge_overlapping(bands)
    while True:
        starts = [b.first for b in bands]
        remaining: list[Detail] = []
        widened = False
        for detail in free:
            hit = None
            for n in detail.entry.covers:
                k = bisect_right(starts, n) - 1
                if k >= 0 and bands[k].last >= n:
                    hit = bands[k]
                    break
            if hit is None:
                remaining.append(detail)
                continue
            hit.entries.append(detail)
            if detail.low < hit.first or detail.high > hit.last:
                hit.first, hit.last = min(hit.first, detail.low), max(hit.last, detail.high)
                widened = True
        free = remaining
        if not widened:
            return bands, free
        bands = _merge_overlapping(bands)


def plan_sequence(history: History, keep: int, max_ranges: int, band_span: int) -> list[Detail | Group]:
    """The output history, newest first: kept entries and groups (each becomes one range line).

    The newest ``keep`` free entries stay; runs of the others between bands become new groups, a long run cut
    into bands that double in span going back (:func:`_chunks`); a new run joins the range line statefile wrote
    just older than it while that covers fewer than ``band_span`` numbers; then, while there are more than
    ``max_ranges`` groups, adjacent pairs merge so that spans keep widening going back: the pair covering the
    fewest numbers among those whose merged band is no broader than the group older than it.  Groups never merge
    across a kept entry.
    """
    kept = {d.pos for d in history.free[:keep]}
    items: list[tuple[int, Detail | BaseBand]] = [(b.last, b) for b in history.bands]
    items.extend((d.high, d) for d in history.free)
    items.sort(key=lambda item: -item[0])
    sequence: list[Detail | Group] = []
    run: list[Detail] = []
    for _, item in items:
        if isinstance(item, Detail) and item.pos not in kept:
            run.append(item)
            continue
        if run:
            sequence.extend(_chunks(run, band_span))
            run = []
        sequence.append(item if isinstance(item, Detail) else Group(bases=[item]))
    if run:
        sequence.extend(_chunks(run, band_span))
    # Young bands grow: a run of newly folded entries joins the range line statefile wrote just older than it
    # while that line covers fewer than band_span numbers.  (Two groups of one run are never re-joined here: the
    # run was cut on purpose.)
    index = 0
    while index < len(sequence) - 1:
        newer, older = sequence[index], sequence[index + 1]
        if (
            isinstance(newer, Group)
            and isinstance(older, Group)
            and newer.folded
            and not newer.bases
            and older.bases
            and _young(older, band_span)
        ):
            sequence[index] = Group(older.bases, older.folded + newer.folded)
            del sequence[index + 1]
            continue
        index += 1
    # Too many ranges: merge an adjacent pair, so that older history sits in broader bands.  A pair may merge
    # when the merged band is no broader than the group just older than it (or nothing older is left to
    # compare with); of those, the pair covering the fewest numbers (ties: the older pair).  With spans that
    # widen going back this keeps them widening (it works like a binary counter: the newest band stays narrow
    # and the oldest grows only when everything newer is as broad); messy agents' spans converge to it.
    # Never across a kept entry, which must stay untouched.  Each group's bounds are computed once: a group's
    # first and last walk all its members.
    bounds = [(s.first, s.last) if isinstance(s, Group) else (s.low, s.high) for s in sequence]
    groups = sum(isinstance(s, Group) for s in sequence)
    while groups > max_ranges:
        best: tuple[bool, int, int, int] | None = None
        for i in range(len(sequence) - 1):
            if isinstance(sequence[i], Group) and isinstance(sequence[i + 1], Group):
                merged = bounds[i][1] - bounds[i + 1][0] + 1
                behind = i + 2 < len(sequence) and isinstance(sequence[i + 2], Group)
                too_broad = behind and merged > bounds[i + 2][1] - bounds[i + 2][0] + 1
                score = (too_broad, merged, bounds[i + 1][0], i)
                if best is None or score < best:
                    best = score
        if best is None:
            break
        i = best[3]
        newer, older = sequence[i], sequence[i + 1]
        assert isinstance(newer, Group) and isinstance(older, Group)
        sequence[i] = Group(older.bases + newer.bases, older.folded + newer.folded)
        bounds[i] = (min(bounds[i][0], bounds[i + 1][0]), max(bounds[i][1], bounds[i + 1][1]))
        del sequence[i + 1], bounds[i + 1]
        groups -= 1
    return sequence


def _chunks(run: list[Detail], band_span: int) -> list[Group]:
    """A run of entries to fold (newest first) as groups whose spans double going back: ``band_span`` numbers,
    then twice that, and so on; the oldest group takes the rest, which is at least as broad as the one before.

    So the first fold of a long history gives several bands, older ones broader, rather than one band for
    everything; a run shorter than two bands (the usual one new entry per iteration) stays one group.  A cut
    falls only where the numbers above it and below it do not interleave (entries like ``Iteration 12 & 20``),
    so the groups never overlap.
    """
    low = min(d.low for d in run)
    groups: list[Group] = []
    size = band_span
    start = 0
    while start < len(run):
        top = run[start].high
        if top - low + 1 < 2 * size:
            groups.append(Group(folded=run[start:]))
            break
        bottom = run[start].low
        end = start + 1
        while end < len(run) and (top - run[end].low < size or run[end].high >= bottom):
            bottom = min(bottom, run[end].low)
            end += 1
        groups.append(Group(folded=run[start:end]))
        start = end
        size *= 2
    return groups


def _young(group: Group, band_span: int) -> bool:
    if group.last - group.first + 1 >= band_span:
        return False
    return all(ranges.parse_canonical(entry.heading) is not None for b in group.bases for _, entry in b.ranges)


def ends_blank(text: str) -> bool:
    """Whether ``text`` ends with a blank line (or is only whitespace).  Looks at the last bytes only."""
    tail = text[-4:]
    if tail.endswith("\r\n"):
        tail = tail[:-2]
    elif tail.endswith(("\n", "\r")):
        tail = tail[:-1]
    else:
        return text.isspace() or not text
    return tail.endswith(("\n", "\r")) or text.isspace()


def join_entries(texts: list[tuple[str, bool]], tail: str, newline: str) -> str:
    """Entries in order, then the section's tail.  Kept entries bring their own spacing; a new range line (or the
    entry that used to be last) gets a blank line after it when something follows."""
    out = ""
    for index, (text, spaced) in enumerate(texts):
        out += text
        follows = index < len(texts) - 1 or bool(tail)
        if follows and not text.endswith(("\n", "\r")):
            out += newline
        if follows and spaced and index < len(texts) - 1 and not ends_blank(out):
            out += newline
    if tail and out and not ends_blank(out) and _starts_with_rule(tail):
        out += newline  # "text\n---" would be a setext heading
    return out + tail


def _starts_with_rule(text: str) -> bool:
    blocks = outline(text, lists=False)
    return bool(blocks) and blocks[0].kind == RULE and blocks[0].start == 0
