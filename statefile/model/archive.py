"""The archive: where everything compaction folds away goes, verbatim, so nothing is ever lost.

Layout (beside the state files, on the branch or in the folder)::

    archive/{program}/0001.md   # "# Archive: {program} (part 1)", then chunks, oldest first
    archive/{program}/0002.md   # a new part starts when the next chunk would push a part over the budget

A chunk is one operation's worth of removed text under a ``## Archived …`` heading.  Parts are append-only: an
existing part's bytes are never rewritten, only extended.  Pure functions; the stores do the I/O.
"""

from __future__ import annotations

import re

from statefile.model.text import split_lines, utf8_size

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
