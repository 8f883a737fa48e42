"""The archive: where everything compaction folds away goes, verbatim, so nothing is ever lost.

Layout (beside the state files, on the branch or in the folder)::

    archive/{program}/0001.md   # "# Archive: {program} (part 1)", then chunks, oldest first
    archive/{program}/0002.md   # a new part starts when the next chunk would push a part over the budget

A chunk is one operation's worth of removed text under a ``## Archived …`` heading.  Parts are append-only: an
existing part's bytes are never rewritten, only extended.  Pure functions; the stores do the I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from statefile.model.blocks import scan_blocks
from statefile.model.history import Entry, entry_title, is_bullet_entry, is_entry_heading, parse_entry
from statefile.model.text import line_body, split_lines, utf8_size

ARCHIVE_ROOT = "archive"
_PART_RE = re.compile(r"^(\d{4,})\.md$")
_ITERATION_HEAD = re.compile(r"^#{3,4}\s+Iter(?:ation)?\.?\s+#?(\d+)(?!\d)(?!\s*[–-]\s*\d)", re.I)


def archive_dir(program: str) -> str:
    """Folder (relative to the store root) holding ``program``'s archive parts."""
    return f"{ARCHIVE_ROOT}/{program}"


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


def plan_append(program: str, last_part: tuple[str, str] | None, chunk: str, max_bytes: int) -> list[tuple[str, str]]:
    """Where ``chunk`` goes: ``[(file name, full new content), …]`` for each part file written.

    ``last_part`` is the newest existing part (name, content) or ``None``.  The chunk is added to that part if it
    fits within ``max_bytes``; otherwise new parts are started, splitting the chunk at line boundaries when one
    part cannot hold it (a single line longer than a part is split as a last resort, never dropped).
    """
    if not chunk:
        return []
    writes: list[tuple[str, str]] = []
    if last_part is not None:
        name, content = last_part
        number = part_number(name) or 1
        if utf8_size(content) + utf8_size(chunk) <= max_bytes:
            return [(name, content + chunk)]
    else:
        number = 0
    pieces = _split_to_fit(chunk, max_bytes - utf8_size(part_header(program, 10**6)))
    for piece in pieces:
        number += 1
        writes.append((part_name(number), part_header(program, number) + piece))
    return writes


def _split_to_fit(text: str, room: int) -> list[str]:
    room = max(room, 256)
    pieces: list[str] = []
    current = ""
    for line in split_lines(text):
        while utf8_size(line) > room:
            # Cut an over-long line by characters; the parts concatenate back to the original.
            cut = room - utf8_size(current)
            if cut <= 0:
                pieces.append(current)
                current = ""
                cut = room
            head, line = _cut_chars(line, cut)
            pieces.append(current + head)
            current = ""
        if utf8_size(current) + utf8_size(line) > room:
            pieces.append(current)
            current = ""
        current += line
    if current:
        pieces.append(current)
    return [p for p in pieces if p]


def _cut_chars(line: str, limit: int) -> tuple[str, str]:
    size = 0
    for index, ch in enumerate(line):
        size += utf8_size(ch)
        if size > limit:
            return line[:index], line[index:]
    return line, ""


def find_iteration(text: str, number: int) -> str | None:
    """The last archived entry for iteration ``number`` in an archive part's text, verbatim, or ``None``.

    An entry runs from its ``### Iteration N`` heading to the next heading of level 2 or 3.
    """
    lines = split_lines(text)
    found: str | None = None
    for index, line in enumerate(lines):
        match = _ITERATION_HEAD.match(line)
        if match and int(match.group(1)) == number:
            end = index + 1
            while end < len(lines) and not re.match(r"^#{2,3}\s", lines[end]):
                end += 1
            found = "".join(lines[index:end])
    return found


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

    An entry starts at a ``###`` (or deeper) heading that names an iteration or a range, or at a top-level
    ``- Iter N:`` bullet, outside code blocks; a heading entry runs to the next heading of level 1-3 or the next
    entry, a bullet entry to the end of its list item.  Each is read with
    :func:`statefile.model.history.parse_entry`, so the archive and the file agree on what an entry says.
    """
    lines = split_lines(text)
    scan = scan_blocks(text)
    code = {n for start, end in scan.code_ranges for n in range(start, end)}
    levels = {h.line: h.level for h in scan.headings}
    chunk = archived = ""
    found: list[ArchivedEntry] = []
    start: int | None = None
    bullet = False

    def close(end: int) -> None:
        nonlocal start
        if start is not None:
            entry = parse_entry("".join(lines[start:end]))
            if entry.kind != "opaque":
                found.append(ArchivedEntry(entry, start + 1, chunk, archived))
        start = None

    for index, raw in enumerate(lines):
        level = levels.get(index, 0)
        body = line_body(raw)
        if level:
            if level <= 3:
                close(index)
            if level == 2:
                match = _ARCHIVED_HEAD.match(body.lstrip("#").strip())
                chunk, archived = (match.group(2), match.group(1)) if match else (body.lstrip("#").strip(), "")
            if level >= 3 and is_entry_heading(entry_title(body)):
                close(index)
                start, bullet = index, False
        elif index not in code and is_bullet_entry(body):
            close(index)
            start, bullet = index, True
        elif bullet and start is not None and body.strip() and not body[:1].isspace() and index not in code:
            # A bullet entry is one list item: the next unindented line (another bullet, a paragraph) ends it.
            close(index)
    close(len(lines))
    return found
