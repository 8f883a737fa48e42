"""Compaction: keep a state file under its byte budget by policy, deterministically, losing nothing.

``compact(doc, policy)`` is a pure function.  It folds detailed iteration entries beyond the newest
``keep_recent`` into canonical range lines (:mod:`statefile.policy.ranges`) -- a long fold as several bands, each
older one broader -- merges adjacent range lines when there are more than ``max_ranges`` so that spans keep
widening going back, collapses duplicate and expired lessons and consolidates a long Foreclosed Avenues list
(:mod:`statefile.policy.pruning`).  Everything that leaves the file is returned verbatim in
``CompactionResult.archive``.
Maintainer-owned sections (title, Program Info, Current Priorities, Future Directions, unknown sections) and the
Machine State table are never touched.

Exactly-once coverage.  Agents' files contain overlapping ranges, detailed entries inside ranges and duplicated
entries.  Compaction resolves them so that every iteration number the input covers is covered exactly once by the
output: overlapping ranges merge into one range (keeping each one's text); a detailed entry whose number a range
covers folds into that range; of several entries for one number the complete one stays and the others (e.g.
``(partial)`` copies) go to the archive.  A range may span numbers no entry covered (a gap in the agent's
history); entries whose heading names no iteration ("opaque") stay where they are, after their predecessor.
The resolution and the layout of the new history live in :mod:`statefile.policy.planning`.

Modes.  The normal pass always runs.  When its result is over ``aggressive_at`` of the budget, aggressive steps
follow until the file is at most ``low_water`` of the budget: keep only ``keep_recent_aggressive`` entries and
``max_ranges_aggressive`` ranges; then a Foreclosed Avenues list beyond a page consolidates and, while still
above the threshold, its oldest entries go (never below ``max_foreclosed_aggressive``).  Lessons are pruned only
when the file does not fit its budget otherwise (unless ``max_lessons`` sets a hard cap): a file that fits keeps
every one of them.  When still over ``max_bytes``, the last resort gives things up one at a time, only as far as
needed, in this order: the older remaining entries (oldest first), range lines (merged down to one, then without
their summaries: the archive has them), duplicate lessons, the oldest unpinned lessons (marked important last),
the oldest unpinned avenues and, only as the very last step, the newest detailed entry (the one just recorded),
which then lives on as a range line and verbatim in the archive.  If even that does not fit,
:class:`CompactionBudgetError` (a :class:`statefile.errors.BudgetError`) says which sections take the bytes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any

from statefile.defaults import (
    AGGRESSIVE_AT,
    AGGRESSIVE_KEEP,
    DEFAULT_MAX_BYTES,
    KEEP_RECENT,
    RANGE_TEXT_CAP,
    SUMMARY_CAP,
)
from statefile.errors import BudgetError, UsageError
from statefile.model.document import StateDocument, parse
from statefile.model.history import Entry, Iteration, OpaqueEntry
from statefile.model.machine_state import Row, table_rows
from statefile.model.patterns import is_bullet_entry, is_placeholder, state_direction
from statefile.model.sections import MAINTAINER_OWNED
from statefile.model.text import clip, detect_newline, line_body, split_lines, utf8_size
from statefile.numbers import budget_text, number_text, plural, size_text
from statefile.policy import pruning, ranges
from statefile.policy.planning import (
    Detail,
    Group,
    ends_blank,
    join_entries,
    plan_sequence,
    resolve_history,
)

Summarizer = Callable[[list[dict[str, Any]]], "str | None"]

_TITLE = re.compile(r"^Autoloop:\s*(\S+)")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class CompactionPolicy:
    """How small a state file must be and what compaction may move to get there.  Sizes are UTF-8 bytes.

    ``aggressive_at`` and ``low_water`` are fractions of ``max_bytes``: a normal pass whose result is over
    ``aggressive_at`` triggers aggressive mode, which keeps going until the file is at most ``low_water`` (so the
    next iterations do not trigger it again) or nothing more may move.  ``today`` enables lesson expiry
    (``(expires YYYY-MM-DD)``; ``None`` never expires anything).  ``summarizer``, when set, is offered each new
    range line's folded entries as plain dicts and may return a shorter one-line summary (see
    :func:`compact`).  ``program`` names the ``archive/{program}/`` folder range lines point to (default: from
    the ``# Autoloop: {program}`` title).  ``band_span`` is how many iteration numbers the newest range line
    gathers before a new one starts; a long first fold is cut into bands of ``band_span``, twice that, four
    times that, … numbers going back (see :func:`statefile.policy.planning.plan_sequence`).
    """

    max_bytes: int = DEFAULT_MAX_BYTES
    keep_recent: int = KEEP_RECENT
    keep_recent_aggressive: int = AGGRESSIVE_KEEP
    aggressive_at: float = AGGRESSIVE_AT
    low_water: float = 0.6
    max_ranges: int = 5
    max_ranges_aggressive: int = 3
    band_span: int = 10
    #: A hard cap on lessons (duplicates collapse, then the oldest go); ``None``, the default: lessons are pruned
    #: only when the file does not fit ``max_bytes`` otherwise.  ``max_lessons_aggressive`` is kept for
    #: compatibility and no longer used: above the aggressive threshold lessons stay.
    max_lessons: int | None = None
    max_lessons_aggressive: int = 10
    lesson_similarity: float = 0.8
    foreclosed_page_bytes: int = 3072
    foreclosed_similarity: float = 0.6
    max_foreclosed_aggressive: int = 15
    summary_cap: int = SUMMARY_CAP
    range_text_cap: int = RANGE_TEXT_CAP
    today: date | None = None
    summarizer: Summarizer | None = None
    program: str | None = None
    #: Where range lines say the folded text is: the store's own place for the parts (``Store.archive_hint``,
    #: ``_archive.perf.*.md`` in repo-memory); ``None``: ``archive/{program}/``, the branch's layout.
    archive_hint: str | None = None
    #: Run the aggressive steps whatever the size (``statefile compact --aggressive``).
    force_aggressive: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.today, datetime):
            object.__setattr__(self, "today", self.today.date())  # a datetime does not compare with dates
        problems = []
        if self.max_bytes < 1:
            problems.append("max_bytes must be >= 1")
        caps = (self.keep_recent, self.keep_recent_aggressive, self.max_lessons or 0, self.max_lessons_aggressive)
        if min(caps) < 0:
            problems.append("keep_recent, max_lessons and their aggressive forms must be >= 0")
        if min(self.max_ranges, self.max_ranges_aggressive) < 1:
            problems.append("max_ranges and max_ranges_aggressive must be >= 1")
        if not 0 < self.low_water <= self.aggressive_at <= 1:
            problems.append("need 0 < low_water <= aggressive_at <= 1 (fractions of max_bytes)")
        if not (0 < self.lesson_similarity <= 1 and 0 < self.foreclosed_similarity <= 1):
            problems.append("similarity thresholds must be in (0, 1]")
        if self.summary_cap < 1 or self.range_text_cap < 0 or self.foreclosed_page_bytes < 0:
            problems.append("summary_cap must be >= 1, range_text_cap and foreclosed_page_bytes >= 0")
        if self.band_span < 1:
            problems.append("band_span must be >= 1")
        if self.max_foreclosed_aggressive < 0:
            problems.append("max_foreclosed_aggressive must be >= 0")
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

    @property
    def folded_iterations(self) -> int:
        """How many detailed iteration entries left the file."""
        return sum(1 for m in self.moved if m.kind == "iteration")

    def count(self, kind: str) -> int:
        """How many moved items are of ``kind``."""
        return sum(1 for m in self.moved if m.kind == kind)

    def summary(self) -> str:
        """One line for humans: sizes, mode and counts."""
        if not self.changed:
            return f"nothing to compact at {budget_text(self.bytes_after, self.max_bytes)}"
        mode = " (last resort)" if self.last_resort else " (aggressive)" if self.aggressive else ""
        nouns = {"iteration": "iteration", "range": "range line", "lesson": "lesson", "foreclosed": "avenue"}
        counts = ", ".join(plural(self.count(kind), noun) for kind, noun in nouns.items() if self.count(kind))
        return (
            f"compacted{mode}: {number_text(self.bytes_before)} → {budget_text(self.bytes_after, self.max_bytes)}; "
            f"moved {counts or 'nothing'}; wrote {plural(len(self.ranges_written), 'range line')}"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "max_bytes": self.max_bytes,
            "changed": self.changed,
            "aggressive": self.aggressive,
            "last_resort": self.last_resort,
            "moved": [{"kind": m.kind, "label": m.label, "reason": m.reason} for m in self.moved],
            "ranges_written": list(self.ranges_written),
        }


@dataclass(frozen=True)
class CompactionResult:
    """The compacted document, the archive text (everything removed, verbatim; ``""`` if nothing) and a report.

    When nothing changed, ``document`` is the input document itself.
    """

    document: StateDocument
    archive: str
    report: CompactionReport


class CompactionBudgetError(BudgetError):
    """The file does not fit ``max_bytes`` even with everything movable moved.  ``sections`` has the byte table."""

    def __init__(self, message: str, *, size: int, max_bytes: int, sections: tuple[tuple[str, int, bool], ...]):
        super().__init__(message)
        self.size = size
        self.max_bytes = max_bytes
        self.sections = sections


# -- planning one candidate output ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Params:
    keep: int
    max_ranges: int
    text_cap: int
    #: ``None``: no limit.  Lessons are pruned only when the file does not fit its budget otherwise (the last
    #: resort), or under an explicit ``CompactionPolicy.max_lessons`` cap.
    max_lessons: int | None = None
    #: Collapse duplicate lessons (the last resort's first lesson step; always with a ``max_lessons`` limit).
    collapse_lessons: bool = False
    #: Consolidate a Foreclosed Avenues list beyond a page (aggressive mode).
    consolidate_always: bool = False
    max_foreclosed: int | None = None
    force_render: bool = False
    #: Why a limit removes bullets, for the archive and the report.
    why: str = ""


@dataclass
class _Candidate:
    text: str
    size: int
    archive: list[tuple[tuple[int, int], str]]  # (sort key, verbatim text) of history pieces
    list_archive: list[str]
    moved: list[MovedItem]
    ranges_written: list[str]
    groups: int = 0
    lessons_kept: int = 0
    lessons_unpinned: int = 0
    foreclosed_kept: int = 0
    foreclosed_unpinned: int = 0


class _Compactor:
    """Everything computed once per ``compact`` call; :meth:`build` renders one candidate for given limits."""

    def __init__(self, doc: StateDocument, policy: CompactionPolicy, program: str | None) -> None:
        self.doc = doc
        self.policy = policy
        self.program = program
        self.newline = detect_newline(doc.render())
        self.direction = state_direction(doc.machine_state)
        self.lines = split_lines(doc.render())
        self.history = resolve_history(doc, self.lines)
        self.lessons = self._list_info("lessons")
        self.foreclosed = self._list_info("foreclosed")
        self.order_lessons = pruning.newest_last(self.lessons[2] if self.lessons else [])
        self.order_foreclosed = pruning.newest_last(self.foreclosed[2] if self.foreclosed else [])
        self._summaries: dict[tuple[int, ...], str] = {}
        self._histories: dict[tuple[int, int, int, bool, bool], tuple[str | None, _Candidate]] = {}
        self._rendered: dict[
            tuple[tuple[int, ...], tuple[int, ...], int, bool],
            tuple[str, list[tuple[tuple[int, int], str]], list[MovedItem]],
        ] = {}

    def _list_info(self, kind: str) -> tuple[int, list[Any], list[str]] | None:
        section = self.doc.section(kind)
        items = self.doc.list_items(kind)
        if section is None or not items:
            return None
        start, end = section.start + items[0].start, section.start + items[-1].end
        if self.history is not None and start < self.history.region[1] and self.history.region[0] < end:
            return None  # never edit across the history's entries
        return section.start, items, [item.text for item in items]

    # -- history ---------------------------------------------------------------------------------------------

    def _history_text(self, params: _Params, candidate: _Candidate, summarize: bool) -> str | None:
        history = self.history
        if history is None:
            return None
        sequence = plan_sequence(history, params.keep, params.max_ranges, self.policy.band_span)
        # (member positions, text, wants a blank line after it when something follows)
        texts: list[tuple[list[int], str, bool]] = []
        last_pos = len(history.raws) - 1
        for item in sequence:
            if isinstance(item, Detail):
                texts.append(([item.pos], history.raws[item.pos], item.pos == last_pos))
                continue
            members = [pos for b in item.bases for pos, _ in b.ranges]
            members += [d.pos for b in item.bases for d in b.entries] + [d.pos for d in item.folded]
            if len(item.bases) == 1 and item.bases[0].pristine and not item.folded and not params.force_render:
                pos = item.bases[0].ranges[0][0]
                texts.append((members, history.raws[pos], pos == last_pos))
                continue
            texts.append((members, self._render_group(item, params, candidate, summarize), True))
        for detail, _primary in history.dropped:
            candidate.archive.append(((detail.low, detail.pos), history.raws[detail.pos]))
            candidate.moved.append(
                MovedItem("iteration", _label(detail.entry), f"duplicate of the entry kept for {detail.high}")
            )
        candidate.groups = sum(isinstance(s, Group) for s in sequence)
        # Bullet-form entries ("- Iter 3: …") are entries only above the first heading: below one they would read as
        # that entry's body.  Those that stay keep their place in front, whatever their numbers.
        texts.sort(key=lambda item: not is_bullet_entry(item[1]))
        # Opaque entries follow the entry that was above them in the file, wherever that went.
        where: dict[int, int] = {}
        for index, (members, _, _) in enumerate(texts):
            for pos in members:
                where[pos] = index
        primary_of = {detail.pos: primary for detail, primary in history.dropped}
        after: dict[int, list[tuple[str, bool]]] = defaultdict(list)
        for pos, _entry in history.opaque:
            anchor = history.anchor[pos]
            anchor = primary_of.get(anchor, anchor)
            after[where.get(anchor, -1)].append((history.raws[pos], pos == last_pos))
        ordered = list(after.get(-1, []))
        for index, (_, text, spaced) in enumerate(texts):
            ordered.append((text, spaced))
            ordered.extend(after.get(index, []))
        return join_entries(ordered, history.tail, self.newline)

    def _render_group(self, group: Group, params: _Params, candidate: _Candidate, summarize: bool) -> str:
        # Stages re-plan the same groups; rendering a 10,000-entry group once is enough.
        key = (
            tuple(pos for b in group.bases for pos, _ in b.ranges),
            tuple(d.pos for b in group.bases for d in b.entries) + tuple(d.pos for d in group.folded),
            params.text_cap,
            summarize,
        )
        rendered = self._rendered.get(key)
        if rendered is None:
            rendered = self._rendered[key] = self._render_new(group, params, summarize)
        line, archive, moved = rendered
        candidate.archive.extend(archive)
        candidate.moved.extend(moved)
        candidate.ranges_written.append(line_body(line))
        return line

    def _render_new(
        self, group: Group, params: _Params, summarize: bool
    ) -> tuple[str, list[tuple[tuple[int, int], str]], list[MovedItem]]:
        history = self.history
        assert history is not None
        bands = []
        archive: list[tuple[tuple[int, int], str]] = []
        moved: list[MovedItem] = []
        for base in group.bases:
            for pos, entry in base.ranges:
                bands.append(ranges.band_from_range(entry))
                archive.append(((entry.first, pos), history.raws[pos]))
                moved.append(MovedItem("range", _label(entry), "merged into a new range line"))
        details = [d for b in group.bases for d in b.entries] + list(group.folded)
        if details:
            entries = [d.entry for d in details]
            summary = ranges.entries_summary(entries, self.policy.summary_cap)
            if summarize:
                summary = self._summarize(entries, summary)
            bands.append(ranges.band_from_entries(entries, self.direction, summary))
            archive.extend(((detail.low, detail.pos), history.raws[detail.pos]) for detail in details)
        band = ranges.merge_bands(bands, self.direction)
        line = ranges.render_band(
            band, program=self.program, text_cap=params.text_cap, newline=self.newline, archive=self.policy.archive_hint
        )
        reason = f"folded into {_short(line_body(line)[4:])}"
        moved.extend(MovedItem("iteration", _label(detail.entry), reason) for detail in details)
        return line, archive, moved

    def _summarize(self, entries: list[Iteration], deterministic: str) -> str:
        """The summarizer's line when it is usable (one line, under the cap, shorter than ours), else ours."""
        summarizer = self.policy.summarizer
        if summarizer is None:
            return deterministic
        key = tuple(sorted(n for e in entries for n in e.covers))
        if key not in self._summaries:
            offered: object
            try:
                offered = summarizer([ranges.entry_dict(e) for e in sorted(entries, key=lambda e: e.covers[0])])
            except Exception:  # a summarizer is outside code (often an LLM call): any failure means "use ours"
                offered = None
            text = offered.strip() if isinstance(offered, str) else ""
            usable = (
                bool(text)
                and not _LINE_BREAK.search(text)
                and len(text) < self.policy.summary_cap
                and len(text) < len(deterministic)
            )
            self._summaries[key] = text if usable else deterministic
        return self._summaries[key]

    # -- lists -----------------------------------------------------------------------------------------------

    def _list_edit(
        self, info: tuple[int, list[Any], list[str]] | None, plan: pruning.ListPlan, kind: str, candidate: _Candidate
    ) -> tuple[int, int, str] | None:
        if info is None or not (plan.remove or plan.rewrite):
            return None
        start, items, texts = info
        first, last = start + items[0].start, start + items[-1].end
        out: list[str] = []
        line = first
        bounds = {start + item.start: (k, item) for k, item in enumerate(items)}
        while line < last:
            if line in bounds:
                k, item = bounds[line]
                line = start + item.end
                if k in plan.remove:
                    continue
                out.extend(split_lines(plan.rewrite.get(k, texts[k])))
                continue
            text = self.lines[line]
            line += 1
            if not line_body(text).strip() and (not out or not line_body(out[-1]).strip()):
                continue  # a blank line left doubled by a removed bullet
            out.append(text)
        while out and not line_body(out[-1]).strip():
            out.pop()
        if all(k in plan.remove for k in range(len(items))):
            out.insert(0, f"- *(none yet)*{self.newline}")
        if out and not out[-1].endswith(("\n", "\r")) and last < len(self.lines):
            out[-1] += self.newline
        heading = "📚 Lessons Learned" if kind == "lesson" else "🚧 Foreclosed Avenues"
        pieces = [f"### {heading} — moved out by compaction{self.newline}"]
        for k in sorted(plan.remove):
            reason = plan.remove[k]
            pieces.append(f"{self.newline}*({reason})*{self.newline}")
            pieces.append(texts[k] if texts[k].endswith(("\n", "\r")) else texts[k] + self.newline)
            candidate.moved.append(MovedItem("foreclosed" if kind == "avenue" else "lesson", _clip(texts[k]), reason))
        if len(pieces) > 1:
            candidate.list_archive.append("".join(pieces))
        return first, last, "".join(out)

    # -- one candidate -----------------------------------------------------------------------------------------

    def build(self, params: _Params, *, summarize: bool = False) -> _Candidate:
        policy = self.policy
        candidate = _Candidate("", 0, [], [], [], [])
        edits: list[tuple[int, int, str]] = []
        # The history depends on these limits only; the last resort steps through lesson and avenue limits
        # with the history unchanged, so each of those steps costs the lists, not the (possibly long) history.
        key = (params.keep, params.max_ranges, params.text_cap, params.force_render, summarize)
        planned = self._histories.get(key)
        if planned is None:
            part = _Candidate("", 0, [], [], [], [])
            text = self._history_text(params, part, summarize)
            planned = self._histories[key] = (text, part)
        history_text, part = planned
        candidate.archive.extend(part.archive)
        candidate.moved.extend(part.moved)
        candidate.ranges_written.extend(part.ranges_written)
        candidate.groups = part.groups
        if self.history is not None and history_text is not None and history_text != self.history.original:
            edits.append((*self.history.region, history_text))
        if self.lessons is not None:
            texts = self.lessons[2]
            plan = pruning.plan_lessons(
                texts,
                limit=params.max_lessons,
                similarity=policy.lesson_similarity,
                today=policy.today,
                order_newest_last=self.order_lessons,
                collapse=params.collapse_lessons or params.max_lessons is not None,
                why=params.why,
            )
            candidate.lessons_kept, candidate.lessons_unpinned = _left(texts, plan)
            edit = self._list_edit(self.lessons, plan, "lesson", candidate)
            if edit:
                edits.append(edit)
        if self.foreclosed is not None:
            texts = self.foreclosed[2]
            page = sum(utf8_size(t) for t in texts) > policy.foreclosed_page_bytes
            plan = pruning.plan_foreclosed(
                texts,
                consolidate=page and params.consolidate_always,
                similarity=policy.foreclosed_similarity,
                limit=params.max_foreclosed,
                order_newest_last=self.order_foreclosed,
                why=params.why,
            )
            candidate.foreclosed_kept, candidate.foreclosed_unpinned = _left(texts, plan)
            edit = self._list_edit(self.foreclosed, plan, "avenue", candidate)
            if edit:
                edits.append(edit)
        if edits:
            out: list[str] = []
            at = 0
            for start, end, text in sorted(edits):
                out.append("".join(self.lines[at:start]))
                out.append(text)
                at = end
            out.append("".join(self.lines[at:]))
            candidate.text = "".join(out)
            if self.lines and not self.lines[-1].endswith(("\n", "\r")):
                # The file had no final newline; the edit that reached its end (a folded last entry) keeps it so.
                text = candidate.text
                candidate.text = (
                    text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith(("\n", "\r")) else text
                )
        else:
            candidate.text = self.doc.render()
        candidate.size = utf8_size(candidate.text)
        return candidate

    def archive_text(self, candidate: _Candidate) -> str:
        """Everything the candidate removed, oldest history first, then lessons and avenues; pieces verbatim."""
        # Oldest first, except that bullet-form entries go first: an archive chunk is read like a history section.
        pieces = [
            text for _, text in sorted(candidate.archive, key=lambda item: (not is_bullet_entry(item[1]), item[0]))
        ]
        pieces.extend(candidate.list_archive)
        out: list[str] = []
        for text in pieces:
            if out and not ends_blank(out[-1]):
                out.append(self.newline)
            out.append(text if text.endswith(("\n", "\r")) else text + self.newline)
        return "".join(out)


def _left(texts: Sequence[str], plan: pruning.ListPlan) -> tuple[int, int]:
    """Bullets a plan keeps (placeholders aside), and how many of those are unpinned."""
    kept = [t for k, t in enumerate(texts) if k not in plan.remove and not is_placeholder(t)]
    return len(kept), sum(1 for t in kept if not pruning.is_pinned(t))


def _label(entry: Entry) -> str:
    if isinstance(entry, Iteration):
        numbers = " & ".join(str(n) for n in entry.covers)
        return f"Iteration {numbers}" + (" (partial)" if entry.partial else "")
    return _clip(entry.heading.lstrip("#-*+ ").strip())


def _clip(text: str) -> str:
    return clip(line_body(text.split("\n", 1)[0]).lstrip("-*+ "), 80)


def _short(title: str) -> str:
    return title.split(" — ", 1)[0]


# -- the public entry point ----------------------------------------------------------------------------------------


def program_name(doc: StateDocument) -> str | None:
    """The program named by the ``# Autoloop: {program}`` title, or ``None``."""
    title = doc.section("title")
    match = _TITLE.match(title.title or "") if title is not None else None
    return match.group(1) if match else None


def compact(
    doc: StateDocument, policy: CompactionPolicy | None = None, *, program: str | None = None
) -> CompactionResult:
    """Compact ``doc`` under ``policy`` (default :class:`CompactionPolicy`).  Pure: the input is not modified.

    Guarantees: the result is at most ``policy.max_bytes`` or :class:`CompactionBudgetError` is raised; every
    iteration number the input covers is covered exactly once; everything removed is in ``archive`` verbatim;
    Machine State and maintainer-owned sections are byte-identical; when not aggressive, the newest
    ``keep_recent`` detailed entries are untouched; ``compact(result.document)`` changes nothing.  A file with a
    code fence or HTML block that is never closed is refused with InvalidDataError (see
    :meth:`StateDocument.require_closed_blocks`): what follows its opening line is code, not sections.

    A ``policy.summarizer`` is called once per new range line with its folded entries (plain dicts: number,
    when, status, metric, change, notes).  Its answer is used only when it is one non-empty line, shorter than
    ``policy.summary_cap`` and shorter than the deterministic summary; otherwise (or if it raises) the
    deterministic summary stands.  Decisions are made with the deterministic summaries, so a used answer can
    only make the file smaller.
    """
    policy = policy or CompactionPolicy()
    # Moving text that holds an unclosed fence's opening line would turn what follows back into sections.
    doc.require_closed_blocks("compact this file")
    name = program or policy.program or program_name(doc)
    work = _Compactor(doc, policy, name)
    params = _Params(
        keep=policy.keep_recent,
        max_ranges=policy.max_ranges,
        text_cap=policy.range_text_cap,
        max_lessons=policy.max_lessons,
    )
    candidate = work.build(params)
    aggressive = last_resort = False
    if policy.force_aggressive or candidate.size > policy.aggressive_bytes:
        aggressive = True
        params = replace(
            params,
            keep=min(policy.keep_recent_aggressive, policy.keep_recent),
            max_ranges=min(policy.max_ranges_aggressive, policy.max_ranges),
            text_cap=min(policy.range_text_cap, policy.summary_cap),
        )
        candidate = work.build(params)
        if candidate.size > policy.low_water_bytes:
            params, candidate = _prune_lists(work, params, candidate)
    ceiling, folded_newest = params, False
    while candidate.size > policy.max_bytes:
        step = _last_resort_step(work, replace(params, why=_OVER_BUDGET), candidate)
        if step is None:
            break
        last_resort = True
        folded_newest = folded_newest or (params.keep > 0 and step.keep == 0)
        params = step
        candidate = work.build(params)
    if folded_newest and candidate.size <= policy.max_bytes:
        params, candidate = _take_back(work, params, candidate, ceiling)
    if candidate.size > policy.max_bytes:
        raise _budget_error(doc, candidate, policy, name)
    if policy.summarizer is not None and candidate.ranges_written:
        summarized = work.build(params, summarize=True)
        if summarized.size <= policy.max_bytes:  # never trade the budget for a summary
            candidate = summarized
    changed = candidate.text != doc.render()
    document = parse(candidate.text) if changed else doc
    report = CompactionReport(
        bytes_before=doc.size,
        bytes_after=candidate.size,
        max_bytes=policy.max_bytes,
        changed=changed,
        aggressive=aggressive,
        last_resort=last_resort,
        moved=tuple(candidate.moved),
        ranges_written=tuple(candidate.ranges_written),
    )
    return CompactionResult(document=document, archive=work.archive_text(candidate), report=report)


_AGGRESSIVE = "(the file was above the aggressive threshold of its budget)"
_OVER_BUDGET = "(the file was over its byte budget)"


def _prune_lists(work: _Compactor, params: _Params, candidate: _Candidate) -> tuple[_Params, _Candidate]:
    """Aggressive mode, still above the low-water mark after the history: consolidate Foreclosed Avenues.

    A list beyond a page consolidates similar entries (the upstream prompt's rule); then, while the file is still
    above the aggressive threshold, the oldest unpinned avenues go, never below ``max_foreclosed_aggressive`` —
    the largest limit that gets under the threshold, so no more goes than needed.  Lessons are left alone here:
    they are what the agent learned, and go only when the file does not fit its budget (the last resort).
    """
    policy = work.policy
    threshold = policy.aggressive_bytes
    params = replace(params, consolidate_always=True, why=_AGGRESSIVE)
    candidate = work.build(params)
    if candidate.size <= threshold or candidate.foreclosed_kept <= policy.max_foreclosed_aggressive:
        return params, candidate
    base = params

    def make(n: int) -> _Params:
        return replace(base, max_foreclosed=n)

    # The size grows with the limit: bisect for the largest limit that gets under the threshold, else the floor.
    lo, hi = policy.max_foreclosed_aggressive, candidate.foreclosed_kept
    best_params, best = make(lo), work.build(make(lo))
    if best.size > threshold:
        return best_params, best
    while lo < hi:
        middle = (lo + hi + 1) // 2
        trial = work.build(make(middle))
        if trial.size <= threshold:
            lo, best_params, best = middle, make(middle), trial
        else:
            hi = middle - 1
    return best_params, best


def _last_resort_step(work: _Compactor, params: _Params, candidate: _Candidate) -> _Params | None:
    """The next smallest thing to give up when the file is still over budget, or ``None`` when nothing is left.

    The order says what matters most: older detailed entries go first (one at a time, oldest first), then range
    lines merge down to one and lose their summaries (the archive keeps them), then duplicate lessons collapse and
    the oldest unpinned lessons go (those marked important last), then the oldest unpinned foreclosed avenues.
    The newest detailed entry (normally the one just recorded) is the very last thing to fold: a file that fits
    only without it keeps it as a range line, with its full text in the archive, rather than failing the write
    that recorded it.
    """
    history = work.history
    free = min(params.keep, len(history.free) if history is not None else 0)
    if free > 1:
        return replace(params, keep=free - 1)
    if candidate.groups > 1 and params.max_ranges > 1:
        return replace(params, max_ranges=min(params.max_ranges, candidate.groups) - 1)
    if not params.force_render and candidate.groups:
        return replace(params, force_render=True, text_cap=0)
    if not params.collapse_lessons and candidate.lessons_unpinned > 0:
        return replace(params, collapse_lessons=True)  # a duplicate goes before any lesson of its own
    if candidate.lessons_unpinned > 0:
        return replace(params, max_lessons=candidate.lessons_kept - 1)
    if candidate.foreclosed_unpinned > 0:
        return replace(params, max_foreclosed=candidate.foreclosed_kept - 1)
    if free == 1:
        # Folding the newest entry makes a range line; the loop then comes back here to merge it and to drop
        # its summary like the others'.
        return replace(params, keep=0)
    return None


def _take_back(
    work: _Compactor, params: _Params, candidate: _Candidate, ceiling: _Params
) -> tuple[_Params, _Candidate]:
    """After the newest entry had to fold, take back what went before it as far as the budget allows.

    Everything given up before the newest entry was given up while the entry still stood; once it is a short
    range line, avenues, lessons and range summaries may fit again.  They come back in the reverse of the order
    they went, never beyond the limits in force before the last resort (``ceiling``), so that compacting the
    result again changes nothing.
    """
    max_bytes = work.policy.max_bytes

    def largest(low: int, high: int, make: Callable[[int], _Params]) -> None:
        # Sizes grow with the limit, so the largest limit that fits is found by bisection; ``low`` fits.
        nonlocal params, candidate
        while low < high:
            middle = (low + high + 1) // 2
            trial = work.build(make(middle))
            if trial.size <= max_bytes:
                low, params, candidate = middle, make(middle), trial
            else:
                high = middle - 1

    if params.max_foreclosed is not None and params.max_foreclosed != ceiling.max_foreclosed:
        total = len(work.foreclosed[1]) if work.foreclosed is not None else 0
        high = total if ceiling.max_foreclosed is None else min(ceiling.max_foreclosed, total)
        base = params
        largest(params.max_foreclosed, high, lambda n: replace(base, max_foreclosed=n))
    total_lessons = len(work.lessons[1]) if work.lessons is not None else 0
    ceiling_lessons = total_lessons if ceiling.max_lessons is None else min(ceiling.max_lessons, total_lessons)
    if params.max_lessons is not None and params.max_lessons < ceiling_lessons:
        base = params
        largest(params.max_lessons, ceiling_lessons, lambda n: replace(base, max_lessons=n))
    if params.force_render and not ceiling.force_render:
        trial_params = replace(params, force_render=False, text_cap=ceiling.text_cap)
        trial = work.build(trial_params)
        if trial.size <= max_bytes:
            params, candidate = trial_params, trial
    return params, candidate


def _longest_row(doc: StateDocument) -> Row | None:
    """The Machine State row with the longest value, or ``None`` when there is no table."""
    section = doc.section("machine_state")
    rows = table_rows(list(section.lines)) if section is not None else []
    return max(rows, key=lambda r: utf8_size(r.value), default=None)


def _budget_error(
    doc: StateDocument, candidate: _Candidate, policy: CompactionPolicy, program: str | None
) -> CompactionBudgetError:
    """The error for a file that cannot fit: its size, a per-section byte table and what to do."""
    rows: list[tuple[str, int, bool]] = []
    result = parse(candidate.text)
    for section in result.sections:
        label = section.title or ("(text before the first heading)" if section.kind == "preamble" else section.kind)
        rows.append((label, section.size, section.kind in MAINTAINER_OWNED))
    table = "; ".join(
        f"{label} {number_text(size)}{' [maintainer-owned]' if owned else ''}" for label, size, owned in rows
    )
    over = candidate.size - policy.max_bytes
    name = f"{program}.md" if program else "the state file"
    # History entries compaction cannot read (a heading that is no iteration or range, or one naming an
    # implausible number) are kept verbatim and never folded: when they are what stands in the way, name them —
    # the maintainer text is then beside the point.
    opaque = sorted(
        ((utf8_size(entry.raw), entry) for entry in result.history if isinstance(entry, OpaqueEntry)),
        key=lambda pair: -pair[0],
    )
    if opaque and sum(size for size, _ in opaque) >= over:
        named = ", ".join(
            f"'{clip(entry.heading, 60)}' ({size_text(size)}"
            + (f"; {entry.implausible} is no plausible iteration number" if entry.implausible else "")
            + ")"
            for size, entry in opaque[:3]
        )
        fix = f"statefile edit {program}" if program else "statefile edit PROGRAM"
        advice = (
            f"the history holds {plural(len(opaque), 'entry', 'entries')} compaction cannot fold, largest {named}; "
            f"fix their headings (or remove them) with `{fix}`, or raise max_bytes"
        )
    elif (row := _longest_row(result)) is not None and utf8_size(row.value) >= over:
        # A value written into the table (a pasted log as the pause reason): nothing compaction moves helps, and
        # the maintainer text is beside the point — name the row (only when it alone is what is too much).
        largest = result.section("machine_state")
        assert largest is not None
        where = f"its '{row.label}' value alone {size_text(utf8_size(row.value))}"
        fix = f"statefile edit {program}" if program else "statefile edit PROGRAM"
        advice = (
            f"the Machine State table is {size_text(largest.size)}, {where}; shorten that value where it was written "
            f"(the record's options, or `{fix}`), or raise max_bytes"
        )
    else:
        owned = sorted(((size, label) for label, size, owned in rows if owned), reverse=True)
        biggest = ", ".join(f"'{label}' ({size_text(size)})" for size, label in owned[:3]) or "the Machine State table"
        advice = f"shorten maintainer-owned text such as {biggest}, or raise max_bytes"
    return CompactionBudgetError(
        f"{name} is still {size_text(candidate.size)} after moving everything compaction may move, over max_bytes "
        f"{number_text(policy.max_bytes)} by {number_text(over)} (bytes per section: {table}); {advice}",
        size=candidate.size,
        max_bytes=policy.max_bytes,
        sections=tuple(rows),
    )
