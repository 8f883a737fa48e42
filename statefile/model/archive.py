"""The archive: everything compaction folds away, verbatim, in append-only parts ``archive/{program}/0001.md``
(a new part when the next chunk would push one over the budget); a chunk is one operation's text under a
``## Archived …`` heading.  Pure functions; the stores do the I/O."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from statefile.model.blocks import HEADING, ITEM, outline
from statefile.model.document import parse
from statefile.model.history import Entry, Iteration, IterationRange
from statefile.model.text import split_lines, utf8_size

ARCHIVE_ROOT = "archive"
_PART_RE = re.compile(r"^(\d{4,})\.md$")


def archive_dir(program: str) -> str:
    """Folder (relative to the store root) holding ``program``'s archive parts."""
    return f"{ARCHIVE_ROOT}/{program}"


@dataclass(frozen=True)
class ArchiveLayout:
    """Where a program's archive parts live: ``nested`` ``archive/{program}/0001.md``, or for repo-memory's
    ``file-glob`` (``*`` does not cross ``/``) ``flat`` ``archive/{program}.0001.md`` or ``root``
    ``_archive.{program}.0001.md``.  Part *names* stay ``0001.md`` whatever the layout."""

    kind: str = "nested"

    def __post_init__(self) -> None:
        if self.kind not in LAYOUT_KINDS:
            raise ValueError(f"unknown archive layout {self.kind!r}; use one of {', '.join(LAYOUT_KINDS)}")

    def part_path(self, program: str, name: str) -> str:
        """The path of part ``name`` (``0001.md``) of ``program``."""
        return _LAYOUTS[self.kind].format(program=program) + name

    def folder(self, program: str) -> str:
        """The folder holding the parts ("" for the store root)."""
        return self.part_path(program, "").rpartition("/")[0]

    def part_name(self, program: str, file_name: str) -> str | None:
        """The part name (``0001.md``) of ``file_name`` in :meth:`folder`, or ``None`` when it is not a part."""
        prefix = self.part_path(program, "").rpartition("/")[2]
        name = file_name.removeprefix(prefix)
        return name if file_name.startswith(prefix) and part_number(name) is not None else None

    def hint(self, program: str) -> str:
        """Where a person finds the parts: ``archive/perf/``, ``archive/perf.*.md`` or ``_archive.perf.*.md``."""
        prefix = self.part_path(program, "")
        return prefix if prefix.endswith("/") else prefix + "*.md"


#: File-name prefix of archive parts kept at the store root (the ``root`` layout).
ROOT_ARCHIVE_PREFIX = "_archive."
# Each layout's path of a part, less the part's name; in the order a store prefers them.
_LAYOUTS = {"nested": "archive/{program}/", "flat": "archive/{program}.", "root": ROOT_ARCHIVE_PREFIX + "{program}."}
LAYOUT_KINDS = tuple(_LAYOUTS)
NESTED = ArchiveLayout()


def part_name(number: int) -> str:
    """File name of archive part ``number`` (1-based)."""
    return f"{number:04d}.md"


def part_number(name: str) -> int | None:
    """The part number of an archive file name, or ``None`` if it is not one."""
    match = _PART_RE.match(name)
    return int(match.group(1)) if match else None


def part_header(program: str, number: int) -> str:
    """First lines of a new archive part."""
    note = f"Text folded out of `{program}.md` by statefile, verbatim, oldest first. Append-only."
    return f"# Archive: {program} (part {number})\n\n{note}\n"


def make_chunk(text: str, *, when: str, what: str) -> str:
    """Wrap removed ``text`` under a ``## Archived {when} — {what}`` heading."""
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"\n## Archived {when} — {what}\n\n{body}"


_CHUNK_HEAD = re.compile(r"\A\n## Archived (.*?) — (.*?)\n\n", re.S)


def unwrap_chunk(chunk: str) -> tuple[str, str]:
    """The inverse of :func:`make_chunk`: ``(what, text)``; text that is not a chunk comes back as ``("", chunk)``."""
    match = _CHUNK_HEAD.match(chunk)
    return (match.group(2), chunk[match.end() :]) if match else ("", chunk)


#: The lines around the pieces of an entry too large for one part (after the next part's header, after its end).
CONTINUED = "<!-- statefile: the entry above continues here -->"
CONTINUED_END = "<!-- statefile: end of the continued entry -->"
_MIN_ROOM = 256  # bytes of text a part holds whatever the budget


def plan_append(program: str, last_part: tuple[str, str] | None, chunk: str, max_bytes: int) -> list[tuple[str, str]]:
    """Where ``chunk`` goes after ``last_part`` (name, content) or ``None``: ``[(file name, new content), …]``.

    New parts are filled with whole entries; one larger than a part is cut at line ends (by characters as a last
    resort) between :data:`CONTINUED` and :data:`CONTINUED_END`, so every part stays within ``max_bytes``.
    """
    if not chunk:
        return []
    number = (part_number(last_part[0]) or 1) if last_part is not None else 0
    if last_part is not None and utf8_size(last_part[1]) + utf8_size(chunk) <= max_bytes:
        return [(last_part[0], last_part[1] + chunk)]
    writes: list[tuple[str, str]] = []
    current = ""  # the part being filled
    fresh = True  # it holds nothing but its header

    def new_part(continued: bool) -> None:
        nonlocal number, current, fresh
        if current:
            writes.append((part_name(number), current))
        number += 1
        current = part_header(program, number) + (f"\n{CONTINUED}\n" if continued else "")
        fresh = not continued  # a continuation part already holds the start of its marker

    def limit() -> int:
        return max(max_bytes, utf8_size(part_header(program, number)) + _MIN_ROOM)

    def fits(text: str) -> bool:
        return utf8_size(current) + utf8_size(text) <= limit()

    for unit in _units(chunk):
        if not current or (not fresh and not fits(unit)):
            new_part(False)
        if fits(unit):
            current += unit
            fresh = False
            continue
        end_mark = f"{CONTINUED_END}\n"
        rest = unit
        while rest:
            room = max(limit() - utf8_size(current), 64)  # always room to make progress
            if not fresh and utf8_size(rest) + utf8_size(end_mark) <= room:  # the last piece
                current += rest + ("" if rest.endswith("\n") else "\n") + end_mark
                break
            piece, rest = _take(rest, room)
            current += piece
            new_part(True)
        fresh = False
    if current:
        writes.append((part_name(number), current))
    return writes


def _units(chunk: str) -> list[str]:
    """``chunk`` cut before each entry and section after its first iteration or range entry (they join to it)."""
    doc = parse(chunk)
    lines = split_lines(chunk)
    cuts = {section.start for section in doc.sections}
    first: int | None = None
    for index in range(len(doc.sections)):
        for located in doc.entries_of(index):
            cuts.add(located.start)
            if isinstance(located.entry, (Iteration, IterationRange)) and (first is None or located.start < first):
                first = located.start
    starts = sorted(cut for cut in cuts if first is not None and cut > first)
    bounds = [0, *starts, len(lines)]
    return ["".join(lines[a:b]) for a, b in itertools.pairwise(bounds) if a < b]


def _take(text: str, room: int) -> tuple[str, str]:
    """The longest head of whole lines (or of a first line's characters) that fits ``room`` bytes, and the rest."""
    lines = split_lines(text[: room + 2])
    size = taken = 0
    for line in lines:
        if size + utf8_size(line) > room:
            break
        size += utf8_size(line)
        taken += len(line)
    if taken == 0:
        head, _ = _cut_chars(lines[0] if lines else "", room)
        return head, text[len(head) :]
    return text[:taken], text[taken:]


def _cut_chars(line: str, limit: int) -> tuple[str, str]:
    """The longest head of ``line`` of at most ``limit`` UTF-8 bytes (whole characters), and the rest."""
    low, high = 0, min(len(line), limit)
    while low < high:  # by bisection: a 5 MB line is cut in ~20 encodings
        middle = (low + high + 1) // 2
        if utf8_size(line[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return line[:low], line[low:]


def find_iteration(text: str, number: int) -> str | None:
    """The last archived detailed entry for iteration ``number`` in an archive part's text, verbatim, or ``None``."""
    found = [a.entry.raw for a in archive_entries(text) if isinstance(a.entry, Iteration) and number in a.entry.covers]
    return found[-1] if found else None


def continuation(text: str) -> tuple[str, bool] | None:
    """The piece of an entry a part continues from the previous one and whether it ends here, or ``None``."""
    marker = f"\n{CONTINUED}\n"
    at = text.find(marker)
    if at < 0 or any(block.kind == ITEM or (block.kind == HEADING and block.level > 1) for block in outline(text[:at])):
        return None  # not right after the header: some entry's text
    start = at + len(marker)
    end = text.find(f"{CONTINUED_END}\n", start)
    return (text[start:], False) if end < 0 else (text[start:end], True)


def find_iteration_in_parts(read: Callable[[int], str], count: int, number: int) -> tuple[int, str] | None:
    """The last archived copy of iteration ``number`` in ``count`` parts (``read(i)``, oldest first): the part it
    starts in and its whole text, joined across parts; parts are read newest first, only as needed."""
    for index in range(count - 1, -1, -1):
        text = read(index)
        if (found := find_iteration(text, number)) is None:
            continue
        whole, part = found, text
        following = index + 1
        while part.endswith(found) and following < count:
            if (piece := continuation(read(following))) is None:
                break
            whole += piece[0]
            if piece[1]:
                break
            part, found = read(following), piece[0]
            following += 1
        return index, whole
    return None


@dataclass(frozen=True)
class ArchivedEntry:
    """A history entry in an archive part: the entry, its 1-based line, what its chunk says it is (``"compaction of
    perf.md"``) and when that chunk was archived (``""`` when unknown)."""

    entry: Entry
    line: int
    chunk: str
    archived: str


_ARCHIVED_HEAD = re.compile(r"^Archived (.*?) — (.*)$")


def archive_entries(text: str) -> list[ArchivedEntry]:
    """Every iteration and range entry in an archive part, oldest first, each chunk read as the history is."""
    doc = parse(text)
    found: list[ArchivedEntry] = []
    for index, section in enumerate(doc.sections):
        match = _ARCHIVED_HEAD.match(section.title or "") if section.level == 2 else None
        chunk, archived = (match.group(2), match.group(1)) if match else (section.title or "", "")
        if section.level != 2:
            chunk = ""
        for located in doc.entries_of(index):
            if isinstance(located.entry, (Iteration, IterationRange)):
                found.append(ArchivedEntry(located.entry, located.start + 1, chunk, archived))
    return found
