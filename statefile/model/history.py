"""Iteration History entries: read every shape agents have written, and write the upstream one.

Pure functions on text.  An entry is everything from its heading (or ``- Iter N:`` bullet) to the next one, kept
verbatim in ``raw`` so compaction can archive it byte for byte.  Where entries start is the document's business
(:meth:`statefile.model.document.StateDocument.entries_of`); the words are read with
:mod:`statefile.model.patterns`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from statefile.defaults import MAX_ITERATION
from statefile.model.patterns import (
    JOINED_HEAD,
    METRIC_BAND,
    ONE_RANGE_HEAD,
    PAIR_HEAD,
    PARTIAL,
    RANGE_HEAD,
    RUN_LINK,
    SINGLE_HEAD,
    STATUS_GLYPHS,
    WHEN,
    entry_title,
    leading_status,
    status_of,
)
from statefile.model.spans import Span, of_numbers
from statefile.model.text import line_body, one_line

_FIELD_SPLIT = re.compile(r"\s*[|·;]\s*(?=\*\*[^*\n]{1,40}\*\*\s*:)")
_FIELD = re.compile(r"\*\*([^*\n]{1,40}?)\*\*\s*:?\s*(.*)")
# A hidden comment inside a field line (statefile's item marker, which older versions wrote as the last " · " part
# of a bullet-form entry) is no part of any field's value.
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
        """:attr:`covers` as merged intervals (see :mod:`statefile.model.spans`)."""
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
    """A heading in the history that is neither an iteration nor a range: kept as it is.

    ``implausible`` is set when the heading reads as an entry but names a number no history reaches (above
    :data:`~statefile.defaults.MAX_ITERATION`: a typo, or a date typed as a range); the entry is then kept as text
    and counted for nothing, and the anomalies say so.
    """

    raw: str
    heading: str
    implausible: int | None = None

    kind = "opaque"

    @property
    def covers(self) -> tuple[int, ...]:
        """Opaque entries cover no iteration numbers."""
        return ()

    @property
    def spans(self) -> list[Span]:
        """Opaque entries cover no iteration numbers."""
        return []


Entry = Iteration | IterationRange | OpaqueEntry


def parse_entry(raw: str) -> Entry:
    """Read one entry's text (its first line is the heading or bullet)."""
    first, _, _rest = raw.partition("\n")
    title = entry_title(first).replace("**", "")
    rng = RANGE_HEAD.match(title)
    one = None if rng else ONE_RANGE_HEAD.match(title)
    if rng or one:
        match = rng or one
        assert match is not None
        a = int(match.group(1))
        b = int(rng.group(2)) if rng else a
        if max(a, b) > MAX_ITERATION:
            return OpaqueEntry(raw=raw, heading=line_body(first), implausible=max(a, b))
        rest_of_title = title[match.end() :]
        band = METRIC_BAND.search(rest_of_title)
        summary = re.sub(r"^[\s:—–\-|]+", "", rest_of_title).strip()
        return IterationRange(
            first=min(a, b),
            last=max(a, b),
            raw=raw,
            heading=line_body(first),
            metric_from=band.group(1) if band else None,
            metric_to=band.group(2) if band else None,
            summary=summary,
            status=status_of(rest_of_title),
        )
    pair = PAIR_HEAD.match(title)
    single = SINGLE_HEAD.match(title)
    if not single and not pair:
        return OpaqueEntry(raw=raw, heading=line_body(first))
    found = {int(pair.group(1)), int(pair.group(2))} if pair else {int(single.group(1))} if single else set()
    # "Iteration 126 — ✅ abs/round (81) · Iteration 125 — ✅ autocorr (80)": one heading for several iterations.
    found.update(int(n) for n in JOINED_HEAD.findall(title))
    if max(found) > MAX_ITERATION:
        return OpaqueEntry(raw=raw, heading=line_body(first), implausible=max(found))
    numbers = tuple(sorted(found)) if len(found) > 1 else ()
    number = max(found)
    return _parse_iteration(raw, line_body(first), title, number, numbers)


def _parse_iteration(raw: str, heading: str, title: str, number: int, numbers: tuple[int, ...]) -> Iteration:
    fields: dict[str, str] = {}
    lines = raw.splitlines()
    if lines and lines[0].lstrip()[:1] in "-*+" and "**" in lines[0]:
        # A bullet-form entry may carry its fields on its own line: "- Iter 2 — date: **Status**: ✅ Accepted · …".
        lines[0] = "- " + lines[0][lines[0].index("**") :]
    else:
        lines = lines[1:]
    for line in lines:
        stripped = _HIDDEN.sub("", line).strip().lstrip("-*+").strip()
        if not stripped.startswith("**"):
            continue
        for part in _FIELD_SPLIT.split(stripped):
            match = _FIELD.match(part)
            if match:
                label = match.group(1).strip().rstrip(":").strip().lower()
                fields.setdefault(label, match.group(2).strip())
    when = WHEN.search(title)
    run = RUN_LINK.search(title)
    status_text = fields.get("status")
    status = status_of(status_text) if status_text else status_of(title) or _body_status(raw)
    if status is None and status_text:
        # "• frobbed": an unusual status word after a glyph is still the status.
        word = re.match(r"^\W*([A-Za-z][\w-]*)", status_text)
        status = word.group(1).lower() if word else None
    metric_text = fields.get("metric")
    metric = prev = delta = None
    if metric_text:
        m = re.match(r"\s*([^\s(|]+)", metric_text)
        metric = m.group(1) if m else None
        p = _PREV_BEST.search(metric_text)
        prev = p.group(1).strip() if p else None
        d = _DELTA.search(metric_text)
        delta = d.group(1).replace(" ", "") if d else None
    else:
        d = _DELTA.search(raw)
        delta = d.group(1).replace(" ", "") if d else None
    return Iteration(
        number=number,
        numbers=numbers,
        raw=raw,
        heading=heading,
        when=when.group(0) if when else None,
        run_url=run.group(1) if run else None,
        status=status,
        metric=metric,
        previous_best=prev,
        delta=delta,
        change=fields.get("change"),
        commit=(fields.get("commit") or "").strip("` ") or None,
        notes=fields.get("notes"),
        partial=bool(PARTIAL.search(title)),
        fields=fields,
    )


def _body_status(raw: str) -> str | None:
    """The status of an entry without a ``**Status**:`` field, from a body line that starts with one.

    Agents wrote bodies such as ``✅ +1 → 530: added x`` or ``- ⏳ pending CI · island 2``: the first few lines are
    looked at, and only a line that *starts* with a status counts (a status named in prose is not the entry's).
    """
    seen = 0
    for line in raw.splitlines()[1:]:
        if not line.strip():
            continue
        status = leading_status(line)
        if status is not None:
            return status
        seen += 1
        if seen == 3:
            break
    return None


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
    """Write an entry in the upstream template's shape, ending in a blank line: ``### Iteration N — date UTC —
    [Run](url)`` and its ``- **Status**:``, ``Change``, ``Metric``, ``Commit``, ``CI fix attempts``, ``Notes``
    bullets.

    ``pr`` (a ``[#12](url)`` link or ``#12``) adds the PR line the upstream prompt asks accepted entries to carry;
    ``trailer`` is a last line kept out of sight (an HTML comment such as statefile's item marker).
    """
    heading = f"### Iteration {number} — {one_line(when)} UTC"
    if run_url:
        heading += f" — [Run]({one_line(run_url)})"
    word = status.lower()
    glyph = STATUS_GLYPHS.get(word, "•")
    # The three upstream words are written as the template does ("✅ Accepted"); any other word is kept as typed
    # ("⏳ pending-ci") so it reads back as the same word.
    label = {
        "accepted": "Accepted",
        "rejected": "Rejected",
        "error": "Error",
        "ci-fix-exhausted": "CI fix exhausted",
    }.get(word, word)
    lines = [heading, "", f"- **Status**: {glyph} {label}"]
    if change:
        lines.append(f"- **Change**: {one_line(change)}")
    if metric is not None:
        extra = []
        if previous_best is not None:
            extra.append(f"previous best: {previous_best}")
        if delta is not None:
            extra.append(f"delta: {delta}")
        lines.append(f"- **Metric**: {one_line(metric)}" + (f" ({', '.join(extra)})" if extra else ""))
    if commit:
        lines.append(f"- **Commit**: {one_line(commit)}")
    if pr:
        lines.append(f"- **PR**: {one_line(pr)}")
    if ci_fix_attempts > 0:
        lines.append(f"- **CI fix attempts**: {ci_fix_attempts}")
    if notes:
        lines.append(f"- **Notes**: {one_line(notes)}")
    if trailer:
        lines.append(one_line(trailer))
    return newline.join([*lines, "", ""])
