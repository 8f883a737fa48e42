"""The view of a state file an agent should read: budgeted, with a fixed drop order and a notice of what is missing.

``render_view`` cuts the file into *units* (a Machine State line, a lesson bullet, an iteration entry, …), keeps
them by (tier, rank) while they fit, prints the kept ones in file order and ends with one notice line saying what
was left out and what shows it; it never returns more than its budget.  Levels: ``core`` (gh-aw's ``memory.md``:
state, priorities, pinned and important lessons, the newest :data:`NEWEST_IN_CORE` iterations, one index line for
the older history, foreclosed avenues one line each), ``index`` (a few hundred characters), ``timeline`` (one line
per history entry) and ``full``.

Tiers of ``full`` (dropped last first): 0 Machine State and Current Priorities, line by line; 1 Program Info, then
pinned lessons (the program's, then the shared ones); 2 the three newest detailed iterations; 3 lessons newest
first, then shared ones, agent-reported bullets last; 4 foreclosed avenues; 5 older iterations (one line when the
whole entry does not fit); 6 range lines and other entries; 7 everything else.  A tier shows only when every tier
above it fits; within a tier a long unit may be skipped, except in the history, which stays a gap-free run.
Template boilerplate (rules, banners, intro sentences, comments, placeholders) is never shown.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from statefile.errors import UsageError
from statefile.model import spans as intervals
from statefile.model.blocks import CODE, FENCE, HEADING, HTML, ITEM, PARAGRAPH, QUOTE, RULE, Block, outline
from statefile.model.document import StateDocument
from statefile.model.history import Entry, Iteration, IterationRange
from statefile.model.patterns import STATUS_GLYPHS, heading_words, is_agent_bullet, is_placeholder, state_direction
from statefile.model.sections import SECTION_KINDS
from statefile.model.spans import Span, merge, size, spans_text
from statefile.model.text import line_body, split_lines
from statefile.numbers import number_text, plural, size_text
from statefile.policy.pruning import is_important, is_pinned
from statefile.views.hints import CLI, Hints

# The render defaults every caller shares (render, the MCP server, gh-aw's prepare).
LEVELS = ("core", "index", "timeline", "full")
DEFAULT_LEVEL: Final = "full"
DEFAULT_BUDGET = 8000
#: Below this a view cannot hold even a status line and the notice.
MIN_BUDGET = 200
MAX_BUDGET = 200_000
#: ``memory.md``'s budget: benchmarks/bench_tokens.py's replays hold the core view whole in 118 of 126 iterations.
CORE_BUDGET = 3000
NEWEST_IN_CORE = 2
NEWEST_IN_FULL = 3
# Added to an agent-marked bullet's rank: past every unmarked one (shared lessons start at 10**6).
_AGENT_RANK = 10**8
LINE_WIDTH = 140
INDEX_WIDTH = 100

_BOILERPLATE = frozenset(
    {
        "Key findings and insights accumulated across iterations.",
        "Approaches that have been conclusively ruled out, with reasons.",
        "Ideas for future iterations, from maintainers and the agent.",
        "All iterations in reverse chronological order (newest first).",
    }
)
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$", re.S)
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class RenderedView:
    """A rendered view: ``text`` (≤ budget characters, ending in the notice line) and what it left out."""

    text: str
    omitted: list[str]
    level: str
    budget: int
    full_chars: int  # the budget --level full needs to show everything

    @property
    def chars(self) -> int:
        """Characters in ``text`` (what the budget limits)."""
        return len(self.text)


@dataclass
class _Group:
    key: str
    order: float
    header: list[str]


@dataclass
class _Unit:
    group: str
    order: int
    tier: int
    rank: int
    lines: list[str]
    alt: list[str] | None = None
    category: str = "section"
    spans: tuple[Span, ...] = ()  # the iteration numbers an entry stands for, as intervals (ranges are unbounded)
    title: str = ""


@dataclass
class _Model:
    groups: dict[str, _Group] = field(default_factory=dict)
    units: list[_Unit] = field(default_factory=list)

    def group(self, key: str, order: float, header: list[str]) -> str:
        self.groups.setdefault(key, _Group(key, order, header))
        return key

    def add(self, unit: _Unit) -> None:
        unit.order = len(self.units)
        self.units.append(unit)


def render_view(
    doc: StateDocument,
    *,
    program: str,
    budget: int = DEFAULT_BUDGET,
    level: str = DEFAULT_LEVEL,
    shared: StateDocument | None = None,
    hints: Hints = CLI,
) -> RenderedView:
    """The view of ``doc`` an agent should read, at most ``budget`` characters, with the lessons of ``shared``
    (``_shared.md``); ``hints`` names what shows the rest.  A usage error for an unknown level or a tiny budget."""
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r}; use one of: {', '.join(LEVELS)}")
    if budget < MIN_BUDGET:
        raise UsageError(f"budget {budget} is too small; give --budget {MIN_BUDGET} or more (characters)")
    name = _clean(" ".join(program.split()))[:100] or "PROGRAM"
    model = _full_model(doc, shared, name)
    full_chars = _full_size(model)
    if level in ("full", "timeline"):
        shown, by_design = (model, []) if level == "full" else _timeline_model(model)
    else:
        shown, by_design = (_core_model if level == "core" else _index_model)(doc, model, name)
    # Everything if it fits with the short notice; else room kept for a real notice.
    chosen, used = _pack(shown, budget - len(_COMPLETE) - 1)
    if len(chosen) < len(shown.units):
        chosen, used = _pack(shown, budget - min(400, max(100, budget // 8)))
    omitted = by_design + _describe_omitted(shown, chosen)
    # The expand hint names the newest iteration left out whose whole entry is in this file (a range's may not be
    # archived anywhere).
    iterations = [u for u in model.units if u.category == "iteration"]
    if level == "full":  # left out, or shown as its one line (``shown`` is ``model``)
        hidden = [n for u in iterations if chosen.get(u.order, u.alt) is u.alt for n in u.spans]
    elif level == "core":
        whole = {n for u in shown.units if u.category == "iteration" and chosen.get(u.order) is u.lines
                 for n in u.spans}  # fmt: skip
        hidden = [n for u in iterations for n in u.spans if n not in whole]
    else:
        hidden = [n for u in iterations for n in u.spans]
    notice = _notice(name, level, omitted, hidden, full_chars, budget - used - 1, hints)
    lines = _assemble(shown, chosen)
    if notice:
        lines.append(notice)
    text = "".join(line + "\n" for line in lines)
    assert len(text) <= budget, (len(text), budget)
    return RenderedView(text=text, omitted=omitted, level=level, budget=budget, full_chars=full_chars)


# -- building the model ------------------------------------------------------------------------------------------


def _clean(line: str) -> str:
    """One output line: no line ending or trailing blanks, undecodable bytes as U+FFFD."""
    return _SURROGATE.sub("\ufffd", line_body(line).rstrip())


def _is_filler(block: Block, text: str) -> bool:
    """A rule or a whole comment."""
    return block.kind == RULE or (block.kind == HTML and _COMMENT.match(text) is not None)


def _says_nothing(block: Block, lines: Sequence[str]) -> bool:
    """Template boilerplate: rules, whole comments, placeholders, intro sentences and the 🤖 notes."""
    text = "".join(lines[block.start : block.end]).strip()
    if _is_filler(block, text) or (block.kind in (PARAGRAPH, ITEM) and (is_placeholder(text) or text in _BOILERPLATE)):
        return True
    return block.kind in (PARAGRAPH, QUOTE) and text.lstrip("> ").startswith("🤖")


def _block_lines(block: Block, lines: Sequence[str]) -> list[str]:
    """A block's lines for display: cleaned, blank lines dropped except inside code."""
    shown = [_clean(line) for line in lines[block.start : block.end]]
    return shown if block.kind in (FENCE, CODE) else [line for line in shown if line.strip()]


def _units_of(lines: Sequence[str]) -> list[list[str]]:
    """A section body as display units (items, paragraphs, code); a sub-heading's unit runs to the next one."""
    units: list[list[str]] = []
    heading: list[str] | None = None
    for block in outline("".join(lines)):
        if block.kind == HEADING:
            heading = _block_lines(block, lines)
            units.append(heading)
        elif _says_nothing(block, lines):
            continue
        elif heading is not None:
            heading.extend(_block_lines(block, lines))
        else:
            units.append(_block_lines(block, lines))
    return units


def _entry_lines(entry: Entry) -> list[str]:
    """An entry's lines for display, without blank lines, rules and whole comments."""
    lines = split_lines(entry.raw)
    blocks = outline(entry.raw, lists=False)
    kept = (b for b in blocks if not _is_filler(b, "".join(lines[b.start : b.end])))
    return [line for block in kept for line in _block_lines(block, lines)]


def _cut(text: str, width: int = LINE_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _first_body_line(entry: Entry) -> str:
    lines = split_lines(entry.raw)
    for block in outline(entry.raw, lists=False):
        if block.start == 0 or _says_nothing(block, lines) or block.kind == HTML:
            continue
        text = _clean(lines[block.start]).strip().lstrip("-*+ ").replace("**", "")
        if text:
            return text
    return ""


def entry_line(entry: Entry, width: int = LINE_WIDTH) -> str:
    """A history entry as one ``- #N …`` line: number, status, date, metric and what was tried."""
    if isinstance(entry, Iteration):
        numbers = entry.numbers or (entry.number,)
        head = "#" + "+".join(str(n) for n in numbers)
        if entry.status:
            head += f" {STATUS_GLYPHS.get(entry.status, '•')} {entry.status}"
        parts = [head]
        if entry.when:
            parts.append(entry.when[:10])
        if entry.metric:
            parts.append(f"metric {entry.metric}")
        what = entry.change or entry.notes or _first_body_line(entry) or heading_words(entry.heading)
        text = " · ".join(parts) + (f": {what}" if what else "")
    elif isinstance(entry, IterationRange):
        # The range line's own text already carries its status glyph and metric band.
        text = f"#{entry.first}–{entry.last}" + (f" {entry.summary}" if entry.summary else "")
    else:
        text = entry.heading.lstrip("#").strip() or _first_body_line(entry)
    return "- " + _cut(_clean(text), width - 2)


def _full_model(doc: StateDocument, shared: StateDocument | None, program: str) -> _Model:
    model = _Model()
    model.add(_Unit(model.group("title", -1, []), 0, 0, 0, [f"# Autoloop: {program} — memory view"], category="title"))
    cut = doc.history_start
    seen: set[str] = set()
    shared_at = float(len(doc.sections))
    for index, section in enumerate(doc.sections):
        body: Sequence[str] = section.lines[1:] if section.title is not None else section.lines
        if cut is not None and cut[0] == index:
            body = section.lines[1 : cut[1]]
        kind = section.kind if section.kind not in seen else "other"
        seen.add(section.kind)
        if kind == "title":
            body = [line for line in body if not line.lstrip().startswith("🤖")]
            _add_section(model, index, None, body, label="text under the title")
        elif kind in ("machine_state", "priorities"):
            key = model.group(kind, index, ["", SECTION_KINDS[kind][0]])
            for block in outline("".join(body)):
                if not _says_nothing(block, body):
                    for line in _block_lines(block, body):
                        model.add(_Unit(key, 0, 0, len(model.units), [line], category="state"))
        elif kind == "lessons":
            key = model.group("lessons", index, ["", SECTION_KINDS["lessons"][0]])
            _add_items(model, key, body, pinned_tier=1, tier=3, rank_base=0, category="lesson")
            shared_at = index + 0.5
        elif kind == "foreclosed":
            key = model.group("foreclosed", index, ["", SECTION_KINDS["foreclosed"][0]])
            _add_items(model, key, body, pinned_tier=4, tier=4, rank_base=0, category="foreclosed")
        elif kind == "history":
            _add_section(model, index, section.title, body, label="history intro")
        elif kind == "program_info":
            _add_section(model, index, section.title, body, label=section.title or "Program Info", tier=1, rank=-1)
        else:
            _add_section(model, index, section.title, body, label=section.title or "(before the title)")
        if cut is not None and cut[0] == index:
            _add_history(model, doc, index + 0.25)
    shared_lessons = shared.section("lessons") if shared is not None else None
    if shared_lessons is not None:
        key = model.group("shared", shared_at, ["", "## 📚 Shared lessons (_shared.md)"])
        _add_items(model, key, shared_lessons.lines[1:], pinned_tier=1, tier=3, rank_base=10**6, category="shared")
    return model


def _add_items(
    model: _Model, key: str, body: Sequence[str], *, pinned_tier: int, tier: int, rank_base: int, category: str
) -> None:
    units = _units_of(body)
    for position, lines in enumerate(units):
        pinned = is_pinned("\n".join(lines))
        # Agents append at the bottom: the last bullet is the newest.
        rank = rank_base + len(units) - position
        if lines and is_agent_bullet(lines[0]):
            # An agent's bullet (apply marks it) goes after every maintainer's: the first to go when short.
            rank += _AGENT_RANK
        model.add(_Unit(key, 0, pinned_tier if pinned else tier, rank, lines, category=category))


def _add_section(
    model: _Model,
    index: int,
    heading: str | None,
    body: Sequence[str],
    *,
    label: str,
    tier: int = 7,
    rank: int | None = None,
) -> None:
    units = _units_of(body)
    if not units:
        return
    header = ["", f"## {_clean(heading)}"] if heading is not None else [""]
    key = model.group(f"section{index}", index, header)
    for position, lines in enumerate(units):
        order = index * 100_000 + position if rank is None else rank * 10**9 + position
        model.add(_Unit(key, 0, tier, order, lines, category="section", title=label))


def _add_history(model: _Model, doc: StateDocument, order: float) -> None:
    key = model.group("history", order, ["", SECTION_KINDS["history"][0] + " (newest first)"])
    entries = doc.history
    newest = sorted((e for e in entries if isinstance(e, Iteration)), key=lambda e: max(e.covers), reverse=True)
    top = {id(e) for e in newest[:NEWEST_IN_FULL]}
    for position, entry in enumerate(entries):
        covers = tuple(entry.spans)
        tier = (2 if id(entry) in top else 5) if isinstance(entry, Iteration) else 6
        category = {Iteration: "iteration", IterationRange: "range"}.get(type(entry), "other entry")
        rank = -intervals.highest(covers) * 10_000 + position
        model.add(_Unit(key, 0, tier, rank, _entry_lines(entry), [entry_line(entry)], category=category, spans=covers))


# -- levels ------------------------------------------------------------------------------------------------------


def _timeline_model(full: _Model) -> tuple[_Model, list[str]]:
    model = _Model(groups=dict(full.groups))
    dropped: list[_Unit] = []
    for unit in full.units:
        if unit.tier == 0:
            model.add(replace(unit))
        elif unit.group == "history" and unit.alt is not None:
            model.add(replace(unit, lines=unit.alt, alt=None, tier=1))
        else:
            dropped.append(unit)
    by_design = _summaries(dropped, degraded=[])
    if any(u.group == "history" for u in model.units):
        by_design.insert(0, "entry details (one line each here)")
    return model, by_design


def _index_model(doc: StateDocument, full: _Model, program: str) -> tuple[_Model, list[str]]:
    state = doc.machine_state
    model = _Model()
    key = model.group("index", 0, [])

    def add(text: str, tier: int) -> None:
        indent = text[: len(text) - len(text.lstrip())]
        line = indent + _cut(_clean(text), INDEX_WIDTH - len(indent))
        model.add(_Unit(key, 0, tier, len(model.units), [line], category="index"))

    add(f"# Autoloop: {program} — memory index", 0)
    if not state:
        add("- status: unknown (no Machine State table)", 0)
    else:
        status, why = ("completed", "completed_reason") if state.get("completed") else ("paused", "pause_reason")
        status = status + (f" ({state[why]})" if state.get(why) else "") if state.get(status) else "active"
        errors = state.get("consecutive_errors") or 0
        add(
            f"- status: {status}; iteration {state.get('iteration_count', '—')}"
            + f"; last run {state.get('last_run') or '—'}"
            + (f"; {plural(errors, 'consecutive error')}" if errors else ""),
            0,
        )
        direction = state_direction(state)
        target = state.get("target_metric")
        add(
            f"- best metric: {state.get('best_metric') or '—'} ({direction} is better"
            + (f"; target {target})" if target else ")"),
            0,
        )
    priorities = [u for u in full.units if u.group == "priorities"]
    if priorities:
        more = f" (+{plural(len(priorities) - 1, 'more line')})" if len(priorities) > 1 else ""
        add(f"- priorities: {_cut(priorities[0].lines[0], 90)}{more}", 0)
    counts = Counter(u.category for u in full.units)
    lessons = counts.get("lesson", 0) + counts.get("shared", 0)
    highest = doc.highest_iteration
    add(
        f"- memory: {plural(counts.get('iteration', 0), 'iteration')}, {plural(counts.get('range', 0), 'range')}"
        + (f" (up to #{highest})" if highest else "")
        + f", {plural(lessons, 'lesson')}"
        + (f" ({number_text(counts['shared'])} shared)" if counts.get("shared") else "")
        + f", {number_text(counts.get('foreclosed', 0))} foreclosed; {size_text(doc.size)}",
        1,
    )
    recent = _newest(full, "iteration", NEWEST_IN_FULL) or _newest(full, "range", NEWEST_IN_FULL)
    for position, unit in enumerate(recent):
        assert unit.alt is not None
        add(("- last outcomes: " if position == 0 else "  ") + unit.alt[0][2:], 2)
    shown = {u.order for u in recent}
    by_design = ["the Machine State table (summarized)"]
    if len(priorities) > 1:
        by_design.append(f"{len(priorities) - 1} more lines of Current Priorities")
    by_design += _summaries([u for u in full.units if u.tier != 0 and u.order not in shown], degraded=[])
    return model, by_design


def _core_model(doc: StateDocument, full: _Model, program: str) -> tuple[_Model, list[str]]:
    """Tiers: state 0; pinned/important lessons and the older history's line 1; newest iterations 2; foreclosed 3."""
    model = _Model(groups=dict(full.groups))
    model.groups["title"] = _Group("title", -1, [])
    model.add(_Unit("title", 0, 0, 0, [f"# Autoloop: {program} — memory"], category="title"))
    kept = {u.order for u in _newest(full, "iteration", NEWEST_IN_CORE)}
    for unit in full.units:
        if unit.tier == 0 and unit.category == "state":
            model.add(replace(unit))
        elif unit.category in ("lesson", "shared") and (is_pinned("\n".join(unit.lines)) or is_important(
                "\n".join(unit.lines))):  # fmt: skip
            model.add(replace(unit, tier=1))
            kept.add(unit.order)
        elif unit.order in kept:
            model.add(replace(unit, tier=2))
        elif unit.category == "foreclosed":
            model.add(replace(unit, lines=[_cut(" ".join(unit.lines))], alt=None, tier=3))
            kept.add(unit.order)
    older = [u for u in full.units if u.category in ("iteration", "range", "other entry") and u.order not in kept]
    if older:
        model.groups["older"] = _Group("older", full.groups["history"].order + 0.1, [])
        model.add(_Unit("older", 0, 1, 0, [_older_line(doc, older)], category="index"))
    by_design = _summaries([u for u in full.units if u.order not in kept and u.tier != 0
                            and u.category not in ("iteration", "range", "other entry")], degraded=[])  # fmt: skip
    if older:
        by_design.insert(0, "older iterations (indexed above)")
    return model, by_design


def _older_line(doc: StateDocument, older: Sequence[_Unit]) -> str:
    """``- older: 59 iterations (#1–59); 9 detailed (5 accepted, …); the rest in 3 range lines and the archive``."""
    spans = [n for u in older for n in u.spans]
    numbers = {n for u in older if u.category == "iteration" for n in u.spans}
    statuses = Counter(e.status for e in doc.iterations if e.status and any(span in numbers for span in e.spans))
    iterations = [u for u in older if u.category == "iteration"]
    ranges = [u for u in older if u.category == "range"]
    parts = [f"{plural(size(merge(spans)), 'iteration')} ({_spans(spans)})"] if spans else []
    if iterations:
        counts = ", ".join(f"{number_text(n)} {word}" for word, n in statuses.most_common())
        parts.append(f"{number_text(len(iterations))} detailed" + (f" ({counts})" if counts else ""))
    if ranges:
        parts.append(f"the rest in {plural(len(ranges), 'range line')} and the archive")
    return "- older: " + "; ".join(parts)


def _newest(model: _Model, category: str, count: int) -> list[_Unit]:
    return sorted((u for u in model.units if u.category == category), key=lambda u: intervals.highest(u.spans),
                  reverse=True)[:count]  # fmt: skip


# -- packing and the notice --------------------------------------------------------------------------------------


def _cost(lines: Sequence[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def _pack(model: _Model, room: int) -> tuple[dict[int, list[str]], int]:
    """Fill by (tier, rank), each unit whole or as its one line; nothing below a tier with a unit left out (but 0)."""
    chosen: dict[int, list[str]] = {}
    opened: set[str] = set()
    blocked: set[int] = set()
    cut = None
    used = 0
    for unit in sorted(model.units, key=lambda u: (u.tier, u.rank, u.order)):
        if unit.tier in blocked or (cut is not None and unit.tier > cut):
            continue
        head = 0 if unit.group in opened else _cost(model.groups[unit.group].header)
        for form in (unit.lines, unit.alt):
            if form is not None and used + head + _cost(form) <= room:
                chosen[unit.order] = form
                used += head + _cost(form)
                opened.add(unit.group)
                break
        else:
            if unit.tier > 0:
                cut = unit.tier
            if unit.group == "history":
                # A gap in the history would read as a missing iteration.
                blocked.add(unit.tier)
    return chosen, used


def _assemble(model: _Model, chosen: dict[int, list[str]]) -> list[str]:
    lines: list[str] = []
    for group in sorted(model.groups.values(), key=lambda g: g.order):
        members = [u for u in model.units if u.group == group.key and u.order in chosen]
        if not members:
            continue
        lines.extend(group.header)
        for unit in members:
            lines.extend(chosen[unit.order])
    return lines


def _full_size(model: _Model) -> int:
    return _cost(_assemble(model, {u.order: u.lines for u in model.units})) + len(_COMPLETE) + 1


_COMPLETE = "[statefile] complete: nothing left out"


def _spans(spans: Iterable[Span]) -> str:
    """``#1–3, #7, #9–10``, or ``#1–97 (40 in 12 runs)`` when there are many gaps."""
    runs = merge(spans)
    if len(runs) > 4:
        return f"#{runs[0][0]}–{runs[-1][1]} ({number_text(size(runs))} in {plural(len(runs), 'run')})"
    return spans_text(runs, mark="#", limit=len(runs))


_PLURALS = {
    "iteration": ("iteration", "iterations"),
    "range": ("range", "ranges"),
    "other entry": ("other history entry", "other history entries"),
    "lesson": ("lesson", "lessons"),
    "shared": ("shared lesson", "shared lessons"),
    "foreclosed": ("foreclosed avenue", "foreclosed avenues"),
    "state": ("line of Machine State/Current Priorities", "lines of Machine State/Current Priorities"),
}


def _label(unit: _Unit) -> str:
    return unit.category if unit.category in _PLURALS else f"section:{unit.title or 'text'}"


def _summaries(omitted: Sequence[_Unit], *, degraded: Sequence[_Unit], everything: Sequence[_Unit] = ()) -> list[str]:
    """Left-out units by kind (``7 of 20 lessons``; ``everything``: the view's units, for the "of")."""
    out: list[str] = []
    if degraded:
        nums = [n for u in degraded for n in u.spans]
        out.append(f"full text of {plural(len(degraded), 'entry', 'entries')} ({_spans(nums)}; one line each here)")
    totals = Counter(_label(unit) for unit in everything)
    by_label: dict[str, list[_Unit]] = {}
    for unit in omitted:
        if unit.category not in ("title", "index"):
            by_label.setdefault(_label(unit), []).append(unit)
    for label, units in by_label.items():
        count = len(units)
        total = totals.get(label, count)
        of = f"{number_text(count)} of {number_text(total)}" if total > count else number_text(count)
        if label in _PLURALS:
            one, many = _PLURALS[label]
            text = f"{of} {one if total == 1 else many}"
            nums = [n for u in units for n in u.spans]
            if nums and label in ("iteration", "range"):
                text += f" ({_spans(nums)})"
        else:
            text = f"{label.split(':', 1)[1]} ({of} part{'s' if total != 1 else ''})"
        out.append(text)
    return out


def _describe_omitted(model: _Model, chosen: dict[int, list[str]]) -> list[str]:
    omitted = [u for u in model.units if u.order not in chosen]
    degraded = [u for u in model.units if u.order in chosen and u.alt is not None and chosen[u.order] is u.alt]
    return _summaries(omitted, degraded=degraded, everything=model.units)


def _notice(
    program: str, level: str, omitted: list[str], hidden: list[Span], full_chars: int, room: int, hints: Hints = CLI
) -> str:
    """The last line: what was left out and what shows it, the longest form ``room`` allows."""
    newest_hidden = intervals.highest(hidden) if hidden else None
    expand = [hints.expand(program, newest_hidden)] if newest_hidden is not None else []
    if not omitted:
        options = [_COMPLETE]
    elif level == "index":
        wider = hints.view(program, "timeline")
        options = [
            f"[statefile] index only — more: {wider}" + (f" · {expand[0]}" if expand else ""),
            f"[statefile] index only — more: {wider}",
            "[statefile] index only; more with " + (wider if hints.tools else "--level timeline"),
        ]
    else:
        if level == "core":
            steps = [hints.search(program), *expand, hints.view(program, "timeline")]
        elif level == "full":
            cli = f"{hints.prefix} render {program} --budget {full_chars}"
            steps = [*expand, hints.view(program, "full") if hints.tools else cli]
        else:
            steps = [*expand, hints.view(program, "full"), *([] if hints.tools else [
                f"{hints.prefix} render {program} --level full --budget {full_chars}"])]  # fmt: skip
        see = " — more: " + " · ".join(steps)
        last = steps[-1]
        options = [
            "[statefile] left out: " + "; ".join(omitted) + see,
            "[statefile] left out: " + "; ".join(_short(o) for o in omitted) + see,
            f"[statefile] {level} only — more: " + " · ".join(steps),
            f"[statefile] left out {len(omitted)} kinds of content — more: {last}",
            f"[statefile] view cut to fit — more: {last}"
            if hints.tools
            else "[statefile] view cut to fit the budget; rerun statefile render with a larger --budget",
            "[statefile] view cut to fit",
        ]
    return next((o for o in options if len(o) <= room), "")


def _short(description: str) -> str:
    """``5 iterations (#90–97)`` → ``5 iterations``: numbers go first when the notice is tight."""
    return re.sub(r"\s*\([^)]*\)", "", description)
