"""Range lines: the data a compressed band of history carries, its one canonical line, and how bands merge.

A :class:`Band` is what a range line says about iterations ``first``–``last``: status counts, date span, metric
band (best before → best after, in the Metric Direction) and summary text.  Bands come from detailed entries
(:func:`band_from_entries`), from range lines agents wrote in any shape or from our own canonical lines
(:func:`band_from_range`), and combine with :func:`merge_bands`.  :func:`render_band` writes the canonical line in
the upstream prompt's shape (``### Iters 50–100 — ✅ (metrics 20→55): brief summary``), then statefile's own
fields::

    ### Iters 11–40 — ✅ 17 ❌ 9 ⚠️ 4 (metrics 101.2→131.5): summary · 2026-01-02…2026-01-09 · archive/perf/

A band of one iteration is ``### Iters 57 — …`` (never ``57–57``).  When the counts stand for only part of the band
(it absorbed agents' range lines, which carry no statuses, or spans a gap in the history), they say how many are
not counted: ``✅ 4 ⚠️ 17 (+121 uncounted)``.  Without counts, metric or summary the line starts with what it has.

Agents following the upstream prompt, humans and :func:`statefile.model.history.parse_entry` read it as a range
with the right numbers and metric band.  The last ``·`` field names the archive folder holding the folded detail,
which is also how :func:`parse_canonical` recognises a line statefile wrote — in this shape or the earlier one
(``### Iters 11–40 — ✅ 17 · 2026-01-02…2026-01-09 · metric 101.2→131.5 · summary · archive/perf/``), which is
still read.  Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from statefile.model.history import Iteration, IterationRange
from statefile.model.patterns import (
    ARROW_BAND,
    RANGE_ARCHIVE_FIELD,
    RANGE_COUNT_ITEM,
    RANGE_COUNTS_FIELD,
    RANGE_DATES_FIELD,
    RANGE_LINE,
    RANGE_LINE_HEAD,
    RANGE_METRIC_FIELD,
    first_number,
    heading_words,
    number_text,
)
from statefile.model.text import ELLIPSIS, clip

SEP = " · "
PART_SEP = " / "
# Status buckets, in the order the counts field lists them; "other" is pending, phantom, unknown, ….
STATUS_BUCKETS: tuple[str, ...] = ("✅", "❌", "⚠️", "other")
_BUCKET_OF = {"accepted": 0, "rejected": 1, "error": 2, "ci-fix-exhausted": 2}

_CLAUSE_END = re.compile(r"\s+[—–]\s+|[.;:]\s|\s\(")

# The header fragments of an agent's range line, which the canonical line carries in fields of its own: a date or a
# date span (``2026-05-20/31``, ``2026-04-23–29``, ``2026-04-10 18:11 UTC``), status glyphs (``✅/⚠️``), the metric
# band (``(metrics 0.80->0.866)``, ``metrics 508→534``, ``(0→191)``) and separators.  Kept in the summary they pile up
# in a merged line (``… (condensed) / 2026-05-20/31 -- ✅ (metrics 0.80->0.866): …``).
_DATE_SPAN = re.compile(
    r"(\d{4}-\d{2}-\d{2})(?:[ T]\d{2}:\d{2}(?::\d{2})?Z?(?:\s*UTC)?)?"
    r"(?:\s*(?:/|–|…|\.\.|-|to)\s*((?:\d{4}-)?(?:\d{2}-)?\d{2})(?!\d))?"
)
_BAND_TEXT = r"~?-?\d+(?:\.\d+)?%?(?:\s*(?:→|->|–>|=>)\s*~?-?\d+(?:\.\d+)?%?)+"
_HEAD_FRAGMENT = re.compile(
    rf"^(?:[\s:—–\-|/·,;]+|{_DATE_SPAN.pattern}|(?:✅|❌|⚠️|⚠)(?:\s*/\s*(?:✅|❌|⚠️|⚠))*"
    rf"|\(\s*(?:metrics?\s*:?\s*)?{_BAND_TEXT}\s*\)|(?:metrics?\s*:?\s*)?{_BAND_TEXT})",
    re.I,
)
# "(metrics 8→51: feature implementations)": the band goes, the words inside stay.
_HEAD_BAND_OPEN = re.compile(rf"^\(\s*metrics?\s*:?\s*{_BAND_TEXT}\s*[:;,—–-]?\s*(?=[^)]*\)$)", re.I)
_BAND_ANYWHERE = re.compile(rf"\(\s*metrics?\s*:?\s*{_BAND_TEXT}\s*\)|\bmetrics?\s*:?\s*{_BAND_TEXT}", re.I)
_CONDENSED = re.compile(r"\s*\((?:condensed|summari[sz]ed|compressed)\)", re.I)


def agent_summary(text: str) -> str:
    """The words of an agent's range line without its header fragments (dates, status glyphs, the metric band,
    separators): ``-- 2026-05-16 -- ✅ (metrics 551->578%): Cache rows`` → ``Cache rows``.

    Only the head is stripped, plus a ``(metrics a→b)`` band and a ``(condensed)`` mark anywhere: glyphs and numbers
    inside the agent's prose (``c067 ✅ 0.00000649 BEST``) are its account and stay.
    """
    rest = " ".join(text.split())
    while rest:
        opened = _HEAD_BAND_OPEN.match(rest)
        if opened:
            rest = rest[opened.end() :].removesuffix(")")
            continue
        match = _HEAD_FRAGMENT.match(rest)
        if not match or not match.group(0):
            break
        rest = rest[match.end() :]
    rest = _CONDENSED.sub("", _BAND_ANYWHERE.sub("", rest))
    rest = re.sub(r"\s*[|/·—–]?\s+([.,;:])(?=\s|$)", r"\1", " ".join(rest.split()))
    rest = re.sub(r"(?:\s*[|/·—–]\s*)+$", "", re.sub(r"^[\s|/·—–:.,;]+", "", rest))
    if rest.startswith("(") and rest.endswith(")") and rest.count("(") == 1 and rest.count(")") == 1:
        rest = rest[1:-1].strip()
    return "" if not any(ch.isalnum() for ch in rest) else rest


def date_span(text: str) -> tuple[str | None, str | None]:
    """The earliest and latest date an agent's line names, a span such as ``2026-05-20/31`` read to its end."""
    dates: list[str] = []
    for match in _DATE_SPAN.finditer(text):
        start = match.group(1)
        dates.append(start)
        if match.group(2):
            end = start[: 10 - len(match.group(2))] + match.group(2)
            if end > start:
                dates.append(end)
    return (min(dates), max(dates)) if dates else (None, None)


@dataclass(frozen=True)
class Band:
    """What one range line says about iterations ``first``–``last`` (see the module docstring)."""

    first: int
    last: int
    counts: tuple[int, int, int, int] = (0, 0, 0, 0)
    date_from: str | None = None
    date_to: str | None = None
    metric_from: str | None = None
    metric_to: str | None = None
    parts: tuple[str, ...] = ()

    @property
    def span(self) -> int:
        """How many iteration numbers the band covers."""
        return self.last - self.first + 1

    @property
    def uncounted(self) -> int:
        """How many of the band's numbers no status count stands for, when some are counted (else 0).

        Agents' range lines carry no per-iteration statuses, and histories have gaps; a band that absorbed
        either counts only part of its span.  A band with no counts at all says nothing about statuses, so
        nothing is missing from what it says.
        """
        counted = sum(self.counts)
        return self.span - counted if 0 < counted < self.span else 0


def _better(a: str, b: str, direction: str) -> str:
    """The better of two numeric metric texts in ``direction`` (ties keep ``a``), compared exactly."""
    va, vb = first_number(a), first_number(b)
    if va is None:
        return b
    if vb is None:
        return a
    if direction == "lower":
        return b if vb < va else a
    return b if vb > va else a


def bucket(status: str | None) -> int:
    """Index into :data:`STATUS_BUCKETS` for a status word."""
    return _BUCKET_OF.get(status or "", 3)


def band_from_entries(entries: Sequence[Iteration], direction: str, summary: str) -> Band:
    """The band of detailed ``entries`` (any order), with ``summary`` as its text.

    Metric band: best before = the oldest entry's "previous best" (or the first accepted metric when no entry
    says), best after = the best of that and every accepted entry's metric, in ``direction``.
    """
    ordered = sorted(entries, key=lambda e: e.covers[0])
    counts = [0, 0, 0, 0]
    dates: list[str] = []
    before: str | None = None
    accepted: list[str] = []
    for entry in ordered:
        counts[bucket(entry.status)] += len(entry.covers)
        if entry.when:
            dates.append(entry.when[:10])
        if before is None:
            before = number_text(entry.previous_best)
        if entry.status == "accepted":
            value = number_text(entry.metric)
            if value is not None:
                accepted.append(value)
    if before is None and accepted:
        before = accepted[0]
    after = before
    for value in accepted:
        after = value if after is None else _better(after, value, direction)
    first = min(n for e in ordered for n in e.covers)
    last = max(n for e in ordered for n in e.covers)
    return Band(
        first=first,
        last=last,
        counts=(counts[0], counts[1], counts[2], counts[3]),
        date_from=min(dates) if dates else None,
        date_to=max(dates) if dates else None,
        metric_from=before,
        metric_to=after,
        parts=(summary,) if summary else (),
    )


def parse_canonical(heading: str) -> Band | None:
    """The band of a canonical range line statefile wrote, in the current shape or the earlier one (``None`` for
    any other line)."""
    match = RANGE_LINE.match(heading.rstrip("\r\n"))
    if not match:
        return None
    fields = match.group(3).split(SEP)
    if not RANGE_ARCHIVE_FIELD.match(fields[-1]):
        return None
    fields.pop()
    counts = [0, 0, 0, 0]
    date_from = date_to = metric_from = metric_to = None
    parts: list[str] = []
    head = RANGE_LINE_HEAD.match(fields[0]) if fields else None
    # Counts alone read the same in both shapes ("✅ 3 · dates · …"): the earlier shape's reading handles them.
    if head and (head.group("from") or head.group("summary") is not None):
        # The upstream shape: "counts (metrics a→b): summary", the rest of the summary, then the dates.
        fields.pop(0)
        if head.group("counts"):
            for glyph, count in RANGE_COUNT_ITEM.findall(head.group("counts")):
                counts[STATUS_BUCKETS.index(glyph)] += int(count)
        metric_from, metric_to = head.group("from"), head.group("to")
        if head.group("summary") is not None:
            parts.append(head.group("summary"))
    else:
        # The earlier shape: "counts · dates · metric a→b · summary".
        if fields and RANGE_COUNTS_FIELD.match(fields[0]):
            for glyph, count in RANGE_COUNT_ITEM.findall(fields.pop(0)):
                counts[STATUS_BUCKETS.index(glyph)] += int(count)
        if fields and (dates := RANGE_DATES_FIELD.match(fields[0])):
            fields.pop(0)
            date_from, date_to = dates.group(1), dates.group(2) or dates.group(1)
        if fields and (metric := RANGE_METRIC_FIELD.match(fields[0])):
            fields.pop(0)
            metric_from, metric_to = metric.group(1), metric.group(2)
    if date_from is None and fields and (dates := RANGE_DATES_FIELD.match(fields[-1])):
        fields.pop()
        date_from, date_to = dates.group(1), dates.group(2) or dates.group(1)
    summary = SEP.join([*parts, *fields]).strip()
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) else first
    return Band(
        first=min(first, last),
        last=max(first, last),
        counts=(counts[0], counts[1], counts[2], counts[3]),
        date_from=date_from,
        date_to=date_to,
        metric_from=metric_from,
        metric_to=metric_to,
        parts=(summary,) if summary else (),
    )


def band_from_range(entry: IterationRange) -> Band:
    """The band an existing range line stands for: parsed exactly if statefile wrote it, leniently otherwise.

    For an agent's line the text after ``Iters A–B`` is kept whole as the summary (it is the agent's own
    account); dates and the metric band are read from it where present; status counts are unknown (zero).
    """
    canonical = parse_canonical(entry.heading)
    if canonical is not None:
        return canonical
    date_from, date_to = date_span(entry.heading)
    # The agent's words without the fragments of its header, which the canonical line says in its own fields.
    summary = agent_summary(entry.summary)
    return Band(
        first=entry.first,
        last=entry.last,
        date_from=date_from,
        date_to=date_to,
        metric_from=number_text(entry.metric_from),
        metric_to=number_text(entry.metric_to),
        parts=(summary,) if summary else (),
    )


def merge_bands(bands: Iterable[Band], direction: str) -> Band:
    """One band standing for all of ``bands`` (covering from the lowest first to the highest last).

    Counts add up, the date span widens, best before is the oldest band's, best after the best of all; summary
    parts stay in chronological order.
    """
    ordered = sorted(bands, key=lambda b: (b.first, b.last))
    if not ordered:
        raise ValueError("merge_bands needs at least one band")
    counts = [sum(b.counts[i] for b in ordered) for i in range(4)]
    starts = [b.date_from for b in ordered if b.date_from]
    ends = [b.date_to for b in ordered if b.date_to]
    metric_from = next((b.metric_from for b in ordered if b.metric_from is not None), None)
    metric_to: str | None = None
    for band in ordered:
        if band.metric_to is not None:
            metric_to = band.metric_to if metric_to is None else _better(metric_to, band.metric_to, direction)
    return Band(
        first=ordered[0].first,
        last=max(b.last for b in ordered),
        counts=(counts[0], counts[1], counts[2], counts[3]),
        date_from=min(starts) if starts else None,
        date_to=max(ends) if ends else None,
        metric_from=metric_from,
        metric_to=metric_to,
        parts=tuple(p for b in ordered for p in b.parts) if len(ordered) == 1 else _merged_parts(ordered),
    )


def _merged_parts(bands: Sequence[Band]) -> tuple[str, ...]:
    """The summary parts of bands being merged, each without an old header's fragments.

    A canonical line written before agents' headers were cleaned (or by an older statefile) can carry them inside
    its summary, ``Various features (condensed) / 2026-05-20/31 -- ✅ (metrics 0.80->0.866): …``; merging it again
    must not carry them on.  A part that is only a ``…`` (earlier parts clipped) stays as it is.
    """
    out: list[str] = []
    for band in bands:
        for part in band.parts:
            for piece in part.split(PART_SEP):
                cleaned = piece.strip() if piece.strip() == ELLIPSIS else agent_summary(piece)
                if cleaned:
                    out.append(cleaned)
    return tuple(out)


def join_parts(parts: Sequence[str], cap: int) -> str:
    """Summary parts joined with `` / ``, within ``cap`` characters.

    When the whole does not fit, each part gets an equal share (the archive keeps every original line); with
    too many parts for a useful share, the newest are kept after a leading ``…``.
    """
    parts = [" ".join(p.split()) for p in parts if p.strip()]
    if cap <= 0 or not parts:
        return ""
    joined = PART_SEP.join(parts)
    if len(joined) <= cap:
        return joined
    prefix = ""
    most = max(1, cap // 40)
    if len(parts) > most:
        parts = parts[-most:]
        prefix = ELLIPSIS + PART_SEP
    room = cap - len(prefix) - len(PART_SEP) * (len(parts) - 1)
    share = max(8, room // len(parts))
    return clip(prefix + PART_SEP.join(clip(p, share) for p in parts), cap)


def render_band(
    band: Band, *, program: str | None, text_cap: int, newline: str = "\n", archive: str | None = None
) -> str:
    """The canonical range line for ``band`` (one heading line and its line ending), in the upstream shape::

    ### Iters A–B — <counts> (metrics X→Y): <summary> · <dates> · archive/<program>/

    ``archive`` is where the store keeps the program's parts (``ArchiveLayout.hint``: ``_archive.perf.*.md`` in
    gh-aw's repo-memory under ``*.md``); without it, the branch's ``archive/<program>/``.
    """
    counts = " ".join(f"{glyph} {n}" for glyph, n in zip(STATUS_BUCKETS, band.counts, strict=True) if n)
    if counts and band.uncounted:
        # Say so when the counts cover only part of the band ("✅ 4 ⚠️ 17" over 142 iterations reads as all).
        counts += f" (+{band.uncounted} uncounted)"
    has_metric = band.metric_from is not None and band.metric_to is not None
    head = counts
    if has_metric:
        head = f"{head} (metrics {band.metric_from}→{band.metric_to})".lstrip()
    summary = join_parts(band.parts, text_cap)
    if summary and not has_metric:
        # Without a metric band of our own, an arrow between numbers in the summary would be read as the band.
        summary = ARROW_BAND.sub(r"\1 to \2", summary)
    if summary and head:
        lead = f"{head}: {summary}"
    elif head:
        lead = head
    else:
        # No head: the summary leads, unless it would read as a head itself ("✅ 3", "(metrics …)").
        lead = f": {summary}" if summary and RANGE_LINE_HEAD.match(summary.split(SEP)[0]) else summary
    fields = [lead] if lead else []
    if band.date_from:
        to = band.date_to or band.date_from
        fields.append(band.date_from if to == band.date_from else f"{band.date_from}…{to}")
    fields.append(archive or (f"archive/{program}/" if program else "archive/"))
    numbers = f"{band.first}" if band.first == band.last else f"{band.first}–{band.last}"
    return f"### Iters {numbers} — {SEP.join(fields)}{newline}"


def short_change(change: str) -> str:
    """The first clause of a Change line (``Add `x.ts` — long details`` → ``Add `x.ts```)."""
    text = " ".join(change.split()).strip("*_ ")
    match = _CLAUSE_END.search(text)
    if match and match.start() >= 8:
        text = text[: match.start()]
    return clip(text.rstrip(" .,"), 60)


def change_of(entry: Iteration) -> str | None:
    """What an entry tried: its Change line, or for a heading-only entry (``### Iteration 77 — date — ✅ fillna
    (32→33)``) the heading's own words."""
    if entry.change:
        return entry.change
    title = re.sub(r"^(?:✅|❌|⚠️|⚠|⏳)\s*", "", heading_words(entry.heading)).strip(" —–-|·")
    return title or None


def entries_summary(entries: Sequence[Iteration], cap: int) -> str:
    """A deterministic one-line summary of ``entries``: accepted entries' changes, oldest first, within ``cap``.

    With no accepted entry saying what it changed, the changes tried are listed instead (``tried: …``).  Only as
    many entries are read as fit; the rest are counted (``(+N more)``), so the cost does not grow with history.
    """
    ordered = sorted(entries, key=lambda e: e.covers[0])
    pool = [e for e in ordered if e.status == "accepted" and change_of(e)]
    lead = ""
    if not pool:
        pool, lead = [e for e in ordered if change_of(e)], "tried: "
    if not pool:
        return ""
    text, seen = lead, set()
    for index, entry in enumerate(pool):
        item = short_change(change_of(entry) or "")
        if not item or item in seen:
            continue  # repeated changes add nothing
        seen.add(item)
        rest = len(pool) - index - 1
        piece = (", " if text != lead else "") + item
        tail = f" (+{rest} more)" if rest else ""
        if len(text) + len(piece) + len(tail) > cap:
            if text == lead:
                return clip(lead + item, cap)
            return text + f" (+{rest + 1} more)"
        text += piece
    return text


def entry_dict(entry: Iteration) -> dict[str, Any]:
    """An entry as the plain dict a summarizer receives."""
    return {
        "number": entry.number,
        "when": entry.when,
        "status": entry.status,
        "metric": entry.metric,
        "change": entry.change,
        "notes": entry.notes,
    }
