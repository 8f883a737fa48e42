"""Bullet-list sections (Lessons Learned, Foreclosed Avenues, Future Directions): items and targeted edits.

An item is a top-level ``-``/``*``/``+`` line plus the indented or wrapped lines under it.  Everything else in the
section (the intro sentence, comments, rules) is kept where it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from statefile.model.text import line_body

_ITEM_START = re.compile(r"^[-*+]\s")
_PLACEHOLDER = re.compile(r"^[-*+]\s+\*?\((?:none yet|no [^)]*yet)\.?\)\*?\s*$", re.I)


@dataclass(frozen=True)
class Item:
    """One bullet: lines ``[start, end)`` of the section (first line is the bullet) and its text."""

    start: int
    end: int
    text: str

    @property
    def is_placeholder(self) -> bool:
        """Whether this is the template's ``- *(none yet)*`` placeholder."""
        return bool(_PLACEHOLDER.match(self.text.strip()))


def items(lines: list[str], code_lines: frozenset[int] = frozenset()) -> list[Item]:
    """The bullets of a section's lines (line 0 is the heading).  Lines in ``code_lines`` never start an item."""
    found: list[Item] = []
    start: int | None = None
    for index in range(1, len(lines)):
        if start is not None and index in code_lines and index - 1 in code_lines:
            # Inside a code block that opened within this bullet: the whole block belongs to it.  Cutting the
            # item at a blank or ``|`` line in the block would split the fence, and moving half of it (pruning)
            # would turn the rest of the file into code.
            continue
        body = line_body(lines[index])
        starts = index not in code_lines and bool(_ITEM_START.match(body))
        ends = not body.strip() or (index not in code_lines and (body.startswith("#") or body.strip() == "---"))
        if start is not None and (starts or ends or (not body[:1].isspace() and not _continues(body))):
            found.append(_item(lines, start, index))
            start = None
        if starts:
            start = index
    if start is not None:
        found.append(_item(lines, start, _trim_end(lines, start, len(lines))))
    return found


def _continues(body: str) -> bool:
    # A wrapped line of a bullet that was not indented (lazy continuation) is still part of it, unless it looks
    # like the start of something else.
    return bool(body.strip()) and not body.lstrip().startswith(("<!--", "|", ">"))


def _trim_end(lines: list[str], start: int, end: int) -> int:
    while end > start + 1 and not line_body(lines[end - 1]).strip():
        end -= 1
    return end


def _item(lines: list[str], start: int, end: int) -> Item:
    return Item(start, end, "".join(lines[start:end]))


def add_item(lines: list[str], text: str, newline: str, code_lines: frozenset[int] = frozenset()) -> list[str]:
    """Append ``- text`` after the section's last bullet, replacing a ``*(none yet)*`` placeholder."""
    bullet = f"- {' '.join(text.split())}{newline}"
    found = items(lines, code_lines)
    out = list(lines)
    placeholders = [item for item in found if item.is_placeholder]
    if placeholders:
        item = placeholders[0]
        out[item.start : item.end] = [bullet]
        return out
    if found:
        last = found[-1]
        tail = out[last.end - 1]
        if not tail.endswith(("\n", "\r")):
            out[last.end - 1] = tail + newline
        out.insert(last.end, bullet)
        return out
    # No list yet: after the intro, before the trailing blank lines / rule that separate sections.
    end = len(out)
    while end > 1 and (not line_body(out[end - 1]).strip() or line_body(out[end - 1]).strip() == "---"):
        end -= 1
    if end >= 1 and not out[end - 1].endswith(("\n", "\r")):
        out[end - 1] += newline
    out[end:end] = [newline, bullet]
    return out
