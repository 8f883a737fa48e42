"""The archive: where everything compaction folds away goes, verbatim, so nothing is ever lost.

Layout (beside the state files, on the branch or in the folder)::

    archive/{program}/0001.md   # "# Archive: {program} (part 1)", then chunks, oldest first
    archive/{program}/0002.md   # a new part starts when the next chunk would push a part over the budget

A chunk is one operation's worth of removed text under a ``## Archived …`` heading.  Parts are append-only: an
existing part's bytes are never rewritten, only extended.  Pure functions; the stores do the I/O.
"""

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
    """Where a program's archive parts live, as paths relative to the store root.

    ``nested`` (the default) is ``archive/{program}/0001.md``.  The other two exist for gh-aw's repo-memory,
    which pushes only files matching its ``file-glob`` (``*`` does not cross ``/``): ``flat`` is
    ``archive/{program}.0001.md`` (for a glob such as ``archive/*.md``) and ``root`` is
    ``_archive.{program}.0001.md`` (for upstream Autoloop's ``*.md``; the leading ``_`` keeps it from reading as a
    program).  Part *names* stay ``0001.md`` whatever the layout; only their paths differ.
    """

    kind: str = "nested"

    def __post_init__(self) -> None:
        if self.kind not in LAYOUT_KINDS:
            raise ValueError(f"unknown archive layout {self.kind!r}; use one of {', '.join(LAYOUT_KINDS)}")

    def part_path(self, program: str, name: str) -> str:
        """The path of part ``name`` (``0001.md``) of ``program``."""
        if self.kind == "nested":
            return f"{archive_dir(program)}/{name}"
        if self.kind == "flat":
            return f"{ARCHIVE_ROOT}/{program}.{name}"
        return f"{ROOT_ARCHIVE_PREFIX}{program}.{name}"

    def folder(self, program: str) -> str:
        """The folder holding the parts ("" for the store root)."""
        return archive_dir(program) if self.kind == "nested" else ARCHIVE_ROOT if self.kind == "flat" else ""

    def part_name(self, program: str, file_name: str) -> str | None:
        """The part name (``0001.md``) of ``file_name`` in :meth:`folder`, or ``None`` when it is not a part."""
        prefix = (
            ""
            if self.kind == "nested"
            else f"{program}."
            if self.kind == "flat"
            else f"{ROOT_ARCHIVE_PREFIX}{program}."
        )
        if not file_name.startswith(prefix):
            return None
        name = file_name[len(prefix) :]
        return name if part_number(name) is not None else None

    def hint(self, program: str) -> str:
        """Where a person finds the parts: ``archive/perf/``, ``archive/perf.*.md`` or ``_archive.perf.*.md``."""
        if self.kind == "nested":
            return f"{archive_dir(program)}/"
        return self.part_path(program, "*.md").replace("*.md.", "*.")


#: The layouts, in the order a store prefers them.
LAYOUT_KINDS = ("nested", "flat", "root")
#: File-name prefix of archive parts kept at the store root (the ``root`` layout).
ROOT_ARCHIVE_PREFIX = "_archive."
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
    return (
        f"# Archive: {program} (part {number})\n\n"
        f"Text folded out of `{program}.md` by statefile, verbatim, oldest first. Append-only.\n"
    )


def make_chunk(text: str, *, when: str, what: str) -> str:
    """Wrap removed ``text`` under a ``## Archived {when} — {what}`` heading."""
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"\n## Archived {when} — {what}\n\n{body}"


_CHUNK_HEAD = re.compile(r"\A\n## Archived (.*?) — (.*?)\n\n", re.S)


def unwrap_chunk(chunk: str) -> tuple[str, str]:
    """The inverse of :func:`make_chunk`: ``(what, text)``; text that is not a chunk comes back as ``("", chunk)``.

    Pure functions that build their own chunk (a lesson tombstone) hand it to a store, which wraps archive text
    itself; unwrapping keeps one heading per chunk.
    """
    match = _CHUNK_HEAD.match(chunk)
    if not match:
        return "", chunk
    return match.group(2), chunk[match.end() :]


#: First line of a part (after its header) that continues an entry too large for one part; the entry's text
#: resumes on the next line.  :func:`find_iteration_in_parts` joins the pieces back.
CONTINUED = "<!-- statefile: the entry above continues here -->"
#: The line after the last piece of a continued entry (absent while the entry runs on into the next part).
CONTINUED_END = "<!-- statefile: end of the continued entry -->"
# Parts are never cut smaller than this, whatever the budget (a budget that small is a mistake, not a plan).
_MIN_ROOM = 256


def plan_append(program: str, last_part: tuple[str, str] | None, chunk: str, max_bytes: int) -> list[tuple[str, str]]:
    """Where ``chunk`` goes: ``[(file name, full new content), …]`` for each part file written.

    ``last_part`` is the newest existing part (name, content) or ``None``.  The chunk is added to that part if it
    fits within ``max_bytes``; otherwise new parts are started and filled with whole entries (an entry is never
    split between two parts while it fits in one).  An entry larger than a part gets parts of its own: it is
    cut at line boundaries (a single line longer than a part by characters, as a last resort), each part after
    the first opens with :data:`CONTINUED`, and the last piece is followed by :data:`CONTINUED_END`, so every
    part stays within ``max_bytes`` (repo-memory refuses larger files) and the entry still reads back whole.
    """
    if not chunk:
        return []
    if last_part is not None:
        name, content = last_part
        number = part_number(name) or 1
        if utf8_size(content) + utf8_size(chunk) <= max_bytes:
            return [(name, content + chunk)]
    else:
        number = 0
    writes: list[tuple[str, str]] = []
    current = ""  # the part being filled ("" before the first)
    fresh = True  # it holds nothing but its header

    def new_part(continued: bool) -> None:
        nonlocal number, current, fresh
        if current:
            writes.append((part_name(number), current))
        number += 1
        current = part_header(program, number) + (f"\n{CONTINUED}\n" if continued else "")
        fresh = not continued  # a continuation part already holds the start of its marker

    def limit() -> int:
        # A budget too small for a header and some text still gets _MIN_ROOM bytes of text per part.
        return max(max_bytes, utf8_size(part_header(program, number)) + _MIN_ROOM)

    def fits(text: str) -> bool:
        return utf8_size(current) + utf8_size(text) <= limit()

    for unit in _units(chunk):
        if not current:
            new_part(False)
        if fits(unit):
            current += unit
            fresh = False
            continue
        if not fresh:
            new_part(False)
            if fits(unit):
                current += unit
                fresh = False
                continue
        # Larger than a whole part: fill this one, then parts of its own, each marked as a continuation.
        end_mark = f"{CONTINUED_END}\n"
        rest = unit
        while rest:
            room = max(limit() - utf8_size(current), 64)  # always room to make progress
            if not fresh and utf8_size(rest) + utf8_size(end_mark) <= room:
                # The last piece (units end with a newline: make_chunk sees to it).
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
    """``chunk`` cut before each entry and before each heading of level 1–3, from its first iteration or range
    entry on (text before it stays with it).  Entries are where the state file's parser finds them
    (:meth:`statefile.model.document.StateDocument.entries_of`).  The units join to ``chunk``."""
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
    """The longest head of ``text`` made of whole lines that fits ``room`` bytes, and the rest.

    A first line longer than ``room`` is cut by characters (the pieces join back to the original).
    """
    # A head of at most `room` bytes has at most `room` characters, so only that much of the text is looked at (a
    # part is taken from a text many parts long, once per part).  A line the window cuts never fits: with it, the
    # head would be room + 2 characters.
    lines = split_lines(text[: room + 2])
    size = 0
    taken = 0
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
    low, high = 0, min(len(line), limit)  # a character takes at least one byte
    while low < high:  # the largest n whose head fits, by bisection: a 5 MB line is cut in ~20 encodings, not 5 M
        middle = (low + high + 1) // 2
        if utf8_size(line[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return line[:low], line[low:]


def find_iteration(text: str, number: int) -> str | None:
    """The last archived detailed entry for iteration ``number`` in an archive part's text, verbatim, or ``None``.

    Entries are read with the state file's own parser (:func:`archive_entries`): a ``## `` line inside a code
    fence does not cut an entry, and bullet-form entries are found like heading ones.
    """
    found = [a.entry.raw for a in archive_entries(text) if isinstance(a.entry, Iteration) and number in a.entry.covers]
    return found[-1] if found else None


def continuation(text: str) -> tuple[str, bool] | None:
    """The piece of an entry an archive part continues from the previous part, and whether it ends here.

    ``None`` when the part does not open with :data:`CONTINUED` (right after its header).
    """
    marker = f"\n{CONTINUED}\n"
    at = text.find(marker)
    if at < 0 or any(block.kind == ITEM or (block.kind == HEADING and block.level > 1) for block in outline(text[:at])):
        return None  # the marker is not right after the header: it is some entry's text
    start = at + len(marker)
    end = text.find(f"{CONTINUED_END}\n", start)
    if end < 0:
        return text[start:], False
    return text[start:end], True


def find_iteration_in_parts(read: Callable[[int], str], count: int, number: int) -> tuple[int, str] | None:
    """The last archived copy of iteration ``number`` in a program's ``count`` parts (``read(i)`` returns part
    ``i``, oldest first): the index of the part it starts in and its whole text, joined across parts when it
    was too large for one (see :func:`plan_append`).  Parts are read newest first, and only as needed.
    """
    for index in range(count - 1, -1, -1):
        text = read(index)
        found = find_iteration(text, number)
        if found is None:
            continue
        whole, part = found, text
        following = index + 1
        while part.endswith(found) and following < count:
            piece = continuation(read(following))
            if piece is None:
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
    """A history entry found in an archive part: the entry as the state file's parser reads it, and where it is."""

    entry: Entry
    #: 1-based line of the entry's first line in the part.
    line: int
    #: What the chunk holding it says it is (``"compaction of perf.md"``; ``""`` before the first chunk heading).
    chunk: str
    #: When that chunk was archived (``"2026-01-05T14:16:00Z"``; ``""`` when unknown).
    archived: str


_ARCHIVED_HEAD = re.compile(r"^Archived (.*?) — (.*)$")


def archive_entries(text: str) -> list[ArchivedEntry]:
    """Every iteration and range entry in an archive part, oldest first, parsed like the state file's entries.

    An archive part is markdown and is read with the state file's own parser: each ``## Archived …`` chunk is read
    the way the Iteration History is (:meth:`statefile.model.document.StateDocument.entries_of`: an entry starts at
    a ``###`` heading, or at a ``- Iter N:`` bullet above the chunk's first heading), so an entry reads the same
    before and after compaction moved it here, and a heading inside a code fence stays text.  Opaque entries (a
    lesson chunk's heading, notes) and tombstones are not entries: they cover no iteration.
    """
    doc = parse(text)
    found: list[ArchivedEntry] = []
    for index, section in enumerate(doc.sections):
        # A part that a long chunk ran on into holds entries right under its "# Archive: …" title.
        match = _ARCHIVED_HEAD.match(section.title or "") if section.level == 2 else None
        chunk, archived = (match.group(2), match.group(1)) if match else (section.title or "", "")
        if section.level != 2:
            chunk = ""
        for located in doc.entries_of(index):
            if isinstance(located.entry, (Iteration, IterationRange)):
                found.append(ArchivedEntry(located.entry, located.start + 1, chunk, archived))
    return found
