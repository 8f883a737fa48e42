"""The view of a state file an agent should read, never over its budget, and the hints naming what shows the rest.

``render_view`` keeps *units* (a Machine State line, a lesson bullet, an iteration entry, …) by (tier, rank) while
they fit, prints them in file order and ends with one notice line: what was left out and what shows it.  Levels:
``core`` (gh-aw's ``memory.md``), ``index`` (a few hundred characters), ``timeline`` (one line per entry) and ``full``,
whose tiers (dropped last first) are: 0 Machine State and Current Priorities; 1 Program Info, pinned lessons; 2 the
newest detailed iterations; 3 lessons, shared ones after, agents' bullets last; 4 foreclosed avenues; 5 older
iterations (one line when the whole entry does not fit); 6 range lines and other entries; 7 everything else.  A tier
shows only when every tier above it fits; the history stays a gap-free run; template boilerplate never shows."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from statefile.errors import UsageError
from statefile.model import history as intervals
from statefile.model.blocks import CODE, FENCE, HEADING, HTML, ITEM, PARAGRAPH, QUOTE, RULE, Block, outline
from statefile.model.document import StateDocument
from statefile.model.history import Entry, Iteration, IterationRange, Span, merge, size, spans_text
from statefile.model.patterns import STATUS_GLYPHS, heading_words, is_agent_bullet, is_placeholder, state_direction
from statefile.model.template import FORECLOSED_INTRO, FUTURE_INTRO, HISTORY_INTRO, LESSONS_INTRO, SECTION_KINDS
from statefile.model.text import line_body, split_lines
from statefile.numbers import number_text, plural, size_text
from statefile.policy.compaction import is_important, is_pinned

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

_BOILERPLATE = frozenset({LESSONS_INTRO, FORECLOSED_INTRO, FUTURE_INTRO, HISTORY_INTRO})
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$", re.S)
_SURROGATE = re.compile("[\ud800-\udfff]")
# A list section's units: (tier when pinned, tier, rank base); shared lessons rank after the program's.
_LIST_TIERS = {"lesson": (1, 3, 0), "shared": (1, 3, 10**6), "foreclosed": (4, 4, 0)}
_COMPLETE = "[statefile] complete: nothing left out"
_PLURALS = {
    "iteration": ("iteration", "iterations"),
    "range": ("range", "ranges"),
    "other entry": ("other history entry", "other history entries"),
    "lesson": ("lesson", "lessons"),
    "shared": ("shared lesson", "shared lessons"),
    "foreclosed": ("foreclosed avenue", "foreclosed avenues"),
    "state": ("line of Machine State/Current Priorities", "lines of Machine State/Current Priorities"),
}
# Hints: a maintainer's commands (CLI) or, as its checkout has no memory branch, a gh-aw agent's tool calls (TOOLS).
TOOL_SEARCH = "statefile_search"
TOOL_EXPAND = "statefile_expand"
TOOL_HISTORY = "statefile_history"
TOOL_VIEW = "statefile_view"
TOOL_NAMES = (TOOL_SEARCH, TOOL_EXPAND, TOOL_HISTORY, TOOL_VIEW)
HINT_STYLES = ("cli", "tools")


def _call(tool: str, **inputs: object) -> str:
    """``statefile_expand(iteration: 57)``, values in JSON so a query with quotes stays one value."""
    return f"{tool}({', '.join(f'{name}: {json.dumps(value, ensure_ascii=False)}' for name, value in inputs.items())})"


@dataclass(frozen=True)
class Hints:
    """Next steps as commands (``prefix``: ``statefile`` and its global options) or, with ``tools``, tool calls."""

    prefix: str = "statefile"
    tools: bool = False

    def expand(self, program: str, iteration: int) -> str:
        """Show one iteration verbatim."""
        return _call(TOOL_EXPAND, iteration=iteration) if self.tools else f"{self.prefix} expand {program} {iteration}"

    def view(self, program: str, level: str) -> str:
        """A wider view (``timeline``: one line per entry; ``full``: everything)."""
        return _call(TOOL_VIEW, level=level) if self.tools else f"{self.prefix} render {program} --level {level}"

    def search(self, program: str, query: str = "…") -> str:
        """Search the program's memory, archive and shared lessons included."""
        return _call(TOOL_SEARCH, query=query) if self.tools else f'{self.prefix} search "{query}" --program {program}'

    def more(self, tool: str, command: str, offset: int, **inputs: object) -> str:
        """The same call from ``offset`` on: the tool with its other ``inputs``, or ``command`` (after the prefix)."""
        return _call(tool, **inputs, offset=offset) if self.tools else f"{self.prefix} {command} --offset {offset}"


CLI = Hints()
TOOLS = Hints(tools=True)


def page(text: str, *, max_chars: int, offset: int = 0) -> tuple[str, int | None]:
    """``text`` from ``offset``, at most ``max_chars`` (a tool's answer reaches a model whole), and the next offset."""
    rest = text[offset:]
    if len(rest) <= max_chars:
        return rest, None
    end = cut + 1 if (cut := rest.rfind("\n", 0, max_chars)) >= max_chars // 2 else max_chars
    return rest[:end], offset + end


@dataclass(frozen=True)
class RenderedView:
    """A rendered view: ``text`` (≤ budget characters, ending in the notice line) and what it left out."""

    text: str
    omitted: list[str]
    full_chars: int  # the budget --level full needs to show everything
    chars: int  # len(text), what the budget limits


@dataclass
class _Unit:
    group: str
    tier: int
    rank: int
    lines: list[str]
    alt: list[str] | None = None
    category: str = "section"  # "iteration", "lesson", …; a section's part: "section:" and the notice's name for it
    spans: tuple[Span, ...] = ()  # the iteration numbers an entry stands for, as intervals (ranges are unbounded)
    order: int = 0  # its place in the model, set by ``_Model.add``


@dataclass
class _Model:
    groups: dict[str, tuple[float, list[str]]] = field(default_factory=dict)  # key → (order, header lines)
    units: list[_Unit] = field(default_factory=list)

    def group(self, key: str, order: float, header: list[str]) -> str:
        self.groups.setdefault(key, (order, header))
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
    """``doc``'s view in at most ``budget`` characters, with ``shared``'s lessons; ``hints`` name the rest."""
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r}; use one of: {', '.join(LEVELS)}")
    if budget < MIN_BUDGET:
        raise UsageError(f"budget {budget} is too small; give --budget {MIN_BUDGET} or more (characters)")
    name = _clean(" ".join(program.split()))[:100] or "PROGRAM"
    model = _full_model(doc, shared, name)
    full_chars = _cost(_assemble(model, {u.order: u.lines for u in model.units})) + len(_COMPLETE) + 1
    shown, by_design = (model, []) if level == "full" else _LEVEL_MODELS[level](doc, model, name)
    # Everything if it fits with the short notice; else room kept for a real notice.
    chosen, used = _pack(shown, budget - len(_COMPLETE) - 1)
    if len(chosen) < len(shown.units):
        chosen, used = _pack(shown, budget - min(400, max(100, budget // 8)))
    degraded = [u for u in shown.units if u.order in chosen and u.alt is not None and chosen[u.order] is u.alt]
    if degraded:
        nums = [n for u in degraded for n in u.spans]
        by_design += [f"full text of {plural(len(degraded), 'entry', 'entries')} ({_spans(nums)}; one line each here)"]
    omitted = by_design + _summaries([u for u in shown.units if u.order not in chosen], shown.units)
    # The expand hint names the newest iteration not shown whole whose entry is in this file (a range's may not be
    # archived anywhere); timeline's one-line entries have no whole form; at level full a duplicate's copy counts.
    wholes = [u for u in shown.units if u.category == "iteration" and u.alt and chosen.get(u.order) is u.lines]
    whole_units = {u.order for u in wholes} if level == "full" else set()
    whole = set() if level == "full" else {n for u in wholes for n in u.spans}
    candidates = (u for u in model.units if u.category == "iteration" and u.order not in whole_units)
    hidden = [n for u in candidates for n in u.spans if n not in whole]
    # The last line: what was left out and what shows it, the longest form the room left allows.
    expand = [hints.expand(name, intervals.highest(hidden))] if hidden else []
    if not omitted:
        options = [_COMPLETE]
    elif level == "index":
        wider = hints.view(name, "timeline")
        options = [
            f"[statefile] index only — more: {wider}" + (f" · {expand[0]}" if expand else ""),
            f"[statefile] index only — more: {wider}",
            "[statefile] index only; more with " + (wider if hints.tools else "--level timeline"),
        ]
    else:
        if level == "core":
            steps = [hints.search(name), *expand, hints.view(name, "timeline")]
        else:  # a tool cannot pass a budget; a command reruns with the one the full view needs
            flag = " --level full" if level == "timeline" else ""
            rerun = [] if hints.tools else [f"{hints.prefix} render {name}{flag} --budget {full_chars}"]
            steps = [*expand, *([hints.view(name, "full")] if hints.tools or level == "timeline" else []), *rerun]
        see = " — more: " + " · ".join(steps)
        # ``5 iterations (#90–97)`` → ``5 iterations``: numbers go first when the notice is tight.
        short = (re.sub(r"\s*\([^)]*\)", "", o) for o in omitted)
        options = [
            "[statefile] left out: " + "; ".join(omitted) + see,
            "[statefile] left out: " + "; ".join(short) + see,
            f"[statefile] {level} only — more: " + " · ".join(steps),
            f"[statefile] left out {len(omitted)} kinds of content — more: {steps[-1]}",
            f"[statefile] view cut to fit — more: {steps[-1]}"
            if hints.tools
            else "[statefile] view cut to fit the budget; rerun statefile render with a larger --budget",
            "[statefile] view cut to fit",
        ]
    notice = next((o for o in options if len(o) <= budget - used - 1), "")
    lines = _assemble(shown, chosen) + ([notice] if notice else [])
    text = "".join(line + "\n" for line in lines)
    assert len(text) <= budget, (len(text), budget)
    return RenderedView(text, omitted, full_chars, len(text))


def _clean(line: str) -> str:
    return _SURROGATE.sub("\ufffd", line_body(line).rstrip())


def _is_filler(block: Block, lines: Sequence[str]) -> bool:
    return block.kind == RULE or (block.kind == HTML and bool(_COMMENT.match("".join(lines[block.start : block.end]))))


def _says_nothing(block: Block, lines: Sequence[str]) -> bool:
    """Template boilerplate: rules, whole comments, placeholders, intro sentences and the 🤖 notes."""
    text = "".join(lines[block.start : block.end]).strip()
    if _is_filler(block, lines) or (block.kind in (PARAGRAPH, ITEM) and (is_placeholder(text) or text in _BOILERPLATE)):
        return True
    return block.kind in (PARAGRAPH, QUOTE) and text.lstrip("> ").startswith("🤖")


def _block_lines(block: Block, lines: Sequence[str]) -> list[str]:
    shown = [_clean(line) for line in lines[block.start : block.end]]
    return shown if block.kind in (FENCE, CODE) else [line for line in shown if line.strip()]


def _units_of(lines: Sequence[str]) -> list[list[str]]:
    """A section body as display units (items, paragraphs, code); a sub-heading's unit runs to the next one."""
    units: list[list[str]] = []
    headed = False
    for block in outline("".join(lines)):
        if block.kind == HEADING or not _says_nothing(block, lines):
            if headed and block.kind != HEADING:
                units[-1] += _block_lines(block, lines)
            else:
                units.append(_block_lines(block, lines))
            headed = headed or block.kind == HEADING
    return units


def _cut(text: str, width: int = LINE_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _first_body_line(entry: Entry) -> str:
    lines = split_lines(entry.raw)
    blocks = (b for b in outline(entry.raw, lists=False) if b.start and b.kind != HTML and not _says_nothing(b, lines))
    return next(filter(None, (_clean(lines[b.start]).strip().lstrip("-*+ ").replace("**", "") for b in blocks)), "")


def entry_line(entry: Entry, width: int = LINE_WIDTH) -> str:
    """A history entry as one ``- #N …`` line: number, status, date, metric and what was tried."""
    if isinstance(entry, Iteration):
        head = "#" + "+".join(str(n) for n in entry.numbers or (entry.number,))
        status = f" {STATUS_GLYPHS.get(entry.status, '•')} {entry.status}" if entry.status else ""
        parts = [head + status, (entry.when or "")[:10], f"metric {entry.metric}" if entry.metric else ""]
        what = entry.change or entry.notes or _first_body_line(entry) or heading_words(entry.heading)
        text = " · ".join(filter(None, parts)) + (f": {what}" if what else "")
    elif isinstance(entry, IterationRange):
        # The range line's own text already carries its status glyph and metric band.
        text = f"#{entry.first}–{entry.last}" + (f" {entry.summary}" if entry.summary else "")
    else:
        text = entry.heading.lstrip("#").strip() or _first_body_line(entry)
    return "- " + _cut(_clean(text), width - 2)


def _add_items(model: _Model, key: str, body: Sequence[str], category: str) -> None:
    pinned_tier, tier, rank_base = _LIST_TIERS[category]
    units = _units_of(body)
    for position, lines in enumerate(units):
        # Agents append at the bottom: the last bullet is the newest.  An agent's bullet (apply marks it) goes after
        # every maintainer's: the first to go when short.
        rank = rank_base + len(units) - position + (_AGENT_RANK if lines and is_agent_bullet(lines[0]) else 0)
        model.add(_Unit(key, pinned_tier if is_pinned("\n".join(lines)) else tier, rank, lines, category=category))


def _full_model(doc: StateDocument, shared: StateDocument | None, program: str) -> _Model:
    model = _Model()
    model.add(_Unit(model.group("title", -1, []), 0, 0, [f"# Autoloop: {program} — memory view"], category="title"))
    cut = doc.history_start
    seen: set[str] = set()
    shared_at = float(len(doc.sections))
    for index, section in enumerate(doc.sections):
        body: Sequence[str] = section.lines[1:] if section.title is not None else section.lines
        if cut is not None and cut[0] == index:
            body = section.lines[1 : cut[1]]
        kind = section.kind if section.kind not in seen else "other"
        seen.add(section.kind)
        if kind in ("machine_state", "priorities"):
            key = model.group(kind, index, ["", SECTION_KINDS[kind][0]])
            said = (b for b in outline("".join(body)) if not _says_nothing(b, body))
            for line in (line for block in said for line in _block_lines(block, body)):
                model.add(_Unit(key, 0, len(model.units), [line], category="state"))
        elif kind in ("lessons", "foreclosed"):
            _add_items(model, model.group(kind, index, ["", SECTION_KINDS[kind][0]]), body, kind.removesuffix("s"))
            shared_at = index + 0.5 if kind == "lessons" else shared_at
        else:
            heading = None if kind == "title" else section.title
            if kind == "title":
                body = [line for line in body if not line.lstrip().startswith("🤖")]
            label = {"title": "text under the title", "history": "history intro"}.get(kind) or heading
            label = label or ("Program Info" if kind == "program_info" else "(before the title)")
            key = model.group(f"section{index}", index, ["", f"## {_clean(heading)}"] if heading is not None else [""])
            for position, lines in enumerate(_units_of(body)):
                tier, order = (1, position - 10**9) if kind == "program_info" else (7, index * 100_000 + position)
                model.add(_Unit(key, tier, order, lines, category=f"section:{label}"))
        if cut is not None and cut[0] == index:
            key = model.group("history", index + 0.25, ["", SECTION_KINDS["history"][0] + " (newest first)"])
            newest = sorted((e for e in doc.history if isinstance(e, Iteration)), key=lambda e: -max(e.covers))
            top = {id(e) for e in newest[:NEWEST_IN_FULL]}
            for position, entry in enumerate(doc.history):
                covers = tuple(entry.spans)
                tier = (2 if id(entry) in top else 5) if isinstance(entry, Iteration) else 6
                category = {Iteration: "iteration", IterationRange: "range"}.get(type(entry), "other entry")
                rank = -intervals.highest(covers) * 10_000 + position
                lines = split_lines(entry.raw)
                blocks = outline(entry.raw, lists=False)
                shown = [line for b in blocks if not _is_filler(b, lines) for line in _block_lines(b, lines)]
                model.add(_Unit(key, tier, rank, shown, [entry_line(entry)], category=category, spans=covers))
    if shared is not None and (shared_lessons := shared.section("lessons")) is not None:
        key = model.group("shared", shared_at, ["", "## 📚 Shared lessons (_shared.md)"])
        _add_items(model, key, shared_lessons.lines[1:], "shared")
    return model


def _timeline_model(doc: StateDocument, full: _Model, program: str) -> tuple[_Model, list[str]]:
    model = _Model(groups=dict(full.groups))
    for unit in full.units:
        if unit.tier == 0:
            model.add(replace(unit))
        elif unit.group == "history" and unit.alt is not None:
            model.add(replace(unit, lines=unit.alt, alt=None, tier=1))
    details = ["entry details (one line each here)"] if any(u.group == "history" for u in model.units) else []
    return model, details + _summaries([u for u in full.units if u.tier and (u.group != "history" or u.alt is None)])


def _index_model(doc: StateDocument, full: _Model, program: str) -> tuple[_Model, list[str]]:
    state = doc.machine_state
    model = _Model()
    key = model.group("index", 0, [])

    def add(text: str, tier: int = 0) -> None:
        indent = text[: len(text) - len(text.lstrip())]
        line = indent + _cut(_clean(text), INDEX_WIDTH - len(indent))
        model.add(_Unit(key, tier, len(model.units), [line], category="index"))

    add(f"# Autoloop: {program} — memory index")
    if not state:
        add("- status: unknown (no Machine State table)")
    else:
        status, why = ("completed", "completed_reason") if state.get("completed") else ("paused", "pause_reason")
        status = status + (f" ({state[why]})" if state.get(why) else "") if state.get(status) else "active"
        errors = f"; {plural(count, 'consecutive error')}" if (count := state.get("consecutive_errors")) else ""
        goal = f"; target {target}" if (target := state.get("target_metric")) else ""
        last, best = state.get("last_run") or "—", state.get("best_metric") or "—"
        add(f"- status: {status}; iteration {state.get('iteration_count', '—')}; last run {last}{errors}")
        add(f"- best metric: {best} ({state_direction(state)} is better{goal})")
    priorities = [u for u in full.units if u.group == "priorities"]
    extra = [f"{len(priorities) - 1} more lines of Current Priorities"] if len(priorities) > 1 else []
    if priorities:
        more = f" (+{plural(len(priorities) - 1, 'more line')})" if extra else ""
        add(f"- priorities: {_cut(priorities[0].lines[0], 90)}{more}")
    counts, highest = Counter(u.category for u in full.units), doc.highest_iteration
    add(
        f"- memory: {plural(counts['iteration'], 'iteration')}, {plural(counts['range'], 'range')}"
        + (f" (up to #{highest})" if highest else "")
        + f", {plural(counts['lesson'] + counts['shared'], 'lesson')}"
        + (f" ({number_text(counts['shared'])} shared)" if counts["shared"] else "")
        + f", {number_text(counts['foreclosed'])} foreclosed; {size_text(doc.size)}",
        1,
    )
    recent = _newest(full, "iteration", NEWEST_IN_FULL) or _newest(full, "range", NEWEST_IN_FULL)
    for position, unit in enumerate(recent):
        add(("- last outcomes: " if position == 0 else "  ") + (unit.alt or [""])[0][2:], 2)
    left_out = _summaries([u for u in full.units if u.tier != 0 and u not in recent])
    return model, ["the Machine State table (summarized)", *extra, *left_out]


def _core_model(doc: StateDocument, full: _Model, program: str) -> tuple[_Model, list[str]]:
    """Tiers: state 0; pinned/important lessons and the older history's line 1; newest iterations 2; foreclosed 3."""
    model = _Model(groups={**full.groups, "title": (-1, [])})
    model.add(_Unit("title", 0, 0, [f"# Autoloop: {program} — memory"], category="title"))
    kept = {u.order for u in _newest(full, "iteration", NEWEST_IN_CORE)}
    for unit in full.units:
        text = "\n".join(unit.lines)
        if unit.tier == 0 and unit.category == "state":
            model.add(replace(unit))
        elif unit.category in ("lesson", "shared") and (is_pinned(text) or is_important(text)):
            model.add(replace(unit, tier=1))
            kept.add(unit.order)
        elif unit.order in kept:
            model.add(replace(unit, tier=2))
        elif unit.category == "foreclosed":
            model.add(replace(unit, lines=[_cut(" ".join(unit.lines))], alt=None, tier=3))
            kept.add(unit.order)
    entries = ("iteration", "range", "other entry")
    older = [u for u in full.units if u.category in entries and u.order not in kept]
    by_design = _summaries([u for u in full.units if u.order not in kept and u.tier != 0 and u.category not in entries])
    if older:
        # ``- older: 59 iterations (#1–59); 9 detailed (5 accepted, …); the rest in 3 range lines and the archive``
        spans = [n for u in older for n in u.spans]
        numbers = {n for u in older if u.category == "iteration" for n in u.spans}
        statuses = Counter(e.status for e in doc.iterations if e.status and any(span in numbers for span in e.spans))
        detailed, ranges = (sum(u.category == kind for u in older) for kind in ("iteration", "range"))
        parts = [f"{plural(size(merge(spans)), 'iteration')} ({_spans(spans)})"] if spans else []
        if detailed:
            counts = ", ".join(f"{number_text(n)} {word}" for word, n in statuses.most_common())
            parts.append(f"{number_text(detailed)} detailed" + (f" ({counts})" if counts else ""))
        parts += [f"the rest in {plural(ranges, 'range line')} and the archive"] if ranges else []
        model.groups["older"] = (full.groups["history"][0] + 0.1, [])
        model.add(_Unit("older", 1, 0, ["- older: " + "; ".join(parts)], category="index"))
        by_design.insert(0, "older iterations (indexed above)")
    return model, by_design


_LEVEL_MODELS = {"timeline": _timeline_model, "index": _index_model, "core": _core_model}


def _newest(model: _Model, category: str, count: int) -> list[_Unit]:
    units = (u for u in model.units if u.category == category)
    return sorted(units, key=lambda u: intervals.highest(u.spans), reverse=True)[:count]


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
        head = 0 if unit.group in opened else _cost(model.groups[unit.group][1])
        for form in (unit.lines, unit.alt):
            if form is not None and used + head + _cost(form) <= room:
                chosen[unit.order] = form
                used += head + _cost(form)
                opened.add(unit.group)
                break
        else:
            cut = unit.tier if unit.tier > 0 else cut
            if unit.group == "history":
                # A gap in the history would read as a missing iteration.
                blocked.add(unit.tier)
    return chosen, used


def _assemble(model: _Model, chosen: dict[int, list[str]]) -> list[str]:
    lines: list[str] = []
    for key, (_, header) in sorted(model.groups.items(), key=lambda item: item[1][0]):
        members = [chosen[u.order] for u in model.units if u.group == key and u.order in chosen]
        if members:
            lines += header + [line for unit in members for line in unit]
    return lines


def _spans(spans: Iterable[Span]) -> str:
    """``#1–3, #7, #9–10``, or ``#1–97 (40 in 12 runs)`` when there are many gaps."""
    runs = merge(spans)
    if len(runs) > 4:
        return f"#{runs[0][0]}–{runs[-1][1]} ({number_text(size(runs))} in {plural(len(runs), 'run')})"
    return spans_text(runs, mark="#", limit=len(runs))


def _summaries(omitted: Sequence[_Unit], everything: Sequence[_Unit] = ()) -> list[str]:
    """Left-out units by kind (``7 of 20 lessons``; ``everything``: the view's units, for the "of")."""
    totals = Counter(unit.category for unit in everything)
    by_label: dict[str, list[_Unit]] = {}
    for unit in omitted:
        if unit.category not in ("title", "index"):
            by_label.setdefault(unit.category, []).append(unit)
    out: list[str] = []
    for name, units in by_label.items():
        total = totals.get(name, len(units))
        of = number_text(len(units)) + (f" of {number_text(total)}" if total > len(units) else "")
        nums = [n for u in units for n in u.spans if name in ("iteration", "range")]
        if name in _PLURALS:
            out.append(f"{of} {_PLURALS[name][total != 1]}" + (f" ({_spans(nums)})" if nums else ""))
        else:
            out.append(f"{name.split(':', 1)[1]} ({of} part{'s' if total != 1 else ''})")
    return out
