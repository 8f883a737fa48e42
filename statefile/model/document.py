"""The state-file document: parse any text, render it back byte for byte, edit one part at a time (an edit
replaces only the lines it owns and re-reads the text, so every derived view agrees with ``render()``), and find
what is odd about it without refusing to read it (its ``warnings``)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from typing import Any, NamedTuple

from statefile.defaults import MAX_ITERATION
from statefile.errors import InvalidDataError, UsageError
from statefile.model import history, machine_state, patterns
from statefile.model.blocks import CODE, FENCE, HEADING, HTML, ITEM, PARAGRAPH, Block, content_end, outline, scan_blocks
from statefile.model.history import Entry, Iteration, IterationRange, Span, merge, of_numbers, spans_text
from statefile.model.machine_state import CellValue
from statefile.model.patterns import entry_title, is_bullet_entry, is_entry_heading, is_placeholder, lesson_key
from statefile.model.template import SECTION_KINDS, section_kind
from statefile.model.text import clip, detect_newline, line_body, split_lines, utf8_size


class Located(NamedTuple):
    """An entry and the absolute line span ``[start, end)`` it takes in the file."""

    start: int
    end: int
    entry: Entry


@dataclass(frozen=True)
class Section:
    """A run of lines from one top-level heading to the next (the preamble has no heading)."""

    kind: str
    title: str | None
    level: int
    start: int
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        """The section's text exactly as in the file."""
        return "".join(self.lines)

    @property
    def size(self) -> int:
        """UTF-8 bytes of the section."""
        return utf8_size(self.text)


@dataclass(frozen=True)
class Item:
    """One top-level bullet of a list section: its lines ``[start, end)`` in the section and its text."""

    start: int
    end: int
    text: str

    @property
    def is_placeholder(self) -> bool:
        """Whether this is a template placeholder such as ``- *(none yet)*``."""
        return is_placeholder(self.text)


def items(lines: Sequence[str]) -> list[Item]:
    """The bullets of a section's lines (line 0 is the heading), in order."""
    return [
        Item(block.start, block.end, "".join(lines[block.start : block.end]))
        for block in outline("".join(lines))
        if block.kind == ITEM and not block.ordered and block.start > 0
    ]


# "Iteration 1.5", "Iteration 1e308": a heading of an entry's shape whose number is no whole number.
_FRACTIONAL_HEAD = re.compile(r"^\s*Iter(?:ation)?s?\.?\s+#?(\d+(?:\.\d+|[eE][-+]?\d+))", re.I)
# A maintainer's acknowledgement of a hole in the history: "<!-- statefile: gap 12–40 acknowledged -->".
_GAP_ACKNOWLEDGED = re.compile(
    r"<!--\s*statefile:\s*gaps?\s+#?(\d{1,9})(?:\s*(?:–|—|-|\.\.|to)\s*#?(\d{1,9}))?\s+acknowledged\b[^>]*?-->", re.I
)

# Level 1-2 ATX headings, and every line that could open a fence or HTML block (where only markdown-it can tell).
_TOP_HEADING_LINE = re.compile(r"^ {0,3}(?:(#{1,2})(?=[ \t\r\n]|$)([^\r\n]*)|```|~~~|<)", re.MULTILINE)


def _appender(kind: str) -> Callable[[StateDocument, str], StateDocument]:
    def append(doc: StateDocument, text: str) -> StateDocument:
        return doc.with_items(kind, [text])

    append.__doc__ = f"A copy with a bullet appended to {SECTION_KINDS[kind][0][3:]} (see :meth:`with_items`)."
    return append


class StateDocument:
    """A parsed state file.  Build one with :func:`parse`; ``render()`` gives the text back."""

    _text: str
    _lines: list[str]
    _blocks: tuple[Block, ...]
    _sections: tuple[Section, ...]
    _entry_headings: dict[int, list[Block]]  # by the index of their section

    def __init__(self, text: str) -> None:
        self.__dict__.update(_text=text, _lines=split_lines(text), _blocks=scan_blocks(text))  # __setattr__ refuses
        cuts: list[tuple[Block, str]] = []
        entry_headings: dict[int, list[Block]] = {}  # ###, or ## kept inside the history, by the cuts before them
        holds_entries = False
        for head in self._blocks:
            if head.kind != HEADING or head.level > 3 or head.start >= len(self._lines):
                continue
            # "## Iterations 1–12 — condensed": an entry written a level up stays in the history
            if head.level == 3 or (holds_entries and head.level == 2 and is_entry_heading(head.text)):
                if head.start > 0 and self._lines[head.start].startswith("#" * head.level):  # 0: the preamble's start
                    entry_headings.setdefault(len(cuts), []).append(head)
                continue
            kind = section_kind(head.text, head.level)
            holds_entries = kind == "history" or bool(patterns.ARCHIVED_HEAD.match(head.text))  # an archive chunk
            cuts.append((head, kind))
        first = cuts[0][0].start if cuts else len(self._lines)
        preamble = first > 0 or not cuts
        sections = [Section("preamble", None, 0, 0, tuple(self._lines[:first]))] if preamble else []
        for (head, kind), end in zip(cuts, [*(cut.start for cut, _ in cuts[1:]), len(self._lines)], strict=False):
            sections.append(Section(kind, head.text, head.level, head.start, tuple(self._lines[head.start : end])))
        by_section = {n - 1 + preamble: heads for n, heads in entry_headings.items()}
        self.__dict__.update(_sections=tuple(sections), _entry_headings=by_section)

    def render(self) -> str:
        """The document's text: byte-identical to the input when nothing was edited."""
        return self._text

    @property
    def size(self) -> int:
        """UTF-8 bytes of the rendered file (what max-file-size limits)."""
        return utf8_size(self._text)

    @property
    def newline(self) -> str:
        """The line ending new lines are written with (the file's first one)."""
        return detect_newline(self._text)

    @property
    def sections(self) -> tuple[Section, ...]:
        """All sections in file order, the preamble (text before the first heading) included when present."""
        return self._sections

    def section(self, kind: str) -> Section | None:
        """The first section of ``kind`` (see SECTION_KINDS), or ``None``."""
        return next((section for section in self._sections if section.kind == kind), None)

    def _index(self, kind: str) -> int | None:
        return next((i for i, s in enumerate(self._sections) if s.kind == kind), None)

    @cached_property
    def machine_state(self) -> dict[str, Any]:
        """The Machine State table as the upstream scheduler reads it (``{}`` when there is no table)."""
        section = self.section("machine_state")
        return machine_state.read_state(list(section.lines)) if section is not None else {}

    @cached_property
    def _history_layout(self) -> tuple[int, bool] | None:
        # The section holding the history's entries, and whether it is another (misplaced) one.
        if (index := self._index("history")) is not None:
            return index, False
        for index, section in enumerate(self._sections):  # agents have dropped the history heading: entries elsewhere
            never = section.kind in ("machine_state", "title", "preamble")
            if not never and any(is_entry_heading(head.text) for head in self._entry_headings.get(index, [])):
                return index, True
        return None

    def _entries(self, index: int, stray: bool) -> tuple[Located, ...]:
        # Entries start at headings (stray: from the first entry-shaped one) and entry bullets above the first one.
        section = self._sections[index]
        found = self._entry_headings.get(index, [])
        starts = [head.start - section.start for head in found]
        if stray:
            starts = starts[next((k for k, head in enumerate(found) if is_entry_heading(head.text)), len(starts)) :]
        else:
            region = section.lines[1 : starts[0] if starts else len(section.lines)]
            if any(is_bullet_entry(line) for line in region):
                starts[:0] = [
                    block.start + 1
                    for block in outline("".join(region))
                    if block.kind == ITEM and not block.ordered and is_bullet_entry(region[block.start])
                ]
        return tuple(
            Located(section.start + a, section.start + b, history.parse_entry("".join(section.lines[a:b])))
            for a, b in pairwise([*starts, len(section.lines)])
        )

    def entries_of(self, index: int) -> tuple[Located, ...]:
        """The entries of section ``index`` read as the history is (an archive chunk's too), with their line spans."""
        layout = self._history_layout
        return self.located_history if layout is not None and layout[0] == index else self._entries(index, False)

    @cached_property
    def located_history(self) -> tuple[Located, ...]:
        """:attr:`history` with each entry's absolute line span ``[start, end)`` in the file."""
        return () if (layout := self._history_layout) is None else self._entries(*layout)

    @cached_property
    def history(self) -> tuple[Entry, ...]:
        """Iteration History entries in file order (newest first): iterations, ranges and opaque entries."""
        return tuple(located.entry for located in self.located_history)

    @property
    def history_start(self) -> tuple[int, int] | None:
        """``(section index, line in that section)`` where the history's entries start, or ``None`` without any."""
        if (layout := self._history_layout) is None or not (located := self.located_history):
            return None
        return layout[0], located[0].start - self._sections[layout[0]].start

    @property
    def iterations(self) -> tuple[Iteration, ...]:
        """Only the detailed iteration entries."""
        return tuple(e for e in self.history if isinstance(e, Iteration))

    @property
    def ranges(self) -> tuple[IterationRange, ...]:
        """Only the compressed range entries."""
        return tuple(e for e in self.history if isinstance(e, IterationRange))

    @property
    def highest_iteration(self) -> int:
        """The highest iteration number the history mentions (0 when it mentions none)."""
        return max((e.spans[-1][1] for e in self.history if e.spans), default=0)

    def list_items(self, kind: str) -> list[Item]:
        """Bullets of a list section (``lessons``, ``foreclosed``, ``future``), in file order."""
        section = self.section(kind)
        return [] if section is None else items(section.lines)

    @cached_property
    def warnings(self) -> tuple[Anomaly, ...]:
        """What is odd about the file (see :func:`find_anomalies`)."""
        return tuple(find_anomalies(self))

    @property
    def history_misplaced(self) -> bool:
        """True when entries were found under another section because the history heading is missing."""
        return self._history_layout is not None and self._history_layout[1]

    @cached_property
    def unclosed_block(self) -> int | None:
        """The 0-based line where a code fence or HTML block opens that is never closed (a heading after it is text)."""
        code = [block for block in self._blocks if block.kind in (FENCE, CODE, HTML)]
        if not code or "".join(self._lines[code[-1].end :]).strip():  # text after the last one: all are closed
            return None
        tail = "".join(self._lines[code[-1].start :])
        probe = scan_blocks(tail + ("" if tail.endswith(("\n", "\r")) else "\n") + "\n## statefile-probe\n")
        return None if any(b.kind == HEADING and b.text == "statefile-probe" for b in probe) else code[-1].start

    def require_closed_blocks(self, action: str) -> None:
        """Refuse ``action`` (``"record an iteration"``) on a file with an :attr:`unclosed_block` (InvalidDataError)."""
        if (line := self.unclosed_block) is not None:
            raise InvalidDataError(
                f"cannot {action}: a code fence or HTML block opened at line {line + 1} is never closed, so the rest "
                "of the file is code to markdown; close it (e.g. a ``` line where the code ends), then retry"
            )

    def with_lines(self, start: int, end: int, new_lines: Sequence[str]) -> StateDocument:
        """A copy with the file's lines ``[start, end)`` replaced by ``new_lines``."""
        lines = _ended(list(self._lines), start, self.newline) if new_lines else list(self._lines)
        lines[start:end] = new_lines
        return StateDocument("".join(lines))

    def with_section(self, kind: str) -> tuple[StateDocument, int]:
        """This document with a section of ``kind`` (added with its heading in its canonical place; the history's
        above stray entries), and the section's index."""
        if kind == "history" and self.history_misplaced:
            at, nl = self.located_history[0].start, self.newline
            return self.with_lines(at, at, [SECTION_KINDS["history"][0] + nl, nl]).with_section(kind)
        if (found := self._index(kind)) is not None:
            return self, found
        nl, (heading, _) = self.newline, SECTION_KINDS[kind]
        later = list(SECTION_KINDS)[list(SECTION_KINDS).index(kind) + 1 :]
        lines = _ended(list(self._lines), len(self._lines), nl)
        at = next((section.start for section in self._sections if section.kind in later), len(lines))
        spaced = at == len(lines) and bool(lines) and bool(lines[-1].strip())  # at the end, after text
        lines[at:at] = [nl] * spaced + [heading + nl, nl]
        new = StateDocument("".join(lines))
        if (created := new._index(kind)) is None:  # the heading landed inside an unclosed fence, where it is text
            self.require_closed_blocks(f"add the '{heading}' section")
            raise InvalidDataError(f"cannot add the '{heading}' section; check the file's headings")
        return new, created

    def _edit_section(self, kind: str, edit: Callable[[StateDocument, list[str]], list[str]]) -> StateDocument:
        # The one editor under every with_*: the section of kind (added when missing) as edit rewrites its lines.
        doc, index = self.with_section(kind)
        section = doc._sections[index]
        return doc.with_lines(section.start, section.start + len(section.lines), edit(doc, list(section.lines)))

    def with_fields(self, fields: Mapping[str, CellValue]) -> StateDocument:
        """A copy with Machine State rows set by label or key (``{"Iteration Count": 5}``, ``{"paused": True}``); only
        their lines change, missing rows and section are added and the heading becomes the one the scheduler needs."""

        def edit(doc: StateDocument, lines: list[str]) -> list[str]:
            if not any("|" in line for line in lines):  # no table: a new one's header, a blank line above it
                end, nl = content_end(lines), doc.newline
                _ended(lines, end, nl)[end:end] = [nl, "| Field | Value |" + nl, "|-------|-------|" + nl]
            for name, value in fields.items():
                label, cell = machine_state.label_for(name), machine_state.cell_text(value)
                lines = machine_state.with_row(lines, label, cell, doc.newline)
            lines[0] = SECTION_KINDS["machine_state"][0] + lines[0][len(line_body(lines[0])) :]
            return lines

        return self._edit_section("machine_state", edit)

    def with_field(self, name: str, value: CellValue) -> StateDocument:
        """A copy with one Machine State row set (see :meth:`with_fields`)."""
        return self.with_fields({name: value})

    def with_entry(self, entry_text: str) -> StateDocument:
        """A copy with an entry (its text, ending in a newline) above the newest one, replacing the placeholder."""

        def edit(doc: StateDocument, lines: list[str]) -> list[str]:
            start, nl = doc.history_start, doc.newline
            at = len(lines) if start is None else start[1]
            # The template's "*(No iterations yet.)*": the first entry replaces it, and one blank line around it.
            ones = [
                b.start for b in outline("".join(lines[:at])) if b.kind in (PARAGRAPH, ITEM) and b.end == b.start + 1
            ]
            if (line := next((n for n in ones if is_placeholder(lines[n])), None)) is not None:
                around = lines[line - 1 : line + 2] if line > 0 else []
                blank = len(around) == 3 and not around[0].strip() and not around[2].strip()
                del lines[line : line + 1 + blank]
                at -= 1 + blank
            if start is not None and is_bullet_entry(lines[at]):  # a heading above bullet entries makes them its body
                said = [line_body(line).strip() for line in split_lines(entry_text) if line_body(line).strip()]
                fields = [line.lstrip("-*+").strip() for line in said[1:] if not line.startswith("<!--")]
                head = f"- {entry_title(said[0])}" + (": " + " · ".join(fields) if fields else "") + nl
                lines[at:at] = [head, *(f"  {line}{nl}" for line in said[1:] if line.startswith("<!--"))]  # hidden
                return lines
            if start is not None:
                lines[at:at] = split_lines(entry_text)
                return lines
            at = len(lines)  # after the intro; the entry's own blank line replaces the trailing ones
            while at > 1 and not line_body(lines[at - 1]).strip():
                at -= 1
            return [*_ended(lines, at, nl)[:at], nl, *split_lines(entry_text)]

        return self._edit_section("history", edit)

    with_lesson = _appender("lessons")
    with_foreclosed = _appender("foreclosed")
    with_future_direction = _appender("future")
    with_priority = _appender("priorities")

    def with_items(self, kind: str, texts: Sequence[str]) -> StateDocument:
        """A copy with one bullet per text appended to the list section ``kind``, after its last bullet or in place of
        ``*(none yet)*``: a text without words is refused (UsageError), a lesson already there is not added again."""
        lessons = kind == "lessons"
        seen = {lesson_key(item.text) for item in self.list_items(kind)} if lessons else set()
        new: list[str] = []
        for text in texts:
            if not (key := lesson_key(text) if lessons else " ".join(text.split())):
                what = "lesson" if lessons else f"{kind} bullet"
                if text.strip():  # only marks: say so, "empty" would not be true of "(from me)" or "📌"
                    raise UsageError(f"{what} {clip(text, 60)!r} has only marks (pin, expiry, origin); give its words")
                raise UsageError(f"empty {what}; give its text")
            if not lessons or key not in seen:
                seen.add(key)
                new.append(f"- {' '.join(text.split())}")

        def edit(doc: StateDocument, lines: list[str]) -> list[str]:
            bullets = [line + doc.newline for line in new]
            found = items(lines)
            if placeholder := next((item for item in found if item.is_placeholder), None):
                lines[placeholder.start : placeholder.end] = bullets
                return lines
            at = found[-1].end if found else content_end(lines)  # after the last bullet, else after the content
            _ended(lines, at, doc.newline)[at:at] = bullets if found else [doc.newline, *bullets]
            return lines

        return self._edit_section(kind, edit) if new else self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"StateDocument is immutable; cannot set {name!r} (editors return a new document)")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateDocument) and other._text == self._text

    def __hash__(self) -> int:
        return hash(self._text)

    def __repr__(self) -> str:
        return f"<StateDocument {self.size} bytes, {len(self._sections)} sections, {len(self.history)} entries>"


def _ended(lines: list[str], at: int, nl: str) -> list[str]:
    # The line before at ended, so that lines can be inserted at at.
    if at > 0 and not lines[at - 1].endswith(("\n", "\r")):
        lines[at - 1] += nl
    return lines


def parse(text: str) -> StateDocument:
    """Parse any text into a :class:`StateDocument`.  Never raises; ``parse(t).render() == t``."""
    return StateDocument(text)


def read_machine_state(text: str) -> dict[str, Any]:
    """``parse(text).machine_state``, read only up to that section's end when no fence, HTML block or bare CR could
    change where it ends (the scheduler reads every program's table)."""
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return parse(text).machine_state
    body = text[1:] if text.startswith("\ufeff") else text
    start: int | None = None
    end = len(body)
    for match in _TOP_HEADING_LINE.finditer(body):
        if not match.group(1):
            return parse(text).machine_state  # a fence or HTML block could hide or fake a heading
        if start is not None:
            end = match.start()
            break
        if section_kind(match.group(2).strip(), len(match.group(1))) == "machine_state":
            start = match.start()
    return {} if start is None else machine_state.read_state(split_lines(body[start:end]))


#: Warning codes ``statefile repair`` fixes (see :mod:`statefile.policy.repair`); ``check`` points to it for these.
REPAIRABLE = frozenset(
    {
        "machine-state-heading",
        "missing-history-heading",
        "duplicate-section",
        "duplicate-iteration",
        "overlapping-ranges",
    }
)


@dataclass(frozen=True)
class Anomaly:
    """Something odd about a file that does not stop it being read: a code and a sentence."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def find_anomalies(doc: StateDocument) -> Iterator[Anomaly]:
    """Yield every anomaly in ``doc``, in a stable order."""
    if not doc.render().strip():
        yield Anomaly("empty", "the file is empty")
        return
    if (section := doc.section("machine_state")) is None:
        yield Anomaly("missing-machine-state", "no Machine State section: the scheduler treats this as a new program")
    else:  # the scheduler finds its table by the exact bytes: "## 2. ⚙️ Machine State" is one it cannot see
        if section.title is not None and SECTION_KINDS["machine_state"][0] not in section.lines[0]:
            yield Anomaly(
                "machine-state-heading",
                f"heading '## {section.title}' is not the exact '## ⚙️ Machine State' the upstream scheduler "
                "looks for; any statefile write restores it",
            )
        if len(doc.machine_state) <= 1:
            yield Anomaly("empty-machine-state", "the Machine State section has no table rows")
    state = doc.machine_state
    count = machine_state.count_field(state, "iteration_count")
    problems = [machine_state.next_iteration_problem(count, doc.highest_iteration)]
    problems += [machine_state.number_row_problem(state, key) for key in machine_state.NUMBER_ROWS]
    problems += count_row_problems(doc)
    for problem in filter(None, problems):  # what record would refuse to go on from, for check to fail on first
        yield Anomaly("implausible-machine-state", f"{problem} — record cannot go on from it; correct it by hand")
    for kind, count in Counter(s.kind for s in doc.sections if s.kind in SECTION_KINDS).items():
        if count > 1:
            yield Anomaly("duplicate-section", f"section '{SECTION_KINDS[kind][0][3:]}' appears {count} times")
    if (unclosed := doc.unclosed_block) is not None:
        yield Anomaly(
            "unclosed-block",
            f"a code fence or HTML block opened at line {unclosed + 1} is never closed: the rest of the file is code, "
            "and record/compact refuse to edit it; close the block",
        )
    if doc.history_misplaced:
        yield Anomaly("missing-history-heading", "iteration entries sit under another section (no history heading)")
    for entry in (entry for entry in doc.history if isinstance(entry, history.OpaqueEntry)):
        if entry.implausible is not None:
            why = f"{entry.implausible:,}, beyond any history ({MAX_ITERATION:,}): kept as text and counted for nothing"
        elif odd := _FRACTIONAL_HEAD.match(entry_title(entry.heading)):
            why = f"{odd.group(1)}, no whole number: kept as text, counted for nothing and never folded"
        else:
            continue
        yield Anomaly(
            "implausible-number", f"heading '{clip(entry.heading, 80)}' names iteration {why}; correct the number"
        )
    iterations, ranges = doc.iterations, doc.ranges
    seen = Counter(n for e in iterations for n in e.covers)
    if dupes := sorted(n for n, c in seen.items() if c > 1):
        yield Anomaly(
            "duplicate-iteration", f"iteration numbers appear more than once: {spans_text(of_numbers(dupes))}"
        )
    in_ranges = merge(s for r in ranges for s in r.spans)
    if overlap := [n for n in seen if history.inside(in_ranges, n)]:
        yield Anomaly(
            "range-overlaps-entry", f"detailed entries fall inside a range: {spans_text(of_numbers(overlap))}"
        )
    for a, b in pairwise(sorted(ranges, key=lambda r: r.first)):
        if b.first <= a.last:
            yield Anomaly("overlapping-ranges", f"ranges {a.first}–{a.last} and {b.first}–{b.last} overlap")
    covered = merge([s for e in iterations for s in e.spans] + in_ranges)
    if gaps := history_gaps(doc, covered)[0]:
        yield Anomaly(
            "history-gap",
            f"no entry or range covers iterations {spans_text(gaps)} (a known gap: add "
            f"'<!-- statefile: gap {spans_text(gaps[:1])} acknowledged -->' under the history heading)",
        )
    stated, top = state.get("iteration_count"), history.highest(covered)
    if isinstance(stated, int) and covered and stated != top:
        yield Anomaly(
            "iteration-count-mismatch", f"Iteration Count is {stated} but the history goes up to iteration {top}"
        )


def count_row_problems(doc: StateDocument) -> list[str]:
    """Why a counting row holds no whole number (``abc``, which the scheduler reads as 0), one sentence per row."""
    section = doc.section("machine_state")
    rows = machine_state.table_rows(list(section.lines)) if section else []
    cells = {row.key: row.value for row in rows}  # a later row wins
    return [
        f"the Machine State row '{label}' holds {clip(cells[key], 40)!r}, not a whole number (the scheduler reads it "
        "as 0)"
        for label in ("Iteration Count", "Consecutive Errors")
        if machine_state.unreadable_count(cells.get(key := machine_state.field_key(label)))
    ]


def history_gaps(doc: StateDocument, covered: list[Span] | None = None) -> tuple[list[Span], list[Span]]:
    """The history's holes: ``(open, acknowledged)`` (by a ``<!-- statefile: gap 12–40 acknowledged -->`` comment)."""
    if covered is None:
        covered = merge(s for e in doc.history for s in e.spans)
    top = history.highest(covered)
    if not history.missing(covered, top):
        return [], []
    found = [(int(m.group(1)), int(m.group(2) or m.group(1))) for m in _GAP_ACKNOWLEDGED.finditer(doc.render())]
    open_gaps = history.missing(covered + merge((min(pair), max(pair)) for pair in found), top)
    return open_gaps, history.missing(covered + open_gaps, top)
