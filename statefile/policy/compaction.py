"""Compaction: keep a state file under its byte budget by policy, deterministically, losing nothing.

``compact(doc, policy)`` folds detailed entries beyond the newest ``keep_recent`` into range lines
(:mod:`statefile.policy.ranges`; each older band broader), merges range lines beyond ``max_ranges``, collapses
duplicate and expired lessons and consolidates Foreclosed Avenues (:mod:`statefile.policy.pruning`); whatever
leaves the file is in ``CompactionResult.archive`` verbatim.  Machine State and maintainer-owned sections are never
touched, and every iteration the input covers is covered exactly once by the output
(:mod:`statefile.policy.planning` resolves overlaps and duplicates).

Over ``aggressive_at`` of the budget, aggressive steps keep fewer entries and ranges and consolidate avenues down
to ``low_water``; over ``max_bytes``, the last resort gives up, one at a time: older entries, range lines and their
summaries, duplicate then oldest unpinned lessons, oldest avenues, and last the newest entry (kept as a range line).
If even that does not fit, :class:`CompactionBudgetError` says which sections take the bytes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import date, datetime
from typing import Any

from statefile import defaults
from statefile.errors import BudgetError, UsageError
from statefile.model.document import StateDocument, parse
from statefile.model.history import Entry, Iteration, IterationRange, OpaqueEntry
from statefile.model.machine_state import table_rows
from statefile.model.patterns import is_bullet_entry, is_placeholder, state_direction
from statefile.model.sections import MAINTAINER_OWNED
from statefile.model.text import clip, detect_newline, line_body, split_lines, utf8_size
from statefile.numbers import budget_text, number_text, plural, size_text
from statefile.policy import pruning, ranges
from statefile.policy.planning import Detail, Group, ends_blank, join_entries, plan_sequence, resolve_history

Summarizer = Callable[[list[dict[str, Any]]], "str | None"]

_TITLE = re.compile(r"^Autoloop:\s*(\S+)")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class CompactionPolicy:
    """How small a state file must be and what compaction may move to get there (sizes in UTF-8 bytes).

    ``aggressive_at`` and ``low_water`` are fractions of ``max_bytes``; ``today`` enables lesson expiry;
    ``summarizer`` may offer shorter range summaries (see :func:`compact`); ``program`` names the archive folder
    range lines point to (default: from the title); ``band_span`` is how many iterations the newest range line
    gathers (older bands twice as many each, see :func:`statefile.policy.planning.plan_sequence`).
    """

    max_bytes: int = defaults.DEFAULT_MAX_BYTES
    keep_recent: int = defaults.KEEP_RECENT
    keep_recent_aggressive: int = defaults.AGGRESSIVE_KEEP
    aggressive_at: float = defaults.AGGRESSIVE_AT
    low_water: float = 0.6
    max_ranges: int = 5
    max_ranges_aggressive: int = 3
    band_span: int = 10
    #: A hard cap on lessons; ``None``: pruned only when the file does not fit otherwise.  ``max_lessons_aggressive``
    #: is kept for compatibility, unused.
    max_lessons: int | None = None
    max_lessons_aggressive: int = 10
    lesson_similarity: float = 0.8
    foreclosed_page_bytes: int = 3072
    foreclosed_similarity: float = 0.6
    max_foreclosed_aggressive: int = 15
    summary_cap: int = defaults.SUMMARY_CAP
    range_text_cap: int = defaults.RANGE_TEXT_CAP
    today: date | None = None
    summarizer: Summarizer | None = None
    program: str | None = None
    #: Where range lines say the folded text is (``Store.archive_hint``); ``None``: ``archive/{program}/``.
    archive_hint: str | None = None
    #: Run the aggressive steps whatever the size (``statefile compact --aggressive``).
    force_aggressive: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.today, datetime):  # a datetime does not compare with dates
            object.__setattr__(self, "today", self.today.date())
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
        data = asdict(self)
        return {**data, "moved": list(data["moved"]), "ranges_written": list(self.ranges_written)}


@dataclass(frozen=True)
class CompactionResult:
    """The compacted document (the input itself when nothing changed), the archive text (everything removed,
    verbatim; ``""`` if nothing) and a report."""

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
    lessons_kept: int = 0
    lessons_unpinned: int = 0
    foreclosed_kept: int = 0
    foreclosed_unpinned: int = 0


_Rendered = tuple[str, list[tuple[tuple[int, int], str]], list[MovedItem]]  # a range line, its archive, its moves


class _Compactor:
    """Everything computed once per ``compact`` call; :meth:`build` renders one candidate for given limits."""

    def __init__(self, doc: StateDocument, policy: CompactionPolicy, program: str | None) -> None:
        self.doc = doc
        self.policy = policy
        self.program = program
        self.newline = detect_newline(doc.render())
        self.direction = state_direction(doc.machine_state)
        self.lines = split_lines(doc.render())
        self.history = resolve_history(doc)
        self.lessons = self._list_info("lessons")
        self.foreclosed = self._list_info("foreclosed")
        self.order_lessons = pruning.newest_last(self.lessons[2] if self.lessons else [])
        self.order_foreclosed = pruning.newest_last(self.foreclosed[2] if self.foreclosed else [])
        self._summaries: dict[tuple[int, ...], str] = {}
        self._histories: dict[tuple[int, int, int, bool, bool], tuple[str | None, _Candidate]] = {}
        self._rendered: dict[tuple[tuple[int, ...], tuple[int, ...], int, bool], _Rendered] = {}

    def _list_info(self, kind: str) -> tuple[int, list[Any], list[str]] | None:
        section = self.doc.section(kind)
        items = self.doc.list_items(kind)
        if section is None or not items:
            return None
        start, end = section.start + items[0].start, section.start + items[-1].end
        if self.history is not None and start < self.history.region[1] and self.history.region[0] < end:
            return None  # never edit across the history's entries
        return section.start, items, [item.text for item in items]

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
            members = [pos for pos, _ in item.range_lines] + [d.pos for d in item.details]
            if len(item.bases) == 1 and item.bases[0].pristine and not item.folded and not params.force_render:
                texts.append((members, history.raws[members[0]], members[0] == last_pos))  # the range line as it is
            else:
                texts.append((members, self._render_group(item, params, candidate, summarize), True))
        for detail, _primary in history.dropped:
            candidate.archive.append(((detail.low, detail.pos), history.raws[detail.pos]))
            candidate.moved.append(
                MovedItem("iteration", _label(detail.entry), f"duplicate of the entry kept for {detail.high}")
            )
        candidate.groups = sum(isinstance(s, Group) for s in sequence)
        # Bullet-form entries stay in front (below a heading they would read as its body), whatever their numbers.
        texts.sort(key=lambda item: not is_bullet_entry(item[1]))
        # Opaque entries follow the entry that was above them in the file, wherever that went.
        where = {pos: index for index, (members, _, _) in enumerate(texts) for pos in members}
        primary_of = {detail.pos: primary for detail, primary in history.dropped}
        after: dict[int, list[tuple[str, bool]]] = defaultdict(list)
        for pos, above in history.anchor.items():
            after[where.get(primary_of.get(above, above), -1)].append((history.raws[pos], pos == last_pos))
        ordered = list(after.get(-1, []))
        for index, (_, text, spaced) in enumerate(texts):
            ordered.append((text, spaced))
            ordered.extend(after.get(index, []))
        return join_entries(ordered, history.tail, self.newline)

    def _render_group(self, group: Group, params: _Params, candidate: _Candidate, summarize: bool) -> str:
        lines, details = group.range_lines, group.details
        key = (tuple(pos for pos, _ in lines), tuple(d.pos for d in details), params.text_cap, summarize)
        if key not in self._rendered:  # stages re-plan the same groups: a 10,000-entry group is rendered once
            self._rendered[key] = self._render_new(lines, details, params, summarize)
        line, archive, moved = self._rendered[key]
        candidate.archive.extend(archive)
        candidate.moved.extend(moved)
        candidate.ranges_written.append(line_body(line))
        return line

    def _render_new(
        self, lines: list[tuple[int, IterationRange]], details: list[Detail], params: _Params, summarize: bool
    ) -> _Rendered:
        history = self.history
        assert history is not None
        bands = [ranges.band_from_range(entry) for _, entry in lines]
        archive = [((entry.first, pos), history.raws[pos]) for pos, entry in lines]
        moved = [MovedItem("range", _label(entry), "merged into a new range line") for _, entry in lines]
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
        reason = f"folded into {line_body(line)[4:].split(' — ', 1)[0]}"  # "Iters 11–40"
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
            short = 0 < len(text) < min(self.policy.summary_cap, len(deterministic))
            self._summaries[key] = text if short and not _LINE_BREAK.search(text) else deterministic
        return self._summaries[key]

    def _list_edit(
        self, info: tuple[int, list[Any], list[str]], plan: pruning.ListPlan, candidate: _Candidate, edits: list[Any]
    ) -> tuple[int, int]:
        """Adds the list's edit under ``plan`` to ``edits``; the bullets it keeps and how many are unpinned."""
        left = [t for k, t in enumerate(info[2]) if k not in plan.remove and not is_placeholder(t)]
        kept = len(left), sum(1 for t in left if not pruning.is_pinned(t))
        if not (plan.remove or plan.rewrite):
            return kept
        start, items, texts = info
        first, last = start + items[0].start, start + items[-1].end
        out: list[str] = []
        line = first
        bounds = {start + item.start: (k, item) for k, item in enumerate(items)}
        while line < last:
            if line in bounds:
                k, item = bounds[line]
                line = start + item.end
                if k not in plan.remove:
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
        kind = "lesson" if info is self.lessons else "avenue"
        heading = "📚 Lessons Learned" if kind == "lesson" else "🚧 Foreclosed Avenues"
        pieces = [f"### {heading} — moved out by compaction{self.newline}"]
        for k in sorted(plan.remove):
            reason = plan.remove[k]
            pieces.append(f"{self.newline}*({reason})*{self.newline}")
            pieces.append(texts[k] if texts[k].endswith(("\n", "\r")) else texts[k] + self.newline)
            candidate.moved.append(MovedItem("foreclosed" if kind == "avenue" else "lesson", _clip(texts[k]), reason))
        if len(pieces) > 1:
            candidate.list_archive.append("".join(pieces))
        edits.append((first, last, "".join(out)))
        return kept

    def build(self, params: _Params, *, summarize: bool = False) -> _Candidate:
        policy = self.policy
        edits: list[tuple[int, int, str]] = []
        # The history depends on these limits only: a last-resort step on the lists does not re-plan it.
        key = (params.keep, params.max_ranges, params.text_cap, params.force_render, summarize)
        if (planned := self._histories.get(key)) is None:
            part = _Candidate("", 0, [], [], [], [])
            planned = self._histories[key] = (self._history_text(params, part, summarize), part)
        history_text, part = planned
        candidate = _Candidate("", 0, [*part.archive], [], [*part.moved], [*part.ranges_written], part.groups)
        if self.history is not None and history_text is not None and history_text != self.history.original:
            edits.append((*self.history.region, history_text))
        if self.lessons is not None:
            plan = pruning.plan_list(
                self.lessons[2],
                "lesson",
                collapse=params.collapse_lessons or params.max_lessons is not None,
                similarity=policy.lesson_similarity,
                limit=params.max_lessons,
                newest_last=self.order_lessons,
                today=policy.today,
                why=params.why,
            )
            candidate.lessons_kept, candidate.lessons_unpinned = self._list_edit(self.lessons, plan, candidate, edits)
        if self.foreclosed is not None:
            texts = self.foreclosed[2]
            page = sum(utf8_size(t) for t in texts) > policy.foreclosed_page_bytes
            plan = pruning.plan_list(
                texts,
                "avenue",
                collapse=page and params.consolidate_always,
                similarity=policy.foreclosed_similarity,
                limit=params.max_foreclosed,
                newest_last=self.order_foreclosed,
                why=params.why,
            )
            kept = self._list_edit(self.foreclosed, plan, candidate, edits)
            candidate.foreclosed_kept, candidate.foreclosed_unpinned = kept
        if edits:
            out: list[str] = []
            at = 0
            for start, end, text in sorted(edits):
                out += ["".join(self.lines[at:start]), text]
                at = end
            out.append("".join(self.lines[at:]))
            candidate.text = "".join(out)
            if self.lines and not self.lines[-1].endswith(("\n", "\r")):  # the file had no final newline
                candidate.text = re.sub(r"(?:\r\n|\r|\n)\Z", "", candidate.text)
        else:
            candidate.text = self.doc.render()
        candidate.size = utf8_size(candidate.text)
        return candidate

    def archive_text(self, candidate: _Candidate) -> str:
        """Everything the candidate removed, verbatim: bullet-form entries, the rest of the history oldest first
        (a chunk is read as a history), then lessons and avenues."""
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
    match = _TITLE.match(title.title or "") if title is not None else None
    return match.group(1) if match else None


def compact(
    doc: StateDocument, policy: CompactionPolicy | None = None, *, program: str | None = None
) -> CompactionResult:
    """Compact ``doc`` under ``policy`` (default :class:`CompactionPolicy`); pure.

    The result is at most ``policy.max_bytes`` (else :class:`CompactionBudgetError`); every iteration the input
    covers is covered exactly once; Machine State and maintainer-owned sections are byte-identical; compacting the
    result again changes nothing.  A file with an unclosed fence is refused (InvalidDataError).  A
    ``policy.summarizer`` gets each new range line's folded entries as dicts; its answer is used only when it is one
    line, shorter than ``summary_cap`` and than ours (decisions are made with ours, so it can only shrink the file).
    """
    policy = policy or CompactionPolicy()
    doc.require_closed_blocks("compact this file")
    name = program or policy.program or program_name(doc)
    work = _Compactor(doc, policy, name)
    params = _Params(policy.keep_recent, policy.max_ranges, policy.range_text_cap, policy.max_lessons)
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
        if (step := _last_resort_step(work, replace(params, why=_OVER_BUDGET), candidate)) is None:
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
    moved, written = tuple(candidate.moved), tuple(candidate.ranges_written)
    report = CompactionReport(
        doc.size, candidate.size, policy.max_bytes, changed, aggressive, last_resort, moved, written
    )
    return CompactionResult(document=document, archive=work.archive_text(candidate), report=report)


_AGGRESSIVE = "(the file was above the aggressive threshold of its budget)"
_OVER_BUDGET = "(the file was over its byte budget)"
_UNTITLED = {"preamble": "(text before the first heading)"}


def _prune_lists(work: _Compactor, params: _Params, candidate: _Candidate) -> tuple[_Params, _Candidate]:
    """Aggressive, still above low water: avenues consolidate, then the oldest go (as few as needed); lessons stay."""
    policy = work.policy
    threshold = policy.aggressive_bytes
    params = replace(params, consolidate_always=True, why=_AGGRESSIVE)
    candidate = work.build(params)
    if candidate.size <= threshold or candidate.foreclosed_kept <= policy.max_foreclosed_aggressive:
        return params, candidate
    floor = replace(params, max_foreclosed=policy.max_foreclosed_aggressive)
    found = floor, work.build(floor)
    if found[1].size > threshold:
        return found
    return _largest(work, "max_foreclosed", candidate.foreclosed_kept, threshold, found)


def _largest(
    work: _Compactor, name: str, high: int, limit: int, found: tuple[_Params, _Candidate]
) -> tuple[_Params, _Candidate]:
    """The largest value of limit ``name`` in ``[found's, high]`` whose candidate fits ``limit`` bytes, by bisection."""
    base = found[0]
    low = getattr(base, name)
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
    if free == 1:  # the newest entry becomes a range line, which the next steps merge and shorten
        return replace(params, keep=0)
    return None


def _take_back(
    work: _Compactor, params: _Params, candidate: _Candidate, ceiling: _Params
) -> tuple[_Params, _Candidate]:
    """After the newest entry folded, take back what went before it as the budget allows, up to ``ceiling``."""
    max_bytes = work.policy.max_bytes
    for name, info in (("max_foreclosed", work.foreclosed), ("max_lessons", work.lessons)):
        total = len(info[1]) if info is not None else 0
        cap = getattr(ceiling, name)
        high = total if cap is None else min(cap, total)
        if getattr(params, name) is not None and getattr(params, name) < high:
            params, candidate = _largest(work, name, high, max_bytes, (params, candidate))
    if params.force_render and not ceiling.force_render:
        trial_params = replace(params, force_render=False, text_cap=ceiling.text_cap)
        trial = work.build(trial_params)
        if trial.size <= max_bytes:
            params, candidate = trial_params, trial
    return params, candidate


def _budget_error(
    doc: StateDocument, candidate: _Candidate, policy: CompactionPolicy, program: str | None
) -> CompactionBudgetError:
    """The error for a file that cannot fit: its size, a per-section byte table and what to do."""
    result = parse(candidate.text)
    rows = [(s.title or _UNTITLED.get(s.kind, s.kind), s.size, s.kind in MAINTAINER_OWNED) for s in result.sections]
    table = "; ".join(
        f"{label} {number_text(size)}{' [maintainer-owned]' if owned else ''}" for label, size, owned in rows
    )
    over = candidate.size - policy.max_bytes
    name = f"{program}.md" if program else "the state file"
    fix = f"statefile edit {program}" if program else "statefile edit PROGRAM"
    table_section = result.section("machine_state")
    longest = max(
        table_rows(list(table_section.lines)) if table_section else [], key=lambda r: utf8_size(r.value), default=None
    )
    # Entries compaction cannot fold (opaque headings): when they are what stands in the way, name them.
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
        advice = (
            f"the history holds {plural(len(opaque), 'entry', 'entries')} compaction cannot fold, largest {named}; "
            f"fix their headings (or remove them) with `{fix}`, or raise max_bytes"
        )
    elif table_section and longest and utf8_size(longest.value) >= over:  # a pasted log as a value
        where = f"its '{longest.label}' value alone {size_text(utf8_size(longest.value))}"
        advice = (
            f"the Machine State table is {size_text(table_section.size)}, {where}; shorten that value where it was "
            f"written (the record's options, or `{fix}`), or raise max_bytes"
        )
    else:
        owned = sorted(((size, label) for label, size, owned in rows if owned), reverse=True)
        biggest = ", ".join(f"'{label}' ({size_text(size)})" for size, label in owned[:3]) or "the Machine State table"
        advice = f"shorten maintainer-owned text such as {biggest}, or raise max_bytes"
    message = (
        f"{name} is still {size_text(candidate.size)} after moving everything compaction may move, over max_bytes "
        f"{number_text(policy.max_bytes)} by {number_text(over)} (bytes per section: {table}); {advice}"
    )
    return CompactionBudgetError(message, size=candidate.size, max_bytes=policy.max_bytes, sections=tuple(rows))
