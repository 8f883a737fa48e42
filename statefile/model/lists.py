"""Bullet-list sections (Lessons Learned, Foreclosed Avenues, Future Directions): items and targeted edits.

An item is a top-level bullet (``-``, ``*`` or ``+``) as the block scanner reads it (:func:`statefile.model.blocks.
outline`): its first line, its wrapped and indented lines, and what an indented paragraph or code block under it
holds.  Everything else in the section (the intro sentence, comments, rules, numbered lists) is kept where it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from statefile.model.blocks import ITEM, content_end, outline
from statefile.model.patterns import is_placeholder


@dataclass(frozen=True)
class Item:
    """One bullet: lines ``[start, end)`` of the section (first line is the bullet) and its text."""

    start: int
    end: int
    text: str

    @property
    def is_placeholder(self) -> bool:
        """Whether this is a template placeholder such as ``- *(none yet)*`` (see patterns.is_placeholder)."""
        return is_placeholder(self.text)


def items(lines: Sequence[str]) -> list[Item]:
    """The bullets of a section's lines (line 0 is the heading), in order."""
    return [
        Item(block.start, block.end, "".join(lines[block.start : block.end]))
        for block in outline("".join(lines))
        if block.kind == ITEM and not block.ordered and block.start > 0
    ]


def add_item(lines: list[str], text: str, newline: str) -> list[str]:
    """Append ``- text`` after the section's last bullet, replacing a ``*(none yet)*`` placeholder."""
    return add_items(lines, [text], newline)


def add_items(lines: list[str], texts: Sequence[str], newline: str) -> list[str]:
    """Append one ``- text`` bullet per text after the section's last bullet, replacing a ``*(none yet)*``
    placeholder.  The section is scanned once, so adding N bullets costs one scan, not N."""
    new = [f"- {' '.join(text.split())}{newline}" for text in texts]
    if not new:
        return list(lines)
    found = items(lines)
    out = list(lines)
    placeholders = [item for item in found if item.is_placeholder]
    if placeholders:
        item = placeholders[0]
        out[item.start : item.end] = new
        return out
    if found:
        last = found[-1]
        tail = out[last.end - 1]
        if not tail.endswith(("\n", "\r")):
            out[last.end - 1] = tail + newline
        out[last.end : last.end] = new
        return out
    # No list yet: after the intro, before the trailing blank lines / rule that separate sections.
    end = content_end(out)
    if end >= 1 and not out[end - 1].endswith(("\n", "\r")):
        out[end - 1] += newline
    out[end:end] = [newline, *new]
    return out
