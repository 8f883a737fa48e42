"""The state-file document: parse any text, render it back byte for byte, edit one part at a time.

Sections split at top-level ``#``/``##`` headings (:mod:`statefile.model.blocks`) keep their lines as they are; an
edit replaces only the lines it owns and re-reads the text, so every derived view agrees with ``render()``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from functools import cached_property
from itertools import pairwise
from typing import TYPE_CHECKING, Any, NamedTuple

from statefile.errors import InvalidDataError, UsageError
from statefile.model import blocks, history, machine_state
from statefile.model import lists as bullets
from statefile.model.anomalies import Anomaly, find_anomalies
from statefile.model.blocks import ITEM, PARAGRAPH, BlockScan, Heading, content_end, outline, scan_blocks
from statefile.model.history import Entry, Iteration, IterationRange
from statefile.model.patterns import entry_title, is_bullet_entry, is_entry_heading, is_placeholder, lesson_key
from statefile.model.sections import CANONICAL_ORDER, SECTION_KINDS, Section, section_kind
from statefile.model.text import clip, detect_newline, line_body, split_lines, utf8_size

if TYPE_CHECKING:
    from statefile.model.machine_state import CellValue


class Located(NamedTuple):
    """An entry and the absolute line span ``[start, end)`` it takes in the file."""

    start: int
    end: int
    entry: Entry


# An archive chunk's heading (statefile.model.archive): its entries are read like the history's.
_ARCHIVE_CHUNK = re.compile(r"^Archived .*? — ")


class StateDocument:
    """A parsed state file.  Build one with :func:`parse`; ``render()`` gives the text back."""

    _text: str
    _lines: list[str]
    _scan: BlockScan
    _sections: tuple[Section, ...]

    def __init__(self, text: str) -> None:
        set_ = object.__setattr__
        set_(self, "_text", text)
        set_(self, "_lines", split_lines(text))
        set_(self, "_scan", scan_blocks(text))
        set_(self, "_sections", self._split_sections())

    def _split_sections(self) -> tuple[Section, ...]:
        cuts: list[Heading] = []
        holds_entries = False
        for head in self._scan.headings:
            if head.level > 2 or head.line >= len(self._lines):
                continue
            if holds_entries and head.level == 2 and is_entry_heading(head.text):
                continue  # "## Iterations 1–12 — condensed": an entry written a level up stays in the history
            holds_entries = section_kind(head.text, head.level) == "history" or bool(_ARCHIVE_CHUNK.match(head.text))
            cuts.append(head)
        sections: list[Section] = []
        first = cuts[0].line if cuts else len(self._lines)
        if first > 0 or not cuts:
            sections.append(Section("preamble", None, 0, 0, tuple(self._lines[:first])))
        for index, head in enumerate(cuts):
            end = cuts[index + 1].line if index + 1 < len(cuts) else len(self._lines)
            kind = section_kind(head.text, head.level)
            sections.append(Section(kind, head.text, head.level, head.line, tuple(self._lines[head.line : end])))
        return tuple(sections)

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
        return next((s for s in self._sections if s.kind == kind), None)

    def _index(self, kind: str) -> int | None:
        return next((i for i, s in enumerate(self._sections) if s.kind == kind), None)

    @cached_property
    def machine_state(self) -> dict[str, Any]:
        """The Machine State table as the upstream scheduler reads it (``{}`` when there is no table)."""
        section = self.section("machine_state")
        return machine_state.read_state(list(section.lines)) if section is not None else {}

    @cached_property
    def _history_layout(self) -> tuple[int, bool] | None:
        """The index of the section holding the history's entries, and whether it is another (``misplaced``) one."""
        if (index := self._index("history")) is not None:
            return index, False
        for index, section in enumerate(self._sections):  # agents have dropped the history heading: entries elsewhere
            never = section.kind in ("machine_state", "title", "preamble")
            if not never and any(is_entry_heading(head.text) for head in self._entry_headings.get(index, [])):
                return index, True
        return None

    @cached_property
    def _entry_headings(self) -> dict[int, list[Heading]]:
        """Entry headings (``###``, or a ``##`` entry heading kept inside the history) by the index of their section."""
        by_section: dict[int, list[Heading]] = {}
        starts = [section.start for section in self._sections]
        section_starts = set(starts)
        for head in self._scan.headings:
            if head.line >= len(self._lines) or head.line in section_starts:
                continue
            if (head.level == 3 and self._lines[head.line].startswith("###")) or (
                head.level == 2 and self._lines[head.line].startswith("##") and is_entry_heading(head.text)
            ):
                by_section.setdefault(bisect_right(starts, head.line) - 1, []).append(head)
        return by_section

    def _entry_starts(self, index: int, *, stray: bool = False) -> list[int]:
        """Entry starts: ``###`` headings, and entry-shaped bullets above the first (below, a bullet is its body)."""
        section = self._sections[index]
        found = self._entry_headings.get(index, [])
        heads = [head.line - section.start for head in found]
        if stray:
            return heads[next((k for k, head in enumerate(found) if is_entry_heading(head.text)), len(heads)) :]
        top = heads[0] if heads else len(section.lines)
        region = section.lines[1:top]
        if not any(is_bullet_entry(line) for line in region):
            return heads
        bullets = [
            block.start + 1
            for block in outline("".join(region))
            if block.kind == ITEM and not block.ordered and is_bullet_entry(region[block.start])
        ]
        return bullets + heads

    def entries_of(self, index: int) -> tuple[Located, ...]:
        """The entries of section ``index`` read as the history is (an archive chunk's too), with their line spans."""
        layout = self._history_layout
        return self.located_history if layout is not None and layout[0] == index else self._entries(index, False)

    def _entries(self, index: int, stray: bool) -> tuple[Located, ...]:
        section = self._sections[index]
        ends = [*self._entry_starts(index, stray=stray), len(section.lines)]
        return tuple(
            Located(section.start + a, section.start + b, history.parse_entry("".join(section.lines[a:b])))
            for a, b in pairwise(ends)
        )

    @cached_property
    def located_history(self) -> tuple[Located, ...]:
        """:attr:`history` with each entry's absolute line span ``[start, end)`` in the file."""
        layout = self._history_layout
        return () if layout is None else self._entries(*layout)

    @cached_property
    def history(self) -> tuple[Entry, ...]:
        """Iteration History entries in file order (newest first): iterations, ranges and opaque entries."""
        return tuple(located.entry for located in self.located_history)

    @property
    def history_start(self) -> tuple[int, int] | None:
        """``(section index, line in that section)`` where the history's entries start, or ``None`` without any."""
        layout, located = self._history_layout, self.located_history
        return (
            None if layout is None or not located else (layout[0], located[0].start - self._sections[layout[0]].start)
        )

    @property
    def entry_lines(self) -> tuple[int, ...]:
        """The 0-based first line of each :attr:`history` entry (where the layout found it: a file may hold a copy)."""
        return tuple(located.start for located in self.located_history)

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

    def list_items(self, kind: str) -> list[bullets.Item]:
        """Bullets of a list section (``lessons``, ``foreclosed``, ``future``), in file order."""
        index = self._index(kind)
        if index is None:
            return []
        if index not in self._items:
            self._items[index] = bullets.items(self._sections[index].lines)
        return list(self._items[index])

    @cached_property
    def _items(self) -> dict[int, list[bullets.Item]]:
        return {}

    @cached_property
    def warnings(self) -> tuple[Anomaly, ...]:
        """Anomalies found in the file (see :mod:`statefile.model.anomalies`)."""
        return tuple(find_anomalies(self))

    @property
    def history_misplaced(self) -> bool:
        """True when entries were found under another section because the history heading is missing."""
        layout = self._history_layout
        return layout is not None and layout[1]

    def with_lines(self, start: int, end: int, new_lines: Sequence[str]) -> StateDocument:
        """A copy with the file's lines ``[start, end)`` replaced by ``new_lines`` (the line before them given a line
        ending when it has none)."""
        lines = _ended(list(self._lines), start, self.newline) if new_lines else list(self._lines)
        lines[start:end] = new_lines
        return StateDocument("".join(lines))

    def _with_section_lines(self, index: int, new_lines: Sequence[str]) -> StateDocument:
        section = self._sections[index]
        return self.with_lines(section.start, section.start + len(section.lines), new_lines)

    def _with_section(self, kind: str) -> tuple[StateDocument, int]:
        """This document with a section of ``kind`` (heading + blank line, in canonical position), and its index."""
        if (found := self._index(kind)) is not None:
            return self, found
        nl = self.newline
        heading, _ = SECTION_KINDS[kind]
        later = CANONICAL_ORDER[CANONICAL_ORDER.index(kind) + 1 :]
        lines = _ended(list(self._lines), len(self._lines), nl)
        at = next((section.start for section in self._sections if section.kind in later), len(lines))
        spaced = at == len(lines) and bool(lines) and bool(line_body(lines[-1]).strip())  # at the end, after text
        lines[at:at] = [nl] * spaced + [heading + nl, nl]
        new = StateDocument("".join(lines))
        created = new._index(kind)
        if created is None:  # the heading landed inside an unclosed fence, where it is text: refuse
            self.require_closed_blocks(f"add the '{heading}' section")
            raise InvalidDataError(f"cannot add the '{heading}' section; check the file's headings")
        return new, created

    @cached_property
    def unclosed_block(self) -> int | None:
        """The 0-based line where a code fence or HTML block opens that is never closed (the rest of the file is then
        code), or ``None``; a block that merely ends with the file is not unclosed (a heading after it is one)."""
        last = len(self._lines)
        for start, end in self._scan.code_ranges:
            if end >= last:
                tail = "".join(self._lines[start:])
                probe = scan_blocks(tail + ("" if tail.endswith(("\n", "\r")) else "\n") + "\n## statefile-probe\n")
                if not any(h.text == "statefile-probe" for h in probe.headings):
                    return start
        return None

    def require_closed_blocks(self, action: str) -> None:
        """Raise InvalidDataError when the file has an :attr:`unclosed_block`: an edit there would change what the
        rest of the file means.  ``action`` says what was refused (``"record an iteration"``)."""
        if (line := self.unclosed_block) is not None:
            raise InvalidDataError(
                f"cannot {action}: a code fence or HTML block opened at line {line + 1} is never closed, so the rest "
                "of the file is code to markdown; close it (e.g. a ``` line where the code ends), then retry"
            )

    def with_fields(self, fields: Mapping[str, CellValue]) -> StateDocument:
        """A copy with Machine State rows set by label (``{"Iteration Count": 5}``) or key (``{"iteration_count": 5}``).

        ``None`` writes ``—``, booleans ``true``/``false``, lists comma-joined; only those rows' lines change, missing
        rows and section are added, and a drifted heading becomes the exact one the scheduler looks for.
        """
        doc, index = self._with_section("machine_state")
        lines = list(doc._sections[index].lines)
        nl = doc.newline
        if not machine_state.table_rows(lines) and not any("|" in line for line in lines):
            end = content_end(lines)
            lines = _ended(lines, end, nl)
            lines[end:end] = [nl, *machine_state.new_table({}, nl)]
        for name, value in fields.items():
            lines = machine_state.with_row(lines, machine_state.label_for(name), machine_state.cell_text(value), nl)
        canonical = SECTION_KINDS["machine_state"][0]
        if line_body(lines[0]) != canonical:
            lines[0] = canonical + lines[0][len(line_body(lines[0])) :]
        return doc._with_section_lines(index, lines)

    def with_field(self, name: str, value: CellValue) -> StateDocument:
        """A copy with one Machine State row set (see :meth:`with_fields`)."""
        return self.with_fields({name: value})

    def with_history_section(self) -> tuple[StateDocument, int]:
        """This document with its entries under a history heading (inserted above stray entries), and its index."""
        doc = self
        if self.history_misplaced:
            at, nl = self.located_history[0].start, self.newline
            doc = self.with_lines(at, at, [SECTION_KINDS["history"][0] + nl, nl])
        return doc._with_section("history")

    def with_entry(self, entry_text: str) -> StateDocument:
        """A copy with an entry (its text, ending in a newline) above the newest one, replacing the placeholder."""
        doc, index = self.with_history_section()
        lines = list(doc._sections[index].lines)
        nl = doc.newline
        start = doc.history_start
        at = len(lines) if start is None else start[1]
        placeholder = _placeholder_line(lines, at)
        if placeholder is not None:  # the template's "*(No iterations yet.)*": the first entry replaces it
            around = lines[placeholder - 1 : placeholder + 2] if placeholder > 0 else []
            blank = len(around) == 3 and not around[0].strip() and not around[2].strip()  # one blank line goes too
            del lines[placeholder : placeholder + 1 + blank]
            at -= 1 + blank
        if start is None:  # after the intro; the entry's own blank line replaces the trailing ones
            at = len(lines)
            while at > 1 and not line_body(lines[at - 1]).strip():
                at -= 1
            lines = _ended(lines, at, nl)
            lines[at:] = [nl, *split_lines(entry_text)]
        else:
            if is_bullet_entry(lines[at]):  # a heading above bullet entries would make them its body
                entry_text = _as_bullet(entry_text, nl)
            lines[at:at] = split_lines(entry_text)
        return doc._with_section_lines(index, lines)

    def with_lesson(self, text: str) -> StateDocument:
        """A copy with a bullet appended to Lessons Learned (creating the section, replacing ``*(none yet)*``); an
        empty lesson is refused and one already there is not added again (see :meth:`with_items`)."""
        return self.with_items("lessons", [text])

    def with_foreclosed(self, text: str) -> StateDocument:
        """A copy with a bullet appended to Foreclosed Avenues."""
        return self.with_items("foreclosed", [text])

    def with_future_direction(self, text: str) -> StateDocument:
        """A copy with a bullet appended to Future Directions."""
        return self.with_items("future", [text])

    def with_priority(self, text: str) -> StateDocument:
        """A copy with a bullet appended to Current Priorities."""
        return self.with_items("priorities", [text])

    def with_items(self, kind: str, texts: Sequence[str]) -> StateDocument:
        """A copy with one bullet per text appended to the list section ``kind`` (``lessons``, ``foreclosed``,
        ``future``, ``priorities``), in one pass: linear in the texts, however many there are.

        The one rule for new bullets: a text without words is refused (:class:`UsageError`), and a lesson that is
        already there (the same :func:`~statefile.model.patterns.lesson_key`) is not added again.
        """
        seen = {lesson_key(item.text) for item in self.list_items(kind)} if kind == "lessons" else set()
        new: list[str] = []
        for text in texts:
            key = lesson_key(text) if kind == "lessons" else " ".join(text.split())
            if not key:
                what = "lesson" if kind == "lessons" else f"{kind} bullet"
                if text.strip():  # only marks: say so, "empty" would not be true of "(from me)" or "📌"
                    raise UsageError(f"{what} {clip(text, 60)!r} has only marks (pin, expiry, origin); give its words")
                raise UsageError(f"empty {what}; give its text")
            if kind != "lessons" or key not in seen:
                seen.add(key)
                new.append(text)
        if not new:
            return self
        doc, index = self._with_section(kind)
        section = doc._sections[index]
        return doc._with_section_lines(index, bullets.with_items(list(section.lines), new, doc.newline))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"StateDocument is immutable; cannot set {name!r} (editors return a new document)")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateDocument) and other._text == self._text

    def __hash__(self) -> int:
        return hash(self._text)

    def __repr__(self) -> str:
        return f"<StateDocument {self.size} bytes, {len(self._sections)} sections, {len(self.history)} entries>"


def _placeholder_line(lines: list[str], before: int) -> int | None:
    """The line (before the first entry) holding the template's ``*(No iterations yet.)*``, or ``None``."""
    for block in outline("".join(lines[:before])):
        if block.kind in (PARAGRAPH, ITEM) and block.end == block.start + 1 and is_placeholder(lines[block.start]):
            return block.start
    return None


def _as_bullet(entry_text: str, nl: str) -> str:
    """An entry as one ``- Iteration 2 — date: **Status**: ✅ · …`` bullet, hidden lines kept on lines of their own."""
    lines = [line_body(line).strip() for line in split_lines(entry_text) if line_body(line).strip()]
    hidden = [line for line in lines[1:] if line.startswith("<!--")]
    fields = [line.lstrip("-*+").strip() for line in lines[1:] if not line.startswith("<!--")]
    head = f"- {entry_title(lines[0])}" + (": " + " · ".join(fields) if fields else "") + nl
    return head + "".join(f"  {line}{nl}" for line in hidden)


def _ended(lines: list[str], at: int, nl: str) -> list[str]:
    """``lines`` with the line before ``at`` ending in a newline, so that lines can be inserted at ``at``."""
    if at > 0 and not lines[at - 1].endswith(("\n", "\r")):
        lines[at - 1] += nl
    return lines


def parse(text: str) -> StateDocument:
    """Parse any text into a :class:`StateDocument`.  Never raises; ``parse(t).render() == t``."""
    return StateDocument(text)


def read_machine_state(text: str) -> dict[str, Any]:
    """``parse(text).machine_state``, always, reading only up to the end of that section when that is safe (the
    scheduler reads every program's table, near the top): at a line that could open a fence or HTML block, or with
    bare CR line endings, it parses the whole text (see :func:`statefile.model.blocks.top_heading_lines`)."""
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return parse(text).machine_state
    body = text[1:] if text.startswith("\ufeff") else text
    start: int | None = None
    end = len(body)
    for offset, level, title in blocks.top_heading_lines(body):
        if not level:
            return parse(text).machine_state  # a fence or HTML block could hide or fake a heading
        if start is not None:
            end = offset
            break
        if section_kind(title, level) == "machine_state":
            start = offset
    if start is None:
        return {}
    return machine_state.read_state(split_lines(body[start:end]))
