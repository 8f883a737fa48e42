"""Iteration History entries: read every shape agents have written, and write the upstream one.

Pure functions on text.  An entry is everything from its heading (or ``- Iter N:`` bullet) to the next one, kept
verbatim in ``raw`` so compaction can archive it byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from statefile.model.text import line_body, one_line

# Status words, by the glyph agents put in front of them.  The scheduler's Recent Statuses use the words.
STATUS_GLYPHS: dict[str, str] = {
    "accepted": "✅",
    "rejected": "❌",
    "error": "⚠️",
    "ci-fix-exhausted": "⚠️",
    "pending": "⏳",
    "pending-ci": "⏳",
}
_GLYPH_STATUS = (("✅", "accepted"), ("❌", "rejected"), ("⚠", "error"), ("⏳", "pending"))
_SPECIFIC_STATUS = re.compile(r"\b(ci[- ]fix[- ]exhausted|pending-ci)\b", re.I)
_WORD_STATUS = re.compile(
    r"\b(accepted|rejected|error|ci-fix-exhausted|pending-ci|pending|phantom|local-only|not-pushed)\b", re.I
)

_ARROW = r"(?:→|->|–>|=>)"
# "Iters 50–100", "Iterations 53–165", "Iter 84-93", "Iters 1–426:" — a range.
# An em dash with spaces is the field separator of a detailed heading ("Iteration 5 — 2026-01-02"), so it only
# counts as a range dash when tight; a second "number" that is the start of a date never makes a range.
_RANGE_HEAD = re.compile(r"^\s*Iter(?:ation)?s?\.?\s+#?(\d+)(?:\s*(?:–|-{1,2}|to)\s*|—)#?(\d+)(?![\d-])", re.I)
# "Iters 57 — …": a range line of one iteration (statefile writes it so, never "57–57").  The plural matters: "Iter
# 57" and "Iteration 57" are detailed entries.
_ONE_RANGE_HEAD = re.compile(r"^\s*Iters\s+#?(\d+)(?![\d&,/+])(?!\s*(?:&|and\b|,|/|\+))", re.I)
# "Iteration 12 & 13", "Iterations 12, 13" — two detailed iterations written as one entry.
_PAIR_HEAD = re.compile(r"^\s*Iter(?:ation)?s?\.?\s+#?(\d+)\s*(?:&|and|,|/|\+)\s*#?(\d+)(?!\d)", re.I)
_SINGLE_HEAD = re.compile(r"^\s*Iter(?:ation)?\.?\s+#?(\d+)(?!\d)", re.I)
_BULLET_ENTRY = re.compile(r"^[-*+]\s+(?:\*\*)?(Iter(?:ation)?s?\.?\s+#?\d+)", re.I)
_PARTIAL = re.compile(r"\(partial\)", re.I)
_WHEN = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?Z?(?:\s*UTC)?)?")
_RUN_LINK = re.compile(r"\[Run[^\]]*\]\(([^)\s]+)\)")
_METRIC_BAND = re.compile(rf"~?(-?\d+(?:\.\d+)?)%?\s*{_ARROW}\s*~?(-?\d+(?:\.\d+)?)%?")
# Several fields may share a line: "- **Status**: ✅ Accepted | **Metric**: 606 (…) | **Commit**: b8edf68".
_FIELD_SPLIT = re.compile(r"\s*[|·;]\s*(?=\*\*[^*\n]{1,40}\*\*\s*:)")
_FIELD = re.compile(r"\*\*([^*\n]{1,40}?)\*\*\s*:?\s*(.*)")
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
        """Iteration numbers this range stands for."""
        return range(self.first, self.last + 1)


@dataclass(frozen=True)
class OpaqueEntry:
    """A heading in the history that is neither an iteration nor a range: kept as it is."""

    raw: str
    heading: str

    kind = "opaque"

    @property
    def covers(self) -> tuple[int, ...]:
        """Opaque entries cover no iteration numbers."""
        return ()


Entry = Iteration | IterationRange | OpaqueEntry


def status_of(text: str) -> str | None:
    """The status word a line expresses, from its glyph or its words (``None`` if it says none)."""
    specific = _SPECIFIC_STATUS.search(text)
    if specific:
        # "⚠️ CI fix exhausted" and "⏳ pending-ci" say more than their glyph does.
        return specific.group(1).lower().replace(" ", "-")
    for glyph, word in _GLYPH_STATUS:
        if glyph in text:
            return word
    match = _WORD_STATUS.search(text)
    return match.group(1).lower() if match else None


def entry_title(line: str) -> str:
    """The text of an entry's first line without the heading marks or bullet."""
    body = line_body(line).strip()
    if body.startswith("#"):
        return body.lstrip("#").strip()
    return body[1:].strip() if body[:1] in "-*+" else body


def is_entry_heading(title: str) -> bool:
    """Whether a heading's text names an iteration or a range (``Iteration 5``, ``Iters 1–9``, …)."""
    return bool(_SINGLE_HEAD.match(title) or _RANGE_HEAD.match(title) or _ONE_RANGE_HEAD.match(title))


def is_bullet_entry(line: str) -> bool:
    """Whether a top-level bullet line starts an entry, as in ``- Iter 1: ❌ CI failed``."""
    return bool(_BULLET_ENTRY.match(line))


def parse_entry(raw: str) -> Entry:
    """Read one entry's text (its first line is the heading or bullet)."""
    first, _, _rest = raw.partition("\n")
    title = entry_title(first).replace("**", "")
    rng = _RANGE_HEAD.match(title)
    one = None if rng else _ONE_RANGE_HEAD.match(title)
    if rng or one:
        match = rng or one
        assert match is not None
        a = int(match.group(1))
        b = int(rng.group(2)) if rng else a
        rest_of_title = title[match.end() :]
        band = _METRIC_BAND.search(rest_of_title)
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
    pair = _PAIR_HEAD.match(title)
    single = _SINGLE_HEAD.match(title)
    if not single and not pair:
        return OpaqueEntry(raw=raw, heading=line_body(first))
    number = int(single.group(1)) if single else 0
    numbers: tuple[int, ...] = ()
    if pair:
        numbers = tuple(sorted({int(pair.group(1)), int(pair.group(2))}))
        number = max(numbers)
    return _parse_iteration(raw, line_body(first), title, number, numbers)


def _parse_iteration(raw: str, heading: str, title: str, number: int, numbers: tuple[int, ...]) -> Iteration:
    fields: dict[str, str] = {}
    for line in raw.splitlines()[1:]:
        stripped = line.strip().lstrip("-*+").strip()
        if not stripped.startswith("**"):
            continue
        for part in _FIELD_SPLIT.split(stripped):
            match = _FIELD.match(part)
            if match:
                label = match.group(1).strip().rstrip(":").strip().lower()
                fields.setdefault(label, match.group(2).strip())
    when = _WHEN.search(title)
    run = _RUN_LINK.search(title)
    status_text = fields.get("status")
    status = status_of(status_text) if status_text else status_of(title)
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
        partial=bool(_PARTIAL.search(title)),
        fields=fields,
    )


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
    """Write an entry in the upstream template's shape (FORMAT.md, "An iteration entry"), ending in a blank line.

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
