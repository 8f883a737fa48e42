"""The archive: what compaction folds away, verbatim, as ``## Archived …`` chunks in append-only, budgeted parts
(``archive/{program}/0001.md``).  Pure functions; the stores do the I/O."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from statefile.model.blocks import HEADING, ITEM, outline
from statefile.model.document import parse
from statefile.model.history import Entry, Iteration, IterationRange
from statefile.model.patterns import ARCHIVED_HEAD
from statefile.model.text import split_lines, utf8_size

ARCHIVE_ROOT = "archive"
_PART_RE = re.compile(r"^(\d{4,})\.md$")


@dataclass(frozen=True)
class ArchiveLayout:
    """Where a program's archive parts live (``nested``, or ``flat``/``root`` for repo-memory's ``file-glob``, where
    ``*`` does not cross ``/``: see ``_LAYOUTS``); part *names* stay ``0001.md`` whatever the layout."""

    kind: str = "nested"  # one of LAYOUT_KINDS

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
_LAYOUTS = {
    "nested": ARCHIVE_ROOT + "/{program}/",
    "flat": ARCHIVE_ROOT + "/{program}.",
    "root": ROOT_ARCHIVE_PREFIX + "{program}.",
}
LAYOUT_KINDS = tuple(_LAYOUTS)
NESTED = ArchiveLayout()


def part_name(number: int) -> str:
    """File name of archive part ``number`` (1-based)."""
    return f"{number:04d}.md"


def part_number(name: str) -> int | None:
    """The part number of an archive file name, or ``None`` if it is not one."""
    return int(match.group(1)) if (match := _PART_RE.match(name)) else None


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
    return (match.group(2), chunk[match.end() :]) if (match := _CHUNK_HEAD.match(chunk)) else ("", chunk)


#: The lines around the pieces of an entry too large for one part (after the next part's header, after its end).
CONTINUED = "<!-- statefile: the entry above continues here -->"
CONTINUED_END = "<!-- statefile: end of the continued entry -->"
_MIN_ROOM = 256  # bytes of text a part holds whatever the budget


def plan_append(program: str, last_part: tuple[str, str] | None, chunk: str, max_bytes: int) -> list[tuple[str, str]]:
    """``[(file name, new content), …]`` for ``chunk`` after ``last_part`` (name, content) or ``None``: new parts hold
    whole entries; a larger one is cut at line ends (characters as a last resort) between :data:`CONTINUED` marks."""
    if not chunk:
        return []
    if last_part is not None and utf8_size(last_part[1]) + utf8_size(chunk) <= max_bytes:
        return [(last_part[0], last_part[1] + chunk)]
    first = (part_number(last_part[0]) or 1) if last_part is not None else 0
    parts: list[str] = []  # the new parts; the last one is being filled
    fresh = True  # the last part holds nothing but its header (a continuation part holds its marker too)

    def room() -> int:
        header = part_header(program, first + len(parts))
        return max(max_bytes, utf8_size(header) + _MIN_ROOM) - utf8_size(parts[-1])

    def new_part(continued: bool) -> None:
        nonlocal fresh
        parts.append(part_header(program, first + len(parts) + 1) + (f"\n{CONTINUED}\n" if continued else ""))
        fresh = not continued

    # Units: the chunk cut before each entry and section after its first iteration or range entry (they join to it).
    doc, lines = parse(chunk), split_lines(chunk)
    located = [found for index in range(len(doc.sections)) for found in doc.entries_of(index)]
    top = min((found.start for found in located if isinstance(found.entry, (Iteration, IterationRange))), default=None)
    cuts = {section.start for section in doc.sections} | {found.start for found in located}
    bounds = [0, *sorted(cut for cut in cuts if top is not None and cut > top), len(lines)]
    end_mark = f"{CONTINUED_END}\n"
    for unit in ("".join(lines[a:b]) for a, b in itertools.pairwise(bounds) if a < b):
        if not parts or (not fresh and utf8_size(unit) > room()):
            new_part(False)
        rest = unit if utf8_size(unit) > room() else ""
        parts[-1] += "" if rest else unit
        while rest:
            space = max(room(), 64)  # always room to make progress
            if not fresh and utf8_size(rest) + utf8_size(end_mark) <= space:  # the last piece
                parts[-1] += rest + ("" if rest.endswith("\n") else "\n") + end_mark
                break
            piece, rest = _take(rest, space)
            parts[-1] += piece
            new_part(True)
        fresh = False
    return [(part_name(first + index + 1), text) for index, text in enumerate(parts)]


def _take(text: str, room: int) -> tuple[str, str]:
    """The longest head of whole lines (or of a first line's characters) that fits ``room`` bytes, and the rest."""
    lines = split_lines(text[: room + 2])
    size = taken = 0
    for line in lines:
        if size + utf8_size(line) > room:
            break
        size += utf8_size(line)
        taken += len(line)
    if taken == 0:  # whole characters of the first line, found by bisection: a 5 MB line is cut in ~20 encodings
        low, high = 0, min(len(lines[0]) if lines else 0, room)
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if utf8_size(text[:middle]) <= room else (low, middle - 1)
        taken = low
    return text[:taken], text[taken:]


def find_iteration(text: str, number: int) -> str | None:
    """The last archived detailed entry for iteration ``number`` in an archive part's text, verbatim, or ``None``."""
    found = (a.entry for a in reversed(archive_entries(text)) if isinstance(a.entry, Iteration))
    return next((entry.raw for entry in found if number in entry.covers), None)


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
    """The part (``read(i)`` of ``count``) where iteration ``number``'s last copy starts, and its text across parts."""
    for index in range(count - 1, -1, -1):
        part = read(index)
        if (found := find_iteration(part, number)) is None:
            continue
        whole = found
        for following in range(index + 1, count):  # a piece that ends its part may go on in the next one
            if not part.endswith(found) or (piece := continuation(part := read(following))) is None:
                break
            whole += piece[0]
            if piece[1]:
                break
            found = piece[0]
        return index, whole
    return None


@dataclass(frozen=True)
class ArchivedEntry:
    """An entry in an archive part, its 1-based line, its chunk's ``what`` and ``when`` (``""`` when unknown)."""

    entry: Entry
    line: int
    chunk: str
    archived: str


def archive_entries(text: str) -> list[ArchivedEntry]:
    """Every iteration and range entry in an archive part, oldest first, each chunk read as the history is."""
    doc = parse(text)
    found: list[ArchivedEntry] = []
    for index, section in enumerate(doc.sections):
        match = ARCHIVED_HEAD.match(section.title or "") if section.level == 2 else None
        chunk, archived = match.group(2, 1) if match else ((section.title or "") * (section.level == 2), "")
        for located in doc.entries_of(index):
            if isinstance(located.entry, (Iteration, IterationRange)):
                found.append(ArchivedEntry(located.entry, located.start + 1, chunk, archived))
    return found
