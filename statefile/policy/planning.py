"""The Iteration History as compaction sees it: disjoint parts covering every iteration number exactly once.

:func:`resolve_history` resolves agents' overlaps (overlapping ranges merge; an entry a band covers joins it; of
entries sharing a number the complete one stays, else they fold into one band); :func:`plan_sequence` lays out one
candidate for given limits; :func:`join_entries` joins the texts back into the section.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

from statefile.model.blocks import RULE, content_end, outline
from statefile.model.document import StateDocument
from statefile.model.history import Iteration, IterationRange, OpaqueEntry
from statefile.model.text import split_lines
from statefile.policy import ranges
from statefile.policy.pruning import connected


@dataclass(frozen=True)
class Detail:
    """A detailed entry: its position in the file, the entry, and its highest and lowest iteration numbers."""

    pos: int
    entry: Iteration
    high: int
    low: int


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

    @property
    def range_lines(self) -> list[tuple[int, IterationRange]]:
        return [pair for b in self.bases for pair in b.ranges]

    @property
    def details(self) -> list[Detail]:
        """Entries resolved into its bands, then those folded."""
        return [d for b in self.bases for d in b.entries] + self.folded


@dataclass(frozen=True)
class History:
    region: tuple[int, int]  # absolute line span of the entries
    raws: tuple[str, ...]  # entry texts in file order, the last without the trailing rule/blank lines
    tail: str
    original: str
    bands: tuple[BaseBand, ...]
    free: tuple[Detail, ...]  # detailed entries not inside a band, newest (highest number) first
    dropped: tuple[tuple[Detail, int], ...]  # duplicate entries and the position of the one that stays
    anchor: dict[int, int]  # opaque entry's position -> position of the entry above it (-1: top), in file order


def resolve_history(doc: StateDocument) -> History | None:
    """The history as disjoint parts (see the module docstring), or ``None`` without entries."""
    located = doc.located_history
    if not located:
        return None
    entries = doc.history
    region = located[0].start, located[-1].end  # entries run to the end of the section that holds them
    raws = [e.raw for e in entries]
    original = "".join(raws)
    raws[-1], tail = split_tail(raws[-1])
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
    anchor: dict[int, int] = {}
    previous = -1
    for pos, e in enumerate(entries):
        if isinstance(e, OpaqueEntry):
            anchor[pos] = previous
        else:
            previous = pos
    return History(region, tuple(raws), tail, original, tuple(bands), tuple(free), tuple(dropped), anchor)


def split_tail(raw: str) -> tuple[str, str]:
    """Split the trailing blank lines and rules (``---``, ``***``, ``___``: section separators) off the last entry."""
    lines = split_lines(raw)
    cut = content_end(lines)
    return "".join(lines[:cut]), "".join(lines[cut:])


def _resolve_duplicates(details: list[Detail]) -> tuple[list[tuple[Detail, int]], list[BaseBand], list[Detail]]:
    """Entries sharing iteration numbers: keep the complete one, or fold them all into one band."""

    def links() -> Iterator[tuple[int, int]]:
        owner: dict[int, int] = {}
        for index, detail in enumerate(details):
            for n in detail.entry.covers:
                if n in owner:
                    yield index, owner[n]
                else:
                    owner[n] = index

    groups = [[details[i] for i in group] for group in connected(len(details), links())]
    dropped: list[tuple[Detail, int]] = []
    forced: list[BaseBand] = []
    free: list[Detail] = []
    for group in groups:
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
            at = next(
                (k for n in detail.entry.covers if (k := bisect_right(starts, n) - 1) >= 0 and bands[k].last >= n), -1
            )
            if at < 0:
                remaining.append(detail)
                continue
            hit = bands[at]
            hit.entries.append(detail)
            if detail.low < hit.first or detail.high > hit.last:
                hit.first, hit.last = min(hit.first, detail.low), max(hit.last, detail.high)
                widened = True
        free = remaining
        if not widened:
            return bands, free
        bands = _merge_overlapping(bands)


def plan_sequence(history: History, keep: int, max_ranges: int, band_span: int) -> list[Detail | Group]:
    """The output history, newest first: the newest ``keep`` free entries, and groups (one range line each) of the
    others, cut by :func:`_chunks`; a new run joins a young range line statefile wrote just older than it, then
    adjacent groups merge down to ``max_ranges`` so that spans keep widening going back (never across a kept entry).
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
    index = 0
    while index < len(sequence) - 1:
        if (joined := _joined(sequence[index], sequence[index + 1], band_span)) is not None:
            sequence[index : index + 2] = [joined]
        index += 1
    # Merge the pair covering the fewest numbers whose band is no broader than the group older than it (a binary
    # counter: the newest band stays narrow); each group's bounds computed once.
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
    """A run to fold (newest first) as groups whose spans double going back from ``band_span``, never interleaved."""
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


def _joined(newer: Detail | Group, older: Detail | Group, band_span: int) -> Group | None:
    """``older`` with the new run ``newer`` folded in when it is a young range line statefile wrote, else ``None``."""
    if not (isinstance(newer, Group) and isinstance(older, Group) and newer.folded and not newer.bases and older.bases):
        return None
    if older.last - older.first + 1 >= band_span:
        return None
    ours = all(ranges.parse_canonical(entry.heading) is not None for _, entry in older.range_lines)
    return Group(older.bases, older.folded + newer.folded) if ours else None


def ends_blank(text: str) -> bool:
    """Whether ``text`` ends with a blank line (or is only whitespace).  Looks at the last bytes only."""
    return not text.strip() or _BLANK_END.search(text[-4:]) is not None


_BLANK_END = re.compile(r"(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r)\Z")  # two line ends, "\r\n" never split


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
    if tail and out and not ends_blank(out) and _starts_with_rule(tail):
        out += newline  # "text\n---" would be a setext heading
    return out + tail


def _starts_with_rule(text: str) -> bool:
    blocks = outline(text, lists=False)
    return bool(blocks) and blocks[0].kind == RULE and blocks[0].start == 0
