"""Iteration History entries: read every shape agents have written (``raw`` keeps the entry's text verbatim, from
its heading or ``- Iter N:`` bullet to the next one), and write the upstream one.  The numbers an entry covers are
merged ``(first, last)`` spans, never one element per number (``### Iters 2–1000000000000`` would fill the memory)."""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import ClassVar

from statefile.defaults import MAX_ITERATION
from statefile.model import patterns as pat
from statefile.model.patterns import STATUS_GLYPHS, entry_title, leading_status, status_of
from statefile.model.text import line_body, one_line

Span = tuple[int, int]
"""An inclusive interval of iteration numbers, ``first <= last``."""


def merge(spans: Iterable[Span]) -> list[Span]:
    """``spans`` sorted, overlapping and adjacent ones joined: ``[(5, 7), (1, 2), (3, 3)]`` → ``[(1, 3), (5, 7)]``."""
    out: list[Span] = []
    for first, last in sorted(spans):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def of_numbers(numbers: Iterable[int]) -> list[Span]:
    """The merged spans of single numbers: ``[3, 1, 2, 7]`` → ``[(1, 3), (7, 7)]``."""
    return merge((n, n) for n in numbers)


def size(spans: Iterable[Span]) -> int:
    """How many numbers merged ``spans`` hold."""
    return sum(last - first + 1 for first, last in spans)


def highest(spans: Iterable[Span]) -> int:
    """The highest number in ``spans`` (0 when there is none)."""
    return max((last for _, last in spans), default=0)


def missing(spans: Iterable[Span], upto: int) -> list[Span]:
    """The numbers from 1 to ``upto`` that no span holds, as spans."""
    bounds = [(0, 0), *merge(span for span in spans if span[0] <= upto), (upto + 1, upto + 1)]
    return [(a + 1, b - 1) for (_, a), (b, _) in pairwise(bounds) if a + 1 <= b - 1]


def inside(merged: Sequence[Span], number: int) -> bool:
    """Whether ``number`` is in ``merged`` (sorted, disjoint spans, as :func:`merge` returns), by bisection."""
    at = bisect_right(merged, (number, math.inf)) - 1
    return at >= 0 and merged[at][0] <= number <= merged[at][1]


def holds(outer: Iterable[Span], inner: Iterable[Span]) -> bool:
    """Whether every number of ``inner`` is in ``outer``."""
    merged = merge(outer)
    return merge([*merged, *inner]) == merged  # merging keeps the set of numbers: equal iff nothing was added


def spans_text(spans: Iterable[Span], *, mark: str = "", limit: int = 10) -> str:
    """``"1–3, 7, 9–12"`` (each number preceded by ``mark``), the first ``limit`` spans then ``", …"``."""
    merged = merge(spans)
    text = ", ".join(f"{mark}{a}" if a == b else f"{mark}{a}–{b}" for a, b in merged[:limit])
    return text + (", …" if len(merged) > limit else "")


_FIELD_SPLIT = re.compile(r"\s*[|·;]\s*(?=\*\*[^*\n]{1,40}\*\*\s*:)")
_FIELD = re.compile(r"\*\*([^*\n]{1,40}?)\*\*\s*:?\s*(.*)")
# A hidden comment (the item marker older versions wrote as a bullet's last " · " part) is no field's value.
_HIDDEN = re.compile(r"\s*[|·;]?\s*<!--.*?-->")
_PREV_BEST = re.compile(r"previous best[^:]*:\s*([^,)]+)", re.I)
_DELTA = re.compile(r"delta:\s*([+\-−]?\s*[\d.]+)", re.I)


@dataclass(frozen=True)
class Iteration:
    """One detailed iteration entry (``### Iteration N — date — [Run](url)`` and its bullet fields)."""

    number: int
    raw: str
    heading: str
    numbers: tuple[int, ...] = ()
    when: str | None = None
    run_url: str | None = None
    status: str | None = None
    metric: str | None = None
    previous_best: str | None = None
    delta: str | None = None
    change: str | None = None
    commit: str | None = None
    notes: str | None = None
    partial: bool = False
    fields: dict[str, str] = field(default_factory=dict, compare=False)

    kind = "iteration"

    @property
    def covers(self) -> tuple[int, ...]:
        """Iteration numbers this entry stands for."""
        return self.numbers or (self.number,)

    @property
    def spans(self) -> list[Span]:
        """:attr:`covers` as merged spans."""
        return of_numbers(self.covers)


@dataclass(frozen=True)
class IterationRange:
    """A compressed range line (``### Iters A–B — ✅ (metrics x→y): summary``), in any of the agents' shapes."""

    first: int
    last: int
    raw: str
    heading: str
    metric_from: str | None = None
    metric_to: str | None = None
    summary: str = ""
    status: str | None = None

    kind = "range"

    @property
    def covers(self) -> range:
        """Iteration numbers this range stands for (a lazy ``range``: test membership, never list it)."""
        return range(self.first, self.last + 1)

    @property
    def spans(self) -> list[Span]:
        """The one interval this range stands for."""
        return [(self.first, self.last)]


@dataclass(frozen=True)
class OpaqueEntry:
    """Any other heading in the history, kept as it is; ``implausible``: the number above MAX_ITERATION it names."""

    raw: str
    heading: str
    implausible: int | None = None

    kind = "opaque"
    #: Opaque entries cover no iteration numbers.
    covers: ClassVar[tuple[int, ...]] = ()
    spans: ClassVar[list[Span]] = []


Entry = Iteration | IterationRange | OpaqueEntry


def parse_entry(raw: str) -> Entry:
    """Read one entry's text (its first line is the heading or bullet)."""
    first = raw.partition("\n")[0]
    heading, title = line_body(first), entry_title(first).replace("**", "")
    if match := pat.RANGE_HEAD.match(title) or pat.ONE_RANGE_HEAD.match(title):  # or "Iters 57 — …": one iteration
        numbers = [int(n) for n in match.groups()]
        if max(numbers) > MAX_ITERATION:
            return OpaqueEntry(raw=raw, heading=heading, implausible=max(numbers))
        rest = title[match.end() :]
        band = pat.METRIC_BAND.search(rest)
        summary = re.sub(r"^[\s:—–\-|]+", "", rest).strip()
        low, high = band.groups() if band else (None, None)
        return IterationRange(min(numbers), max(numbers), raw, heading, low, high, summary, status_of(rest))
    if not (match := pat.PAIR_HEAD.match(title) or pat.SINGLE_HEAD.match(title)):
        return OpaqueEntry(raw=raw, heading=heading)
    found = {int(number) for number in match.groups()}
    # "Iteration 126 — ✅ abs/round (81) · Iteration 125 — ✅ autocorr (80)": one heading for several iterations.
    found.update(int(n) for n in pat.JOINED_HEAD.findall(title))
    if max(found) > MAX_ITERATION:
        return OpaqueEntry(raw=raw, heading=heading, implausible=max(found))
    fields: dict[str, str] = {}
    lines = raw.splitlines()
    if lines and lines[0].lstrip()[:1] in "-*+" and "**" in lines[0]:  # "- Iter 2 — date: **Status**: ✅ · …"
        lines[0] = "- " + lines[0][lines[0].index("**") :]
    else:
        lines = lines[1:]
    for line in lines:
        stripped = _HIDDEN.sub("", line).strip().lstrip("-*+").strip()
        if not stripped.startswith("**"):
            continue
        for part in _FIELD_SPLIT.split(stripped):
            if match := _FIELD.match(part):
                label = match.group(1).strip().rstrip(":").strip().lower()
                fields.setdefault(label, match.group(2).strip())
    when, run = pat.WHEN.search(title), pat.RUN_LINK.search(title)
    status_text = fields.get("status")
    status = status_of(status_text or title)
    if status is None and status_text:  # "• frobbed": an unusual word after a glyph is still the status
        word = re.match(r"^\W*([A-Za-z][\w-]*)", status_text)
        status = word.group(1).lower() if word else None
    elif status is None:  # no status field: the status one of the first three body lines starts with ("✅ +1 → 530")
        body = [line for line in raw.splitlines()[1:] if line.strip()][:3]
        status = next(filter(None, map(leading_status, body)), None)
    metric_text = fields.get("metric") or ""
    m = re.match(r"\s*([^\s(|]+)", metric_text)
    p = _PREV_BEST.search(metric_text)
    d = _DELTA.search(metric_text or raw)
    return Iteration(
        max(found),
        raw,
        heading,
        tuple(sorted(found)) if len(found) > 1 else (),
        when=when.group(0) if when else None,
        run_url=run.group(1) if run else None,
        status=status,
        metric=m.group(1) if m else None,
        previous_best=p.group(1).strip() if p else None,
        delta=d.group(1).replace(" ", "") if d else None,
        change=fields.get("change"),
        commit=(fields.get("commit") or "").strip("` ") or None,
        notes=fields.get("notes"),
        partial="(partial)" in title.lower(),
        fields=fields,
    )


_LABELS = {"accepted": "Accepted", "rejected": "Rejected", "error": "Error", "ci-fix-exhausted": "CI fix exhausted"}


def render_iteration(
    *,
    number: int,
    when: str,
    status: str,
    run_url: str | None = None,
    change: str | None = None,
    metric: str | None = None,
    previous_best: str | None = None,
    delta: str | None = None,
    commit: str | None = None,
    ci_fix_attempts: int = 0,
    notes: str | None = None,
    pr: str | None = None,
    trailer: str | None = None,
    newline: str = "\n",
) -> str:
    """An entry in the upstream shape (``### Iteration N — date UTC — [Run](url)``, field bullets, ``trailer`` last)."""
    heading = f"### Iteration {number} — {one_line(when)} UTC" + (f" — [Run]({one_line(run_url)})" if run_url else "")
    word = status.lower()
    # The upstream words as the template writes them ("✅ Accepted"); any other as typed, to read back the same.
    lines = [heading, "", f"- **Status**: {STATUS_GLYPHS.get(word, '•')} {_LABELS.get(word, word)}"]
    if change:
        lines.append(f"- **Change**: {one_line(change)}")
    if metric is not None:
        parts = (("previous best", previous_best), ("delta", delta))
        extra = [f"{name}: {value}" for name, value in parts if value is not None]
        lines.append(f"- **Metric**: {one_line(metric)}" + (f" ({', '.join(extra)})" if extra else ""))
    attempts = str(ci_fix_attempts) if ci_fix_attempts > 0 else None
    optional = (("Commit", commit), ("PR", pr), ("CI fix attempts", attempts), ("Notes", notes))
    lines.extend(f"- **{label}**: {one_line(value)}" for label, value in optional if value)
    if trailer:
        lines.append(one_line(trailer))
    return newline.join([*lines, "", ""])
