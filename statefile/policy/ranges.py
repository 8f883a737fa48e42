"""Range lines: what a compressed band of history says (:class:`Band`), its one canonical line, how bands merge.

Bands come from detailed entries (:func:`band_from_entries`) or range lines in any shape (:func:`band_from_range`)
and combine (:func:`merge_bands`); :func:`render_band` writes the upstream prompt's shape, then statefile's fields::

    ### Iters 11–40 — ✅ 17 ❌ 9 ⚠️ 4 (metrics 101.2→131.5): summary · 2026-01-02…2026-01-09 · archive/perf/

One iteration is ``### Iters 57 — …``; counts that stand for part of the band say ``(+121 uncounted)``.  The last
field names the archive, which is how :func:`parse_canonical` recognises a line statefile wrote (this shape or the
earlier ``… — ✅ 17 · dates · metric a→b · summary · archive/perf/``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from statefile.model import patterns as pat
from statefile.model.history import Iteration, IterationRange
from statefile.model.patterns import first_number, heading_words, number_text
from statefile.model.text import ELLIPSIS, clip
from statefile.policy.rules import improves

SEP = " · "
PART_SEP = " / "
# Status buckets, in the order the counts field lists them; "other" is pending, phantom, unknown, ….
STATUS_BUCKETS: tuple[str, ...] = ("✅", "❌", "⚠️", "other")
_BUCKET_OF = {"accepted": 0, "rejected": 1, "error": 2, "ci-fix-exhausted": 2}
_CLAUSE_END = re.compile(r"\s+[—–]\s+|[.;:]\s|\s\(")

# The header fragments of an agent's range line (dates or spans such as 2026-05-20/31, glyphs, the metric band,
# separators), which the canonical line says in fields of its own: kept in a summary they pile up when merged.
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
    """The words of an agent's range line without its head's fragments, a metric band or ``(condensed)``."""
    rest = " ".join(text.split())
    while rest:
        if opened := _HEAD_BAND_OPEN.match(rest):
            rest = rest[opened.end() :].removesuffix(")")
        elif (match := _HEAD_FRAGMENT.match(rest)) and match.group(0):
            rest = rest[match.end() :]
        else:
            break
    rest = _CONDENSED.sub("", _BAND_ANYWHERE.sub("", rest))
    rest = re.sub(r"\s*[|/·—–]?\s+([.,;:])(?=\s|$)", r"\1", " ".join(rest.split()))
    rest = re.sub(r"(?:\s*[|/·—–]\s*)+$", "", re.sub(r"^[\s|/·—–:.,;]+", "", rest))
    if rest.startswith("(") and rest.endswith(")") and rest.count("(") == 1 and rest.count(")") == 1:
        rest = rest[1:-1].strip()
    return "" if not any(ch.isalnum() for ch in rest) else rest


@dataclass(frozen=True)
class Band:
    """What one range line says about iterations ``first``–``last`` (see the module docstring)."""

    first: int
    last: int
    counts: tuple[int, ...] = (0, 0, 0, 0)
    date_from: str | None = None
    date_to: str | None = None
    metric_from: str | None = None
    metric_to: str | None = None
    parts: tuple[str, ...] = ()


def _best(texts: Iterable[str], direction: str, best: str | None = None) -> str | None:
    """The best numeric metric text in ``direction`` (ties keep the earlier), compared exactly."""
    for text in texts:
        va, vb = first_number(best), first_number(text)
        if va is None or (vb is not None and improves(vb, va, direction)):
            best = text
    return best


def band_from_entries(entries: Sequence[Iteration], direction: str, summary: str) -> Band:
    """The band of detailed ``entries`` (any order) with ``summary``: its metrics are the oldest entry's previous
    best (or first accepted metric) and the best of that and every accepted metric, in ``direction``."""
    ordered = sorted(entries, key=lambda e: e.covers[0])
    counts = [0, 0, 0, 0]
    for entry in ordered:
        counts[_BUCKET_OF.get(entry.status or "", 3)] += len(entry.covers)
    dates = [entry.when[:10] for entry in ordered if entry.when]
    accepted = [v for e in ordered if e.status == "accepted" and (v := number_text(e.metric)) is not None]
    before = next((v for e in ordered if (v := number_text(e.previous_best)) is not None), next(iter(accepted), None))
    numbers = [n for e in ordered for n in e.covers]
    span: tuple[str | None, str | None] = (min(dates), max(dates)) if dates else (None, None)
    after = _best(accepted, direction, before)
    return Band(min(numbers), max(numbers), tuple(counts), *span, before, after, (summary,) if summary else ())


def parse_canonical(heading: str) -> Band | None:
    """The band of a range line statefile wrote (the current shape or the earlier one), else ``None``."""
    if not (match := pat.RANGE_LINE.match(heading.rstrip("\r\n"))):
        return None
    fields = match.group(3).split(SEP)
    if not pat.RANGE_ARCHIVE_FIELD.match(fields.pop()):
        return None
    date_from = date_to = metric_from = metric_to = None
    parts: list[str] = []
    counted = ""
    head = pat.RANGE_LINE_HEAD.match(fields[0]) if fields else None
    if head and (head.group("from") or head.group("summary") is not None):  # "counts (metrics a→b): summary"
        fields.pop(0)
        counted, metric_from, metric_to = head.group("counts") or "", head.group("from"), head.group("to")
        parts += [summary for summary in [head.group("summary")] if summary is not None]
    else:  # the earlier shape, "counts · dates · metric a→b · summary" (counts alone read the same in both)
        if fields and pat.RANGE_COUNTS_FIELD.match(fields[0]):
            counted = fields.pop(0)
        if fields and (dates := pat.RANGE_DATES_FIELD.match(fields[0])):
            fields.pop(0)
            date_from, date_to = dates.group(1), dates.group(2) or dates.group(1)
        if fields and (metric := pat.RANGE_METRIC_FIELD.match(fields[0])):
            fields.pop(0)
            metric_from, metric_to = metric.group(1), metric.group(2)
    if date_from is None and fields and (dates := pat.RANGE_DATES_FIELD.match(fields[-1])):
        fields.pop()
        date_from, date_to = dates.group(1), dates.group(2) or dates.group(1)
    counts = [0, 0, 0, 0]
    for glyph, count in pat.RANGE_COUNT_ITEM.findall(counted):
        counts[STATUS_BUCKETS.index(glyph)] += int(count)
    summary = SEP.join([*parts, *fields]).strip()
    first, last = sorted((int(match.group(1)), int(match.group(2) or match.group(1))))
    return Band(first, last, tuple(counts), date_from, date_to, metric_from, metric_to, (summary,) if summary else ())


def band_from_range(entry: IterationRange) -> Band:
    """The band a range line stands for: exact if statefile wrote it, else the agent's words, dates, metric band."""
    if (canonical := parse_canonical(entry.heading)) is not None:
        return canonical
    dates: list[str] = []
    for start, end in (m.groups() for m in _DATE_SPAN.finditer(entry.heading)):  # 2026-05-20/31: read to its end
        dates += [start] + ([full] if end and (full := start[: 10 - len(end)] + end) > start else [])
    summary = agent_summary(entry.summary)
    metrics = number_text(entry.metric_from), number_text(entry.metric_to)
    span: tuple[str | None, str | None] = (min(dates), max(dates)) if dates else (None, None)
    return Band(entry.first, entry.last, (0, 0, 0, 0), *span, *metrics, (summary,) if summary else ())


def merge_bands(bands: Iterable[Band], direction: str) -> Band:
    """One band for all ``bands``: counts add up, dates widen, metrics from the oldest to the best, parts in order."""
    ordered = sorted(bands, key=lambda b: (b.first, b.last))  # callers pass at least one
    counts = [sum(b.counts[i] for b in ordered) for i in range(4)]
    starts = [b.date_from for b in ordered if b.date_from]
    ends = [b.date_to for b in ordered if b.date_to]
    metric_from = next((b.metric_from for b in ordered if b.metric_from is not None), None)
    metric_to = _best((b.metric_to for b in ordered if b.metric_to is not None), direction)
    dates = min(starts) if starts else None, max(ends) if ends else None
    # Merged, the parts lose the header fragments older lines carried (a "…" stays).
    pieces = [piece.strip() for b in ordered for part in b.parts for piece in part.split(PART_SEP)]
    merged = tuple(cleaned for p in pieces if (cleaned := p if p == ELLIPSIS else agent_summary(p)))
    parts = ordered[0].parts if len(ordered) == 1 else merged
    return Band(ordered[0].first, max(b.last for b in ordered), tuple(counts), *dates, metric_from, metric_to, parts)


def join_parts(parts: Sequence[str], cap: int) -> str:
    """Parts joined with `` / `` within ``cap``: equal shares when too long, only the newest after ``…`` if too many."""
    parts = [" ".join(p.split()) for p in parts if p.strip()]
    if cap <= 0 or not parts:
        return ""
    joined = PART_SEP.join(parts)
    if len(joined) <= cap:
        return joined
    most = max(1, cap // 40)
    prefix = ELLIPSIS + PART_SEP if len(parts) > most else ""
    parts = parts[-most:]
    room = cap - len(prefix) - len(PART_SEP) * (len(parts) - 1)
    share = max(8, room // len(parts))
    return clip(prefix + PART_SEP.join(clip(p, share) for p in parts), cap)


def render_band(
    band: Band, *, program: str | None, text_cap: int, newline: str = "\n", archive: str | None = None
) -> str:
    """The canonical range line for ``band``, ``### Iters A–B — <counts> (metrics X→Y): <summary> · <dates> ·
    archive/<program>/``, with its line ending; ``archive`` is the store's own place (``ArchiveLayout.hint``)."""
    counts = " ".join(f"{glyph} {n}" for glyph, n in zip(STATUS_BUCKETS, band.counts, strict=True) if n)
    if counts and (uncounted := band.last - band.first + 1 - sum(band.counts)) > 0:  # an agent's range, a gap
        counts += f" (+{uncounted} uncounted)"
    has_metric = band.metric_from is not None and band.metric_to is not None
    head = f"{counts} (metrics {band.metric_from}→{band.metric_to})".lstrip() if has_metric else counts
    summary = join_parts(band.parts, text_cap)
    if summary and not has_metric:  # an arrow between numbers would read as the band
        summary = pat.ARROW_BAND.sub(r"\1 to \2", summary)
    if head:
        lead = f"{head}: {summary}" if summary else head
    else:  # the summary leads, unless it would read as a head itself ("✅ 3", "(metrics …)")
        lead = f": {summary}" if summary and pat.RANGE_LINE_HEAD.match(summary.split(SEP)[0]) else summary
    fields = [lead] if lead else []
    if band.date_from:
        to = band.date_to or band.date_from
        fields.append(band.date_from if to == band.date_from else f"{band.date_from}…{to}")
    fields.append(archive or (f"archive/{program}/" if program else "archive/"))
    numbers = f"{band.first}" if band.first == band.last else f"{band.first}–{band.last}"
    return f"### Iters {numbers} — {SEP.join(fields)}{newline}"


def change_of(entry: Iteration) -> str | None:
    """What an entry tried: its Change line, or a heading-only entry's words (``✅ fillna (32→33)`` → ``fillna``)."""
    if entry.change:
        return entry.change
    title = re.sub(r"^(?:✅|❌|⚠️|⚠|⏳)\s*", "", heading_words(entry.heading)).strip(" —–-|·")
    return title or None


def entries_summary(entries: Sequence[Iteration], cap: int) -> str:
    """Accepted changes of ``entries``, oldest first (else ``tried: …``), within ``cap``; the rest as ``(+N more)``."""
    ordered = sorted(entries, key=lambda e: e.covers[0])
    pool, lead = [e for e in ordered if e.status == "accepted" and change_of(e)], ""
    if not pool:
        pool, lead = [e for e in ordered if change_of(e)], "tried: "
    if not pool:
        return ""
    text, seen = lead, set()
    for index, entry in enumerate(pool):
        item = " ".join((change_of(entry) or "").split()).strip("*_ ")  # its first clause: `Add x.ts` — details
        if (end := _CLAUSE_END.search(item)) and end.start() >= 8:
            item = item[: end.start()]
        item = clip(item.rstrip(" .,"), 60)
        if not item or item in seen:
            continue  # repeated changes add nothing
        seen.add(item)
        rest = len(pool) - index - 1
        piece = (", " if text != lead else "") + item
        tail = f" (+{rest} more)" if rest else ""
        if len(text) + len(piece) + len(tail) > cap:
            return clip(lead + item, cap) if text == lead else text + f" (+{rest + 1} more)"
        text += piece
    return text
