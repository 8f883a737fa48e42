"""The state-file document model: parse any text, render it back byte for byte, edit one part at a time.

A document is a list of sections split at top-level ``#``/``##`` headings (found with markdown-it-py, so a heading
inside a code fence is text).  Each section keeps its original lines, line endings included; ``render()`` joins
them, so an untouched file comes back identical.  Edits replace only the lines they own and then re-read the text,
which keeps every derived view (machine state, history, warnings) consistent with what ``render()`` returns.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from statefile.errors import InvalidDataError
from statefile.model import history, machine_state
from statefile.model import lists as bullets
from statefile.model.anomalies import Anomaly, find_anomalies
from statefile.model.blocks import (
    ITEM,
    PARAGRAPH,
    BlockScan,
    Heading,
    content_end,
    outline,
    scan_blocks,
    top_heading_lines,
)
from statefile.model.history import Entry, Iteration, IterationRange
from statefile.model.patterns import entry_title, is_bullet_entry, is_entry_heading, is_placeholder
from statefile.model.sections import CANONICAL_ORDER, SECTION_KINDS, Section, section_kind
from statefile.model.text import detect_newline, line_body, split_lines, utf8_size

if TYPE_CHECKING:
    from statefile.model.machine_state import CellValue


class Located(NamedTuple):
    """An entry and the absolute line span ``[start, end)`` it takes in the file."""

    start: int
    end: int
    entry: Entry


@dataclass(frozen=True)
class HistoryLayout:
    """Where the history's entries live: section index, first entry line, and each entry's line span."""

    section: int
    first_entry: int
    spans: tuple[tuple[int, int], ...]
    misplaced: bool


# An archive part's chunk heading ("## Archived 2026-01-02T03:04:05Z — compaction of perf.md", see
# statefile.model.archive): its entries are read like the history's, level-2 entry headings included.
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

    # -- reading -------------------------------------------------------------------------------------------------

    def _split_sections(self) -> tuple[Section, ...]:
        cuts: list[Heading] = []
        holds_entries = False
        for head in self._scan.headings:
            if head.level > 2 or head.line >= len(self._lines):
                continue
            if holds_entries and head.level == 2 and is_entry_heading(head.text):
                # "## Iterations 1–12 — condensed" in a history is one more entry written a level up: it stays in
                # that section (an entry of it, see _entry_headings) rather than starting a section of its own.
                continue
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
        if section is None:
            return {}
        return machine_state.read_state(list(section.lines))

    @cached_property
    def _history_layout(self) -> HistoryLayout | None:
        index = self._index("history")
        misplaced = False
        if index is None:
            # Agents have dropped the history heading and left the entries under whatever section came last.
            index = self._stray_entries_section()
            misplaced = index is not None
        if index is None:
            return None
        section = self._sections[index]
        starts = self._entry_starts(index, stray=misplaced)
        spans = tuple(
            (start, starts[k + 1] if k + 1 < len(starts) else len(section.lines)) for k, start in enumerate(starts)
        )
        first = starts[0] if starts else len(section.lines)
        return HistoryLayout(index, first, spans, misplaced)

    @cached_property
    def _entry_headings(self) -> dict[int, list[Heading]]:
        """Entry headings (level 3, or level 2 inside the history) by the index of the section that holds them."""
        by_section: dict[int, list[Heading]] = {}
        starts = [section.start for section in self._sections]
        section_starts = set(starts)
        for head in self._scan.headings:
            if head.line >= len(self._lines) or head.line in section_starts:
                continue
            # Level 3 as written ("###"), or a level-2 entry heading _split_sections kept inside the history.
            if (head.level == 3 and self._lines[head.line].startswith("###")) or (
                head.level == 2 and self._lines[head.line].startswith("##") and is_entry_heading(head.text)
            ):
                by_section.setdefault(bisect_right(starts, head.line) - 1, []).append(head)
        return by_section

    def _entry_starts(self, index: int, *, stray: bool = False) -> list[int]:
        """Lines (relative to the section) where the entries of section ``index`` start, read as a history.

        Every ``###`` heading starts an entry (an iteration, a range, or an opaque entry kept as it is).  A bullet
        starts one only when it is shaped like an entry (``- Iter 1: …``, see patterns.is_bullet_entry) *and* is a
        top-level list item above the first heading: below it, a bullet is the body of the entry above it, however
        it reads ("- Iteration 190 and 189 both had wrong branch" is a note, not two entries).  ``stray`` entries
        (no history heading) start at the first heading that names an iteration; no bullets are read there.
        """
        section = self._sections[index]
        heads = [head.line - section.start for head in self._entry_headings.get(index, [])]
        if stray:
            titles = {head.line - section.start: head.text for head in self._entry_headings.get(index, [])}
            first = next((k for k, line in enumerate(heads) if is_entry_heading(titles[line])), len(heads))
            return heads[first:]
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

    def _stray_entries_section(self) -> int | None:
        for index, section in enumerate(self._sections):
            if section.kind in ("machine_state", "title", "preamble"):
                continue
            if any(is_entry_heading(head.text) for head in self._entry_headings.get(index, [])):
                return index
        return None

    def entries_of(self, index: int) -> tuple[Located, ...]:
        """The entries of section ``index`` read as a history section is read, with their absolute line spans.

        For the history section this is :attr:`located_history`; an archive part's ``## Archived …`` chunks are
        read the same way (:mod:`statefile.model.archive`), so an entry reads the same before and after it moves.
        """
        layout = self._history_layout
        if layout is not None and layout.section == index:
            return self.located_history
        section = self._sections[index]
        starts = self._entry_starts(index)
        return tuple(
            self._located(section, start, starts[k + 1] if k + 1 < len(starts) else len(section.lines))
            for k, start in enumerate(starts)
        )

    def _located(self, section: Section, start: int, end: int) -> Located:
        text = "".join(section.lines[start:end])
        return Located(section.start + start, section.start + end, history.parse_entry(text))

    @cached_property
    def located_history(self) -> tuple[Located, ...]:
        """:attr:`history` with each entry's absolute line span ``[start, end)`` in the file."""
        layout = self._history_layout
        if layout is None:
            return ()
        section = self._sections[layout.section]
        return tuple(self._located(section, a, b) for a, b in layout.spans)

    @cached_property
    def history(self) -> tuple[Entry, ...]:
        """Iteration History entries in file order (newest first): iterations, ranges and opaque entries."""
        return tuple(located.entry for located in self.located_history)

    @property
    def history_start(self) -> tuple[int, int] | None:
        """``(section index, line in that section)`` where the history's entries start, or ``None`` without any."""
        layout = self._history_layout
        if layout is None or not layout.spans:
            return None
        return layout.section, layout.first_entry

    @property
    def entry_lines(self) -> tuple[int, ...]:
        """The 0-based line of each :attr:`history` entry's first line, in the same order.

        Entries are where the layout found them, never found again by searching the text: an agent's file may hold
        the same entry twice (a pasted copy in another section).
        """
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
        found = self._items.get(index)
        if found is None:
            found = self._items[index] = bullets.items(self._sections[index].lines)
        return list(found)

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
        return bool(layout and layout.misplaced)

    # -- editing: every editor returns a new document; this one never changes --------------------------------------

    def _with_section_lines(self, index: int, new_lines: Iterable[str]) -> StateDocument:
        section = self._sections[index]
        lines = list(self._lines)
        lines[section.start : section.start + len(section.lines)] = list(new_lines)
        return StateDocument("".join(lines))

    def _with_section(self, kind: str) -> tuple[StateDocument, int]:
        """This document with a section of ``kind`` (heading + blank line, in canonical position), and its index."""
        found = self._index(kind)
        if found is not None:
            return self, found
        nl = self.newline
        heading, _ = SECTION_KINDS[kind]
        rank = CANONICAL_ORDER.index(kind)
        insert_at: int | None = None  # line index
        for section in self._sections:
            if section.kind in CANONICAL_ORDER and CANONICAL_ORDER.index(section.kind) > rank:
                insert_at = section.start
                break
        lines = list(self._lines)
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += nl
        block = [heading + nl, nl]
        if insert_at is None:
            if lines and line_body(lines[-1]).strip():
                block.insert(0, nl)
            lines.extend(block)
        else:
            lines[insert_at:insert_at] = block
        new = StateDocument("".join(lines))
        created = new._index(kind)
        if created is None:
            # The new heading landed inside a code fence or HTML block that is never closed, where it is text,
            # not a heading.  Closing the block is the maintainer's call, not ours: refuse, changing nothing.
            self.require_closed_blocks(f"add the '{heading}' section")
            raise InvalidDataError(f"cannot add the '{heading}' section; check the file's headings")
        return new, created

    @cached_property
    def unclosed_block(self) -> int | None:
        """The 0-based line where a code fence or HTML block opens that is never closed, or ``None``.

        Everything after such a line is code to markdown, not sections or entries: an agent's forgotten closing
        fence turns the rest of the file into one code block.  A block that merely ends with the file (a closed
        fence on the last line, an HTML block with no blank line after it) is not unclosed: a heading placed after
        it would still be a heading, which is what is probed.
        """
        last = len(self._lines)
        for start, end in self._scan.code_ranges:
            if end >= last:
                tail = "".join(self._lines[start:])
                probe = scan_blocks(tail + ("" if tail.endswith(("\n", "\r")) else "\n") + "\n## statefile-probe\n")
                if not any(h.text == "statefile-probe" for h in probe.headings):
                    return start
        return None

    def require_closed_blocks(self, action: str) -> None:
        """Raise InvalidDataError when the file has an :attr:`unclosed_block`: edits there cannot be placed safely.

        Adding a section or entry after the opening line would hide it inside the block, and moving the text that
        holds the opening line (compaction) would turn the rest of the file back into sections: either way the
        file's meaning would change beyond the edit.  ``action`` says what was refused (``"record an iteration"``).
        """
        line = self.unclosed_block
        if line is not None:
            raise InvalidDataError(
                f"cannot {action}: a code fence or HTML block opened at line {line + 1} is never closed, so the rest "
                "of the file is code to markdown; close it (e.g. a ``` line where the code ends), then retry"
            )

    def with_fields(self, fields: Mapping[str, CellValue]) -> StateDocument:
        """A copy with Machine State rows set by label (``{"Iteration Count": 5}``) or key (``{"iteration_count": 5}``).

        ``None`` writes ``—``; booleans write ``true``/``false``; lists are comma-joined.  Only the edited rows'
        lines change; missing rows are added in canonical order; a missing section is created after the title; a
        drifted section heading is restored to the exact ``## ⚙️ Machine State`` the scheduler looks for.
        """
        doc, index = self._with_section("machine_state")
        lines = list(doc._sections[index].lines)
        nl = doc.newline
        if not machine_state.table_rows(lines) and not any("|" in line for line in lines):
            lines = _append_block(lines, machine_state.new_table({}, nl), nl)
        for name, value in fields.items():
            lines = machine_state.set_row(lines, machine_state.label_for(name), machine_state.cell_text(value), nl)
        canonical = SECTION_KINDS["machine_state"][0]
        if line_body(lines[0]) != canonical:
            # The upstream scheduler finds the table only under this exact heading; a drifted one
            # ("## Machine State", "## \ufffd\ufffd Machine State") makes the program look brand new.
            lines[0] = canonical + lines[0][len(line_body(lines[0])) :]
        return doc._with_section_lines(index, lines)

    def with_field(self, name: str, value: CellValue) -> StateDocument:
        """A copy with one Machine State row set (see :meth:`with_fields`)."""
        return self.with_fields({name: value})

    def with_history_section(self) -> tuple[StateDocument, int]:
        """This document with its entries under a history heading, and that section's index.

        When the heading is missing but entries sit under another section, a ``## 📊 Iteration History`` heading is
        inserted right above the first entry, so the entries become history without moving a byte of them.
        """
        doc = self
        layout = self._history_layout
        if layout is not None and layout.misplaced:
            section = self._sections[layout.section]
            at = section.start + layout.first_entry
            nl = self.newline
            lines = list(self._lines)
            if at > 0 and not lines[at - 1].endswith(("\n", "\r")):
                lines[at - 1] += nl
            lines[at:at] = [SECTION_KINDS["history"][0] + nl, nl]
            doc = StateDocument("".join(lines))
        return doc._with_section("history")

    def with_entry(self, entry_text: str) -> StateDocument:
        """A copy with an entry (its text, ending in a newline) above the newest one, replacing the placeholder."""
        doc, index = self.with_history_section()
        layout = doc._history_layout
        assert layout is not None
        lines = list(doc._sections[index].lines)
        nl = doc.newline
        at = layout.first_entry
        placeholder = _placeholder_line(lines, at)
        if placeholder is not None:
            # The template's "*(No iterations yet.)*" is not user text: the first entry replaces it.
            del lines[placeholder]
            at -= 1
            blank_after = 0 < placeholder < len(lines) and not line_body(lines[placeholder]).strip()
            if blank_after and not line_body(lines[placeholder - 1]).strip():
                del lines[placeholder]
                at -= 1
        if not layout.spans:
            # No entries yet: after the intro, before trailing blank lines, one blank line between.
            at = len(lines)
            while at > 1 and not line_body(lines[at - 1]).strip():
                at -= 1
            if not lines[at - 1].endswith(("\n", "\r")):
                lines[at - 1] += nl
            # The entry ends in its own blank line; the blank lines it replaces would only pile up below it.
            lines[at:] = [nl, *split_lines(entry_text)]
        else:
            if is_bullet_entry(lines[at]):
                # The history is written as bullets ("- Iter 1: ❌ …"): a heading above them would make them its
                # body (a bullet below an entry heading is that entry's text), so the new entry is a bullet too.
                entry_text = _as_bullet(entry_text, nl)
            lines[at:at] = split_lines(entry_text)
        return doc._with_section_lines(index, lines)

    def with_lesson(self, text: str) -> StateDocument:
        """A copy with a bullet appended to Lessons Learned (creating the section, replacing ``*(none yet)*``)."""
        return self._add_item("lessons", text)

    def with_foreclosed(self, text: str) -> StateDocument:
        """A copy with a bullet appended to Foreclosed Avenues."""
        return self._add_item("foreclosed", text)

    def with_future_direction(self, text: str) -> StateDocument:
        """A copy with a bullet appended to Future Directions."""
        return self._add_item("future", text)

    def with_priority(self, text: str) -> StateDocument:
        """A copy with a bullet appended to Current Priorities (a maintainer-owned list: only ever appended to)."""
        return self._add_item("priorities", text)

    def with_items(self, kind: str, texts: Sequence[str]) -> StateDocument:
        """A copy with one bullet per text appended to the list section ``kind`` (``lessons``, ``foreclosed``,
        ``future``, ``priorities``), in one pass: linear in the texts, however many there are."""
        if not texts:
            return self
        doc, index = self._with_section(kind)
        section = doc._sections[index]
        return doc._with_section_lines(index, bullets.add_items(list(section.lines), texts, doc.newline))

    def _add_item(self, kind: str, text: str) -> StateDocument:
        return self.with_items(kind, [text])

    def __setattr__(self, name: str, value: Any) -> None:
        # A document is a value: editors return new documents, so one can be shared, hashed and retried safely.
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
    """An entry written by statefile (heading and field bullets) as one bullet-form entry line.

    ``### Iteration 2 — 2026-01-02 10:00 UTC`` + ``- **Status**: ✅ Accepted`` … becomes
    ``- Iteration 2 — 2026-01-02 10:00 UTC: **Status**: ✅ Accepted · **Metric**: …``, which reads back with the
    same number, status and fields.
    """
    lines = [line_body(line).strip() for line in split_lines(entry_text) if line_body(line).strip()]
    # A hidden line (statefile's item marker, an HTML comment) is no field: joined with " · " it would read back as
    # part of the last field's value.  It goes on a line of its own inside the bullet, where the re-run lookup
    # (a substring search for the comment) still finds it and no field or view does.
    hidden = [line for line in lines[1:] if line.startswith("<!--")]
    fields = [line.lstrip("-*+").strip() for line in lines[1:] if not line.startswith("<!--")]
    head = f"- {entry_title(lines[0])}" + (": " + " · ".join(fields) if fields else "") + nl
    return head + "".join(f"  {line}{nl}" for line in hidden)


def _append_block(lines: list[str], block: list[str], nl: str) -> list[str]:
    end = content_end(lines)
    out = list(lines)
    if not out[end - 1].endswith(("\n", "\r")):
        out[end - 1] += nl
    out[end:end] = [nl, *block]
    return out


def parse(text: str) -> StateDocument:
    """Parse any text into a :class:`StateDocument`.  Never raises; ``parse(t).render() == t``."""
    return StateDocument(text)


# -- the Machine State alone, cheaply --------------------------------------------------------------------------------


def read_machine_state(text: str) -> dict[str, Any]:
    """``parse(text).machine_state``, reading only the lines up to the end of that section when that is safe.

    A scheduler reading every program needs only each table, which sits near the top: this finds section headings
    the way :func:`parse` does and stops where the Machine State section ends.  With markdown-it's heading rules as
    configured (lists, quotes, tables and setext headings off), a line can only stop being a heading inside a
    fenced code block or an HTML block, so at the first line that could open one — or with bare CR line endings —
    it falls back to the full parse.  The line matcher is :func:`statefile.model.blocks.top_heading_lines`, kept
    beside the scanner it stands in for.  The result is always equal to ``parse(text).machine_state`` (a property the
    reliability tests check on fuzzed files).
    """
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return parse(text).machine_state
    # scan_blocks drops a leading BOM before looking for headings; so does this (the heading line is no table row).
    body = text[1:] if text.startswith("\ufeff") else text
    start: int | None = None
    end = len(body)
    for offset, level, title in top_heading_lines(body):
        if not level:
            return parse(text).machine_state  # a fence or HTML block could hide or fake a heading
        if start is not None:
            end = offset
            break
        # heading_key ignores '#' and spacing, so markdown-it's trimming of a closing '##' does not matter.
        if section_kind(title, level) == "machine_state":
            start = offset
    if start is None:
        return {}
    return machine_state.read_state(split_lines(body[start:end]))
